# The tests of zero/optim/, listed where they live (Makefile.am builds them).
# rank tests (in process and under mpirun)
ZSH_TEST_CASES += \
	%reldir%/quad.c %reldir%/quad.h %reldir%/equiv_test.c %reldir%/bytes_test.c \
	%reldir%/mixed_test.c %reldir%/offload_test.c %reldir%/offload_fault_test.c \
	%reldir%/offload_interleave_test.c %reldir%/rule_test.c %reldir%/rule_ref.c \
	%reldir%/rule_ref.h %reldir%/rule_bf16_test.c %reldir%/estimate_offload_test.c \
	%reldir%/optim_bad_input_test.c %reldir%/overflow_test.c %reldir%/prefetch_test.c \
	%reldir%/tiles_test.c %reldir%/prefetch_order_test.c %reldir%/swap_plan_test.c \
	%reldir%/set_param_test.c %reldir%/clip_test.c %reldir%/state_test.c \
	%reldir%/bstate_cycle_test.c %reldir%/qwz_test.c %reldir%/grad_none_test.c \
	%reldir%/qwz_half_test.c %reldir%/bucket_bufs_test.c %reldir%/lr_test.c \
	%reldir%/decay_test.c %reldir%/param_state_run.c %reldir%/param_state_run.h \
	%reldir%/param_state_test.c %reldir%/master_state_test.c %reldir%/grad_scaled_test.c \
	%reldir%/bucket_storage_test.c %reldir%/grad_lend_test.c
# unit tests (tests/zsh_tests only)
ZSH_TEST_UNITS += \
	%reldir%/config_test.c %reldir%/threads_test.c %reldir%/comm_failure_test.c \
	%reldir%/hpz_config_test.c %reldir%/estimate_nodes_test.c %reldir%/estimate_quant_test.c %reldir%/cuda_helpers.c \
	%reldir%/cuda_helpers.h %reldir%/cuda_kernels_test.c %reldir%/cuda_util_test.c \
	%reldir%/cuda_args_test.c %reldir%/device_optim_test.c %reldir%/device_quad.c \
	%reldir%/device_quad.h %reldir%/stage_table_test.c %reldir%/bstate_test.c \
	%reldir%/device_table_test.c %reldir%/tier_table_test.c %reldir%/norm_sum_test.c
