# The tests of zero/mem/, listed where they live (Makefile.am builds them).
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/huge_test.c %reldir%/pool_test.c
