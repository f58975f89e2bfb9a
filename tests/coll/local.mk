# The tests of coll/, listed where they live (Makefile.am builds them).
# rank tests (in process and under mpirun)
ZSH_TEST_CASES += \
	%reldir%/check.c %reldir%/check.h %reldir%/allgather_test.c %reldir%/reduce_scatter_test.c \
	%reldir%/alltoall_test.c %reldir%/fault/alltoall_fault_test.c \
	%reldir%/allreduce_test.c %reldir%/bcast_barrier_test.c %reldir%/nonblocking_test.c \
	%reldir%/split_test.c %reldir%/bad_input_test.c %reldir%/handle_test.c %reldir%/p2p_test.c \
	%reldir%/device_test.c %reldir%/determinism_test.c \
	%reldir%/algo/direct_test.c %reldir%/algo/direct_step_test.c %reldir%/algo/eager_test.c \
	%reldir%/fault/mismatch_test.c %reldir%/fault/revoke_test.c
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/comm/lines_test.c %reldir%/comm/context_test.c \
	%reldir%/comm/transport_required_test.c %reldir%/comm/node_test.c \
	%reldir%/comm/hier_test.c \
	%reldir%/reduce/kernels_test.c %reldir%/reduce/kernels_ref.h \
	%reldir%/reduce/kernels_float_test.c %reldir%/reduce/kernels_int_test.c \
	%reldir%/base/partition_test.c \
	%reldir%/algo/copy_test.c %reldir%/algo/ring_order_test.c \
	%reldir%/config_test.c \
	%reldir%/select/select_test.c \
	%reldir%/fault/deadline_test.c %reldir%/fault/free_buffer_test.c
