/*
 * Copies that skip the cache.
 *
 * A plain copy reads every destination line into the cache before it
 * writes it (a read for ownership), then leaves it there. When the buffers
 * of a call outgrow the core's private cache, those lines are evicted long
 * before anyone reads them: the read was wasted, and so was the room.
 * Non-temporal stores write whole lines straight towards memory instead.
 * With the buffers still in cache, a plain copy wins, hence the threshold,
 * ZSH_STREAM_MIN_SIZE (measured in docs/DECISIONS.md, "Streaming stores").
 */
#ifndef ZSH_COLL_ALGO_COPY_H_
#define ZSH_COLL_ALGO_COPY_H_

#include <stddef.h>

/*
 * memcpy(@dst, @src, @len) for buffers that do not overlap, with stores
 * that bypass the cache where the processor has them (x86-64's SSE2), and
 * a plain memcpy elsewhere. The stores are ordered (a fence) before it
 * returns, so another process may read @dst once told it is there.
 */
void zsh_copy_stream(void *dst, const void *src, size_t len);

#endif
