/*
 * The I/O engine's ZSH_* variables: a table of its own, listed after the
 * optimizer's, read when an engine is created.
 */
#include "aio/aio_impl.h"
#include "core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ZSH_AIO_OFF(_field) offsetof(zsh_aio_config_t, _field)

/* In zsh_aio_kind_t's order. */
static const char *const zsh_aio_kind_names[] = {"auto", "uring", "aio", "threads", NULL};

static const zsh_config_field_t zsh_aio_config_fields[] = {
    {"AIO", NULL, "auto",
     "Backend of the NVMe tier's I/O engine: auto (io_uring, else libaio, else threads), "
     "uring, aio or threads; a forced one this build or kernel lacks is refused",
     ZSH_AIO_OFF(kind), ZSH_CONFIG_ENUM, zsh_aio_kind_names, NULL, NULL},
    {"AIO_QUEUE_DEPTH", NULL, "32",
     "Pieces of file I/O the NVMe tier's engine keeps in flight at once, across its files",
     ZSH_AIO_OFF(queue_depth), ZSH_CONFIG_UINT, NULL, "1", "1024"},
    {"AIO_BLOCK_SIZE", NULL, "1m",
     "Bytes per piece of file I/O of the NVMe tier's engine, a multiple of 4k",
     ZSH_AIO_OFF(block_size), ZSH_CONFIG_SIZE, NULL, "4k", "64m"},
    {"AIO_THREADS", NULL, "4",
     "Threads of the I/O engine's thread-pool backend (ZSH_AIO=threads, or where neither "
     "io_uring nor libaio works)",
     ZSH_AIO_OFF(threads), ZSH_CONFIG_UINT, NULL, "1", "64"},
    {"AIO_FAULT", NULL, "",
     "Test hook: fail the I/O engine's pieces as if the disk had: KIND:DIR:N with KIND eio, "
     "enospc or short, DIR read or write, N the pieces let through first (eio:write:3: the "
     "4th and later writes fail with EIO); empty: none",
     ZSH_AIO_OFF(fault), ZSH_CONFIG_STRING, NULL, NULL, NULL},
};

static zsh_config_table_t zsh_aio_config_table = {
    "zero: aio", ZSH_CONFIG_ORDER_ZERO + 10, zsh_aio_config_fields,
    sizeof(zsh_aio_config_fields) / sizeof(zsh_aio_config_fields[0]), sizeof(zsh_aio_config_t),
    NULL};

__attribute__((constructor)) static void zsh_aio_config_register(void)
{
    zsh_config_register(&zsh_aio_config_table);
}

const char *zsh_aio_kind_name(zsh_aio_kind_t kind)
{
    return ((unsigned)kind < 4) ? zsh_aio_kind_names[kind] : "?";
}

/* "eio:write:3" into @f; an empty text clears it. */
static zsh_status_t zsh_aio_fault_parse(const char *text, zsh_aio_fault_state_t *f)
{
    static const char *const faults[] = {"", "eio", "enospc", "short"};
    char kind[16], dir[16], rest[2];
    unsigned long after;
    int i;

    if (text[0] == '\0') {
        *f = (zsh_aio_fault_state_t){ZSH_AIO_FAULT_NONE, 0, 0};
        return ZSH_OK;
    }
    if ((sscanf(text, "%15[^:]:%15[^:]:%lu%1s", kind, dir, &after, rest) != 3) ||
        (strchr(text, '-') != NULL)) {
        goto bad;
    }
    for (i = 1; i < 4; i++) {
        if (strcmp(kind, faults[i]) == 0) {
            break;
        }
    }
    if ((i == 4) || ((strcmp(dir, "read") != 0) && (strcmp(dir, "write") != 0)) ||
        ((i == ZSH_AIO_FAULT_ENOSPC) && (dir[0] != 'w')) ||
        ((i == ZSH_AIO_FAULT_SHORT) && (dir[0] != 'r'))) {
        goto bad;
    }
    *f = (zsh_aio_fault_state_t){(zsh_aio_fault_t)i, dir[0] == 'w', after};
    return ZSH_OK;
bad:
    return zsh_error(ZSH_ERR_INVALID_ARG,
                     "ZSH_AIO_FAULT=\"%s\" is malformed: expected eio:read|write:N, "
                     "enospc:write:N or short:read:N, or empty",
                     text);
}

zsh_status_t zsh_aio_config_read(zsh_aio_config_t *cfg, zsh_aio_fault_state_t *fault)
{
    zsh_status_t status;

    status = zsh_config_read(&zsh_aio_config_table, cfg);
    if (status != ZSH_OK) {
        return status;
    }
    if ((cfg->block_size % ZSH_AIO_ALIGN) != 0) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "ZSH_AIO_BLOCK_SIZE=%zu is not a multiple of %d bytes (O_DIRECT "
                         "needs aligned pieces)",
                         cfg->block_size, ZSH_AIO_ALIGN);
    }
    return zsh_aio_fault_parse(cfg->fault, fault);
}
