/*
 * Where the kernel refuses io_uring (as container seccomp profiles do, with
 * EPERM), AUTO falls back to libaio, and to the thread pool where io_setup
 * is refused too, while a forced backend that is refused fails naming it and
 * why. A forked child installs the seccomp filter, so this lives in the
 * fault tests' binary.
 */
#define _GNU_SOURCE
#include "harness/zsh_test.h"
#include "zero/aio/aio_helpers.h"

#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Refuse @nr1 and @nr2 with EPERM, allow every other system call. */
static int zsh_aio_refuse(long nr1, long nr2)
{
    struct sock_filter code[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr1, 2, 0),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)nr2, 1, 0),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
    struct sock_fprog prog = {sizeof(code) / sizeof(code[0]), code};

    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        return -1;
    }
    return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog);
}

/* In the child: 0 if AUTO takes @want and forcing uring fails naming it. */
static int zsh_aio_fallback_child(const char *dir, long nr2, const char *want)
{
    zsh_aio_params_t params = zsh_aio_test_params(dir, "fallback", ZSH_AIO_AUTO, 0, 0);
    zsh_aio_t *aio;

    if (zsh_aio_refuse(SYS_io_uring_setup, nr2) != 0) {
        return 10;
    }
    if (zsh_aio_create(&params, &aio) != ZSH_OK) {
        return 11;
    }
    if (strcmp(zsh_aio_backend(aio), want) != 0) {
        return 12;
    }
    zsh_aio_destroy(aio);
    params.kind = ZSH_AIO_URING;
    if ((zsh_aio_create(&params, &aio) != ZSH_ERR_INVALID_ARG) ||
        (strstr(zsh_last_error(), "io_uring") == NULL) ||
        (strstr(zsh_last_error(), strerror(EPERM)) == NULL)) {
        return 13;
    }
    return 0;
}

static void zsh_aio_fallback(long nr2, const char *want)
{
    char why[256], *dir;
    int status = -1;
    pid_t pid;

    if (!zsh_aio_test_kind_ok(ZSH_AIO_URING, why, sizeof(why)) ||
        !zsh_aio_test_kind_ok(ZSH_AIO_LIBAIO, why, sizeof(why))) {
        ZSH_SKIP(why); /* the fallback is seen only from a working io_uring and libaio */
    }
    dir = zsh_aio_test_tmpdir("/dev/shm");
    ZSH_ASSERT_TRUE(dir != NULL);
    pid = fork();
    if (pid == 0) {
        alarm(30);
        _exit(zsh_aio_fallback_child(dir, nr2, want));
    }
    ZSH_EXPECT_TRUE((pid > 0) && (waitpid(pid, &status, 0) == pid));
    ZSH_EXPECT_TRUE(WIFEXITED(status));
    ZSH_EXPECT_EQ(0, WEXITSTATUS(status)); /* 10 filter, 11 create, 12 backend, 13 forced */
    ZSH_EXPECT_EQ(0, zsh_aio_test_entries(dir));
    zsh_aio_test_rmtree(dir);
    free(dir);
}

ZSH_TEST(aio_fallback, io_uring_refused_falls_back_to_libaio)
{
    zsh_aio_fallback(SYS_io_uring_setup, "libaio");
}

ZSH_TEST(aio_fallback, io_uring_and_io_setup_refused_fall_back_to_threads)
{
    zsh_aio_fallback(SYS_io_setup, "threads");
}
