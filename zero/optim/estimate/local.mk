# zero/optim/estimate: the memory and traffic models (zsh_optim_estimate*)
libzsh_zero_la_SOURCES += \
	%reldir%/estimate.c %reldir%/estimate_offload.c %reldir%/estimate_nodes.c \
	%reldir%/estimate_quant.c
