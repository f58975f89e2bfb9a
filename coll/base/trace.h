/*
 * The flight recorder (ZSH_TRACE=1): the last ZSH_TRACE_DEPTH collectives of
 * a communicator, each with its descriptor, state and timestamps, dumped
 * when a collective times out, is aborted, mismatches or loses a peer. A
 * hang then comes with the history that led to it: which call each rank
 * was in, and which had already finished.
 */
#ifndef ZSH_COLL_TRACE_H_
#define ZSH_COLL_TRACE_H_

#include "base/desc.h"

#include <zeroshard.h>

#include <stdio.h>

typedef struct zsh_trace zsh_trace_t;

zsh_status_t zsh_trace_create(unsigned depth, zsh_trace_t **trace_p);
void         zsh_trace_destroy(zsh_trace_t *trace);

/* Record a collective when it is posted, and again when it completes. */
void zsh_trace_posted(zsh_trace_t *trace, const zsh_desc_t *desc);
void zsh_trace_done(zsh_trace_t *trace, uint32_t seq, zsh_status_t status);

/* Write the record to @out, headed by the communicator and @why. */
void zsh_trace_write(const zsh_trace_t *trace, FILE *out, const char *header, const char *why);

/* Open where the dump of job rank @rank goes: stderr for an empty @path,
 * else @path (with %r the rank and %p the pid) opened for appending; stderr
 * too when that fails, with a warning naming the file and why, once per
 * file name. */
FILE *zsh_trace_open(const char *path, int rank);
void  zsh_trace_close(FILE *out);

#endif
