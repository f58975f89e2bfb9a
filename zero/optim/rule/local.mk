# zero/optim/rule: the update rules (Adam, AdamW, SGD) as kernels over fp32
# and bf16 runs, and the ranges of their settings; they know nothing of the
# optimizer object, which includes them
libzsh_zero_la_SOURCES += %reldir%/hyper.c %reldir%/hyper.h
# The update kernels: the square root of v >= 0 never sets errno, and without
# math-errno gcc turns it into a vector instruction, so the loops vectorize.
# They are also built for AVX2 and AVX-512 (rule.h); without contraction into
# FMA every width rounds alike, so results stay the same bits.
noinst_LTLIBRARIES += libzsh_zero_kernels.la
libzsh_zero_kernels_la_CPPFLAGS = $(ZSH_INC_ZERO)
libzsh_zero_kernels_la_SOURCES = %reldir%/adam.c %reldir%/sgd.c %reldir%/rule.h
libzsh_zero_kernels_la_CFLAGS = $(AM_CFLAGS) $(ZSH_OPT_FLAGS) -fno-math-errno -ffp-contract=off
libzsh_zero_la_LIBADD += libzsh_zero_kernels.la
include %reldir%/cuda/local.mk
