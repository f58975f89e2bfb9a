/*
 * Buddies for snapshots across nodes. Each node's snapshot directory is its
 * own memory, so a lost node would take its ranks' parts of every snapshot
 * with it; each rank therefore also sends its files to a buddy, a rank of
 * the next node, which writes them into its own node's directory before any
 * node commits. On two nodes each node's directory then holds every rank's
 * files: the survivors of a lost node restore from their own memory, and the
 * load reshards as it does for any checkpoint.
 *
 * The copy runs in rounds of one chunk per stream (a rank's files, in kind
 * order, to its buddy), sends and receives posted together: the buddies
 * form a ring across the nodes, and a rank that waited for its send before
 * posting its receive could wait for ever.
 */
#include "ckpt/buddy.h"

#include "ckpt/hash.h"

#include "core/status.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

zsh_status_t zsh_ckpt_nodes_find(zsh_optim_t *opt, const char *dir, zsh_ckpt_nodes_t *n)
{
    zsh_comm_t *comm = zsh_optim_state_comm(opt);
    int size = zsh_comm_size(comm), rank = zsh_comm_rank(comm), r, s, j, p, nn = 0;
    uint64_t mine[2], *keys;
    int *node, *first, *count, *pos;
    char host[256] = "";
    zsh_status_t status;

    memset(n, 0, sizeof(*n));
    n->buddy = -1;
    (void)gethostname(host, sizeof(host) - 1);
    mine[0]     = XXH3_64bits(host, strlen(host));
    mine[1]     = XXH3_64bits(dir, strlen(dir));
    keys        = calloc((size_t)size * 2, sizeof(*keys));
    node        = calloc((size_t)size * 4, sizeof(*node));
    n->buddy_of = calloc((size_t)size, sizeof(*n->buddy_of));
    n->node_of  = calloc((size_t)size, sizeof(*n->node_of));
    status      = zsh_optim_state_agree(opt, ((keys == NULL) || (node == NULL) ||
                                         (n->buddy_of == NULL) || (n->node_of == NULL))
                                            ? zsh_error(ZSH_ERR_NO_MEMORY, "no memory for nodes")
                                            : ZSH_OK);
    if (status == ZSH_OK) {
        status = zsh_optim_state_comm_status(opt, zsh_allgather(mine, keys, 2, ZSH_UINT64, comm));
    }
    if (status != ZSH_OK) {
        free(keys);
        free(node);
        zsh_ckpt_nodes_free(n);
        return status;
    }
    first = node + size;     /* per node: its first rank */
    count = node + 2 * size; /* per node: its ranks */
    pos   = node + 3 * size; /* per rank: its place on its node */
    for (r = 0; r < size; r++) {
        for (s = 0; (s < r) && memcmp(keys + 2 * s, keys + 2 * r, sizeof(mine)); s++) {
        }
        if (s == r) {
            first[nn] = r;
            count[nn] = 0;
            node[r]   = nn++;
        } else {
            node[r] = node[s];
        }
        pos[r] = count[node[r]]++;
    }
    for (r = 0; r < size; r++) {
        n->node_of[r]  = node[r];
        n->buddy_of[r] = -1;
        if (nn > 1) {
            j = (node[r] + 1) % nn;
            p = pos[r] % count[j];
            /* The p-th rank of node j. */
            for (s = first[j]; (s < size) && ((node[s] != j) || (pos[s] != p)); s++) {
            }
            n->buddy_of[r] = s;
        }
    }
    n->nnodes = nn;
    n->leader = first[node[rank]];
    n->buddy  = n->buddy_of[rank];
    free(keys);
    free(node);
    return ZSH_OK;
}

void zsh_ckpt_nodes_free(zsh_ckpt_nodes_t *n)
{
    free(n->buddy_of);
    free(n->node_of);
    n->buddy_of = NULL;
    n->node_of  = NULL;
}

bool zsh_ckpt_buddy_chunk(const zsh_ckpt_t *ck, uint32_t s, size_t i, int *k_p, uint64_t *off_p,
                          size_t *len_p)
{
    uint64_t bytes, c;
    int k;

    for (k = 0; k < ck->nkinds; k++) {
        bytes = ck->files[(size_t)s * ck->nkinds + k].bytes;
        c     = (bytes + ZSH_BUDDY_CHUNK - 1) / ZSH_BUDDY_CHUNK;
        if (i < c) {
            *k_p   = k;
            *off_p = (uint64_t)i * ZSH_BUDDY_CHUNK;
            *len_p = (size_t)((bytes - *off_p < ZSH_BUDDY_CHUNK) ? bytes - *off_p
                                                                 : ZSH_BUDDY_CHUNK);
            return true;
        }
        i -= (size_t)c;
    }
    return false;
}

/* Open rank @s's file of kind @k in @tmp, for reading or (@out) as a copy. */
static zsh_status_t zsh_buddy_open(const char *tmp, int k, int s, bool out, int *fd_p)
{
    char path[ZSH_CKPT_PATH_MAX + 128], name[64];

    zsh_ckpt_file_name(name, sizeof(name), k, (uint32_t)s);
    snprintf(path, sizeof(path), "%s/%s", tmp, name);
    *fd_p = out ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)
                : open(path, O_RDONLY | O_CLOEXEC);
    if (*fd_p < 0) {
        return zsh_error(ZSH_ERR_IO, "cannot open %s for the buddy's copy: %s", path,
                         strerror(errno));
    }
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_buddy_io(int fd, bool out, void *buf, size_t len, uint64_t off)
{
    ssize_t got;
    size_t  done;

    for (done = 0; done < len; done += (size_t)got) {
        got = out ? pwrite(fd, (char *)buf + done, len - done, (off_t)(off + done))
                  : pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
        if (got <= 0) {
            return zsh_error(ZSH_ERR_IO, "the buddy's copy: %s of a shard file failed: %s",
                             out ? "a write" : "a read", (got < 0) ? strerror(errno) : "its end");
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_ckpt_buddy_copy(zsh_optim_t *opt, const zsh_ckpt_t *ck,
                                 const zsh_ckpt_nodes_t *n, const char *tmp)
{
    zsh_comm_t *comm = zsh_optim_state_comm(opt);
    int size = zsh_comm_size(comm), rank = zsh_comm_rank(comm), nk = ck->nkinds, nfrom = 0, i, k;
    int *from = calloc((size_t)size, sizeof(*from)), *fds = NULL;
    zsh_status_t status = ZSH_OK, local = ZSH_OK, st;
    zsh_request_t **reqs = NULL;
    char *bufs = NULL;
    bool more = true;
    uint64_t off;
    size_t c, len;

    for (i = 0; (from != NULL) && (i < size); i++) {
        if (n->buddy_of[i] == rank) {
            from[nfrom++] = i;
        }
    }
    /* Streams: this rank's, then one per rank it keeps a copy of. */
    if (from != NULL) {
        fds  = malloc((size_t)(nfrom + 1) * (size_t)nk * sizeof(*fds));
        reqs = calloc((size_t)(nfrom + 1), sizeof(*reqs));
        bufs = malloc((size_t)(nfrom + 1) * ZSH_BUDDY_CHUNK);
    }
    if ((from == NULL) || (fds == NULL) || (reqs == NULL) || (bufs == NULL)) {
        local = zsh_error(ZSH_ERR_NO_MEMORY, "no memory for the buddy's copy");
    }
    for (i = 0; (fds != NULL) && (i < (nfrom + 1) * nk); i++) {
        fds[i] = -1;
    }
    for (i = 0; (local == ZSH_OK) && (i <= nfrom); i++) {
        for (k = 0; (local == ZSH_OK) && (k < nk) && ((i > 0) || (n->buddy >= 0)); k++) {
            local = zsh_buddy_open(tmp, k, (i == 0) ? rank : from[i - 1], i > 0, &fds[i * nk + k]);
        }
    }
    /* Every rank enters the rounds, or none. After that a rank whose read
     * or write fails goes on sending and receiving, so that no peer waits
     * for it, and the save's agreement refuses the commit. */
    status = zsh_optim_state_agree(opt, local);
    for (c = 0; (status == ZSH_OK) && more; c++) {
        more = false;
        if ((n->buddy >= 0) && zsh_ckpt_buddy_chunk(ck, (uint32_t)rank, c, &k, &off, &len)) {
            if (local == ZSH_OK) {
                local = zsh_ckpt_buddy_io(fds[k], false, bufs, len, off);
            }
            status = zsh_isend(bufs, len, ZSH_UINT8, n->buddy, ZSH_BUDDY_TAG, comm, &reqs[0]);
            more   = true;
        }
        for (i = 1; (status == ZSH_OK) && (i <= nfrom); i++) {
            if (zsh_ckpt_buddy_chunk(ck, (uint32_t)from[i - 1], c, &k, &off, &len)) {
                status = zsh_irecv(bufs + (size_t)i * ZSH_BUDDY_CHUNK, len, ZSH_UINT8,
                                   from[i - 1], ZSH_BUDDY_TAG, comm, &reqs[i]);
                more   = true;
            }
        }
        for (i = 0; i <= nfrom; i++) {
            if (reqs[i] == NULL) {
                continue;
            }
            st     = zsh_request_wait(reqs[i]);
            status = (status == ZSH_OK) ? st : status;
            zsh_request_free(reqs[i]);
            reqs[i] = NULL;
            if ((status == ZSH_OK) && (local == ZSH_OK) && (i > 0) &&
                zsh_ckpt_buddy_chunk(ck, (uint32_t)from[i - 1], c, &k, &off, &len)) {
                local = zsh_ckpt_buddy_io(fds[i * nk + k], true, bufs + (size_t)i * ZSH_BUDDY_CHUNK,
                                     len, off);
            }
        }
    }
    for (i = 0; (fds != NULL) && (i < (nfrom + 1) * nk); i++) {
        if (fds[i] >= 0) {
            close(fds[i]);
        }
    }
    free(bufs);
    free(reqs);
    free(fds);
    free(from);
    if (status != ZSH_OK) {
        return zsh_optim_state_comm_status(opt, status);
    }
    return zsh_optim_state_agree(opt, local);
}
