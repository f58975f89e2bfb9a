/*
 * The tables of where the model lives (optim/device_ops.h): each fills
 * every operation, so no caller meets a missing one on a path only a GPU
 * takes; the offloaded optimizer runs the host's rule and norm beside the
 * CUDA side's copies; an optimizer is the host's until a registration says
 * otherwise, and host parameters keep it there; the host's copies and
 * failures are plain memory and the status as it came.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "optim/optim_impl.h"

#include <string.h>

static const zsh_dev_ops_t *const zsh_dev_tables[] = {&zsh_dev_host_ops, &zsh_dev_cuda_ops,
                                                      &zsh_dev_offload_ops};

static void zsh_dev_table_check_filled(const zsh_dev_ops_t *t)
{
    ZSH_EXPECT_TRUE(t->name != NULL);
    ZSH_EXPECT_TRUE(t->setup != NULL);
    ZSH_EXPECT_TRUE(t->setup_buckets != NULL);
    ZSH_EXPECT_TRUE(t->teardown != NULL);
    ZSH_EXPECT_TRUE(t->copy != NULL);
    ZSH_EXPECT_TRUE(t->to_float != NULL);
    ZSH_EXPECT_TRUE(t->sync != NULL);
    ZSH_EXPECT_TRUE(t->host_tmp != NULL);
    ZSH_EXPECT_TRUE(t->host_tmp_free != NULL);
    ZSH_EXPECT_TRUE(t->file_patch != NULL);
    ZSH_EXPECT_TRUE(t->apply != NULL);
    ZSH_EXPECT_TRUE(t->grad_sumsq != NULL);
    ZSH_EXPECT_TRUE(t->shard_dst != NULL);
    ZSH_EXPECT_TRUE(t->grad_down != NULL);
    ZSH_EXPECT_TRUE(t->grad_landed != NULL);
    ZSH_EXPECT_TRUE(t->copies_wait != NULL);
    ZSH_EXPECT_TRUE(t->update_bucket != NULL);
    ZSH_EXPECT_TRUE(t->update_view != NULL);
    ZSH_EXPECT_TRUE(t->close_step != NULL);
    ZSH_EXPECT_TRUE(t->failed != NULL);
    ZSH_EXPECT_TRUE(t->stats != NULL);
}

ZSH_TEST(device_table, every_place_has_its_table_and_every_operation_filled)
{
    size_t i;

    for (i = 0; i < sizeof(zsh_dev_tables) / sizeof(zsh_dev_tables[0]); i++) {
        zsh_dev_table_check_filled(zsh_dev_tables[i]);
    }
    ZSH_EXPECT_TRUE(!zsh_dev_host_ops.device && !zsh_dev_host_ops.offloaded);
    ZSH_EXPECT_TRUE(zsh_dev_cuda_ops.device && !zsh_dev_cuda_ops.offloaded);
    ZSH_EXPECT_TRUE(zsh_dev_offload_ops.device && zsh_dev_offload_ops.offloaded);
}

ZSH_TEST(device_table, the_offloaded_optimizer_runs_the_hosts_rule_and_the_devices_copies)
{
    const zsh_dev_ops_t *h = &zsh_dev_host_ops, *c = &zsh_dev_cuda_ops;
    const zsh_dev_ops_t *o = &zsh_dev_offload_ops;

    ZSH_EXPECT_TRUE((o->apply == h->apply) && (c->apply != h->apply));
    ZSH_EXPECT_TRUE((o->grad_sumsq == h->grad_sumsq) && (c->grad_sumsq != h->grad_sumsq));
    ZSH_EXPECT_TRUE((o->copy == c->copy) && (c->copy != h->copy));
    ZSH_EXPECT_TRUE((o->host_tmp == c->host_tmp) && (c->host_tmp != h->host_tmp));
    /* Only the offloaded one sends shards down and parameters up. */
    ZSH_EXPECT_TRUE((c->grad_down == h->grad_down) && (o->grad_down != h->grad_down));
    ZSH_EXPECT_TRUE((c->update_bucket == h->update_bucket) &&
                    (o->update_bucket != h->update_bucket));
}

ZSH_TEST(device_table, the_hosts_copies_are_memory_and_its_failures_the_status_as_it_came)
{
    zsh_optim_t opt;
    char buf[8] = "abcdefg";
    uint16_t bf[2] = {0x3f80, 0xc000}; /* bf16 1.0 and -2.0 */
    float f[2];

    memset(&opt, 0, sizeof(opt));
    opt.cfg.precision = ZSH_BFLOAT16;
    ZSH_EXPECT_EQ(ZSH_OK, zsh_dev_host_ops.copy(&opt, buf + 1, buf, 4)); /* overlapping */
    ZSH_EXPECT_TRUE(memcmp(buf, "aabcdfg", 8) == 0);
    ZSH_EXPECT_EQ(ZSH_OK, zsh_dev_host_ops.to_float(&opt, bf, f, 2));
    ZSH_EXPECT_TRUE((f[0] == 1.0f) && (f[1] == -2.0f));
    ZSH_EXPECT_EQ(ZSH_OK, zsh_dev_host_ops.sync(&opt));
    /* No communicator to abort: opt.comm is NULL and stays untouched. */
    ZSH_EXPECT_EQ(ZSH_ERR_IO, zsh_dev_host_ops.failed(&opt, ZSH_ERR_IO));
    ZSH_EXPECT_TRUE(!zsh_sticky_failed(&opt.comm_failed));
}

static void zsh_dev_table_register(zsh_comm_t *comm, void *arg)
{
    int *ok = arg;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *p;
    float w[8] = {0};

    zsh_optim_config_init(&cfg);
    cfg.offload_optimizer = ZSH_OFFLOAD_CPU;
    cfg.stage             = 2;
    if (zsh_optim_create(comm, &cfg, &opt) != ZSH_OK) {
        return;
    }
    ok[0] = opt->dev_ops == &zsh_dev_host_ops; /* before any registration */
    ok[1] = (zsh_optim_register(opt, "w", 8, ZSH_FLOAT32, w, &p) == ZSH_OK) &&
            (opt->dev_ops == &zsh_dev_host_ops) && !opt->has_master;
    zsh_optim_destroy(opt);
}

ZSH_TEST(device_table, host_parameters_keep_the_host_table_whatever_the_offload)
{
    int ok[2] = {0, 0};

    zsh_inproc_run(1, zsh_dev_table_register, ok);
    ZSH_EXPECT_TRUE(ok[0]);
    ZSH_EXPECT_TRUE(ok[1]);
}
