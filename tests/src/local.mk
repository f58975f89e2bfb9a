# The tests of src/, listed where they live (Makefile.am builds them).
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/core/array_test.c %reldir%/core/config_test.c %reldir%/core/status_test.c \
	%reldir%/core/sticky_test.c %reldir%/core/file_test.c %reldir%/core/half_test.c %reldir%/core/half_ref.h \
	%reldir%/boot/store_frame_test.c %reldir%/boot/store_test.c %reldir%/boot/store_helpers.h \
	%reldir%/boot/boot_env_test.c %reldir%/boot/store_fault_test.c %reldir%/boot/config_test.c \
	%reldir%/boot/store_guard_test.c %reldir%/boot/oob_agree_test.c \
	%reldir%/topo/topo_test.c %reldir%/topo/map_test.c
