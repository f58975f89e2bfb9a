#define _GNU_SOURCE /* process_vm_readv */

#include "ucx/cma/cma.h"

#include "core/log.h"
#include "core/status.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

/* The kernel copies at most this much per call (MAX_RW_COUNT is INT_MAX
 * rounded down to a page); ask for less so a single call never comes up short for
 * that reason alone. */
#define ZSH_CMA_MAX_CALL ((size_t)1 << 30)

/* Yama's ptrace_scope, or 0 where Yama is absent. */
static int zsh_cma_ptrace_scope(void)
{
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = 0;

    if (f != NULL) {
        if (fscanf(f, "%d", &scope) != 1) {
            scope = 0;
        }
        fclose(f);
    }
    return scope;
}

static bool zsh_cma_probe(void)
{
    uint64_t probe = 0x7a7368636d61ull, copy = 0; /* "zshcma" */
    struct iovec local  = {&copy, sizeof(copy)};
    struct iovec remote = {&probe, sizeof(probe)};
    int scope = zsh_cma_ptrace_scope();

    if (scope >= 2) {
        zsh_log(ZSH_LOG_INFO, "cross-memory attach off: Yama ptrace_scope is %d", scope);
        return false;
    }
#ifdef PR_SET_PTRACER
    if ((scope == 1) && (prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0) != 0)) {
        zsh_log(ZSH_LOG_INFO, "cross-memory attach off: prctl(PR_SET_PTRACER): %s",
                strerror(errno));
        return false;
    }
#endif
    /* Reading ourselves fails where seccomp or the kernel forbids the call. */
    if ((process_vm_readv(getpid(), &local, 1, &remote, 1, 0) != (ssize_t)sizeof(copy)) ||
        (copy != probe)) {
        zsh_log(ZSH_LOG_INFO, "cross-memory attach off: process_vm_readv: %s", strerror(errno));
        return false;
    }
    return true;
}

/* The kernel's boot id, which tells hosts (and boots) apart. */
static bool zsh_cma_boot_id(char *buf, size_t len)
{
    FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
    bool ok;

    if (f == NULL) {
        return false;
    }
    ok = (fgets(buf, (int)len, f) != NULL);
    fclose(f);
    buf[strcspn(buf, "\n")] = '\0';
    return ok && (buf[0] != '\0');
}

void zsh_cma_local_id(bool enabled, zsh_cma_id_t *id)
{
    struct stat ns;

    memset(id, 0, sizeof(*id));
    id->pid = (int64_t)getpid();
    if (stat("/proc/self/ns/pid", &ns) != 0) {
        zsh_log(ZSH_LOG_INFO, "cross-memory attach off: cannot tell the PID namespace: %s",
                strerror(errno));
        return;
    }
    if (!zsh_cma_boot_id(id->boot_id, sizeof(id->boot_id))) {
        memset(id->boot_id, 0, sizeof(id->boot_id));
        zsh_log(ZSH_LOG_INFO, "cross-memory attach off: cannot read the kernel's boot id");
        return;
    }
    id->pidns_dev = (uint64_t)ns.st_dev;
    id->pidns_ino = (uint64_t)ns.st_ino;
    id->usable    = enabled && zsh_cma_probe();
}

zsh_status_t zsh_cma_copy(int64_t pid, void *local_buf, uint64_t remote_addr, size_t len,
                          bool write, const char *who)
{
    struct iovec local, remote;
    size_t done = 0, want;
    ssize_t got;

    while (done < len) {
        want = (len - done < ZSH_CMA_MAX_CALL) ? len - done : ZSH_CMA_MAX_CALL;
        local.iov_base  = (char *)local_buf + done;
        local.iov_len   = want;
        remote.iov_base = (void *)(uintptr_t)(remote_addr + done);
        remote.iov_len  = want;
        got = write ? process_vm_writev((pid_t)pid, &local, 1, &remote, 1, 0)
                    : process_vm_readv((pid_t)pid, &local, 1, &remote, 1, 0);
        if (got > 0) {
            done += (size_t)got;
            continue;
        }
        if ((got < 0) && (errno == EINTR)) {
            continue;
        }
        if ((got < 0) && (errno == ESRCH)) {
            return zsh_error(ZSH_ERR_PEER_FAILED, "%s (pid %lld) is gone: %s: %s", who,
                             (long long)pid, write ? "process_vm_writev" : "process_vm_readv",
                             strerror(errno));
        }
        return zsh_error(ZSH_ERR_TRANSPORT, "cannot %s %zu bytes at 0x%llx of %s (pid %lld): "
                         "%s: %s; ZSH_CMA=0 turns cross-memory attach off",
                         write ? "write" : "read", want,
                         (unsigned long long)(remote_addr + done), who, (long long)pid,
                         write ? "process_vm_writev" : "process_vm_readv",
                         (got < 0) ? strerror(errno) : "nothing copied");
    }
    return ZSH_OK;
}
