/*
 * In-memory snapshots: zsh_optim_snapshot() is zsh_optim_save() into
 * ZSH_SNAPSHOT_DIR, a directory in the node's memory (tmpfs), and
 * zsh_optim_restore() is zsh_optim_load() from it. Files in tmpfs outlive
 * the processes that wrote them, so a job started again after one of its
 * ranks died restores from its survivors' node without reading the disk; the
 * launcher that made the directory (zshrun) removes it when the job ends.
 *
 * Being a checkpoint, a snapshot keeps the checkpoint's commit: a snapshot in
 * progress is a temporary directory that `latest` never names, so one
 * interrupted by a death is never the one restored, and it loads at any
 * world size. Only the newest complete one is kept, so at most two (that one
 * and the next, while it is written) take the node's memory at once.
 *
 * On several nodes each node has its own directory (the ranks with the same
 * host name and ZSH_SNAPSHOT_DIR share one), each rank's files are copied
 * into its buddy's on the next node before any node commits (buddy.c), and
 * each node commits its own. A restore takes the newest step every node has
 * complete (a node that committed a step its peers did not still holds the
 * one before: the older ones go only after every node committed), each rank
 * reading its own node's copy. So a node's memory holds, per snapshot, its
 * ranks' parts and their buddies' copies: twice its share. On three nodes or
 * more a job restarted without a node may read parts its node lacks, which
 * some node left holds: the restore fetches them first (fetch.c), into the
 * restored step's directory, which the next snapshot's commit removes.
 */
#include "ckpt/buddy.h"
#include "ckpt/ckpt_impl.h"
#include "ckpt/dir.h"

#include "core/config.h"
#include "core/log.h"
#include "core/status.h"

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct zsh_snap_config {
    char dir[ZSH_CONFIG_STR_MAX];
} zsh_snap_config_t;

static const zsh_config_field_t zsh_snap_config_fields[] = {
    {"SNAPSHOT_DIR", NULL, "",
     "Directory in node memory (tmpfs, such as one under /dev/shm) that zsh_optim_snapshot() "
     "writes and zsh_optim_restore() reads: the newest complete snapshot of every rank's "
     "state, kept there after the ranks die. Per node: on several nodes each rank's part "
     "is also copied into a rank's of the next node, so a lost node's parts survive. "
     "zshrun gives each job (each node) a fresh one and removes it at the end; empty: "
     "snapshots are refused",
     offsetof(zsh_snap_config_t, dir), ZSH_CONFIG_STRING, NULL, NULL, NULL},
};

static zsh_config_table_t zsh_snap_config_table = {
    "zero: snapshot", ZSH_CONFIG_ORDER_ZERO + 20, zsh_snap_config_fields,
    sizeof(zsh_snap_config_fields) / sizeof(zsh_snap_config_fields[0]),
    sizeof(zsh_snap_config_t), NULL};

__attribute__((constructor)) static void zsh_snap_config_register(void)
{
    zsh_config_register(&zsh_snap_config_table);
}

/* ZSH_SNAPSHOT_DIR into @cfg, refused when empty. */
static zsh_status_t zsh_snap_dir(const char *fn, zsh_snap_config_t *cfg)
{
    zsh_status_t status = zsh_config_read(&zsh_snap_config_table, cfg);

    if ((status == ZSH_OK) && (cfg->dir[0] == '\0')) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "%s: ZSH_SNAPSHOT_DIR is not set (zshrun sets it; "
                         "elsewhere name a directory in node memory, such as one under "
                         "/dev/shm)", fn);
    }
    return status;
}

/* Every step-N of @dir but the one `latest` names: the older snapshots. A
 * failure only leaves memory taken, so it is logged and not returned. */
static void zsh_snap_prune(const char *dir)
{
    char keep[64], path[ZSH_CKPT_PATH_MAX];
    unsigned long steps;
    struct dirent *e;
    bool has;
    DIR *d;

    if ((zsh_ckpt_latest_steps(dir, &has, &steps) != ZSH_OK) || !has) {
        return;
    }
    snprintf(keep, sizeof(keep), "step-%08lu", steps);
    d = opendir(dir);
    if (d == NULL) {
        return;
    }
    while ((e = readdir(d)) != NULL) {
        if ((strncmp(e->d_name, "step-", 5) != 0) || (strcmp(e->d_name, keep) == 0)) {
            continue;
        }
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        if (zsh_ckpt_rmtree(path) != ZSH_OK) {
            zsh_log(ZSH_LOG_WARN, "zsh_optim_snapshot: %s", zsh_last_error());
        }
    }
    closedir(d);
}

zsh_status_t zsh_optim_snapshot(zsh_optim_t *opt)
{
    zsh_snap_config_t cfg;
    zsh_ckpt_nodes_t nodes = {0};
    zsh_status_t status;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_snapshot: opt is NULL");
    }
    status = zsh_snap_dir("zsh_optim_snapshot", &cfg);
    if (status == ZSH_OK) {
        status = zsh_ckpt_nodes_find(opt, cfg.dir, &nodes);
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_save(opt, cfg.dir, "zsh_optim_snapshot", &nodes);
    }
    /* The save returns on every rank once the new one is in place on every
     * node: each node's first rank drops the old one, and no rank returns
     * before it is gone, so that the memory a snapshot takes is what the
     * caller sees. */
    if (status == ZSH_OK) {
        if (zsh_ckpt_rank(opt) == nodes.leader) {
            zsh_snap_prune(cfg.dir);
        }
        status = zsh_optim_state_agree(opt, ZSH_OK);
    }
    zsh_ckpt_nodes_free(&nodes);
    return status;
}

/* The newest step every rank's node directory has whole, in *@steps_p:
 * the least of the steps their `latest` names. Fails on every rank alike
 * where one node has none. */
static zsh_status_t zsh_snap_agree_step(zsh_optim_t *opt, const char *dir,
                                        unsigned long *steps_p)
{
    zsh_comm_t *comm = zsh_optim_state_comm(opt);
    int size = zsh_comm_size(comm), r;
    uint64_t mine = 0, *all = calloc((size_t)size, sizeof(*all));
    zsh_status_t status;
    unsigned long steps;
    bool has;

    status = (all == NULL) ? zsh_error(ZSH_ERR_NO_MEMORY, "zsh_optim_restore: no memory")
                           : zsh_ckpt_latest_steps(dir, &has, &steps);
    if ((status == ZSH_OK) && !has) {
        status = zsh_error(ZSH_ERR_IO, "zsh_optim_restore: no snapshot in %s (rank %d's node)",
                           dir, zsh_comm_rank(comm));
    }
    mine   = (status == ZSH_OK) ? (uint64_t)steps : 0;
    status = zsh_optim_state_agree(opt, status);
    if (status == ZSH_OK) {
        status = zsh_optim_state_comm_status(opt, zsh_allgather(&mine, all, 1, ZSH_UINT64, comm));
    }
    for (r = 0; (status == ZSH_OK) && (r < size); r++) {
        mine = (all[r] < mine) ? all[r] : mine;
    }
    *steps_p = (unsigned long)mine;
    free(all);
    return status;
}

zsh_status_t zsh_optim_restore(zsh_optim_t *opt)
{
    char path[ZSH_CKPT_PATH_MAX + 64];
    zsh_ckpt_nodes_t nodes = {0};
    zsh_snap_config_t cfg;
    zsh_status_t status;
    unsigned long steps = 0;
    uint64_t fetched = 0;

    if (opt == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_optim_restore: opt is NULL");
    }
    status = zsh_snap_dir("zsh_optim_restore", &cfg);
    if (status == ZSH_OK) {
        status = zsh_snap_agree_step(opt, cfg.dir, &steps);
    }
    /* The layout first: the fetch asks it which shards each rank reads. */
    if (status == ZSH_OK) {
        snprintf(path, sizeof(path), "%s/step-%08lu", cfg.dir, steps);
        status = zsh_ckpt_check(opt, cfg.dir, "zsh_optim_restore", true);
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_nodes_find(opt, cfg.dir, &nodes);
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_fetch(opt, &nodes, path, &fetched);
        zsh_ckpt_nodes_free(&nodes);
        if (status != ZSH_OK) {
            zsh_error_prefix("zsh_optim_restore: nothing was restored: ");
        }
    }
    if (status == ZSH_OK) {
        status = zsh_ckpt_load(opt, cfg.dir, path, "zsh_optim_restore");
    }
    return status;
}
