/*
 * One rank of a cross-node correctness job: every collective, on every
 * dtype, with every reduction op, at a few sizes (a handful of elements,
 * a few thousand, and 256 Ki for some types, so that each size class of the
 * selection rule runs), each result checked element by element.
 * tests/system/cluster/run_cluster.sh launches it in a simulated cluster,
 * under torchrun-style variables or under mpirun (PMIx); zsh_comm_init()
 * takes whichever it finds.
 *
 * Values are small integers, v(r, i) = (r + i) mod 3 + 1, so that sums
 * and products of up to 5 ranks are exact in every type (integer types wrap
 * as the library documents, and the expected value wraps the same way);
 * only ZSH_AVG, a division, is compared within a tolerance.
 *
 * Prints "rank R of N on HOST: ok, C checks" or the first failures, and
 * exits 0 only if every check passed on this rank.
 */
#include <zeroshard.h>

#include "core/elem.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK_MAX_FAILURES 5

static int check_failures, check_count;

static const struct {
    zsh_dtype_t dtype;
    const char *name;
    size_t      size;
    int         is_float;
    int         large; /* also run at the large size */
} check_types[] = {
    {ZSH_INT8, "int8", 1, 0, 0},     {ZSH_UINT8, "uint8", 1, 0, 0},
    {ZSH_INT32, "int32", 4, 0, 1},   {ZSH_UINT32, "uint32", 4, 0, 0},
    {ZSH_INT64, "int64", 8, 0, 0},   {ZSH_UINT64, "uint64", 8, 0, 0},
    {ZSH_FLOAT16, "fp16", 2, 1, 0},  {ZSH_BFLOAT16, "bf16", 2, 1, 1},
    {ZSH_FLOAT32, "fp32", 4, 1, 1},  {ZSH_FLOAT64, "fp64", 8, 1, 0},
};
#define CHECK_NTYPES (sizeof(check_types) / sizeof(check_types[0]))

static const char *const check_op_names[] = {"sum", "prod", "min", "max", "avg"};

static int64_t check_value(int rank, size_t i)
{
    return (int64_t)((rank + i) % 3) + 1;
}

/* The reduction of element @i over @n ranks, as the type holds it. */
static double check_reduced(int t, zsh_op_t op, int n, size_t i)
{
    int64_t acc = check_value(0, i), v;
    double stored;
    char tmp[8];
    int r;

    for (r = 1; r < n; r++) {
        v = check_value(r, i);
        switch (op) {
        case ZSH_SUM: case ZSH_AVG: acc += v; break;
        case ZSH_PROD: acc *= v; break;
        case ZSH_MIN: acc = (v < acc) ? v : acc; break;
        case ZSH_MAX: acc = (v > acc) ? v : acc; break;
        }
    }
    if (op == ZSH_AVG) {
        return (double)acc / n;
    }
    /* Wrap as the type does. */
    zsh_elem_set(tmp, check_types[t].dtype, 0, (double)acc);
    stored = zsh_elem_get(tmp, check_types[t].dtype, 0);
    return stored;
}

static void check_expect(const char *what, int t, const void *buf, size_t i, double want,
                         int inexact)
{
    double got = zsh_elem_get(buf, check_types[t].dtype, i);
    double tol = !inexact ? 0.0 : (check_types[t].size == 2) ? 1e-2 * fabs(want) : 1e-6 * fabs(want);

    check_count++;
    if (fabs(got - want) <= tol) {
        return;
    }
    if (check_failures++ < CHECK_MAX_FAILURES) {
        fprintf(stderr, "%s %s: element %zu is %g, expected %g\n", what, check_types[t].name, i,
                got, want);
    }
}

static int check_call(const char *what, int t, zsh_status_t status)
{
    if (status == ZSH_OK) {
        return 1;
    }
    check_failures++;
    fprintf(stderr, "%s %s: %s: %s\n", what, check_types[t].name, zsh_status_string(status),
            zsh_last_error());
    return 0;
}

static void check_type(zsh_comm_t *comm, int t, size_t count)
{
    int rank = zsh_comm_rank(comm), n = zsh_comm_size(comm), r;
    zsh_dtype_t dt = check_types[t].dtype;
    size_t es = check_types[t].size, i, total = count * (size_t)n;
    char *send = malloc(total * es), *recv = malloc(total * es), what[64];
    int op;

    if ((send == NULL) || (recv == NULL)) {
        fprintf(stderr, "cannot allocate %zu elements\n", total);
        exit(1);
    }
    /* all-gather: block r holds rank r's values. */
    for (i = 0; i < count; i++) {
        zsh_elem_set(send, dt, i, (double)check_value(rank, i));
    }
    snprintf(what, sizeof(what), "allgather(%zu)", count);
    if (check_call(what, t, zsh_allgather(send, recv, count, dt, comm))) {
        for (i = 0; i < total; i++) {
            check_expect(what, t, recv, i, (double)check_value((int)(i / count), i % count), 0);
        }
    }
    /* broadcast from every root. */
    for (r = 0; r < n; r++) {
        for (i = 0; i < count; i++) {
            zsh_elem_set(recv, dt, i, (double)((rank == r) ? check_value(r, i) : 0));
        }
        snprintf(what, sizeof(what), "broadcast(%zu, root %d)", count, r);
        if (check_call(what, t, zsh_broadcast(recv, count, dt, r, comm))) {
            for (i = 0; i < count; i++) {
                check_expect(what, t, recv, i, (double)check_value(r, i), 0);
            }
        }
    }
    for (op = ZSH_SUM; op <= ZSH_AVG; op++) {
        if ((op == ZSH_AVG) && !check_types[t].is_float) {
            continue;
        }
        /* reduce-scatter over the whole input: element i of it is v(rank, i). */
        for (i = 0; i < total; i++) {
            zsh_elem_set(send, dt, i, (double)check_value(rank, i));
        }
        snprintf(what, sizeof(what), "reduce_scatter(%zu, %s)", count, check_op_names[op]);
        if (check_call(what, t, zsh_reduce_scatter(send, recv, count, dt, (zsh_op_t)op, comm))) {
            for (i = 0; i < count; i++) {
                check_expect(what, t, recv, i,
                             check_reduced(t, (zsh_op_t)op, n, (size_t)rank * count + i),
                             op == ZSH_AVG);
            }
        }
        /* all-reduce, in place. */
        for (i = 0; i < count; i++) {
            zsh_elem_set(recv, dt, i, (double)check_value(rank, i));
        }
        snprintf(what, sizeof(what), "allreduce(%zu, %s)", count, check_op_names[op]);
        if (check_call(what, t, zsh_allreduce(recv, recv, count, dt, (zsh_op_t)op, comm))) {
            for (i = 0; i < count; i++) {
                check_expect(what, t, recv, i, check_reduced(t, (zsh_op_t)op, n, i),
                             op == ZSH_AVG);
            }
        }
    }
    free(recv);
    free(send);
}

/* Calls in flight together, waited for in reverse: each must still meet
 * its own on every rank (the steps of hierarchical ones start in call
 * order). */
static void check_overlap(zsh_comm_t *comm, int rank, int n)
{
    enum { CHECK_OVERLAP_CALLS = 4, CHECK_OVERLAP_COUNT = 3000 };
    zsh_request_t *req[CHECK_OVERLAP_CALLS];
    int32_t *buf[CHECK_OVERLAP_CALLS], mine[CHECK_OVERLAP_COUNT];
    int c, ok = 1;
    size_t i;

    for (i = 0; i < CHECK_OVERLAP_COUNT; i++) {
        mine[i] = rank * 100000 + (int32_t)i;
    }
    for (c = 0; c < CHECK_OVERLAP_CALLS; c++) {
        buf[c] = calloc((size_t)n * CHECK_OVERLAP_COUNT, sizeof(int32_t));
        if ((buf[c] == NULL) ||
            (((c % 2) == 0) ? zsh_iallgather(mine, buf[c], CHECK_OVERLAP_COUNT, ZSH_INT32, comm,
                                             &req[c])
                            : zsh_iallreduce(mine, buf[c], CHECK_OVERLAP_COUNT, ZSH_INT32,
                                             ZSH_SUM, comm, &req[c])) != ZSH_OK) {
            fprintf(stderr, "overlap: posting call %d failed: %s\n", c, zsh_last_error());
            exit(1);
        }
    }
    for (c = CHECK_OVERLAP_CALLS - 1; c >= 0; c--) {
        check_count++;
        if (zsh_request_wait(req[c]) != ZSH_OK) {
            fprintf(stderr, "overlap: call %d failed: %s\n", c, zsh_last_error());
            ok = 0;
        }
        zsh_request_free(req[c]);
        for (i = 0; ok && (i < (size_t)n * CHECK_OVERLAP_COUNT); i++) {
            int32_t want = ((c % 2) == 0)
                               ? (int32_t)(i / CHECK_OVERLAP_COUNT) * 100000 +
                                     (int32_t)(i % CHECK_OVERLAP_COUNT)
                               : (int32_t)(i < CHECK_OVERLAP_COUNT
                                               ? 100000 * (n * (n - 1) / 2) + n * (int32_t)i
                                               : 0);
            if (buf[c][i] != want) {
                fprintf(stderr, "overlap: call %d element %zu: %d, expected %d\n", c, i,
                        buf[c][i], want);
                ok = 0;
            }
        }
        free(buf[c]);
    }
    check_failures += !ok;
}

int main(void)
{
    static const size_t sizes[] = {7, 4099, (size_t)1 << 18};
    char host[256] = "?";
    zsh_comm_t *comm = NULL;
    zsh_status_t status;
    size_t s, t;
    int rank, size;

    gethostname(host, sizeof(host) - 1);
    status = zsh_comm_init(&comm);
    if (status != ZSH_OK) {
        fprintf(stderr, "on %s: zsh_comm_init: %s: %s\n", host, zsh_status_string(status),
                zsh_last_error());
        return 1;
    }
    rank = zsh_comm_rank(comm);
    size = zsh_comm_size(comm);
    for (s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
        for (t = 0; t < CHECK_NTYPES; t++) {
            if ((sizes[s] > 4099) && !check_types[t].large) {
                continue;
            }
            check_type(comm, (int)t, sizes[s]);
        }
        check_count++;
        if (!check_call("barrier", 0, zsh_barrier(comm))) {
            break;
        }
    }
    check_overlap(comm, rank, size);
    status = zsh_comm_destroy(comm);
    if (status != ZSH_OK) {
        check_call("zsh_comm_destroy", 0, status);
    }
    if (check_failures > 0) {
        printf("rank %d of %d on %s: FAILED, %d of %d checks\n", rank, size, host, check_failures,
               check_count);
        return 1;
    }
    printf("rank %d of %d on %s: ok, %d checks\n", rank, size, host, check_count);
    return 0;
}
