/*
 * A process killed with SIGKILL leaves its engine's directory behind; the
 * next engine of the same job id and rank sweeps it, while the directory of
 * an engine whose process still runs is never touched. Forked processes, so
 * this lives in the fault tests' binary.
 */
#define _GNU_SOURCE
#include "harness/zsh_test.h"
#include "zero/aio/aio_helpers.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A child that makes an engine and a file with data, says its directory on
 * @fd, then waits to be killed. */
static void zsh_aio_sweep_child(const char *dir, int fd)
{
    zsh_aio_params_t params = zsh_aio_test_params(dir, "swept", ZSH_AIO_AUTO, 0, 0);
    zsh_aio_file_t *file;
    zsh_aio_req_t *req;
    zsh_aio_t *aio;
    void *buf = zsh_aio_buf_alloc(1 << 16);
    char line[512] = "";

    memset(buf, 7, 1 << 16);
    if ((zsh_aio_create(&params, &aio) == ZSH_OK) &&
        (zsh_aio_open(aio, "opt.0", &file) == ZSH_OK) &&
        (zsh_aio_write(aio, file, 0, buf, 1 << 16, &req) == ZSH_OK) &&
        (zsh_aio_wait(req) == ZSH_OK)) {
        snprintf(line, sizeof(line), "%s", zsh_aio_dir(aio));
    }
    (void)!write(fd, line, sizeof(line));
    for (;;) {
        pause();
    }
}

static pid_t zsh_aio_sweep_spawn(const char *dir, char *child_dir, size_t len)
{
    char line[512];
    int pipefd[2];
    pid_t pid;

    if (pipe(pipefd) != 0) {
        return -1;
    }
    pid = fork();
    if (pid == 0) {
        close(pipefd[0]);
        alarm(30); /* never outlive a failed test */
        zsh_aio_sweep_child(dir, pipefd[1]);
        _exit(0);
    }
    close(pipefd[1]);
    if ((pid < 0) || (read(pipefd[0], line, sizeof(line)) != (ssize_t)sizeof(line)) ||
        (line[0] == '\0')) {
        close(pipefd[0]);
        return (pid < 0) ? -1 : -pid;
    }
    close(pipefd[0]);
    snprintf(child_dir, len, "%s", line);
    return pid;
}

ZSH_TEST(aio_sweep, a_killed_jobs_directory_is_swept_and_a_live_ones_is_kept)
{
    zsh_aio_params_t params;
    char child_dir[512];
    zsh_aio_t *live, *next;
    char *dir = zsh_aio_test_tmpdir("/dev/shm");
    pid_t pid;
    int status;

    ZSH_ASSERT_TRUE(dir != NULL);
    pid = zsh_aio_sweep_spawn(dir, child_dir, sizeof(child_dir));
    if (pid < 0) {
        if (pid < -1) {
            kill(-pid, SIGKILL);
            waitpid(-pid, NULL, 0);
        }
        zsh_test_fail(__FILE__, __LINE__, "the child could not make its engine");
        return;
    }

    /* The child lives: its directory stays, and we get the next one. */
    params = zsh_aio_test_params(dir, "swept", ZSH_AIO_AUTO, 0, 0);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &live));
    ZSH_EXPECT_TRUE(strcmp(child_dir, zsh_aio_dir(live)) != 0);
    ZSH_EXPECT_EQ(1, zsh_aio_test_entries(child_dir));
    zsh_aio_destroy(live);

    /* Killed, it leaves its files; the next engine of the job removes them. */
    kill(pid, SIGKILL);
    ZSH_EXPECT_TRUE(waitpid(pid, &status, 0) == pid);
    ZSH_EXPECT_EQ(1, zsh_aio_test_entries(child_dir));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_aio_create(&params, &next));
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(zsh_aio_dir(next))); /* r0-0 again, empty */
    ZSH_EXPECT_EQ(0, strcmp(child_dir, zsh_aio_dir(next)));
    zsh_aio_destroy(next);
    ZSH_EXPECT_EQ(-1, zsh_aio_test_entries(child_dir));
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(dir));
    zsh_aio_test_rmtree(dir);
    free(dir);
}
