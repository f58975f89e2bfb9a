/*
 * The fetch before a restore across nodes. A node's snapshot directory holds
 * its own ranks' parts and the previous node's (their buddies' copies). On
 * two nodes that is every part; on more, a job restarted without a node has
 * each part on some node left, though not always on the node whose ranks now
 * read it. So before the load each rank says which shards its node holds
 * whole and which its own region reads; every rank then plans alike, from
 * the same inventory, which rank of which holder sends each shard a node
 * lacks and which rank of that node receives it, and the files travel as the
 * buddy's copy does, in 4 MiB rounds. A received file is written under a
 * temporary name and renamed into place once every rank's transfers
 * succeeded, so a fetch cut short leaves nothing the next inventory would
 * count; its contents are checked by the load, against the manifest's
 * checksums, as any shard file is.
 *
 * Only shards the node's ranks read travel: a restart that reshards keeps
 * most of them on the nodes that already hold them. A rank takes part in at
 * most ZSH_FETCH_STREAMS transfers at once, so the fetch adds at most that
 * many ZSH_BUDDY_CHUNK buffers per rank, besides the fetched files in the
 * node's memory (which the next snapshot's commit removes with the step).
 */
#include "ckpt/buddy.h"
#include "ckpt/ckpt_impl.h"

#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define ZSH_FETCH_STREAMS 2

typedef struct zsh_fetch_xfer {
    uint32_t shard;
    int      from, to;
} zsh_fetch_xfer_t;

static inline bool zsh_fetch_bit(const uint64_t *bits, uint32_t s)
{
    return (bits[s / 64] >> (s % 64)) & 1u;
}

/* Whether @path holds shard @s whole: each kind's file there, a regular
 * file of the manifest's size (its bytes are checked by the load). */
static bool zsh_fetch_held(const zsh_ckpt_t *ck, const char *path, uint32_t s)
{
    char file[ZSH_CKPT_PATH_MAX + 128], name[64];
    struct stat st;
    int k;

    for (k = 0; k < ck->nkinds; k++) {
        zsh_ckpt_file_name(name, sizeof(name), k, s);
        snprintf(file, sizeof(file), "%s/%s", path, name);
        if ((lstat(file, &st) != 0) || !S_ISREG(st.st_mode) ||
            ((uint64_t)st.st_size != ck->files[(size_t)s * ck->nkinds + k].bytes)) {
            return false;
        }
    }
    return true;
}

/* Bits of @have: the shards @path holds; of @need: those holding a piece
 * of this rank's state region. */
static void zsh_fetch_inventory(zsh_optim_t *opt, const zsh_ckpt_t *ck, const char *path,
                                uint64_t *have, uint64_t *need)
{
    zsh_ostate_piece_t piece;
    zsh_ostate_info_t info;
    zsh_ostate_iter_t it;
    const zsh_ckpt_param_t *p;
    uint64_t a, z;
    uint32_t s;
    size_t j;

    for (s = 0; s < ck->nshards; s++) {
        have[s / 64] |= zsh_fetch_held(ck, path, s) ? (uint64_t)1 << (s % 64) : 0;
    }
    zsh_optim_state_info(opt, &info);
    zsh_optim_state_iter_init(&it, opt, ZSH_OSTATE_WALK_REGION, info.rank);
    while (zsh_optim_state_iter_next(&it, &piece)) {
        /* A manifest unlike the model is the load's to refuse. */
        p = (piece.param < ck->nparams) ? &ck->params[piece.param] : NULL;
        for (j = 0; (p != NULL) && (j < p->npieces); j++) {
            a = (p->pieces[j].start > piece.start) ? p->pieces[j].start : piece.start;
            z = p->pieces[j].start + p->pieces[j].count;
            z = (z < piece.start + piece.count) ? z : piece.start + piece.count;
            if ((a < z) && (p->pieces[j].shard < ck->nshards)) {
                need[p->pieces[j].shard / 64] |= (uint64_t)1 << (p->pieces[j].shard % 64);
            }
        }
    }
}

/* The @p-th rank of node @j. */
static int zsh_fetch_nth(const zsh_ckpt_nodes_t *n, int size, int j, int p)
{
    int r;

    for (r = 0; r < size; r++) {
        if ((n->node_of[r] == j) && (p-- == 0)) {
            break;
        }
    }
    return r;
}

/* From every rank's bits (@all: per rank @words of have, then of need),
 * the transfers, alike on every rank: for each node, each shard its ranks
 * need and it lacks, sent by the holder that sends least so far, from its
 * ranks in turn, to the node's ranks in turn. */
static zsh_status_t zsh_fetch_plan(const zsh_ckpt_nodes_t *n, int size, const uint64_t *all,
                                   size_t words, const zsh_ckpt_t *ck, const char *path,
                                   zsh_fetch_xfer_t **xs_p, size_t *nx_p)
{
    int nn = n->nnodes, j, h, best, r;
    uint64_t *have = calloc((size_t)nn * 2 * words + 1, sizeof(*have)), *need;
    int *count = calloc((size_t)nn * 3, sizeof(*count)), *sent, *took;
    zsh_fetch_xfer_t *xs = NULL;
    size_t w, nx = 0;
    const char *step;
    uint32_t s;

    if ((have == NULL) || (count == NULL)) {
        free(have);
        free(count);
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the fetch's plan");
    }
    need = have + (size_t)nn * words; /* per node: its ranks' bits, or'ed */
    sent = count + nn;                /* per node: the transfers it sends */
    took = count + 2 * nn;            /* per node: the transfers it receives */
    for (r = 0; r < size; r++) {
        j = n->node_of[r];
        count[j]++;
        for (w = 0; w < words; w++) {
            have[(size_t)j * words + w] |= all[(size_t)r * 2 * words + w];
            need[(size_t)j * words + w] |= all[(size_t)r * 2 * words + words + w];
        }
    }
    xs = calloc((size_t)nn * ck->nshards + 1, sizeof(*xs));
    for (j = 0; (xs != NULL) && (j < nn); j++) {
        for (s = 0; s < ck->nshards; s++) {
            if (!zsh_fetch_bit(need + (size_t)j * words, s) ||
                zsh_fetch_bit(have + (size_t)j * words, s)) {
                continue;
            }
            for (best = -1, h = 0; h < nn; h++) {
                if (zsh_fetch_bit(have + (size_t)h * words, s) &&
                    ((best < 0) || (sent[h] < sent[best]))) {
                    best = h;
                }
            }
            if (best < 0) {
                step = strrchr(path, '/');
                free(xs);
                free(have);
                free(count);
                return zsh_error(ZSH_ERR_IO,
                                 "no node left holds shard %u of the snapshot %s (the part of "
                                 "rank %u of the %u that saved it: its node and the node that "
                                 "kept its copy are both lost), which the ranks of node %d need",
                                 s, (step != NULL) ? step + 1 : path, s, ck->nshards, j);
            }
            xs[nx].shard = s;
            xs[nx].from  = zsh_fetch_nth(n, size, best, sent[best]++ % count[best]);
            xs[nx].to    = zsh_fetch_nth(n, size, j, took[j]++ % count[j]);
            nx++;
        }
    }
    free(have);
    free(count);
    if (xs == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the fetch's plan");
    }
    *xs_p = xs;
    *nx_p = nx;
    return ZSH_OK;
}

/* The end of the window that starts at @i: no rank in more than
 * ZSH_FETCH_STREAMS of its transfers, no two between the same ranks (their
 * messages share a tag). */
static size_t zsh_fetch_window(const zsh_fetch_xfer_t *xs, size_t nx, size_t i, int *in)
{
    size_t e, t;

    for (e = i; e < nx; e++) {
        if ((in[xs[e].from] >= ZSH_FETCH_STREAMS) || (in[xs[e].to] >= ZSH_FETCH_STREAMS)) {
            break;
        }
        for (t = i; (t < e) && ((xs[t].from != xs[e].from) || (xs[t].to != xs[e].to)); t++) {
        }
        if (t < e) {
            break;
        }
        in[xs[e].from]++;
        in[xs[e].to]++;
    }
    for (t = i; t < e; t++) {
        in[xs[t].from] = 0;
        in[xs[t].to]   = 0;
    }
    return e;
}

/* Open kind @k of shard @s in @path: to read, or (@out) to write under a
 * temporary name that zsh_fetch_done() renames. */
static zsh_status_t zsh_fetch_open(const char *path, int k, uint32_t s, bool out, int *fd_p)
{
    char file[ZSH_CKPT_PATH_MAX + 128], name[64];

    zsh_ckpt_file_name(name, sizeof(name), k, s);
    snprintf(file, sizeof(file), "%s/%s%s", path, out ? ".fetch-" : "", name);
    *fd_p = out ? open(file, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                : open(file, O_RDONLY | O_CLOEXEC);
    if (*fd_p < 0) {
        return zsh_error(ZSH_ERR_IO, "cannot open %s for the fetch: %s", file, strerror(errno));
    }
    return ZSH_OK;
}

/* Shard @s's files received: renamed into place once every rank's
 * transfers succeeded (@keep), else removed. */
static zsh_status_t zsh_fetch_done(const zsh_ckpt_t *ck, const char *path, uint32_t s, bool keep)
{
    char from[ZSH_CKPT_PATH_MAX + 128], to[ZSH_CKPT_PATH_MAX + 128], name[64];
    zsh_status_t status = ZSH_OK;
    int k;

    for (k = 0; k < ck->nkinds; k++) {
        zsh_ckpt_file_name(name, sizeof(name), k, s);
        snprintf(from, sizeof(from), "%s/.fetch-%s", path, name);
        snprintf(to, sizeof(to), "%s/%s", path, name);
        if (!keep) {
            (void)unlink(from);
        } else if ((status == ZSH_OK) && (rename(from, to) != 0)) {
            status = zsh_error(ZSH_ERR_IO, "cannot rename %s to %s: %s", from, to,
                               strerror(errno));
        }
    }
    return status;
}

/* This rank's transfers of xs[i, e): its streams, sends and receives of a
 * round posted together (a rank may both send and receive). A local read
 * or write that fails leaves the rank sending and receiving, so that no
 * peer waits for it; *@local keeps the failure. */
static zsh_status_t zsh_fetch_run(zsh_optim_t *opt, const zsh_ckpt_t *ck, const char *path,
                                  const zsh_fetch_xfer_t *xs, size_t i, size_t e, char *bufs,
                                  int *fds, zsh_status_t *local, uint64_t *bytes)
{
    zsh_comm_t *comm = zsh_optim_state_comm(opt);
    const zsh_fetch_xfer_t *mine[ZSH_FETCH_STREAMS];
    zsh_request_t *reqs[ZSH_FETCH_STREAMS] = {NULL};
    int rank = zsh_comm_rank(comm), nk = ck->nkinds, m, nm = 0, k;
    zsh_status_t status = ZSH_OK, st;
    bool more = true, out;
    uint64_t off;
    size_t c, len;

    for (; (i < e) && (nm < ZSH_FETCH_STREAMS); i++) {
        if ((xs[i].from == rank) || (xs[i].to == rank)) {
            mine[nm++] = &xs[i];
        }
    }
    for (m = 0; m < nm * nk; m++) {
        fds[m] = -1;
    }
    for (m = 0; (*local == ZSH_OK) && (m < nm); m++) {
        for (k = 0; (*local == ZSH_OK) && (k < nk); k++) {
            *local = zsh_fetch_open(path, k, mine[m]->shard, mine[m]->to == rank, &fds[m * nk + k]);
        }
    }
    for (c = 0; (status == ZSH_OK) && more; c++) {
        more = false;
        for (m = 0; (status == ZSH_OK) && (m < nm); m++) {
            if (!zsh_ckpt_buddy_chunk(ck, mine[m]->shard, c, &k, &off, &len)) {
                continue;
            }
            more = true;
            if (mine[m]->to == rank) {
                status = zsh_irecv(bufs + (size_t)m * ZSH_BUDDY_CHUNK, len, ZSH_UINT8,
                                   mine[m]->from, ZSH_BUDDY_TAG, comm, &reqs[m]);
                continue;
            }
            if (*local == ZSH_OK) {
                *local = zsh_ckpt_buddy_io(fds[m * nk + k], false,
                                           bufs + (size_t)m * ZSH_BUDDY_CHUNK, len, off);
            }
            status = zsh_isend(bufs + (size_t)m * ZSH_BUDDY_CHUNK, len, ZSH_UINT8, mine[m]->to,
                               ZSH_BUDDY_TAG, comm, &reqs[m]);
        }
        for (m = 0; m < nm; m++) {
            if (reqs[m] == NULL) {
                continue;
            }
            st     = zsh_request_wait(reqs[m]);
            status = (status == ZSH_OK) ? st : status;
            zsh_request_free(reqs[m]);
            reqs[m] = NULL;
            out     = mine[m]->to == rank;
            if ((status == ZSH_OK) && (*local == ZSH_OK) && out &&
                zsh_ckpt_buddy_chunk(ck, mine[m]->shard, c, &k, &off, &len)) {
                *local = zsh_ckpt_buddy_io(fds[m * nk + k], true,
                                           bufs + (size_t)m * ZSH_BUDDY_CHUNK, len, off);
                *bytes += len;
            }
        }
    }
    for (m = 0; m < nm * nk; m++) {
        if (fds[m] >= 0) {
            close(fds[m]);
        }
    }
    return status;
}

static double zsh_fetch_now(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

zsh_status_t zsh_ckpt_fetch(zsh_optim_t *opt, const zsh_ckpt_nodes_t *n, const char *path,
                            uint64_t *bytes_p)
{
    zsh_comm_t *comm = zsh_optim_state_comm(opt);
    int size = zsh_comm_size(comm), rank = zsh_comm_rank(comm), r, *in = NULL, *fds = NULL;
    char mpath[ZSH_CKPT_PATH_MAX + 32];
    uint64_t nshards, *shards = NULL, *all = NULL, bytes = 0;
    zsh_status_t status, local = ZSH_OK, st;
    zsh_fetch_xfer_t *xs = NULL;
    double t0 = zsh_fetch_now();
    size_t words = 0, nx = 0, i, e;
    char *bufs = NULL;
    zsh_ckpt_t ck;

    memset(&ck, 0, sizeof(ck));
    snprintf(mpath, sizeof(mpath), "%s/%s", path, ZSH_CKPT_MANIFEST);
    status  = zsh_optim_state_agree(opt, zsh_ckpt_manifest_read(mpath, &ck));
    nshards = ck.nshards;
    shards  = calloc((size_t)size, sizeof(*shards));
    if (status == ZSH_OK) {
        status = zsh_optim_state_agree(opt, (shards == NULL) ? zsh_error(ZSH_ERR_NO_MEMORY,
                                                                         "no memory to fetch")
                                                             : ZSH_OK);
    }
    /* Every node's copy is of the same step, so of the same manifest. */
    if (status == ZSH_OK) {
        status = zsh_optim_state_comm_status(opt, zsh_allgather(&nshards, shards, 1, ZSH_UINT64,
                                                                comm));
    }
    for (r = 0; (status == ZSH_OK) && (r < size); r++) {
        if (shards[r] != nshards) {
            status = zsh_error(ZSH_ERR_IO, "%s: rank %d's node has a snapshot of %llu shards "
                               "there; rank %d's, of %llu", path, rank,
                               (unsigned long long)nshards, r, (unsigned long long)shards[r]);
        }
    }
    words  = ((size_t)nshards + 63) / 64;
    if (status == ZSH_OK) {
        all    = calloc((size_t)size * 2 * words + 2 * words, sizeof(*all));
        in     = calloc((size_t)size, sizeof(*in));
        fds    = malloc(ZSH_FETCH_STREAMS * ZSH_CKPT_KINDS * sizeof(*fds));
        status = zsh_optim_state_agree(opt, ((all == NULL) || (in == NULL) || (fds == NULL))
                                                ? zsh_error(ZSH_ERR_NO_MEMORY, "no memory to fetch")
                                                : ZSH_OK);
    }
    if (status == ZSH_OK) {
        uint64_t *own = all + (size_t)size * 2 * words;

        zsh_fetch_inventory(opt, &ck, path, own, own + words);
        status = zsh_optim_state_comm_status(opt, zsh_allgather(own, all, 2 * words, ZSH_UINT64,
                                                                comm));
    }
    /* The plan is alike everywhere, and so is a shard no node holds. */
    if (status == ZSH_OK) {
        local = zsh_fetch_plan(n, size, all, words, &ck, path, &xs, &nx);
        for (i = 0; (local == ZSH_OK) && (i < nx) && (bufs == NULL); i++) {
            if ((xs[i].from == rank) || (xs[i].to == rank)) {
                bufs  = malloc(ZSH_FETCH_STREAMS * ZSH_BUDDY_CHUNK);
                local = (bufs == NULL) ? zsh_error(ZSH_ERR_NO_MEMORY, "no memory to fetch")
                                       : ZSH_OK;
            }
        }
        status = zsh_optim_state_agree(opt, local);
    }
    if ((status == ZSH_OK) && (nx > 0)) {
        for (i = 0; (status == ZSH_OK) && (i < nx); i = e) {
            e      = zsh_fetch_window(xs, nx, i, in);
            status = zsh_fetch_run(opt, &ck, path, xs, i, e, bufs, fds, &local, &bytes);
        }
        /* A transfer's failure is the communicator's. */
        status = zsh_optim_state_comm_status(opt, status);
    }
    if ((status == ZSH_OK) && (nx > 0)) {
        status = zsh_optim_state_agree(opt, local);
        local  = ZSH_OK;
        for (i = 0; i < nx; i++) {
            if (xs[i].to == rank) {
                st    = zsh_fetch_done(&ck, path, xs[i].shard, status == ZSH_OK);
                local = (local == ZSH_OK) ? st : local;
            }
        }
        status = (status == ZSH_OK) ? zsh_optim_state_agree(opt, local) : status;
    }
    if ((status == ZSH_OK) && (bytes > 0)) {
        zsh_log(ZSH_LOG_INFO, "zsh_optim_restore: %.1f MiB of shard files fetched into %s in "
                "%.3f s", (double)bytes / (1 << 20), path, zsh_fetch_now() - t0);
    }
    *bytes_p = (status == ZSH_OK) ? bytes : 0;
    free(bufs);
    free(xs);
    free(fds);
    free(in);
    free(all);
    free(shards);
    zsh_ckpt_free(&ck);
    return status;
}
