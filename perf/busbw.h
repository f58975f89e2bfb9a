/*
 * Bandwidth figures as nccl-tests reports them, so ZeroShard's numbers can be
 * compared with NCCL's and MPI's side by side.
 *
 *   algbw = bytes / time
 *   busbw = algbw * factor(collective, n)
 *
 * where n is the number of ranks and `bytes` is the total buffer size that
 * nccl-tests quotes for each collective:
 *
 *   collective      bytes                          factor
 *   allgather       n * sendcount * esize (recv)   (n - 1) / n
 *   reduce_scatter  n * recvcount * esize (send)   (n - 1) / n
 *   allreduce       count * esize                  2 * (n - 1) / n
 *   broadcast       count * esize                  1
 *   alltoall        n * count * esize (send)       (n - 1) / n
 *   barrier         0 (it moves no data)           0
 *
 * busbw is the rate at which the busiest link must move data for the
 * algorithm that is optimal on a ring, so it can be held against the hardware
 * peak whatever the rank count. With one rank the factor of the ring
 * collectives is 0, as in nccl-tests: nothing crosses a link.
 *
 * Bandwidths are in GB/s, 1e9 bytes per second, as nccl-tests prints them.
 */
#ifndef ZSH_PERF_BUSBW_H_
#define ZSH_PERF_BUSBW_H_

#include <stddef.h>

typedef enum {
    ZSH_BUSBW_ALLGATHER,
    ZSH_BUSBW_REDUCE_SCATTER,
    ZSH_BUSBW_ALLREDUCE,
    ZSH_BUSBW_BROADCAST,
    ZSH_BUSBW_BARRIER,
    ZSH_BUSBW_ALLTOALL
} zsh_busbw_coll_t;

/* busbw / algbw for @coll over @n ranks; 0 when @n < 1. */
static inline double zsh_busbw_factor(zsh_busbw_coll_t coll, int n)
{
    if (n < 1) {
        return 0.0;
    }
    switch (coll) {
    case ZSH_BUSBW_ALLGATHER:
    case ZSH_BUSBW_REDUCE_SCATTER:
    case ZSH_BUSBW_ALLTOALL:       return (double)(n - 1) / n;
    case ZSH_BUSBW_ALLREDUCE:      return 2.0 * (n - 1) / n;
    case ZSH_BUSBW_BROADCAST:      return 1.0;
    case ZSH_BUSBW_BARRIER:        return 0.0;
    }
    return 0.0;
}

/*
 * The `bytes` of the table above. @count is the count the ZeroShard call
 * takes: per rank for allgather (sendcount) and reduce_scatter (recvcount),
 * per block for alltoall, the whole buffer for allreduce and broadcast. @esize is the element size
 * in bytes.
 */
static inline size_t zsh_busbw_bytes(zsh_busbw_coll_t coll, size_t count, size_t esize, int n)
{
    switch (coll) {
    case ZSH_BUSBW_ALLGATHER:
    case ZSH_BUSBW_REDUCE_SCATTER:
    case ZSH_BUSBW_ALLTOALL:       return (n < 1) ? 0 : (size_t)n * count * esize;
    case ZSH_BUSBW_ALLREDUCE:
    case ZSH_BUSBW_BROADCAST:      return count * esize;
    case ZSH_BUSBW_BARRIER:        return 0;
    }
    return 0;
}

/* algbw in GB/s for @bytes moved in @seconds; 0 when @seconds <= 0. */
static inline double zsh_busbw_algbw(size_t bytes, double seconds)
{
    return (seconds > 0.0) ? (double)bytes / seconds / 1e9 : 0.0;
}

/* busbw in GB/s for @coll over @n ranks moving @bytes in @seconds. */
static inline double zsh_busbw_busbw(zsh_busbw_coll_t coll, size_t bytes, double seconds, int n)
{
    return zsh_busbw_algbw(bytes, seconds) * zsh_busbw_factor(coll, n);
}

#endif
