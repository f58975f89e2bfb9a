/*
 * The collective layer's variables: their defaults, communicator creation
 * refusing a malformed or out-of-range one by name, the *_ALGO variables
 * naming only their collective's algorithms, ZSH_TIMEOUT agreeing with
 * zsh_comm_set_timeout(), and a trace file that cannot be opened.
 */
#include "harness/inproc.h"
#include "harness/zsh_test.h"

#include "api/config.h"
#include "base/trace.h"
#include "core/log.h"
#include "core/status.h"
#include "select/select.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Set @name to @value (unset for NULL), returning the old value to give
 * zsh_coll_env_restore(). */
static char *zsh_coll_env_set(const char *name, const char *value)
{
    const char *was = getenv(name);
    char *saved     = (was != NULL) ? strdup(was) : NULL;

    if (value != NULL) {
        setenv(name, value, 1);
    } else {
        unsetenv(name);
    }
    return saved;
}

static void zsh_coll_env_restore(const char *name, char *saved)
{
    if (saved != NULL) {
        setenv(name, saved, 1);
    } else {
        unsetenv(name);
    }
    free(saved);
}

/* Read the collective layer's table with @name=@value; the status, and the
 * error in @err. */
static zsh_status_t zsh_coll_read_with(const char *name, const char *value, char *err,
                                       size_t len)
{
    char *saved = zsh_coll_env_set(name, value);
    zsh_coll_config_t cfg;
    zsh_status_t status;

    status = zsh_coll_config_read(&cfg);
    snprintf(err, len, "%s", (status == ZSH_OK) ? "" : zsh_last_error());
    zsh_coll_env_restore(name, saved);
    return status;
}

ZSH_TEST(coll_config, defaults_match_the_documented_values)
{
    const char *was = getenv("ZSH_TIMEOUT");
    char *saved     = (was != NULL) ? strdup(was) : NULL;
    zsh_coll_config_t cfg;

    unsetenv("ZSH_TIMEOUT");
    unsetenv("ZSH_CHUNK_SIZE");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_coll_config_read(&cfg));
    ZSH_EXPECT_TRUE(cfg.timeout == 300.0);
    ZSH_EXPECT_EQ(256 * 1024, cfg.chunk_size);
    ZSH_EXPECT_EQ(ZSH_ALGO_AUTO, cfg.allgather_algo);
    if (saved != NULL) {
        setenv("ZSH_TIMEOUT", saved, 1);
    }
    free(saved);
}

ZSH_TEST(coll_config, invalid_environment_fails_communicator_creation_by_name)
{
    const char *was = getenv("ZSH_TIMEOUT");
    char *saved     = (was != NULL) ? strdup(was) : NULL;
    zsh_comm_t *comm = NULL;
    zsh_oob_t oob    = {0, 1, NULL, NULL, NULL, NULL};

    setenv("ZSH_TIMEOUT", "soon", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_init_oob(&oob, &comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_TIMEOUT='soon'");
    ZSH_EXPECT_TRUE(comm == NULL);
    if (saved != NULL) {
        setenv("ZSH_TIMEOUT", saved, 1);
    } else {
        unsetenv("ZSH_TIMEOUT");
    }
    free(saved);
}

ZSH_TEST(coll_config, algorithm_of_another_collective_is_rejected_with_the_valid_choices)
{
    zsh_inproc_job_t *job = zsh_inproc_job_create(1);
    zsh_oob_t oob         = zsh_inproc_oob(job, 0);
    zsh_comm_t *comm      = NULL;

    setenv("ZSH_ALLREDUCE_ALGO", "bruck", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_init_oob(&oob, &comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_ALLREDUCE_ALGO='bruck'");
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "expected one of auto, ring, rd, direct, eager");
    ZSH_EXPECT_TRUE(comm == NULL);
    unsetenv("ZSH_ALLREDUCE_ALGO");
    zsh_inproc_job_destroy(job);
}

ZSH_TEST(coll_config, each_algo_variable_lists_only_its_collectives_algorithms)
{
    static const struct {
        const char *variable, *refused, *names;
    } cases[] = {
        {"ZSH_ALLGATHER_ALGO", "rd", "expected one of auto, ring, bruck, rma, direct, eager, "
                                     "hier"},
        {"ZSH_ALLGATHER_ALGO", "binomial", "expected one of auto, ring, bruck, rma, direct, "
                                           "eager, hier"},
        {"ZSH_ALLGATHER_ALGO", "nope", "expected one of auto, ring, bruck, rma, direct, eager, "
                                       "hier"},
        {"ZSH_ALLGATHER_ALGO", "ordered", "expected one of auto, ring, bruck, rma, direct, eager, "
                                          "hier"},
        {"ZSH_REDUCE_SCATTER_ALGO", "bruck", "expected one of auto, ring, rd, direct, eager, "
                                             "hier, ordered, chain"},
        {"ZSH_REDUCE_SCATTER_ALGO", "rma", "expected one of auto, ring, rd, direct, eager, hier, "
                                           "ordered, chain"},
        {"ZSH_ALLREDUCE_ALGO", "binomial", "expected one of auto, ring, rd, direct, eager, hier, "
                                           "ordered, chain"},
        {"ZSH_BROADCAST_ALGO", "ring", "expected one of auto, binomial, direct, eager, hier"},
        {"ZSH_BROADCAST_ALGO", "nope", "expected one of auto, binomial, direct, eager, hier"},
    };
    char err[ZSH_ERROR_MSG_MAX], want[128];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_coll_read_with(cases[i].variable,
                                                                  cases[i].refused, err,
                                                                  sizeof(err)));
        snprintf(want, sizeof(want), "%s='%s' is invalid: %s", cases[i].variable,
                 cases[i].refused, cases[i].names);
        ZSH_EXPECT_STR_CONTAINS(err, want);
        ZSH_EXPECT_EQ(strlen(strstr(err, "expected")), strlen(cases[i].names));
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_coll_read_with("ZSH_ALLGATHER_ALGO", "Bruck", err,
                                                 sizeof(err)));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_coll_read_with("ZSH_BROADCAST_ALGO", "binomial", err,
                                                 sizeof(err)));
}

ZSH_TEST(coll_config, a_configuration_set_in_code_is_checked_with_the_same_names)
{
    zsh_coll_config_t cfg;

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_coll_config_read(&cfg));
    cfg.allgather_algo = ZSH_ALGO_RD;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_select_check_config(&cfg));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_ALLGATHER_ALGO=rd is not an algorithm of "
                                              "this collective: use auto, ring, bruck, rma, "
                                              "direct, eager or hier");
}

ZSH_TEST(coll_config, sizes_and_counts_outside_their_range_are_refused_by_name)
{
    static const struct {
        const char *variable, *value, *expected;
    } cases[] = {
        {"ZSH_CHUNK_SIZE", "0", "ZSH_CHUNK_SIZE='0' is out of range: expected a byte count "
                                "from 4k to 64m"},
        {"ZSH_CHUNK_SIZE", "1g", "ZSH_CHUNK_SIZE='1g' is out of range"},
        {"ZSH_PIPELINE_DEPTH", "100000", "ZSH_PIPELINE_DEPTH='100000' is out of range: "
                                         "expected an integer from 2 to 1024"},
        {"ZSH_PIPELINE_DEPTH", "0", "ZSH_PIPELINE_DEPTH='0' is out of range"},
        {"ZSH_TRACE_DEPTH", "0", "ZSH_TRACE_DEPTH='0' is out of range"},
        {"ZSH_TRACE_DEPTH", "100000000", "ZSH_TRACE_DEPTH='100000000' is out of range"},
        {"ZSH_SPIN_COUNT", "4000000000", "ZSH_SPIN_COUNT='4000000000' is out of range"},
        {"ZSH_YIELD_TIME", "60", "ZSH_YIELD_TIME='60' is out of range"},
        {"ZSH_SMALL_MSG_SIZE", "2048g", "ZSH_SMALL_MSG_SIZE='2048g' is out of range"},
    };
    char err[ZSH_ERROR_MSG_MAX];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_coll_read_with(cases[i].variable,
                                                                  cases[i].value, err,
                                                                  sizeof(err)));
        ZSH_EXPECT_STR_CONTAINS(err, cases[i].expected);
    }
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_coll_read_with("ZSH_CHUNK_SIZE", "4k", err, sizeof(err)));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_coll_read_with("ZSH_SPIN_COUNT", "0", err, sizeof(err)));
}

ZSH_TEST(coll_config, a_zero_timeout_fails_communicator_creation_by_name)
{
    zsh_inproc_job_t *job = zsh_inproc_job_create(1);
    zsh_oob_t oob         = zsh_inproc_oob(job, 0);
    char *saved           = zsh_coll_env_set("ZSH_TIMEOUT", "0");
    zsh_comm_t *comm      = NULL;

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_comm_init_oob(&oob, &comm));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_TIMEOUT='0' is out of range: expected a "
                                              "number of seconds from 0.001 to 31536000");
    ZSH_EXPECT_TRUE(comm == NULL);
    zsh_coll_env_restore("ZSH_TIMEOUT", saved);
    zsh_inproc_job_destroy(job);
}

/* The timeouts both paths are tried with, and whether they take them. */
static const struct {
    const char *text;
    double      seconds;
    bool        taken;
} zsh_coll_timeouts[] = {{"0", 0, false},          {"0.0005", 0.0005, false},
                         {"0.001", 0.001, true},   {"0.5", 0.5, true},
                         {"31536000", 31536000, true}, {"31536001", 31536001, false}};

#define ZSH_COLL_NTIMEOUTS (sizeof(zsh_coll_timeouts) / sizeof(zsh_coll_timeouts[0]))

static void zsh_coll_set_timeouts(zsh_comm_t *comm, void *arg)
{
    zsh_status_t *status = arg;
    size_t i;

    for (i = 0; i < ZSH_COLL_NTIMEOUTS; i++) {
        status[i] = zsh_comm_set_timeout(comm, zsh_coll_timeouts[i].seconds);
    }
}

ZSH_TEST(coll_config, zsh_timeout_and_zsh_comm_set_timeout_take_the_same_range)
{
    zsh_status_t api[ZSH_COLL_NTIMEOUTS];
    char err[ZSH_ERROR_MSG_MAX];
    zsh_status_t env;
    size_t i;

    zsh_inproc_run(1, zsh_coll_set_timeouts, api);
    for (i = 0; i < ZSH_COLL_NTIMEOUTS; i++) {
        env = zsh_coll_read_with("ZSH_TIMEOUT", zsh_coll_timeouts[i].text, err, sizeof(err));
        if ((env != api[i]) || ((env == ZSH_OK) != zsh_coll_timeouts[i].taken)) {
            zsh_test_fail(__FILE__, __LINE__, "%s s: ZSH_TIMEOUT %s, zsh_comm_set_timeout %s, "
                          "expected %s", zsh_coll_timeouts[i].text, zsh_status_string(env),
                          zsh_status_string(api[i]),
                          zsh_coll_timeouts[i].taken ? "taken" : "refused");
        }
    }
}

ZSH_TEST(coll_config, a_trace_file_that_cannot_be_opened_is_reported_once)
{
    char path[128], name[128], log[128], buf[4096];
    int saved_fd, fd, count = 0;
    const char *at;
    ssize_t got;
    FILE *out;

    if (zsh_log_level() < ZSH_LOG_WARN) {
        ZSH_SKIP("ZSH_LOG_LEVEL hides warnings");
    }
    snprintf(path, sizeof(path), "/nonexistent-zsh-%ld/trace-%%r.log", (long)getpid());
    snprintf(name, sizeof(name), "/nonexistent-zsh-%ld/trace-3.log", (long)getpid());
    snprintf(log, sizeof(log), "/tmp/zsh-trace-warn-%ld.log", (long)getpid());
    fd = open(log, O_CREAT | O_TRUNC | O_RDWR, 0600);
    ZSH_ASSERT_TRUE(fd >= 0);
    fflush(stderr);
    saved_fd = dup(STDERR_FILENO);
    dup2(fd, STDERR_FILENO);
    out = zsh_trace_open(path, 3);
    zsh_trace_close(out);
    ZSH_EXPECT_TRUE(out == stderr);
    out = zsh_trace_open(path, 3); /* a second dump, as a second timeout makes */
    zsh_trace_close(out);
    fflush(stderr);
    dup2(saved_fd, STDERR_FILENO);
    close(saved_fd);
    got = pread(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    unlink(log);
    buf[(got > 0) ? got : 0] = '\0';
    ZSH_EXPECT_STR_CONTAINS(buf, "ZSH_TRACE_FILE: cannot open ");
    ZSH_EXPECT_STR_CONTAINS(buf, name);
    ZSH_EXPECT_STR_CONTAINS(buf, "No such file or directory");
    ZSH_EXPECT_STR_CONTAINS(buf, "dumps to stderr");
    for (at = buf; (at = strstr(at, "ZSH_TRACE_FILE")) != NULL; at++) {
        count++;
    }
    ZSH_EXPECT_EQ(1, count);
}
