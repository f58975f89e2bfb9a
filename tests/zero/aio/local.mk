# The tests of zero/aio/, listed where they live (Makefile.am builds them).
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/aio_helpers.c %reldir%/aio_helpers.h %reldir%/rw_test.c %reldir%/fault_test.c \
	%reldir%/dir_test.c %reldir%/config_test.c
