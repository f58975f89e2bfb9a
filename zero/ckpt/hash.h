/*
 * XXH3-64 from xxhash (Debian's libxxhash-dev), inlined so the library
 * carries no run-time dependency on it.
 */
#ifndef ZSH_CKPT_HASH_H_
#define ZSH_CKPT_HASH_H_

#define XXH_INLINE_ALL
#include <xxhash.h>

#endif
