/*
 * Message tags. A tag carries (communicator id, collective sequence number,
 * step, sender), so any number of collectives can be in flight on one
 * communicator, and on many communicators of one job, without their messages
 * matching each other's receives. A receive always names its sender, so two
 * peers sending in the same step never mix either.
 *
 *   63        52 51             32 31       20 19               0
 *  | comm id:12 |     seq:20      |  step:12  |   sender rank:20  |
 *
 * Sequence numbers and steps wrap; that is safe because far fewer than 2^20
 * collectives (2^12 steps) of one communicator (collective) are in flight.
 */
#ifndef ZSH_COLL_TAG_H_
#define ZSH_COLL_TAG_H_

#include <stdint.h>

#define ZSH_TAG_COMM_BITS 12
#define ZSH_TAG_SEQ_BITS  20
#define ZSH_TAG_STEP_BITS 12
#define ZSH_TAG_SRC_BITS  20

#define ZSH_MAX_COMMS     (1u << ZSH_TAG_COMM_BITS)
#define ZSH_MAX_RANKS     (1u << ZSH_TAG_SRC_BITS)
#define ZSH_TAG_STEPS     (1u << ZSH_TAG_STEP_BITS)

/* Communicator id 0 is the job itself (the teardown fence); 1 is the first
 * communicator created from the bootstrap. */
#define ZSH_COMM_ID_JOB   0u
#define ZSH_COMM_ID_WORLD 1u

/* The last id is never a communicator's: it carries control messages
 * (peer failures, aborts and mismatches told to other ranks). */
#define ZSH_COMM_ID_CTRL  (ZSH_MAX_COMMS - 1)

/* The last step of every collective carries its descriptor (type, count,
 * dtype, op, root), which ring neighbours compare; algorithms use the
 * steps below ZSH_TAG_STEP_P2P and wrap their step counters at
 * ZSH_TAG_DATA_STEPS. */
#define ZSH_TAG_STEP_DESC  (ZSH_TAG_STEPS - 1)

/* Point-to-point messages (zsh_isend, zsh_irecv) use the step before it,
 * which no collective does, with the caller's tag where a collective has
 * its sequence number: they never match a collective's receive, nor one
 * collective's another of theirs. */
#define ZSH_TAG_STEP_P2P   (ZSH_TAG_STEPS - 2)
#define ZSH_TAG_DATA_STEPS (ZSH_TAG_STEPS - 2)

/* Mask selecting all but the sender of a tag: a receive from any sender. */
#define ZSH_TAG_ANY_SRC_MASK (~(uint64_t)(ZSH_MAX_RANKS - 1))

/* Mask selecting the communicator id of a tag. */
#define ZSH_TAG_COMM_MASK  ((uint64_t)(ZSH_MAX_COMMS - 1) << 52)

static inline uint64_t zsh_tag_make(uint32_t comm_id, uint32_t seq, uint32_t step, uint32_t src)
{
    return ((uint64_t)(comm_id & (ZSH_MAX_COMMS - 1)) << 52) |
           ((uint64_t)(seq & ((1u << ZSH_TAG_SEQ_BITS) - 1)) << 32) |
           ((uint64_t)(step & (ZSH_TAG_STEPS - 1)) << 20) |
           (uint64_t)(src & (ZSH_MAX_RANKS - 1));
}

#endif
