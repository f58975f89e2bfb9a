/*
 * The optimizer on CUDA device memory gives the host optimizer's results.
 *
 * The quad model (quad.h) trains twice on the same one-rank communicator:
 * once with its parameters and gradients in host memory, once with
 * cudaMalloc'd copies registered and device gradients handed over (the
 * model itself computes on the host, from what a fetch returns). The device
 * kernels give the host kernels' bits, so losses and final parameters are
 * the same bits wherever no gradient norm enters the update; where one does
 * (clipping) or is computed for fp16 loss scaling, the norm is a sum of
 * squares added in another order and the runs agree within 1e-6.
 *
 * NCCL refuses two ranks of one communicator on one GPU, so each rank runs
 * on a communicator of its own, split from the test's: as many concurrent
 * jobs as the runner has ranks, the cases of a matrix dealt out among them.
 * Without a device, or in a build without the device kernels and NCCL,
 * every device case skips, saying why.
 */
#include "cuda_helpers.h"
#include "device_quad.h"
#include "optim/tier.h"

#include <zeroshard/device.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef ZSH_HAVE_NVCC
#include <cuda_runtime_api.h>
#endif

ZSH_RANK_TEST(optim_device, every_stage_precision_and_rule_gives_the_host_runs_results)
{
    const zsh_quad_run_t tmpl = {.bad_rank = -1};
    zsh_quad_run_t dev, host;
    zsh_optim_config_t cfg;
    zsh_comm_t *self;
    char what[160];
    int c, stage, prec, rule;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    /* Case c on rank c mod N: every case once per rank count. */
    for (c = zsh_comm_rank(comm); (c < 4 * 3 * 3) && (zsh_test_failures() == 0);
         c += zsh_comm_size(comm)) {
        stage = c % 4;
        prec  = (c / 4) % 3;
        rule  = c / 12;
        zsh_dv_config(&cfg, stage, zsh_dv_precs[prec], rule);
        snprintf(what, sizeof(what), "stage %d %s %s", stage, zsh_dv_prec_names[prec],
                 zsh_dv_rule_names[rule]);
        if (zsh_dv_pair(self, &cfg, &tmpl, &dev, &host)) {
            /* fp16's dynamic loss scaling computes the norm to find overflows. */
            zsh_dv_compare(&dev, &host, zsh_dv_precs[prec] != ZSH_FLOAT16, what);
        }
        zsh_quad_free(&dev);
        zsh_quad_free(&host);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

ZSH_RANK_TEST(optim_device, fp16_loss_scaling_skips_the_same_overflowing_step_as_the_host)
{
    const zsh_quad_run_t tmpl = {.bad_rank = 0, .bad_step = 2}; /* inf gradients at step 2 */
    zsh_quad_run_t dev, host;
    zsh_optim_config_t cfg;
    zsh_comm_t *self;
    char what[160];
    int stage;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    for (stage = zsh_comm_rank(comm) % 4; stage < 4; stage += zsh_comm_size(comm)) {
        zsh_dv_config(&cfg, stage, ZSH_FLOAT16, 0);
        snprintf(what, sizeof(what), "fp16 overflow at step 2, stage %d", stage);
        if (zsh_dv_pair(self, &cfg, &tmpl, &dev, &host)) {
            ZSH_EXPECT_EQ(0, host.applied[1]);
            ZSH_EXPECT_EQ(1, dev.stats.skipped_steps);
            zsh_dv_compare(&dev, &host, false, what);
        }
        zsh_quad_free(&dev);
        zsh_quad_free(&host);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

ZSH_RANK_TEST(optim_device, clipping_by_the_global_norm_matches_the_host_within_rounding)
{
    const zsh_quad_run_t tmpl = {.bad_rank = -1};
    zsh_quad_run_t dev, host;
    zsh_optim_config_t cfg;
    zsh_comm_t *self;
    char what[160];
    int stage;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    for (stage = zsh_comm_rank(comm) % 4; stage < 4; stage += zsh_comm_size(comm)) {
        zsh_dv_config(&cfg, stage, ZSH_FLOAT32, 2);
        cfg.max_grad_norm = 0.5f;
        snprintf(what, sizeof(what), "sgd clipped to 0.5, stage %d", stage);
        if (zsh_dv_pair(self, &cfg, &tmpl, &dev, &host)) {
            /* The norm is well above 0.5: the clipping changes the update. */
            ZSH_EXPECT_TRUE(host.stats.last_grad_norm > 1.0);
            zsh_dv_compare(&dev, &host, false, what);
        }
        zsh_quad_free(&dev);
        zsh_quad_free(&host);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

/* An optimizer at @stage over two parameters registered from @bufs (device
 * or host memory holding @init), set up; NULL after a test failure. */
static zsh_optim_t *zsh_dv_small(zsh_comm_t *comm, int stage, void *bufs[2],
                                 zsh_param_t *params[2])
{
    static const size_t numel[2] = {1000, 37};
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;

    zsh_dv_config(&cfg, stage, ZSH_FLOAT32, 0);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_create(comm, &cfg, &opt));
    if (opt == NULL) {
        return NULL;
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "w0", numel[0], ZSH_FLOAT32, bufs[0],
                                                 &params[0]));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "w1", numel[1], ZSH_FLOAT32, bufs[1],
                                                 &params[1]));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
    if (zsh_test_failures() != 0) {
        zsh_optim_destroy(opt);
        return NULL;
    }
    return opt;
}

ZSH_RANK_TEST(optim_device, a_device_optimizer_fetches_device_memory_and_counts_device_bytes)
{
    float init[1000], back[1000];
    void *bufs[2] = {NULL, NULL}, *w;
    zsh_param_t *params[2];
    zsh_mem_type_t type;
    zsh_optim_stats_t st;
    zsh_optim_t *opt;
    zsh_comm_t *self;
    char what[64];
    int stage, i;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    for (i = 0; i < 1000; i++) {
        init[i] = (float)cos(0.3 * i);
    }
    bufs[0] = zsh_ck_dev_alloc(sizeof(init));
    bufs[1] = zsh_ck_dev_alloc(37 * sizeof(float));
    for (stage = 0; (stage <= 3) && (bufs[0] != NULL) && (bufs[1] != NULL); stage++) {
        snprintf(what, sizeof(what), "stage %d", stage);
        if (!zsh_ck_put(bufs[0], init, sizeof(init)) ||
            !zsh_ck_put(bufs[1], init, 37 * sizeof(float)) ||
            ((opt = zsh_dv_small(self, stage, bufs, params)) == NULL)) {
            break;
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
        if ((st.device != 1) || (st.device_bytes == 0) || (st.state_bytes == 0) ||
            (st.device_bytes < st.state_bytes) || (st.device_peak_bytes < st.device_bytes) ||
            ((stage == 3) && ((st.param_bytes == 0) || (st.device_bytes < st.param_bytes)))) {
            zsh_test_fail(__FILE__, __LINE__, "%s after setup: device=%d device_bytes=%zu "
                          "peak=%zu state_bytes=%zu param_bytes=%zu", what, st.device,
                          st.device_bytes, st.device_peak_bytes, st.state_bytes,
                          st.param_bytes);
        }
        /* Stages 0-2 give the framework's own buffer, stage 3 a gathered one. */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_fetch(opt, params[0], &w));
        if (stage < 3) {
            ZSH_EXPECT_TRUE(w == bufs[0]);
        } else {
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_mem_type(w, &type));
            ZSH_EXPECT_EQ(ZSH_MEM_CUDA, type);
        }
        if (zsh_ck_get(back, w, sizeof(back))) {
            ZSH_EXPECT_TRUE(memcmp(back, init, sizeof(init)) == 0);
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_release(opt, params[0]));
        zsh_optim_destroy(opt);
    }
    zsh_ck_dev_free(bufs[1]);
    zsh_ck_dev_free(bufs[0]);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

/* Needs no device: the device fields of a host optimizer stay 0. */
ZSH_RANK_TEST(optim_device, a_host_optimizer_counts_no_device_memory_and_no_copies)
{
    float w0[1000] = {0}, w1[37] = {0};
    void *bufs[2] = {w0, w1};
    zsh_param_t *params[2];
    zsh_optim_stats_t st;
    zsh_optim_t *opt;
    int stage;

    for (stage = 0; stage <= 3; stage++) {
        opt = zsh_dv_small(comm, stage, bufs, params);
        ZSH_ASSERT_TRUE(opt != NULL);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_get_stats(opt, &st));
        ZSH_EXPECT_EQ(0, st.device);
        ZSH_EXPECT_EQ(0, st.device_bytes);
        ZSH_EXPECT_EQ(0, st.device_peak_bytes);
        ZSH_EXPECT_EQ(0, st.copy_bytes);
        zsh_optim_destroy(opt);
    }
}

ZSH_RANK_TEST(optim_device, optimizer_offload_to_host_gives_the_same_bits_in_less_device_memory)
{
    const zsh_quad_run_t tmpl = {.bad_rank = -1, .mem = &zsh_dv_mem};
    zsh_quad_run_t in, off;
    zsh_optim_config_t cfg;
    zsh_comm_t *self;
    char what[160];
    int c, stage, prec;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    for (c = zsh_comm_rank(comm); c < 4; c += zsh_comm_size(comm)) {
        stage = 2 + c % 2;
        prec  = c / 2; /* fp32, and bf16 with its fp32 master weights */
        zsh_dv_config(&cfg, stage, zsh_dv_precs[prec], 0);
        snprintf(what, sizeof(what), "offload cpu, stage %d %s", stage, zsh_dv_prec_names[prec]);
        in  = tmpl;
        off = tmpl;
        if (zsh_quad_train(self, &cfg, ZSH_DV_STEPS, &in)) {
            cfg.offload_optimizer = ZSH_OFFLOAD_CPU;
            if (zsh_quad_train(self, &cfg, ZSH_DV_STEPS, &off)) {
                const zsh_optim_stats_t *s = &off.stats;

                zsh_dv_expect_bits(&off, &in, ZSH_DV_STEPS, what);
                if ((s->device != 1) || !(s->device_bytes < in.stats.device_bytes) ||
                    (s->host_bytes == 0) || (s->copy_bytes == 0) || (in.stats.copy_bytes != 0) ||
                    !(s->copy_s >= s->copy_wait_s) || !(s->copy_wait_s >= 0.0)) {
                    zsh_test_fail(__FILE__, __LINE__, "%s: device=%d device_bytes=%zu (%zu "
                                  "without offload) host_bytes=%zu copy_bytes=%llu (%llu "
                                  "without) copy_s=%g copy_wait_s=%g", what, s->device,
                                  s->device_bytes, in.stats.device_bytes, s->host_bytes,
                                  s->copy_bytes, in.stats.copy_bytes, s->copy_s, s->copy_wait_s);
                }
            }
        }
        zsh_quad_free(&off);
        zsh_quad_free(&in);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

ZSH_RANK_TEST(optim_device, optimizer_offload_to_nvme_gives_the_same_bits_in_less_device_memory)
{
    const zsh_quad_run_t tmpl = {.bad_rank = -1, .mem = &zsh_dv_mem};
    char dtmpl[] = "/var/tmp/zsh-device-nvme-XXXXXX", *dir;
    zsh_quad_run_t in, off;
    zsh_optim_config_t cfg;
    zsh_comm_t *self;
    char what[160];
    int c, stage, prec;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    dir = mkdtemp(dtmpl);
    ZSH_EXPECT_TRUE(dir != NULL);
    for (c = zsh_comm_rank(comm); (dir != NULL) && (c < 4); c += zsh_comm_size(comm)) {
        stage = 2 + c % 2;
        prec  = c / 2; /* fp32, and bf16 with its fp32 master weights */
        zsh_dv_config(&cfg, stage, zsh_dv_precs[prec], 0);
        snprintf(what, sizeof(what), "offload nvme, stage %d %s", stage, zsh_dv_prec_names[prec]);
        in  = tmpl;
        off = tmpl;
        if (zsh_quad_train(self, &cfg, ZSH_DV_STEPS, &in)) {
            cfg.offload_optimizer = ZSH_OFFLOAD_NVME;
            cfg.nvme_dir          = dir;
            /* A sub-group per bucket, two swapped at once: the step's
             * pipeline reuses its buffers, and sends up bucket by bucket. */
            cfg.sub_group_size = ZSH_TIER_ALIGN_ELEMS;
            cfg.host_mem_limit = 2 * 5 * 4 * ZSH_TIER_ALIGN_ELEMS;
            if (zsh_quad_train(self, &cfg, ZSH_DV_STEPS, &off)) {
                const zsh_optim_stats_t *s = &off.stats;

                zsh_dv_expect_bits(&off, &in, ZSH_DV_STEPS, what);
                if ((s->device != 1) || !(s->device_bytes < in.stats.device_bytes) ||
                    (s->nvme_bytes == 0) || (s->io_read_bytes == 0) ||
                    (s->io_write_bytes == 0) || (s->copy_bytes == 0) ||
                    (s->host_buffer_peak_bytes > cfg.host_mem_limit) ||
                    !(s->copy_s > 0.0) || !(s->copy_wait_s >= 0.0)) {
                    zsh_test_fail(__FILE__, __LINE__, "%s: device=%d device_bytes=%zu (%zu "
                                  "without offload) nvme_bytes=%zu io read %llu write %llu "
                                  "copy_bytes=%llu host_buffer_peak_bytes=%zu copy_s=%g "
                                  "copy_wait_s=%g", what, s->device, s->device_bytes,
                                  in.stats.device_bytes, s->nvme_bytes, s->io_read_bytes,
                                  s->io_write_bytes, s->copy_bytes, s->host_buffer_peak_bytes,
                                  s->copy_s, s->copy_wait_s);
                }
            }
        }
        zsh_quad_free(&off);
        zsh_quad_free(&in);
    }
    if (dir != NULL) {
        rmdir(dir);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

ZSH_RANK_TEST(optim_device, parameter_offload_to_host_and_nvme_gives_the_same_bits_off_the_device)
{
    static const zsh_offload_t tiers[4][2] = {/* optimizer, parameters */
                                              {ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_CPU},
                                              {ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_NVME},
                                              {ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NVME},
                                              {ZSH_OFFLOAD_NVME, ZSH_OFFLOAD_CPU}};
    static const char *const names[] = {"none", "cpu", "nvme"};
    const zsh_quad_run_t tmpl = {.bad_rank = -1, .mem = &zsh_dv_mem};
    char dtmpl[] = "/var/tmp/zsh-device-params-XXXXXX", *dir;
    zsh_quad_run_t in, opt_only, off;
    zsh_optim_config_t cfg;
    zsh_comm_t *self;
    char what[160];
    int c, t, prec;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    dir = mkdtemp(dtmpl);
    ZSH_EXPECT_TRUE(dir != NULL);
    for (c = zsh_comm_rank(comm); (dir != NULL) && (c < 8); c += zsh_comm_size(comm)) {
        t    = c % 4;
        prec = c / 4; /* fp32, and bf16 with its fp32 master weights */
        zsh_dv_config(&cfg, 3, zsh_dv_precs[prec], 0);
        cfg.nvme_dir       = dir;
        cfg.sub_group_size = ZSH_TIER_ALIGN_ELEMS;
        cfg.host_mem_limit = 2 * 5 * 4 * ZSH_TIER_ALIGN_ELEMS;
        snprintf(what, sizeof(what), "stage 3 %s, optimizer %s, parameters %s",
                 zsh_dv_prec_names[prec], names[tiers[t][0]], names[tiers[t][1]]);
        in       = tmpl;
        opt_only = tmpl;
        off      = tmpl;
        if (zsh_quad_train(self, &cfg, ZSH_DV_STEPS, &in)) {
            cfg.offload_optimizer = tiers[t][0];
            if (zsh_quad_train(self, &cfg, ZSH_DV_STEPS, &opt_only)) {
                cfg.offload_params = tiers[t][1];
                if (zsh_quad_train(self, &cfg, ZSH_DV_STEPS, &off)) {
                    const zsh_optim_stats_t *s = &off.stats;
                    bool in_file = tiers[t][1] == ZSH_OFFLOAD_NVME;

                    zsh_dv_expect_bits(&off, &in, ZSH_DV_STEPS, what);
                    /* The shards left the device: less there than with the
                     * optimizer alone offloaded, and found in their tier. */
                    if ((s->device != 1) || !(s->device_bytes < opt_only.stats.device_bytes) ||
                        (s->param_bytes != in.stats.param_bytes) ||
                        (in_file ? (s->nvme_bytes == 0) || (s->io_read_bytes == 0)
                                 : (s->host_bytes <= opt_only.stats.host_bytes))) {
                        zsh_test_fail(__FILE__, __LINE__, "%s: device=%d device_bytes=%zu (%zu "
                                      "with the optimizer alone offloaded) param_bytes=%zu (%zu) "
                                      "host_bytes=%zu (%zu) nvme_bytes=%zu io_read_bytes=%llu",
                                      what, s->device, s->device_bytes,
                                      opt_only.stats.device_bytes, s->param_bytes,
                                      in.stats.param_bytes, s->host_bytes,
                                      opt_only.stats.host_bytes, s->nvme_bytes, s->io_read_bytes);
                    }
                }
            }
        }
        zsh_quad_free(&off);
        zsh_quad_free(&opt_only);
        zsh_quad_free(&in);
    }
    if (dir != NULL) {
        rmdir(dir);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

/* A stream of the caller's (cudaStreamCreate), or NULL after a test failure. */
static void *zsh_dv_stream_create(void)
{
#ifdef ZSH_HAVE_NVCC
    cudaStream_t stream = NULL;

    if (cudaStreamCreate(&stream) == cudaSuccess) {
        return stream;
    }
#endif
    zsh_test_fail(__FILE__, __LINE__, "cudaStreamCreate failed");
    return NULL;
}

static void zsh_dv_stream_destroy(void *stream)
{
#ifdef ZSH_HAVE_NVCC
    ZSH_EXPECT_TRUE(cudaStreamDestroy((cudaStream_t)stream) == cudaSuccess);
#else
    (void)stream;
#endif
}

ZSH_RANK_TEST(optim_device, a_stream_of_the_callers_gives_the_same_bits)
{
    const zsh_quad_run_t tmpl = {.bad_rank = -1};
    zsh_quad_run_t dev, host;
    zsh_optim_config_t cfg;
    zsh_comm_t *self;
    char what[160];
    void *stream;
    int stage;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    stream = zsh_dv_stream_create();
    for (stage = zsh_comm_rank(comm) % 4; (stream != NULL) && (stage < 4);
         stage += zsh_comm_size(comm)) {
        zsh_dv_config(&cfg, stage, ZSH_BFLOAT16, 0);
        cfg.stream = stream;
        snprintf(what, sizeof(what), "bf16 adamw on a stream of the caller's, stage %d", stage);
        if (zsh_dv_pair(self, &cfg, &tmpl, &dev, &host)) {
            zsh_dv_compare(&dev, &host, true, what);
        }
        zsh_quad_free(&dev);
        zsh_quad_free(&host);
    }
    if (stream != NULL) {
        zsh_dv_stream_destroy(stream);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

ZSH_RANK_TEST(optim_device, host_and_device_parameters_in_one_optimizer_are_refused)
{
    float host[37] = {0};
    zsh_param_t *first, *mixed;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt;
    zsh_comm_t *self;
    void *dev;
    int order;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    dev = zsh_ck_dev_alloc(sizeof(host));
    /* Device then host at stage 0, host then device at stage 3. */
    for (order = 0; (dev != NULL) && zsh_ck_put(dev, host, sizeof(host)) && (order < 2);
         order++) {
        zsh_dv_config(&cfg, order ? 3 : 0, ZSH_FLOAT32, 0);
        opt = NULL;
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_create(self, &cfg, &opt));
        if (opt == NULL) {
            break;
        }
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "first", 37, ZSH_FLOAT32,
                                                     order ? (void *)host : dev, &first));
        mixed = NULL;
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                          zsh_optim_register(opt, "mixed_in", 37, ZSH_FLOAT32,
                                             order ? dev : (void *)host, &mixed));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "mixed_in");
        ZSH_DV_EXPECT_MENTIONS("host");
        ZSH_EXPECT_TRUE(mixed == NULL);
        /* The refusal changed nothing: the first parameter sets up alone. */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
        zsh_optim_destroy(opt);
    }
    zsh_ck_dev_free(dev);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

ZSH_RANK_TEST(optim_device, a_host_gradient_for_device_parameters_is_refused)
{
    float grad[37], back[37] = {0};
    void *w = NULL, *g = NULL;
    zsh_optim_config_t cfg;
    zsh_optim_t *opt = NULL;
    zsh_param_t *param;
    zsh_comm_t *self;
    int i, applied = 0;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    for (i = 0; i < 37; i++) {
        grad[i] = 0.5f;
    }
    w = zsh_ck_dev_alloc(sizeof(back));
    g = zsh_ck_dev_alloc(sizeof(grad));
    zsh_dv_config(&cfg, 2, ZSH_FLOAT32, 2);
    if ((w != NULL) && (g != NULL) && zsh_ck_put(w, back, sizeof(back)) &&
        zsh_ck_put(g, grad, sizeof(grad)) &&
        zsh_ck_status_ok(__FILE__, __LINE__, zsh_optim_create(self, &cfg, &opt), "create")) {
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_register(opt, "devparam", 37, ZSH_FLOAT32, w,
                                                     &param));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_setup(opt));
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_optim_grad_ready(opt, param, grad));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "devparam");
        ZSH_DV_EXPECT_MENTIONS("host");
        /* Nothing was taken: the device gradient is the step's one. */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_grad_ready(opt, param, g));
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_optim_step(opt, &applied));
        ZSH_EXPECT_EQ(1, applied);
        if (zsh_ck_get(back, w, sizeof(back))) {
            ZSH_EXPECT_TRUE(back[0] < 0.0f); /* descended along a positive gradient */
        }
        zsh_optim_destroy(opt);
    }
    zsh_ck_dev_free(g);
    zsh_ck_dev_free(w);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}

/* One parameter at @buf under @cfg, registered and set up: refused with
 * ZSH_ERR_INVALID_ARG mentioning @word (at register or at setup) where
 * @word is given, else accepted; the optimizer is destroyed either way. */
static void zsh_dv_tier_case(zsh_comm_t *comm, const zsh_optim_config_t *cfg, void *buf,
                             const char *word, const char *what)
{
    zsh_optim_t *opt = NULL;
    zsh_param_t *param;
    zsh_status_t status;

    if (!zsh_ck_status_ok(__FILE__, __LINE__, zsh_optim_create(comm, cfg, &opt), what)) {
        return;
    }
    status = zsh_optim_register(opt, "tiered", 37, ZSH_FLOAT32, buf, &param);
    if (status == ZSH_OK) {
        status = zsh_optim_setup(opt);
    }
    if (word == NULL) {
        zsh_ck_status_ok(__FILE__, __LINE__, status, what);
    } else if (status != ZSH_ERR_INVALID_ARG) {
        zsh_test_fail(__FILE__, __LINE__, "%s with device parameters: status %d, expected "
                      "ZSH_ERR_INVALID_ARG: %s", what, (int)status, zsh_last_error());
    } else {
        ZSH_DV_EXPECT_MENTIONS(word);
    }
    zsh_optim_destroy(opt);
}

ZSH_RANK_TEST(optim_device, lone_param_offload_hpz_and_offload_below_stage_2_are_refused_for_device_parameters)
{
    char tmpl[] = "/var/tmp/zsh-device-optim-XXXXXX", *dir;
    float host[37] = {0};
    zsh_optim_config_t cfg;
    int nnodes = 0, local_size = 0;
    zsh_comm_t *self;
    void *dev;

    ZSH_DV_NEED_DEVICE();
    self = zsh_dv_self(comm);
    ZSH_ASSERT_TRUE(self != NULL);
    dir = mkdtemp(tmpl);
    dev = zsh_ck_dev_alloc(sizeof(host));
    if ((dir != NULL) && (dev != NULL) && zsh_ck_put(dev, host, sizeof(host))) {
        /* Each setting works with host parameters: the refusal is the device's. */
        zsh_dv_config(&cfg, 1, ZSH_FLOAT32, 0);
        cfg.offload_optimizer = ZSH_OFFLOAD_NVME;
        cfg.nvme_dir          = dir;
        zsh_dv_tier_case(self, &cfg, host, NULL, "offload_optimizer=nvme at stage 1");
        zsh_dv_tier_case(self, &cfg, dev, "stage", "offload_optimizer=nvme at stage 1");
        cfg.stage = 3; /* where the device takes it */
        zsh_dv_tier_case(self, &cfg, dev, NULL, "offload_optimizer=nvme at stage 3");
        /* Offloaded device parameters are updated by the host: the
         * optimizer must be offloaded with them. */
        zsh_dv_config(&cfg, 3, ZSH_FLOAT32, 0);
        cfg.offload_params = ZSH_OFFLOAD_CPU;
        zsh_dv_tier_case(self, &cfg, host, NULL, "offload_params=cpu alone");
        zsh_dv_tier_case(self, &cfg, dev, "offload_optimizer", "offload_params=cpu alone");
        cfg.offload_optimizer = ZSH_OFFLOAD_CPU;
        zsh_dv_tier_case(self, &cfg, dev, NULL, "offload_params=cpu with offload_optimizer=cpu");
        /* hpZ needs a group size that divides the ranks of a node, so it is
         * asked of the test's communicator, on one node at even rank counts;
         * every rank there registers memory of the same GPU, which NCCL
         * would refuse: the refusal comes before any device collective. */
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_node(comm, NULL, &nnodes, NULL, &local_size));
        if ((nnodes == 1) && (local_size % 2 == 0)) {
            zsh_dv_config(&cfg, 3, ZSH_FLOAT32, 0);
            cfg.hpz = 2;
            zsh_dv_tier_case(comm, &cfg, host, NULL, "hpz=2");
            zsh_dv_tier_case(comm, &cfg, dev, "hpz", "hpz=2");
        }
    } else {
        zsh_test_fail(__FILE__, __LINE__, "mkdtemp(%s) or the device buffer failed", tmpl);
    }
    zsh_ck_dev_free(dev);
    if (dir != NULL) {
        rmdir(dir);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_comm_destroy(self));
}
