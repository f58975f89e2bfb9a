# zero/quant: block-wise int8 and int4 quantization of fp32 runs (ZeRO++'s
# qwZ and qgZ), the host kernels at three widths chosen at run time, and
# their CUDA twins; bf16 and fp16 runs through them (half.c); nothing here
# includes the optimizer.
libzsh_zero_la_SOURCES += %reldir%/quant.c %reldir%/quant.h %reldir%/cuts.c %reldir%/cuts.h \
	%reldir%/half.c %reldir%/half.h
# The kernels: no FMA contraction, so every width rounds alike.
noinst_LTLIBRARIES += libzsh_zero_quant.la
libzsh_zero_quant_la_CPPFLAGS = $(ZSH_INC_ZERO)
libzsh_zero_quant_la_SOURCES = %reldir%/kernels.c
libzsh_zero_quant_la_CFLAGS = $(AM_CFLAGS) $(ZSH_OPT_FLAGS) -ffp-contract=off
libzsh_zero_la_LIBADD += libzsh_zero_quant.la
# The device kernels: nvcc through the .cu rule of zero/optim/rule/cuda/local.mk,
# into the same libzsh_zero_cuda.la; without nvcc, stubs that refuse.
ZSH_QUANT_CUDA_SRC = %reldir%/cuda/quant.cu
ZSH_QUANT_CUDA_HDR = %reldir%/cuda/quant_cuda.h
libzsh_zero_la_SOURCES += $(ZSH_QUANT_CUDA_HDR)
if HAVE_NVCC
ZSH_QUANT_CUDA_LO = $(ZSH_QUANT_CUDA_SRC:.cu=.lo)
$(ZSH_QUANT_CUDA_LO): $(ZSH_QUANT_CUDA_HDR) %reldir%/quant.h src/core/status.h src/core/half.h \
	include/zeroshard.h include/zeroshard/version.h config/config.h
libzsh_zero_cuda_la_LIBADD += $(ZSH_QUANT_CUDA_LO)
libzsh_zero_cuda_la_DEPENDENCIES += $(ZSH_QUANT_CUDA_LO)
CLEANFILES += $(ZSH_QUANT_CUDA_LO) $(ZSH_QUANT_CUDA_LO:.lo=.o)
else
libzsh_zero_la_SOURCES += %reldir%/cuda/stub.c
endif
EXTRA_DIST += $(ZSH_QUANT_CUDA_SRC) %reldir%/cuda/stub.c
