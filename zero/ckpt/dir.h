/*
 * A checkpoint directory's life: a save fills a temporary directory beside
 * the checkpoints, renames it into place once its manifest is written, then
 * points `latest` at it; each step is fsynced, so a crash at any moment
 * leaves `latest` naming a complete checkpoint. What a crash leaves behind
 * (.tmp-*, .old-*) is swept with a warning.
 */
#ifndef ZSH_CKPT_DIR_H_
#define ZSH_CKPT_DIR_H_

#include "ckpt/format.h"

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>

/* Put back a checkpoint a crashed save had moved aside in @root; with
 * @create (a save), make @root first if it is missing (one level) and
 * remove what a crashed save left half-written, with a warning. A load
 * removes nothing, since a save may be under way beside it, and warns of
 * an incomplete checkpoint it ignores. */
zsh_status_t zsh_ckpt_dir_prepare(const char *root, int create);

/* Remove @path and everything under it. */
zsh_status_t zsh_ckpt_rmtree(const char *path);

/* fsync() a directory, so the entries made or renamed in it are on disk. */
zsh_status_t zsh_ckpt_fsync_dir(const char *path);

/* Rename the finished @tmp to @root/@name (replacing a checkpoint of that
 * name), then point @root/latest at it. */
zsh_status_t zsh_ckpt_publish(const char *root, const char *tmp, const char *name);

/* Finish the checkpoint whose files are in @tmp: its manifest @ck written
 * last (to a temporary name, fsynced, renamed), then published as
 * @root/@name. */
zsh_status_t zsh_ckpt_commit(const zsh_ckpt_t *ck, const char *root, const char *tmp,
                             const char *name);

/* The checkpoint @path names, into @out: @path itself when it holds a
 * manifest, else the one its `latest` names. ZSH_ERR_IO when there is none. */
zsh_status_t zsh_ckpt_resolve(const char *path, char *out, size_t len);

/* The steps of the checkpoint @root's latest names (step-N), in *@steps_p
 * with *@has_p true; *@has_p false without a latest, or one that does not
 * name a step-N. A latest that cannot be read is the error. */
zsh_status_t zsh_ckpt_latest_steps(const char *root, bool *has_p, unsigned long *steps_p);

#endif
