# The tests of zero/ckpt/, listed where they live (Makefile.am builds them).
# rank tests (in process and under mpirun)
ZSH_TEST_CASES += \
	%reldir%/ckpt_test.c
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/manifest_test.c %reldir%/writer_test.c
