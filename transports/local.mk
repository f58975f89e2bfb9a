# transports: the ops table (tl.h) and the UCX transport with its node-local parts
libzsh_transports_la_SOURCES += \
	%reldir%/tl.h %reldir%/tl.c \
	%reldir%/ucx/ucx.h %reldir%/ucx/ctx.c %reldir%/ucx/tag.c %reldir%/ucx/rma.c \
	%reldir%/ucx/local.c %reldir%/ucx/config.c %reldir%/ucx/config.h \
	%reldir%/ucx/shm/box.h %reldir%/ucx/shm/box.c %reldir%/ucx/shm/board.h \
	%reldir%/ucx/shm/board.c \
	%reldir%/ucx/cma/cma.h %reldir%/ucx/cma/cma.c
# nccl/: collectives on CUDA device memory, where configure found CUDA and NCCL
ZSH_NCCL_SOURCES =  \
	%reldir%/nccl/nccl.h %reldir%/nccl/cuda.c %reldir%/nccl/comm.c %reldir%/nccl/op.c
if HAVE_NCCL
libzsh_transports_la_SOURCES += $(ZSH_NCCL_SOURCES)
libzsh_transports_la_CPPFLAGS += $(CUDA_CPPFLAGS) $(NCCL_CPPFLAGS)
libzsh_transports_la_LIBADD += $(NCCL_LIBS)
else
EXTRA_DIST_NCCL = $(ZSH_NCCL_SOURCES)
endif
