/*
 * The flight recorder: a ring of the last collectives of one communicator.
 */
#include "base/trace.h"

#include "core/clock.h"
#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct zsh_trace_entry {
    zsh_desc_t   desc;
    double       posted, done;  /* seconds since the recorder started; done 0 while pending */
    zsh_status_t status;
} zsh_trace_entry_t;

struct zsh_trace {
    double             start;
    unsigned           depth;
    uint64_t           recorded;  /* collectives posted so far */
    zsh_trace_entry_t *entries;   /* entry of the n-th posted: entries[n % depth] */
};

zsh_status_t zsh_trace_create(unsigned depth, zsh_trace_t **trace_p)
{
    zsh_trace_t *trace;

    if (depth == 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "ZSH_TRACE_DEPTH must be at least 1");
    }
    trace = calloc(1, sizeof(*trace));
    if (trace != NULL) {
        trace->entries = calloc(depth, sizeof(*trace->entries));
    }
    if ((trace == NULL) || (trace->entries == NULL)) {
        free(trace);
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a flight recorder of %u entries",
                         depth);
    }
    trace->depth = depth;
    trace->start = zsh_clock_now();
    *trace_p     = trace;
    return ZSH_OK;
}

void zsh_trace_destroy(zsh_trace_t *trace)
{
    if (trace != NULL) {
        free(trace->entries);
        free(trace);
    }
}

void zsh_trace_posted(zsh_trace_t *trace, const zsh_desc_t *desc)
{
    zsh_trace_entry_t *entry = &trace->entries[trace->recorded++ % trace->depth];

    entry->desc   = *desc;
    entry->posted = zsh_clock_now() - trace->start;
    entry->done   = 0;
    entry->status = ZSH_INPROGRESS;
}

void zsh_trace_done(zsh_trace_t *trace, uint32_t seq, zsh_status_t status)
{
    uint64_t n, first = (trace->recorded > trace->depth) ? trace->recorded - trace->depth : 0;
    zsh_trace_entry_t *entry;

    /* Usually the latest; collectives may complete out of order. */
    for (n = trace->recorded; n > first; n--) {
        entry = &trace->entries[(n - 1) % trace->depth];
        if ((entry->desc.seq == seq) && (entry->status == ZSH_INPROGRESS)) {
            entry->done   = zsh_clock_now() - trace->start;
            entry->status = status;
            return;
        }
    }
}

void zsh_trace_write(const zsh_trace_t *trace, FILE *out, const char *header, const char *why)
{
    uint64_t n, first = (trace->recorded > trace->depth) ? trace->recorded - trace->depth : 0;
    double now = zsh_clock_now() - trace->start;
    const zsh_trace_entry_t *entry;
    char call[128];

    fprintf(out, "zsh flight recorder: %s, pid %ld, the last %llu of %llu collectives, at "
            "%.6f s: %s\n", header, (long)getpid(), (unsigned long long)(trace->recorded - first),
            (unsigned long long)trace->recorded, now, why);
    for (n = first; n < trace->recorded; n++) {
        entry = &trace->entries[n % trace->depth];
        zsh_desc_format(&entry->desc, call, sizeof(call));
        if (entry->status == ZSH_INPROGRESS) {
            fprintf(out, "  seq %-6u %-48s posted %.6f s  in progress for %.6f s\n",
                    entry->desc.seq, call, entry->posted, now - entry->posted);
        } else {
            fprintf(out, "  seq %-6u %-48s posted %.6f s  done %.6f s  %s\n", entry->desc.seq,
                    call, entry->posted, entry->done, zsh_status_string(entry->status));
        }
    }
    fflush(out);
}

/* Say once per file name that the dump goes to stderr instead: a job that
 * times out again and again dumps each time, and the first word suffices. */
static void zsh_trace_open_failed(const char *name, int err)
{
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
    static char reported[512];
    bool first;

    pthread_mutex_lock(&lock);
    first = strcmp(reported, name) != 0;
    if (first) {
        snprintf(reported, sizeof(reported), "%s", name);
    }
    pthread_mutex_unlock(&lock);
    if (first) {
        zsh_log(ZSH_LOG_WARN, "ZSH_TRACE_FILE: cannot open %s: %s; the flight recorder dumps "
                "to stderr instead", name, strerror(err));
    }
}

FILE *zsh_trace_open(const char *path, int rank)
{
    char name[512];
    size_t used = 0;
    const char *p;
    FILE *out;

    if (path[0] == '\0') {
        return stderr;
    }
    for (p = path; (*p != '\0') && (used + 24 < sizeof(name)); p++) {
        if ((p[0] == '%') && (p[1] == 'r')) {
            used += (size_t)snprintf(name + used, sizeof(name) - used, "%d", rank);
            p++;
        } else if ((p[0] == '%') && (p[1] == 'p')) {
            used += (size_t)snprintf(name + used, sizeof(name) - used, "%ld", (long)getpid());
            p++;
        } else {
            name[used++] = *p;
        }
    }
    name[used] = '\0';
    out = fopen(name, "a");
    if (out == NULL) {
        zsh_trace_open_failed(name, errno);
        return stderr;
    }
    return out;
}

void zsh_trace_close(FILE *out)
{
    if (out != stderr) {
        fclose(out);
    }
}
