# zero/optim: the ZeRO stages (the optimizer object, layout, gradients, fetch
# and prefetch, the stage 3 buckets' states, the step, the interfaces of the
# stage, tier and device tables, hpZ, device parameters, the state a
# checkpoint walks); stage/, offload/, rule/ and estimate/ have fragments of
# their own
libzsh_zero_la_SOURCES += \
	%reldir%/optim_impl.h %reldir%/stage.h %reldir%/optim.c %reldir%/config.c %reldir%/config.h \
	%reldir%/layout.c %reldir%/grads.c %reldir%/bufs.c %reldir%/fetch.c %reldir%/bstate.c %reldir%/bstate.h \
	%reldir%/prefetch.c %reldir%/prefetch.h %reldir%/norm.c %reldir%/norm.h %reldir%/step.c %reldir%/update.c \
	%reldir%/apply.c %reldir%/load.c %reldir%/param_state.c \
	%reldir%/state.c %reldir%/state.h %reldir%/state_walk.c %reldir%/state_check.c \
	%reldir%/scaler.c %reldir%/scaler.h %reldir%/workers.c %reldir%/workers.h \
	%reldir%/tier.h %reldir%/tier_ops.h %reldir%/hpz.c %reldir%/qwz.c %reldir%/qgz.c %reldir%/device.c %reldir%/device_ops.h \
	%reldir%/host.c %reldir%/storage.c
include %reldir%/stage/local.mk
include %reldir%/offload/local.mk
include %reldir%/rule/local.mk
include %reldir%/estimate/local.mk
