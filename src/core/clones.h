/*
 * ZSH_KERNEL_CLONES: a loop built for the x86-64 baseline (SSE2) and again
 * for x86-64-v3 (AVX2 with FMA) and x86-64-v4 (AVX-512 with its byte and
 * word instructions), the loader picking the widest the CPU has (an ifunc,
 * so glibc on x86-64 only, and gcc only: clang's clones do not link).
 * Elsewhere, or with ZSH_NO_KERNEL_CLONES, one baseline build.
 */
#ifndef ZSH_CORE_CLONES_H_
#define ZSH_CORE_CLONES_H_

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    defined(__GLIBC__) && !defined(ZSH_NO_KERNEL_CLONES)
#define ZSH_KERNEL_CLONES \
    __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define ZSH_KERNEL_CLONES
#endif

#endif
