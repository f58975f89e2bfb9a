/*
 * zsh_optim_save(): every rank streams its part of each kind into its own
 * files in a temporary directory, fsyncs them and sends rank 0 their
 * checksums; rank 0 writes the manifest last (to a temporary name, fsynced,
 * renamed), renames the directory into place and points `latest` at it.
 * Until that rename nothing a reader follows has changed. A snapshot across
 * nodes (buddy.c) does the same in each node's own directory, its first
 * rank in rank 0's place, once the buddies' copies are written.
 */
#include "ckpt/buddy.h"
#include "ckpt/ckpt_impl.h"
#include "ckpt/dir.h"
#include "ckpt/writer.h"

#include "core/log.h"
#include "core/status.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <errno.h>

/* Stream kind @k of this rank's pieces into @w, recording each piece's
 * checksum in @ck. */
static zsh_status_t zsh_ckpt_save_kind(zsh_optim_t *opt, zsh_ckpt_t *ck, int k,
                                       zsh_ckpt_writer_t *w)
{
    zsh_status_t status = ZSH_OK;
    zsh_ostate_piece_t piece;
    zsh_ckpt_param_t *cp;
    zsh_ostate_info_t info;
    zsh_ostate_iter_t it;
    size_t span, off, n, room, j;
    float *dst;

    zsh_optim_state_info(opt, &info);
    span = zsh_ckpt_span(&info);
    zsh_optim_state_iter_init(&it, opt, ZSH_OSTATE_WALK_PART, info.rank);
    while ((status == ZSH_OK) && zsh_optim_state_iter_next(&it, &piece)) {
        for (off = 0; (status == ZSH_OK) && (off < piece.count); off += n) {
            dst = zsh_ckpt_writer_room(w, &room);
            if (dst == NULL) {
                return w->status;
            }
            n = room / sizeof(float);
            n = (n < piece.count - off) ? n : piece.count - off;
            n = (n < span) ? n : span;
            status = zsh_optim_state_get(opt, (zsh_ostate_t)k, &piece, off, n, dst);
            if (status == ZSH_OK) {
                status = zsh_ckpt_writer_commit(w, n * sizeof(float));
            }
        }
        /* This rank's pieces of the parameter, in order: the one here. */
        cp = &ck->params[piece.param];
        for (j = 0; (status == ZSH_OK) && (j < cp->npieces); j++) {
            if (cp->pieces[j].shard == (uint32_t)info.rank) {
                cp->pieces[j].hash[k] = zsh_ckpt_writer_piece(w);
            }
        }
    }
    return status;
}

/* Write every kind's file of this rank into @tmp. */
static zsh_status_t zsh_ckpt_save_files(zsh_optim_t *opt, zsh_ckpt_t *ck, const char *tmp)
{
    zsh_aio_params_t params = {0};
    char path[ZSH_CKPT_PATH_MAX + 128], name[64];
    zsh_status_t status;
    zsh_ckpt_writer_t w;
    zsh_aio_t *aio = NULL;
    int rank = zsh_ckpt_rank(opt), k;

    params.rank = rank;
    status      = zsh_aio_create(&params, &aio);
    for (k = 0; (status == ZSH_OK) && (k < ck->nkinds); k++) {
        zsh_ckpt_file_name(name, sizeof(name), k, (uint32_t)rank);
        snprintf(path, sizeof(path), "%s/%s", tmp, name);
        status = zsh_ckpt_writer_open(&w, aio, path);
        if (status != ZSH_OK) {
            break;
        }
        status = zsh_ckpt_save_kind(opt, ck, k, &w);
        if (status == ZSH_OK) {
            status = zsh_ckpt_writer_close(&w);
            ck->files[(size_t)rank * ck->nkinds + k] = w.meta;
        } else {
            zsh_ckpt_writer_abort(&w);
        }
    }
    zsh_aio_destroy(aio);
    return status;
}

/* uint64 words shard @r sends: per kind its file's bytes, checksum and
 * chunks, then its pieces' checksums per kind. */
static size_t zsh_ckpt_words(const zsh_ckpt_t *ck, const uint64_t *elems, uint32_t r)
{
    size_t words = (size_t)ck->nkinds * (2 + zsh_ckpt_nchunks(zsh_ckpt_file_bytes(elems[r]))),
           i, j;

    for (i = 0; i < ck->nparams; i++) {
        for (j = 0; j < ck->params[i].npieces; j++) {
            words += (ck->params[i].pieces[j].shard == r) ? (size_t)ck->nkinds : 0;
        }
    }
    return words;
}

/* Pack (@unpack 0) this rank's checksums into @v, or unpack shard @r's. */
static zsh_status_t zsh_ckpt_pack(zsh_ckpt_t *ck, uint32_t r, uint64_t *v, const uint64_t *elems,
                                  bool unpack)
{
    size_t nchunks = zsh_ckpt_nchunks(zsh_ckpt_file_bytes(elems[r])), w = 0, i, j;
    int k;

    for (k = 0; k < ck->nkinds; k++) {
        zsh_ckpt_file_t *f = &ck->files[(size_t)r * ck->nkinds + k];

        if (unpack) {
            f->bytes   = v[w];
            f->hash    = v[w + 1];
            f->nchunks = nchunks;
            f->chunks  = malloc((nchunks + 1) * sizeof(*f->chunks));
            if (f->chunks == NULL) {
                return zsh_error(ZSH_ERR_NO_MEMORY, "no memory for checksums");
            }
            memcpy(f->chunks, v + w + 2, nchunks * sizeof(*f->chunks));
        } else {
            v[w]     = f->bytes;
            v[w + 1] = f->hash;
            memcpy(v + w + 2, f->chunks, nchunks * sizeof(*f->chunks));
        }
        w += 2 + nchunks;
    }
    for (i = 0; i < ck->nparams; i++) {
        for (j = 0; j < ck->params[i].npieces; j++) {
            for (k = 0; (ck->params[i].pieces[j].shard == r) && (k < ck->nkinds); k++) {
                if (unpack) {
                    ck->params[i].pieces[j].hash[k] = v[w++];
                } else {
                    v[w++] = ck->params[i].pieces[j].hash[k];
                }
            }
        }
    }
    return ZSH_OK;
}

/* Every rank's checksums to every rank (rank 0 writes them). */
static zsh_status_t zsh_ckpt_exchange(zsh_optim_t *opt, zsh_ckpt_t *ck)
{
    uint64_t *elems = calloc(ck->nshards, sizeof(*elems)), *all = NULL;
    zsh_status_t status = ZSH_OK;
    int rank = zsh_ckpt_rank(opt);
    size_t words = 0, w;
    uint32_t r;

    if (elems != NULL) {
        zsh_ckpt_shard_elems(ck, elems);
        for (r = 0; r < ck->nshards; r++) {
            w     = zsh_ckpt_words(ck, elems, r);
            words = (w > words) ? w : words;
        }
        all = calloc(words * ck->nshards + 1, sizeof(*all));
    }
    /* Every rank must reach the allgather, or none. */
    status = zsh_optim_state_agree(opt, (all == NULL) ? zsh_error(ZSH_ERR_NO_MEMORY,
                                                                  "no memory for checksums")
                                                      : ZSH_OK);
    if (status != ZSH_OK) {
        free(all);
        free(elems);
        return status;
    }
    zsh_ckpt_pack(ck, (uint32_t)rank, all + (size_t)rank * words, elems, false);
    status = zsh_optim_state_comm_status(opt, zsh_allgather(all + (size_t)rank * words, all,
                                                            words, ZSH_UINT64,
                                                            zsh_optim_state_comm(opt)));
    for (r = 0; (status == ZSH_OK) && (r < ck->nshards); r++) {
        if (r != (uint32_t)rank) {
            status = zsh_ckpt_pack(ck, r, all + (size_t)r * words, elems, true);
        }
    }
    free(all);
    free(elems);
    return status;
}

zsh_status_t zsh_ckpt_save(zsh_optim_t *opt, const char *dir, const char *fn,
                           const zsh_ckpt_nodes_t *nodes)
{
    char tmp[ZSH_CKPT_PATH_MAX], name[64];
    zsh_status_t status, mine = ZSH_OK;
    zsh_ostate_counters_t counters;
    zsh_ckpt_t ck;
    int rank, leader = (nodes != NULL) ? nodes->leader : 0;

    status = zsh_ckpt_check(opt, dir, fn, false);
    if (status != ZSH_OK) {
        return status;
    }
    rank = zsh_ckpt_rank(opt);
    zsh_optim_state_counters_get(opt, &counters);
    snprintf(name, sizeof(name), "step-%08lu", counters.steps);
    snprintf(tmp, sizeof(tmp), "%s/.tmp-%s", dir, name);
    if (rank == leader) {
        mine = zsh_ckpt_dir_prepare(dir, 1);
        if ((mine == ZSH_OK) && (mkdir(tmp, 0755) != 0)) {
            mine = zsh_error(ZSH_ERR_IO, "cannot create %s: %s", tmp, strerror(errno));
        }
    }
    status = zsh_optim_state_agree(opt, mine);
    if (status != ZSH_OK) {
        return status;
    }
    mine = zsh_ckpt_plan(opt, &ck);
    if (mine == ZSH_OK) {
        mine = zsh_ckpt_save_files(opt, &ck, tmp);
    }
    status = zsh_optim_state_agree(opt, mine);
    if (status == ZSH_OK) {
        mine = zsh_ckpt_exchange(opt, &ck);
        if ((mine == ZSH_OK) && (nodes != NULL) && (nodes->nnodes > 1)) {
            mine = zsh_ckpt_buddy_copy(opt, &ck, nodes, tmp);
        }
        if ((mine == ZSH_OK) && (rank == leader)) {
            mine = zsh_ckpt_commit(&ck, dir, tmp, name);
        }
        status = zsh_optim_state_agree(opt, mine);
    }
    if ((status != ZSH_OK) && (rank == leader)) {
        (void)zsh_ckpt_rmtree(tmp); /* nothing points at it */
    }
    if (ck.params != NULL) {
        zsh_ckpt_free(&ck);
    }
    if (status == ZSH_OK) {
        zsh_log(ZSH_LOG_INFO, "%s: step %lu saved to %s/%s", fn, counters.steps, dir, name);
    } else {
        zsh_error_prefix("%s: nothing was saved to %s, and its previous checkpoint stands: ", fn,
                         dir);
    }
    return status;
}

zsh_status_t zsh_optim_save(zsh_optim_t *opt, const char *dir)
{
    return zsh_ckpt_save(opt, dir, "zsh_optim_save", NULL);
}
