# The tests of zero/quant/, listed where they live (Makefile.am builds them).
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/quant_test.c %reldir%/cuda_quant_test.c %reldir%/half_test.c
