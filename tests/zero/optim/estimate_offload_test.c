/*
 * The offload estimator against cases worked by hand: Ψ = 1200 parameters
 * on N = 4 ranks (S = 300), fp32 (4-byte elements, 2 fp32 state arrays) and
 * bf16 (2-byte elements, 3 with the master weights), every stage, every
 * tier; bytes per tier, disk bytes per step (with the optimizer tier on
 * NVMe and the parameters in memory, the step writes the pR bytes of them
 * it updates, the undo copy) and the disk-bound time. Bad
 * input is refused with the field named, and the output left alone.
 */
#include "harness/zsh_test.h"

#include <zeroshard/optim.h>

#include <math.h>
#include <string.h>

typedef struct {
    int stage;
    zsh_dtype_t precision;
    zsh_offload_t optimizer, params;
    double compute, host, nvme, read, write;
} zsh_eo_case_t;

static const zsh_eo_case_t zsh_eo_cases[] = {
    /* fp32: params 4Ψ = 4800 (4S = 1200 at stage 3), grads 4800 or 1200, states 8R */
    {0, ZSH_FLOAT32, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE, 19200, 0, 0, 0, 0},
    {0, ZSH_FLOAT32, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NONE, 9600, 9600, 0, 0, 0},
    {0, ZSH_FLOAT32, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 9600, 0, 9600, 9600, 14400},
    {1, ZSH_FLOAT32, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE, 12000, 0, 0, 0, 0},
    {1, ZSH_FLOAT32, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NONE, 9600, 2400, 0, 0, 0},
    {1, ZSH_FLOAT32, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 9600, 0, 2400, 2400, 3600},
    {2, ZSH_FLOAT32, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE, 8400, 0, 0, 0, 0},
    {2, ZSH_FLOAT32, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NONE, 4800, 3600, 0, 0, 0},
    {2, ZSH_FLOAT32, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 4800, 0, 3600, 3600, 4800},
    {3, ZSH_FLOAT32, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE, 4800, 0, 0, 0, 0},
    {3, ZSH_FLOAT32, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_CPU, 3600, 1200, 0, 0, 0},
    {3, ZSH_FLOAT32, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NVME, 0, 3600, 1200, 3600, 1200},
    {3, ZSH_FLOAT32, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 1200, 0, 3600, 3600, 4800},
    /* states 2400 + grads 1200, then the gathers 2 * 1200 and the step's 1200 each way */
    {3, ZSH_FLOAT32, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NVME, 0, 0, 4800, 7200, 4800},
    /* bf16: params 2Ψ = 2400 (600 at stage 3), grads 2400 or 600, states 12R */
    {0, ZSH_BFLOAT16, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NONE, 19200, 0, 0, 0, 0},
    {0, ZSH_BFLOAT16, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NONE, 4800, 14400, 0, 0, 0},
    {0, ZSH_BFLOAT16, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 4800, 0, 14400, 14400, 16800},
    {1, ZSH_BFLOAT16, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 4800, 0, 3600, 3600, 4200},
    {2, ZSH_BFLOAT16, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NONE, 2400, 4200, 0, 0, 0},
    {2, ZSH_BFLOAT16, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 2400, 0, 4200, 4200, 4800},
    {3, ZSH_BFLOAT16, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_CPU, 0, 4800, 0, 0, 0},
    {3, ZSH_BFLOAT16, ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_NVME, 4200, 0, 600, 1200, 600},
    /* states 3600 + grads 600, the gathers 2 * 600, and the rounded shard 600 written */
    {3, ZSH_FLOAT16, ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NVME, 0, 0, 4800, 5400, 4800},
};

ZSH_TEST(optim_estimate_offload, bytes_per_tier_and_per_step_match_hand_worked_cases)
{
    zsh_offload_estimate_out_t out;
    size_t c;

    for (c = 0; c < sizeof(zsh_eo_cases) / sizeof(zsh_eo_cases[0]); c++) {
        const zsh_eo_case_t *e = &zsh_eo_cases[c];
        zsh_optim_estimate_in_t in = {1200, 4, e->stage, e->precision, 0};
        zsh_offload_estimate_in_t t = {e->optimizer, e->params, 0, 0, 0};

        ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_offload(&in, &t, &out));
        if ((out.compute_bytes != e->compute) || (out.host_bytes != e->host) ||
            (out.nvme_bytes != e->nvme) || (out.read_bytes != e->read) ||
            (out.write_bytes != e->write) || (out.disk_bound_s != 0)) {
            zsh_test_fail(__FILE__, __LINE__,
                          "case %zu (stage %d, optimizer %d, params %d): compute %g host %g "
                          "nvme %g read %g write %g bound %g; expected %g %g %g %g %g 0",
                          c, e->stage, (int)e->optimizer, (int)e->params, out.compute_bytes,
                          out.host_bytes, out.nvme_bytes, out.read_bytes, out.write_bytes,
                          out.disk_bound_s, e->compute, e->host, e->nvme, e->read, e->write);
        }
    }
}

ZSH_TEST(optim_estimate_offload, disk_bound_counts_the_ranks_sharing_a_disk)
{
    zsh_optim_estimate_in_t in = {1200, 4, 0, ZSH_FLOAT32, 0};
    zsh_offload_estimate_in_t t = {ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NONE, 1000, 500, 0};
    zsh_offload_estimate_out_t out;

    /* 9600 B read, 14400 written, 4 ranks on the disk: 9600*4/1000 + 14400*4/500 */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_offload(&in, &t, &out));
    ZSH_EXPECT_TRUE(fabs(out.disk_bound_s - 153.6) < 1e-9);
    /* stage 3, both on NVMe, 2 ranks per disk: 7200*2/1000 + 4800*2/500 */
    in.stage            = 3;
    t.params            = ZSH_OFFLOAD_NVME;
    t.ranks_per_disk    = 2;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_offload(&in, &t, &out));
    ZSH_EXPECT_TRUE(fabs(out.disk_bound_s - 33.6) < 1e-9);
    /* a zero bandwidth: no time estimate, the bytes still counted */
    t.write_bw = 0;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_offload(&in, &t, &out));
    ZSH_EXPECT_TRUE(out.disk_bound_s == 0);
    ZSH_EXPECT_TRUE(out.read_bytes == 7200);
    /* nothing on disk: no time */
    t.write_bw = 500;
    t.optimizer = ZSH_OFFLOAD_CPU;
    t.params    = ZSH_OFFLOAD_CPU;
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_optim_estimate_offload(&in, &t, &out));
    ZSH_EXPECT_TRUE(out.disk_bound_s == 0);
}

/* Refused with ZSH_ERR_INVALID_ARG, @needle in the message, @out untouched. */
static void zsh_eo_refused(const zsh_optim_estimate_in_t *in, const zsh_offload_estimate_in_t *t,
                           const char *needle)
{
    zsh_offload_estimate_out_t out, before;

    memset(&out, 0x5a, sizeof(out));
    before = out;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_offload(in, t, &out));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), needle);
    ZSH_EXPECT_TRUE(memcmp(&out, &before, sizeof(out)) == 0);
}

ZSH_TEST(optim_estimate_offload, bad_input_is_refused_naming_the_field)
{
    zsh_optim_estimate_in_t in = {1200, 4, 3, ZSH_FLOAT32, 0};
    zsh_offload_estimate_in_t t = {ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NVME, 1e9, 1e9, 0};
    zsh_offload_estimate_out_t out;

    in.ranks = 0;
    zsh_eo_refused(&in, &t, "ranks=0");
    in.ranks = 4;
    in.stage = 5;
    zsh_eo_refused(&in, &t, "stage=5");
    in.stage = 3;
    in.precision = ZSH_INT32;
    zsh_eo_refused(&in, &t, "precision");
    in.precision = ZSH_FLOAT32;
    t.optimizer  = (zsh_offload_t)3;
    zsh_eo_refused(&in, &t, "tiers->optimizer is 3");
    t.optimizer = ZSH_OFFLOAD_DEFAULT;
    zsh_eo_refused(&in, &t, "tiers->optimizer is -1");
    t.optimizer = ZSH_OFFLOAD_NVME;
    t.params    = (zsh_offload_t)7;
    zsh_eo_refused(&in, &t, "tiers->params is 7");
    t.params = ZSH_OFFLOAD_CPU;
    in.stage = 2;
    zsh_eo_refused(&in, &t, "tiers->params is cpu at stage 2");
    in.stage  = 3;
    t.read_bw = -1;
    zsh_eo_refused(&in, &t, "tiers->read_bw is -1");
    t.read_bw  = 1e9;
    t.write_bw = NAN;
    zsh_eo_refused(&in, &t, "tiers->write_bw is nan");
    t.write_bw       = 1e9;
    t.ranks_per_disk = -2;
    zsh_eo_refused(&in, &t, "tiers->ranks_per_disk is -2");
    t.ranks_per_disk = 0;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_offload(NULL, &t, &out));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "in is NULL");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_offload(&in, NULL, &out));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "tiers is NULL");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_estimate_offload(&in, &t, NULL));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "out is NULL");
}
