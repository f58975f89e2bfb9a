#include "boot/oob.h"

#include "core/clock.h"
#include "core/status.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

zsh_status_t zsh_oob_check(const zsh_oob_t *oob, unsigned max_size)
{
    if (oob == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_init_oob: oob is NULL");
    }
    if ((oob->allgather == NULL) || (oob->test == NULL) || (oob->free == NULL)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_comm_init_oob: oob->allgather, oob->test and oob->free must be set");
    }
    if ((oob->size < 1) || ((unsigned)oob->size > max_size)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_init_oob: oob->size=%d is not in [1, %u]",
                         oob->size, max_size);
    }
    if ((oob->rank < 0) || (oob->rank >= oob->size)) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_comm_init_oob: oob->rank=%d is not in [0, %d)",
                         oob->rank, oob->size);
    }
    return ZSH_OK;
}

zsh_status_t zsh_oob_allgather(const zsh_oob_t *oob, const void *send, void *recv, size_t len,
                               double timeout)
{
    const struct timespec pause = {0, 100 * 1000}; /* the OOB is slow; do not spin on it */
    double deadline = zsh_clock_now() + timeout;
    zsh_status_t status;
    void *req = NULL;

    /* A callback of ours (the TCP store) explains its own failures; a
     * caller's callback cannot, so an empty message means we write one. */
    zsh_error_clear();
    status = oob->allgather(send, recv, len, oob->ctx, &req);
    if (status != ZSH_OK) {
        return (zsh_last_error()[0] != '\0')
                   ? status
                   : zsh_error(status, "out-of-band allgather of %zu bytes failed (%s)", len,
                               zsh_status_string(status));
    }
    while ((status = oob->test(req)) == ZSH_INPROGRESS) {
        if (zsh_clock_now() > deadline) {
            oob->free(req);
            return zsh_error(ZSH_ERR_TIMEOUT,
                             "out-of-band allgather did not complete within %g s", timeout);
        }
        nanosleep(&pause, NULL);
    }
    oob->free(req);
    if ((status != ZSH_OK) && (zsh_last_error()[0] == '\0')) {
        return zsh_error(status, "out-of-band allgather failed (%s)", zsh_status_string(status));
    }
    return status;
}

zsh_status_t zsh_oob_agree(const zsh_oob_t *oob, double timeout, zsh_status_t mine)
{
    struct {
        int32_t status;
        char    text[508];
    } own = {(int32_t)mine, ""}, *all = NULL;
    int32_t failed = (mine != ZSH_OK), *flags;
    zsh_status_t status;
    int r, first = -1;

    snprintf(own.text, sizeof(own.text), "%s", (mine != ZSH_OK) ? zsh_last_error() : "");
    flags = calloc((size_t)oob->size, sizeof(*flags));
    status = (flags == NULL) ? zsh_error(ZSH_ERR_NO_MEMORY, "no memory for %d ranks' outcomes",
                                         oob->size)
                             : zsh_oob_allgather(oob, &failed, flags, sizeof(failed), timeout);
    for (r = 0; (status == ZSH_OK) && (r < oob->size) && (first < 0); r++) {
        first = (flags[r] != 0) ? r : -1;
    }
    if ((status == ZSH_OK) && (first >= 0)) {
        all    = calloc((size_t)oob->size, sizeof(*all));
        status = (all == NULL) ? zsh_error(ZSH_ERR_NO_MEMORY, "no memory for %d ranks' errors",
                                           oob->size)
                               : zsh_oob_allgather(oob, &own, all, sizeof(own), timeout);
    }
    if (mine != ZSH_OK) { /* its own failure, whatever became of the agreement */
        status = zsh_error(mine, "%s", own.text);
    } else if ((status == ZSH_OK) && (first >= 0)) {
        all[first].text[sizeof(all[first].text) - 1] = '\0';
        status = zsh_error((zsh_status_t)all[first].status, "rank %d: %s", first,
                           all[first].text);
    }
    free(all);
    free(flags);
    return status;
}
