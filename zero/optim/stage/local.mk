# zero/optim/stage: the ZeRO stages as tables (optim/stage.h), one file per
# stage and what stages share
libzsh_zero_la_SOURCES += \
	%reldir%/shared.h %reldir%/stage.c %reldir%/stage0.c %reldir%/stage1.c %reldir%/stage2.c \
	%reldir%/stage3.c %reldir%/replicas.c %reldir%/shards.c
