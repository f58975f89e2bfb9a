/*
 * Cross-memory attach: reading or writing a buffer of another process on
 * this node with process_vm_readv(2) and process_vm_writev(2), one copy and
 * no staging.
 *
 * UCX has a CMA transport too, but leaves it out of the endpoints that
 * report peer failures, which ZeroShard needs (docs/DECISIONS.md,
 * "Node-local shortcuts"); so the transport calls the system call itself and
 * maps its errors: a peer that died is ESRCH, reported as a peer failure.
 *
 * Two processes can use it when both run on one kernel, in one PID namespace
 * (a PID means the same process to both), and the kernel lets them read
 * each other (Yama's ptrace_scope, seccomp). Each rank publishes a
 * zsh_cma_id_t with its transport address, so every rank reaches the same
 * verdict about every pair.
 */
#ifndef ZSH_TRANSPORTS_UCX_CMA_CMA_H_
#define ZSH_TRANSPORTS_UCX_CMA_CMA_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define ZSH_CMA_BOOT_ID_LEN 40

typedef struct zsh_cma_id {
    int64_t  pid;
    uint64_t pidns_dev, pidns_ino;  /* identity of the PID namespace */
    char     boot_id[ZSH_CMA_BOOT_ID_LEN]; /* the kernel's, NUL-padded: which host */
    uint8_t  usable;                /* enabled, and this process passed the probe */
    uint8_t  pad[7];
} zsh_cma_id_t;

/*
 * This process's identity. With @enabled, it also lets processes of the same
 * user read its memory where Yama's ptrace_scope is 1 (as Open MPI and UCX
 * do), and checks that process_vm_readv works here; usable says whether both
 * went well. Without @enabled, usable is 0 and nothing is changed.
 */
void zsh_cma_local_id(bool enabled, zsh_cma_id_t *id);

/* Whether processes with identities @a and @b can read each other: one
 * kernel (the boot id; every host's initial PID namespace has the same
 * inode), one PID namespace, both usable. */
static inline bool zsh_cma_reachable(const zsh_cma_id_t *a, const zsh_cma_id_t *b)
{
    return a->usable && b->usable && (a->pidns_dev == b->pidns_dev) &&
           (a->pidns_ino == b->pidns_ino) &&
           (memcmp(a->boot_id, b->boot_id, sizeof(a->boot_id)) == 0);
}

/*
 * Copy @len bytes between @local_buf and address @remote_addr of process
 * @pid: into @local_buf, or with @write out of it. Returns ZSH_OK,
 * ZSH_ERR_PEER_FAILED if the process is gone, or ZSH_ERR_TRANSPORT naming
 * the error; @who names the process in messages ("rank 3").
 */
zsh_status_t zsh_cma_copy(int64_t pid, void *local_buf, uint64_t remote_addr, size_t len,
                          bool write, const char *who);

#endif
