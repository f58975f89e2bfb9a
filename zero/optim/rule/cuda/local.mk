# zero/optim/rule/cuda: the update kernels on device memory, built by nvcc into
# libzsh_zero_cuda.la; without nvcc, stubs that return ZSH_ERR_UNSUPPORTED.
# nvcc rejects the -fPIC libtool adds, so contrib/cuda_lt.sh compiles each
# .cu itself (-Xcompiler -fPIC) and writes the libtool object (.lo). The
# math flags keep every fp32 operation IEEE-rounded and unfused, so the
# kernels give the host kernels' bits (kernels.h).
ZSH_CUDA_SRC = %reldir%/adam.cu %reldir%/sgd.cu %reldir%/check.cu %reldir%/util.cu
ZSH_CUDA_HDR = %reldir%/kernels.h %reldir%/common.cuh
if HAVE_NVCC
ZSH_CUDA_LO = $(ZSH_CUDA_SRC:.cu=.lo)
ZSH_NVCC_MATH = -fmad=false -ftz=false -prec-div=true -prec-sqrt=true
ZSH_NVCC_HOST = -Xcompiler -fPIC,-fno-exceptions,-ffp-contract=off $(ZSH_NVCC_WARN_FLAGS)
ZSH_NVCC_COMPILE = $(NVCC) -std=c++17 -O3 $(ZSH_NVCC_MATH) $(NVCC_FLAGS) $(ZSH_NVCC_HOST) \
	$(DEFS) $(ZSH_INC_ZERO) $(CUDA_CPPFLAGS)
SUFFIXES = .cu
.cu.lo:
	$(AM_V_GEN)$(SHELL) $(top_srcdir)/contrib/cuda_lt.sh $@ $< $(ZSH_NVCC_COMPILE)
# nvcc writes no dependency files here, so the headers the kernels include
# are listed: a change to half.h must rebuild the device conversions.
$(ZSH_CUDA_LO): $(ZSH_CUDA_HDR) src/core/half.h src/core/status.h include/zeroshard.h \
	include/zeroshard/optim.h include/zeroshard/version.h config/config.h
noinst_LTLIBRARIES += libzsh_zero_cuda.la
libzsh_zero_cuda_la_SOURCES = $(ZSH_CUDA_HDR)
libzsh_zero_cuda_la_LIBADD = $(ZSH_CUDA_LO)
libzsh_zero_cuda_la_DEPENDENCIES = $(ZSH_CUDA_LO)
libzsh_zero_la_LIBADD += libzsh_zero_cuda.la
# zero/mem/device.c calls the CUDA runtime where the kernels are built.
libzsh_zero_la_CPPFLAGS += $(CUDA_CPPFLAGS)
CLEANFILES += $(ZSH_CUDA_LO) $(ZSH_CUDA_LO:.lo=.o)
else
libzsh_zero_la_SOURCES += %reldir%/kernels.h %reldir%/stub.c
endif
# The device kernels ship whether or not this build compiles them.
EXTRA_DIST += $(ZSH_CUDA_SRC) $(ZSH_CUDA_HDR) %reldir%/stub.c
clean-local: clean-zsh-cuda
clean-zsh-cuda:
	-rm -rf %reldir%/.libs
