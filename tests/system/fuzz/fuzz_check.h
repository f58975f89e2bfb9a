/*
 * What the libFuzzer targets share: a failed check traps, so libFuzzer
 * saves the input as a crash reproducer.
 */
#ifndef ZSH_FUZZ_CHECK_H_
#define ZSH_FUZZ_CHECK_H_

#define FUZZ_CHECK(cond)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            __builtin_trap();                                                                      \
        }                                                                                          \
    } while (0)

#endif
