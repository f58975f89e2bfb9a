/*
 * zsh_optim_set_bucket_storage(): a bucket's parameters moved into the
 * caller's flat buffer, each at its place (zsh_optim_param_place()), so the
 * step all-gathers into it in place. Three parameters of awkward sizes (one
 * bucket, padded where the ranks do not divide it; several small buckets with
 * the states in the NVMe tier), Adam in fp32 and bf16, stages 0-2: moved,
 * they train bit for bit as the registered buffers do, fetch reads them in
 * the new buffer, and the registered ones are left as they were. Ranks may
 * move their buckets or not, independently. At stages 1-2 a moved bucket's
 * all-gather takes no buffer of the layer's. Refusals name the bucket and
 * change nothing.
 */
#include "param_state_run.h"

#include <zeroshard/optim.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_BS_STEPS 3

typedef struct {
    size_t  nbuckets;
    size_t  bucket[ZSH_PS_NPARAMS], offset[ZSH_PS_NPARAMS], numel[ZSH_PS_NPARAMS];
    void   *storage[ZSH_PS_NPARAMS]; /* per bucket; at most one bucket per parameter */
} zsh_bs_moved_t;

static size_t zsh_bs_esize(zsh_dtype_t precision)
{
    return (precision == ZSH_FLOAT32) ? sizeof(float) : sizeof(uint16_t);
}

/* Every bucket of @r with a parameter selected by @which (a bit per
 * parameter) moved into a zeroed buffer of its padded size. */
static bool zsh_bs_move(zsh_ps_run_t *r, unsigned which, zsh_bs_moved_t *m)
{
    size_t es = zsh_bs_esize(r->precision);
    int p;

    memset(m, 0, sizeof(*m));
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        if (zsh_optim_param_place(r->opt, r->param[p], &m->bucket[p], &m->offset[p],
                                  &m->numel[p]) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "place of '%c': %s", 'a' + p, zsh_last_error());
            return false;
        }
        ZSH_EXPECT_TRUE(m->bucket[p] < ZSH_PS_NPARAMS);
        ZSH_EXPECT_TRUE(m->offset[p] + zsh_ps_sizes[p] <= m->numel[p]);
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        if (!(which & (1u << p)) || (m->storage[m->bucket[p]] != NULL)) {
            continue;
        }
        m->storage[m->bucket[p]] = calloc(m->numel[p], es);
        if (zsh_optim_set_bucket_storage(r->opt, m->bucket[p], m->storage[m->bucket[p]],
                                         m->numel[p] * es) != ZSH_OK) {
            zsh_test_fail(__FILE__, __LINE__, "storage of bucket %zu: %s", m->bucket[p],
                          zsh_last_error());
            return false;
        }
    }
    return true;
}

static void zsh_bs_free(zsh_bs_moved_t *m)
{
    int k;

    for (k = 0; k < ZSH_PS_NPARAMS; k++) {
        free(m->storage[k]);
    }
}

/* @r's parameters after training against @ref's, bit for bit, read
 * through fetch, which points into the storage where a bucket was moved;
 * the registered buffers of moved parameters still hold their first
 * values (@first). */
static void zsh_bs_compare(zsh_ps_run_t *r, zsh_ps_run_t *ref, const zsh_bs_moved_t *m,
                           void *const *first, const char *how)
{
    size_t es = zsh_bs_esize(r->precision);
    void *got, *want;
    char what[256];
    int p;

    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "%s: '%c' after %d steps", how, 'a' + p, ZSH_BS_STEPS);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(r->opt, r->param[p], &got));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(ref->opt, ref->param[p], &want));
        (void)zsh_ps_same_bits(got, want, zsh_ps_sizes[p], es, what);
        if (m->storage[m->bucket[p]] != NULL) {
            ZSH_EXPECT_TRUE(got == (char *)m->storage[m->bucket[p]] + m->offset[p] * es);
            snprintf(what, sizeof(what), "%s: '%c' registered buffer after the move", how,
                     'a' + p);
            (void)zsh_ps_same_bits(r->buf[p], first[p], zsh_ps_sizes[p], es, what);
        } else {
            ZSH_EXPECT_TRUE(got == r->buf[p]);
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(r->opt, r->param[p]));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(ref->opt, ref->param[p]));
    }
}

static void zsh_bs_same_training(zsh_comm_t *comm, zsh_dtype_t precision, int stage, bool nvme,
                                 unsigned which)
{
    size_t es = zsh_bs_esize(precision);
    void *first[ZSH_PS_NPARAMS] = {NULL};
    zsh_optim_stats_t with, without;
    zsh_bs_moved_t m;
    zsh_ps_run_t a, b;
    char how[128];
    int p;

    snprintf(how, sizeof(how), "%s, stage %d%s, %d ranks, moved 0x%x on rank %d",
             (precision == ZSH_FLOAT32) ? "fp32" : "bf16", stage, nvme ? " (NVMe)" : "",
             zsh_comm_size(comm), which, zsh_comm_rank(comm));
    memset(&b, 0, sizeof(b));
    memset(&m, 0, sizeof(m));
    if (!zsh_ps_make(comm, ZSH_OPTIM_ADAM, stage, precision, nvme, &a) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAM, stage, precision, nvme, &b)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        first[p] = malloc(zsh_ps_sizes[p] * es);
        memcpy(first[p], a.buf[p], zsh_ps_sizes[p] * es);
    }
    if (!zsh_bs_move(&a, which, &m) || !zsh_ps_steps(&a, 1, ZSH_BS_STEPS) ||
        !zsh_ps_steps(&b, 1, ZSH_BS_STEPS)) {
        goto out;
    }
    zsh_bs_compare(&a, &b, &m, first, how);
    /* Stage 1's all-gather is the only user of the layer's bucket buffers
     * (its gradients have a buffer of their own): into the storage, it takes
     * none, so with every bucket moved fewer buffer bytes peak. (Stage 2's
     * staging takes one of the same size either way.) */
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(a.opt, &with));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(b.opt, &without));
    if ((stage == 1) && (which == 7u) && (zsh_comm_size(comm) > 1)) {
        if (!(with.buffer_peak_bytes < without.buffer_peak_bytes)) {
            zsh_test_fail(__FILE__, __LINE__, "%s: buffers peaked at %zu bytes moved, %zu not",
                          how, with.buffer_peak_bytes, without.buffer_peak_bytes);
        }
    }
out:
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        free(first[p]);
    }
    zsh_ps_free(&a);
    zsh_ps_free(&b);
    zsh_bs_free(&m);
}

ZSH_RANK_TEST(optim_bucket_storage, moved_parameters_train_as_registered_and_are_fetched_there)
{
    static const zsh_dtype_t precisions[] = {ZSH_FLOAT32, ZSH_BFLOAT16};
    size_t k;
    int stage;

    for (k = 0; k < sizeof(precisions) / sizeof(precisions[0]); k++) {
        for (stage = 0; stage <= 2; stage++) {
            zsh_bs_same_training(comm, precisions[k], stage, false, 7u);
        }
        zsh_bs_same_training(comm, precisions[k], 2, true, 7u);
        zsh_bs_same_training(comm, precisions[k], 1, true, 7u);
    }
}

ZSH_RANK_TEST(optim_bucket_storage, ranks_move_their_buckets_independently)
{
    int rank = zsh_comm_rank(comm);

    /* Even ranks move the buckets of 'a' and 'c', odd ranks none. */
    zsh_bs_same_training(comm, ZSH_FLOAT32, 2, true, (rank % 2 == 0) ? 5u : 0u);
    zsh_bs_same_training(comm, ZSH_FLOAT32, 1, false, (rank % 2 == 0) ? 7u : 0u);
}

/* @status is ZSH_OK; else a failure naming @what. */
static bool zsh_bs_ok(zsh_status_t status, const char *what)
{
    if (status != ZSH_OK) {
        zsh_test_fail(__FILE__, __LINE__, "%s: %s", what, zsh_last_error());
    }
    return status == ZSH_OK;
}

ZSH_RANK_TEST(optim_bucket_storage, a_bucket_moved_twice_keeps_its_values)
{
    size_t es = sizeof(float), bucket, offset, numel;
    zsh_ps_run_t a, b;
    void *s1 = NULL, *s2 = NULL, *got, *want;

    memset(&b, 0, sizeof(b));
    if (!zsh_ps_make(comm, ZSH_OPTIM_ADAM, 1, ZSH_FLOAT32, false, &a) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAM, 1, ZSH_FLOAT32, false, &b) ||
        !zsh_bs_ok(zsh_optim_param_place(a.opt, a.param[1], &bucket, &offset, &numel),
                   "place")) {
        goto out;
    }
    s1 = calloc(numel, es);
    s2 = calloc(numel, es);
    if (!zsh_bs_ok(zsh_optim_set_bucket_storage(a.opt, bucket, s1, numel * es), "first move") ||
        !zsh_ps_steps(&a, 1, 1) || !zsh_ps_steps(&b, 1, 1) ||
        !zsh_bs_ok(zsh_optim_set_bucket_storage(a.opt, bucket, s2, numel * es), "second move")) {
        goto out;
    }
    memset(s1, 0xff, numel * es); /* no longer read */
    if (!zsh_ps_steps(&a, 2, ZSH_BS_STEPS) || !zsh_ps_steps(&b, 2, ZSH_BS_STEPS) ||
        !zsh_bs_ok(zsh_optim_fetch(a.opt, a.param[1], &got), "fetch") ||
        !zsh_bs_ok(zsh_optim_fetch(b.opt, b.param[1], &want), "fetch")) {
        goto out;
    }
    ZSH_EXPECT_TRUE(got == (char *)s2 + offset * es);
    (void)zsh_ps_same_bits(got, want, zsh_ps_sizes[1], es, "'b' moved twice");
out:
    zsh_ps_free(&a);
    zsh_ps_free(&b);
    free(s1);
    free(s2);
}

/* @call refused with @code and a message holding @text. */
#define ZSH_BS_REFUSED(code, call, text)                 \
    do {                                                 \
        ZSH_EXPECT_STATUS(code, call);                   \
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), text); \
    } while (0)

ZSH_RANK_TEST(optim_bucket_storage, bad_storage_is_refused_by_name_and_changes_nothing)
{
    size_t es = sizeof(float), bucket, offset, numel, nb;
    zsh_ps_run_t a, b, s3;
    char *big = NULL;
    char what[64];
    void *got;
    int p;

    memset(&b, 0, sizeof(b));
    memset(&s3, 0, sizeof(s3));
    if (!zsh_ps_make(comm, ZSH_OPTIM_ADAM, 2, ZSH_FLOAT32, false, &a) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAM, 2, ZSH_FLOAT32, false, &b) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAM, 3, ZSH_FLOAT32, false, &s3) ||
        !zsh_bs_ok(zsh_optim_param_place(a.opt, a.param[1], &bucket, &offset, &numel),
                   "place")) {
        goto out;
    }
    nb  = numel * es;
    big = calloc(1, nb + 1);
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(a.opt, bucket, big, nb - 1),
                   "needs");
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(a.opt, bucket, big + 1, nb),
                   "not aligned");
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(a.opt, 99, big, nb),
                   "bucket 99 of");
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(a.opt, bucket, NULL, nb),
                   "buf is NULL");
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(NULL, bucket, big, nb),
                   "opt is NULL");
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_param_place(a.opt, NULL, NULL, NULL, NULL),
                   "param is NULL");
    /* 'b' lies after 'a' in the one bucket (offset > 0): its own buffer as
     * the bucket's storage would put 'a' over it. */
    ZSH_EXPECT_TRUE(offset > 0);
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG,
                   zsh_optim_set_bucket_storage(a.opt, bucket, a.buf[1], nb), "overlaps");
    if (zsh_bs_ok(zsh_optim_fetch(a.opt, a.param[2], &got), "fetch")) {
        ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(a.opt, bucket, big, nb),
                       "parameter 'c' is fetched");
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(a.opt, a.param[2]));
    }
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(s3.opt, 0, big, nb),
                   "at stage 3");
    /* Nothing moved: the registered buffers are the parameters still. */
    if (!zsh_ps_steps(&a, 1, ZSH_BS_STEPS) || !zsh_ps_steps(&b, 1, ZSH_BS_STEPS)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "'%c' after the refusals", 'a' + p);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(a.opt, a.param[p], &got));
        ZSH_EXPECT_TRUE(got == a.buf[p]);
        (void)zsh_ps_same_bits(a.buf[p], b.buf[p], zsh_ps_sizes[p], es, what);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(a.opt, a.param[p]));
    }
out:
    zsh_ps_free(&a);
    zsh_ps_free(&b);
    zsh_ps_free(&s3);
    free(big);
}

ZSH_RANK_TEST(optim_bucket_storage, storage_meeting_another_buckets_parameters_is_refused)
{
    size_t es = sizeof(float), ba, bc, off, na, nc;
    zsh_ps_run_t r, ref;
    void *sa = NULL, *sc = NULL;
    char what[64];
    void *got;
    int p;

    memset(&ref, 0, sizeof(ref));
    /* The NVMe tier's runs have buckets of 1 KiB: 'a' and 'c' in two. */
    if (!zsh_ps_make(comm, ZSH_OPTIM_ADAM, 2, ZSH_FLOAT32, true, &r) ||
        !zsh_ps_make(comm, ZSH_OPTIM_ADAM, 2, ZSH_FLOAT32, true, &ref) ||
        !zsh_bs_ok(zsh_optim_param_place(r.opt, r.param[0], &ba, &off, &na), "place of 'a'") ||
        !zsh_bs_ok(zsh_optim_param_place(r.opt, r.param[2], &bc, &off, &nc), "place of 'c'")) {
        goto out;
    }
    ZSH_EXPECT_TRUE(ba != bc);
    /* 'a''s own buffer given to the bucket of 'c'. */
    ZSH_EXPECT_TRUE(zsh_ps_sizes[0] >= nc);
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG,
                   zsh_optim_set_bucket_storage(r.opt, bc, r.buf[0], nc * es),
                   "overlaps the buffer of parameter 'a'");
    /* 'a''s bucket moved, then the same memory given to the bucket of 'c'. */
    sa = calloc(na + nc, es);
    if (!zsh_bs_ok(zsh_optim_set_bucket_storage(r.opt, ba, sa, na * es), "move of 'a'")) {
        goto out;
    }
    ZSH_BS_REFUSED(ZSH_ERR_INVALID_ARG, zsh_optim_set_bucket_storage(r.opt, bc, sa, nc * es),
                   "overlaps");
    /* Memory of its own is taken, and both train as registered. */
    sc = calloc(nc, es);
    if (!zsh_bs_ok(zsh_optim_set_bucket_storage(r.opt, bc, sc, nc * es), "move of 'c'") ||
        !zsh_ps_steps(&r, 1, ZSH_BS_STEPS) || !zsh_ps_steps(&ref, 1, ZSH_BS_STEPS)) {
        goto out;
    }
    for (p = 0; p < ZSH_PS_NPARAMS; p++) {
        snprintf(what, sizeof(what), "'%c' after the refusals", 'a' + p);
        if (zsh_bs_ok(zsh_optim_fetch(r.opt, r.param[p], &got), "fetch")) {
            (void)zsh_ps_same_bits(got, ref.buf[p], zsh_ps_sizes[p], es, what);
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(r.opt, r.param[p]));
        }
    }
out:
    zsh_ps_free(&r);
    zsh_ps_free(&ref);
    free(sa);
    free(sc);
}
