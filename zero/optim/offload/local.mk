# zero/optim/offload: the offload tiers (which state lives in memory or in
# the NVMe tier's files, their tables, the step swapped over sub-groups)
# and the optimizer offloaded from the device; the root reaches them
# through optim/tier_ops.h, optim/device_ops.h and optim_impl.h only
libzsh_zero_la_SOURCES += \
	%reldir%/tier.c %reldir%/tier_ops.c %reldir%/swap.c %reldir%/swap_plan.h \
	%reldir%/offload_device.c
