# The tests of transports/, listed where they live (Makefile.am builds them).
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/ucx/transport_test.c \
	%reldir%/ucx/shm/box_test.c %reldir%/ucx/shm/board_test.c %reldir%/ucx/shm/budget_test.c
