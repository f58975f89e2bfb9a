#define _GNU_SOURCE /* memfd_create */

#include "ucx/shm/box.h"

#include "ucx/shm/board.h"

#include "core/status.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

/*
 * One slot: a header (box.h) and the message, so that a reader never
 * trusts contents by a field read apart from the state word:
 *
 *   63          32 31           1   0
 *  |  key hash:32  |  ticket:31   | full |
 *
 * The writer fills len and msg, then publishes with a release store; the
 * reader, after an acquire load that shows exactly its key and ticket full,
 * copies the message and stores the same word without the full bit, which
 * hands the slot back. A slot still full under another key was left by an
 * earlier user of the box and may be overwritten: no reader expects its word.
 * The first 48 bytes of a message share the header's cache line, so that a
 * descriptor with a few bytes of data crosses between cores as one line.
 */
typedef struct zsh_box_slot {
    zsh_box_msg_t h;
    uint8_t       msg[ZSH_BOX_MSG_MAX];
    uint8_t       pad[48];
} zsh_box_slot_t;

static uint64_t zsh_box_word(uint64_t key, uint64_t ticket, bool full)
{
    uint64_t hash = (key ^ (key >> 32)) & 0xffffffffu;

    return (hash << 32) | ((ticket & 0x7fffffffu) << 1) | (full ? 1u : 0u);
}

/* Bytes of a message on the header's line. */
#define ZSH_BOX_HEAD_MSG (64 - sizeof(zsh_box_msg_t))

_Static_assert(sizeof(zsh_box_slot_t) % 64 == 0, "slots start on cache lines");
_Static_assert(offsetof(zsh_box_slot_t, msg) == sizeof(zsh_box_msg_t),
               "a message starts right after its header");
_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "slot states must be lock-free to be shared");

bool zsh_box_msg_held(const zsh_box_msg_t *m, uint64_t key)
{
    uint64_t state = atomic_load_explicit(&m->state, memory_order_acquire);

    return (state & 1) && ((state >> 32) == (zsh_box_word(key, 0, false) >> 32));
}

bool zsh_box_msg_there(const zsh_box_msg_t *m, uint64_t key, uint64_t ticket)
{
    return atomic_load_explicit(&m->state, memory_order_acquire) ==
           zsh_box_word(key, ticket, true);
}

/* Copy bytes [@from, @to) of the message @parts make into @msg. */
static void zsh_box_msg_copy(uint8_t *msg, const zsh_box_parts_t *parts, size_t from, size_t to)
{
    size_t split = parts->head_len, end;

    if (from < split) {
        end = (to < split) ? to : split;
        memcpy(msg + from, (const uint8_t *)parts->head + from, end - from);
        from = end;
    }
    if (from < to) {
        memcpy(msg + from, (const uint8_t *)parts->body + (from - split), to - from);
    }
}

void zsh_box_msg_write(zsh_box_msg_t *m, uint8_t *msg, uint64_t key, uint64_t ticket,
                       const zsh_box_parts_t *parts)
{
    size_t len  = parts->head_len + parts->body_len;
    size_t line = (len < ZSH_BOX_HEAD_MSG) ? len : ZSH_BOX_HEAD_MSG;

    /* The lines the reader does not poll first, then the header's line in
     * one go, so that the reader's polling takes it from us only once. */
    zsh_box_msg_copy(msg, parts, line, len);
    zsh_box_msg_copy(msg, parts, 0, line);
    m->len = len;
    atomic_store_explicit(&m->state, zsh_box_word(key, ticket, true), memory_order_release);
}

zsh_status_t zsh_box_msg_read(const zsh_box_msg_t *m, const uint8_t *msg, uint64_t key,
                              uint64_t ticket, void *buf, size_t cap, size_t *len_p)
{
    size_t len;

    if (!zsh_box_msg_there(m, key, ticket)) {
        return ZSH_INPROGRESS;
    }
    len = m->len;
    if (len > cap) {
        return zsh_error(ZSH_ERR_MISMATCH, "a %zu-byte message is longer than the %zu-byte "
                         "receive", len, cap);
    }
    memcpy(buf, msg, len);
    *len_p = len;
    return ZSH_OK;
}

#define ZSH_BOX_REGION_LEN ((size_t)ZSH_BOX_SLOTS * sizeof(zsh_box_slot_t))

size_t zsh_box_region_len(void)
{
    return ZSH_BOX_REGION_LEN;
}

size_t zsh_box_line_len(void)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = ZSH_BOX_REGION_LEN + zsh_board_region_len();

    return (len + page - 1) / page * page;
}

/* The whole file: every line's place, though only opened lines are mapped. */
static size_t zsh_box_seg_len(void)
{
    return (size_t)ZSH_BOX_COUNT * zsh_box_line_len();
}

static zsh_box_slot_t *zsh_box_slot(uint8_t *line, uint64_t ticket)
{
    return (zsh_box_slot_t *)line + ticket % ZSH_BOX_SLOTS;
}

/* A descriptor of our own for descriptor @fd of process @pid, or -1 with
 * errno set and the failing call in *@call_p. The same permission as
 * process_vm_readv (ptrace attach); glibc 2.36 wraps neither call. */
static int zsh_box_dup(int64_t pid, int64_t fd, const char **call_p)
{
    int pidfd, dup_fd, err;

    *call_p = "pidfd_open";
    pidfd   = (int)syscall(SYS_pidfd_open, (pid_t)pid, 0);
    if (pidfd < 0) {
        return -1;
    }
    *call_p = "pidfd_getfd";
    dup_fd  = (int)syscall(SYS_pidfd_getfd, pidfd, (int)fd, 0);
    err     = errno;
    close(pidfd);
    errno = err;
    return dup_fd;
}

/* Where mailboxes cannot be, say why (@what failed, errno) without logging
 * an error: the process then simply publishes none. */
static zsh_status_t zsh_box_unsupported(const char *what)
{
    char why[200];

    snprintf(why, sizeof(why), "%s: %s", what, strerror(errno));
    zsh_error_set_quiet(why);
    return ZSH_ERR_UNSUPPORTED;
}

static zsh_status_t zsh_box_off(zsh_box_seg_t *seg, const char *what)
{
    zsh_status_t status = zsh_box_unsupported(what);

    zsh_box_release(seg);
    return status;
}

/* A segment with its descriptor @fd and no line mapped yet. */
static zsh_status_t zsh_box_seg_init(zsh_box_seg_t *seg, int fd, zsh_box_budget_t *budget,
                                     const char *who)
{
    seg->fd     = fd;
    seg->budget = budget;
    snprintf(seg->who, sizeof(seg->who), "%s", who);
    seg->lines = calloc(ZSH_BOX_COUNT, sizeof(*seg->lines));
    return (seg->lines != NULL) ? ZSH_OK : ZSH_ERR_NO_MEMORY;
}

zsh_status_t zsh_box_create(zsh_box_seg_t *seg, zsh_box_budget_t *budget, const char *who)
{
    char what[96];
    int fd;

    memset(seg, 0, sizeof(*seg));
    seg->fd = fd = memfd_create("zeroshard-boxes", MFD_CLOEXEC);
    if (fd < 0) {
        return zsh_box_off(seg, "memfd_create");
    }
    /* Sparse: pages appear only where lines are used, and address space
     * only where they are mapped. */
    if (ftruncate(fd, (off_t)zsh_box_seg_len()) != 0) {
        snprintf(what, sizeof(what), "ftruncate of the mailbox segment to %zu bytes",
                 zsh_box_seg_len());
        return zsh_box_off(seg, what);
    }
    if (zsh_box_seg_init(seg, fd, budget, who) != ZSH_OK) {
        errno = ENOMEM;
        return zsh_box_off(seg, "the table of the mailbox segment's lines");
    }
    return ZSH_OK;
}

zsh_status_t zsh_box_check_shareable(const zsh_box_seg_t *seg)
{
    const char *call;
    int dup_fd = zsh_box_dup((int64_t)getpid(), seg->fd, &call);

    if (dup_fd < 0) {
        return zsh_box_unsupported(call);
    }
    close(dup_fd);
    return ZSH_OK;
}

zsh_status_t zsh_box_attach(int64_t pid, int64_t fd, zsh_box_seg_t *seg, zsh_box_budget_t *budget,
                            const char *who)
{
    const char *call;
    int dup_fd;

    memset(seg, 0, sizeof(*seg));
    seg->fd = -1;
    dup_fd  = zsh_box_dup(pid, fd, &call);
    if ((dup_fd < 0) && (errno == ESRCH)) {
        return zsh_error(ZSH_ERR_PEER_FAILED, "%s (pid %lld) is gone: %s: %s", who,
                         (long long)pid, call, strerror(errno));
    }
    if (dup_fd < 0) {
        return zsh_error(ZSH_ERR_TRANSPORT, "%s of the mailbox segment of %s (pid %lld, fd "
                         "%lld): %s; ZSH_SHM=0 turns mailboxes off", call, who, (long long)pid,
                         (long long)fd, strerror(errno));
    }
    if (zsh_box_seg_init(seg, dup_fd, budget, who) != ZSH_OK) {
        zsh_box_release(seg);
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the table of the mailbox segment "
                         "of %s", who);
    }
    return ZSH_OK;
}

zsh_status_t zsh_box_line_open(const zsh_box_seg_t *seg, unsigned line)
{
    size_t len = zsh_box_line_len();
    void *base;

    if (!zsh_box_on(seg) || (line >= ZSH_BOX_COUNT)) {
        return zsh_error(ZSH_ERR_INTERNAL, "line %u of the mailbox segment of %s: %s", line,
                         seg->who, zsh_box_on(seg) ? "out of range" : "no segment");
    }
    if (seg->lines[line] != NULL) {
        return ZSH_OK;
    }
    if (seg->budget->used + len > seg->budget->max) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "line %u of the shared-memory segment of %s needs "
                         "%zu bytes of address space, and ZSH_SHM_MAX (%zu bytes) has %zu left: "
                         "raise ZSH_SHM_MAX, or ZSH_SHM=0 turns shared memory off", line,
                         seg->who, len, seg->budget->max, seg->budget->max - seg->budget->used);
    }
    base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, seg->fd,
                (off_t)((size_t)line * len));
    if (base == MAP_FAILED) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "mmap of %zu bytes for line %u of the shared-memory "
                         "segment of %s: %s (%zu bytes of it mapped, ZSH_SHM_MAX %zu): "
                         "ZSH_SHM=0 turns shared memory off, and a lower ZSH_SHM_MAX keeps it "
                         "within what the address space (ulimit -v) leaves", len, line, seg->who,
                         strerror(errno), seg->budget->used, seg->budget->max);
    }
    seg->lines[line] = base;
    seg->budget->used += len;
    return ZSH_OK;
}

void zsh_box_line_close(const zsh_box_seg_t *seg, unsigned line)
{
    if (zsh_box_on(seg) && (line < ZSH_BOX_COUNT) && (seg->lines[line] != NULL)) {
        munmap(seg->lines[line], zsh_box_line_len());
        seg->lines[line] = NULL;
        seg->budget->used -= zsh_box_line_len();
    }
}

void zsh_box_release(zsh_box_seg_t *seg)
{
    unsigned line;

    if (seg->lines != NULL) {
        for (line = 0; line < ZSH_BOX_COUNT; line++) {
            zsh_box_line_close(seg, line);
        }
        free(seg->lines);
    }
    if (seg->fd >= 0) {
        close(seg->fd);
    }
    memset(seg, 0, sizeof(*seg));
    seg->fd = -1;
}

zsh_status_t zsh_box_put(const zsh_box_seg_t *seg, unsigned box, uint64_t key, uint64_t ticket,
                         const void *buf, size_t len)
{
    zsh_box_parts_t parts = {buf, len, NULL, 0};
    zsh_box_slot_t *slot;
    zsh_status_t status;
    uint8_t *line;

    if ((box >= ZSH_BOX_COUNT) || (len > ZSH_BOX_MSG_MAX)) {
        return zsh_error(ZSH_ERR_INTERNAL, "mailbox %u, message of %zu bytes: out of range", box,
                         len);
    }
    status = zsh_box_line(seg, box, &line);
    if (status != ZSH_OK) {
        return status;
    }
    slot = zsh_box_slot(line, ticket);
    if (zsh_box_msg_held(&slot->h, key)) {
        return ZSH_INPROGRESS; /* our previous message in this slot is still there */
    }
    zsh_box_msg_write(&slot->h, slot->msg, key, ticket, &parts);
    return ZSH_OK;
}

zsh_status_t zsh_box_take(const zsh_box_seg_t *seg, unsigned box, uint64_t key, uint64_t ticket,
                          void *buf, size_t cap, size_t *len_p)
{
    zsh_box_slot_t *slot;
    zsh_status_t status;
    uint8_t *line;

    if (box >= ZSH_BOX_COUNT) {
        return zsh_error(ZSH_ERR_INTERNAL, "mailbox %u: out of range", box);
    }
    status = zsh_box_line(seg, box, &line);
    if (status != ZSH_OK) {
        return status;
    }
    slot   = zsh_box_slot(line, ticket);
    status = zsh_box_msg_read(&slot->h, slot->msg, key, ticket, buf, cap, len_p);
    if (status != ZSH_INPROGRESS) {
        /* Taken, or dropped as too long: the slot goes back either way. */
        atomic_store_explicit(&slot->h.state, zsh_box_word(key, ticket, false),
                              memory_order_release);
    }
    return status;
}
