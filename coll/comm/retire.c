#include "comm/retire.h"

#include <pthread.h>
#include <stdlib.h>

/* A ring of the newest shells; ranks in one process (threads) retire
 * concurrently, and retiring is rare, so one lock serves. */
static struct {
    pthread_mutex_t lock;
    void           *shells[ZSH_RETIRE_MAX];
    unsigned        next;
} zsh_retired = {.lock = PTHREAD_MUTEX_INITIALIZER};

void zsh_retire(void *shell)
{
    void *oldest;

    pthread_mutex_lock(&zsh_retired.lock);
    oldest                                  = zsh_retired.shells[zsh_retired.next];
    zsh_retired.shells[zsh_retired.next]    = shell;
    zsh_retired.next                        = (zsh_retired.next + 1) % ZSH_RETIRE_MAX;
    pthread_mutex_unlock(&zsh_retired.lock);
    free(oldest);
}

/* At exit the shells are only memory: free them, so a leak checker that
 * lists reachable blocks has nothing of ours to list. */
__attribute__((destructor)) static void zsh_retire_drain(void)
{
    unsigned i;

    pthread_mutex_lock(&zsh_retired.lock);
    for (i = 0; i < ZSH_RETIRE_MAX; i++) {
        free(zsh_retired.shells[i]);
        zsh_retired.shells[i] = NULL;
    }
    pthread_mutex_unlock(&zsh_retired.lock);
}
