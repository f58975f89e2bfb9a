/*
 * One rank of a job bootstrapped by zsh_comm_init() from torchrun-style
 * variables; tests/system/boot/run_env.sh and run_guard.sh launch several.
 * Checks that the ranks really form one communicator, then prints "rank R of
 * N: ok". ENV_RANK_ITERS=N repeats the check N times, 10 ms apart, so a job
 * lives long enough for a stray process to meddle with it.
 */
#include <zeroshard.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static int env_rank_check(zsh_comm_t *comm)
{
    int rank = zsh_comm_rank(comm), size = zsh_comm_size(comm), i;
    int64_t mine = rank + 1, sum = 0;
    int *ranks = malloc(sizeof(int) * (size_t)size);
    int ok     = (ranks != NULL);

    ok = ok && (zsh_allreduce(&mine, &sum, 1, ZSH_INT64, ZSH_SUM, comm) == ZSH_OK);
    ok = ok && (sum == (int64_t)size * (size + 1) / 2);
    ok = ok && (zsh_allgather(&rank, ranks, 1, ZSH_INT32, comm) == ZSH_OK);
    for (i = 0; ok && (i < size); i++) {
        ok = (ranks[i] == i);
    }
    free(ranks);
    return ok;
}

int main(void)
{
    const struct timespec pause = {0, 10 * 1000 * 1000};
    zsh_comm_t *comm;
    zsh_status_t status;
    int ok, iters, i;

    status = zsh_comm_init(&comm);
    if (status != ZSH_OK) {
        fprintf(stderr, "zsh_comm_init: %s: %s\n", zsh_status_string(status), zsh_last_error());
        return 2;
    }
    iters = (getenv("ENV_RANK_ITERS") != NULL) ? atoi(getenv("ENV_RANK_ITERS")) : 1;
    ok    = 1;
    for (i = 0; ok && (i < iters); i++) {
        ok = env_rank_check(comm);
        if (iters > 1) {
            nanosleep(&pause, NULL);
        }
    }
    printf("rank %d of %d: %s\n", zsh_comm_rank(comm), zsh_comm_size(comm),
           ok ? "ok" : "wrong results");
    if (!ok) {
        fprintf(stderr, "collective failed: %s\n", zsh_last_error());
    }
    status = zsh_comm_destroy(comm);
    return (ok && (status == ZSH_OK)) ? 0 : 1;
}
