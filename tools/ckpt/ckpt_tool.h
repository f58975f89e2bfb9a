/*
 * zsh_ckpt: what its subcommands share. Each subcommand takes the arguments
 * after its name (argv[0] is the subcommand) and returns the exit status:
 * 0 done, 1 failed (the checkpoint is bad, or a file could not be read or
 * written), 2 a usage error. What stops a subcommand is said on stderr,
 * prefixed with "zsh_ckpt <subcommand>: "; what verify finds is its report,
 * on stdout.
 */
#ifndef ZSH_TOOLS_CKPT_TOOL_H_
#define ZSH_TOOLS_CKPT_TOOL_H_

#include "ckpt/format.h"

#include <json-c/json.h>

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define ZSH_CKPT_TOOL_OK    0
#define ZSH_CKPT_TOOL_FAIL  1
#define ZSH_CKPT_TOOL_USAGE 2
#define ZSH_CKPT_TOOL_GO_ON (-1) /* zsh_ckpt_tool_args(): nothing to return yet */

int zsh_ckpt_tool_info(int argc, char **argv);
int zsh_ckpt_tool_verify(int argc, char **argv);
int zsh_ckpt_tool_consolidate(int argc, char **argv);
int zsh_ckpt_tool_reshard(int argc, char **argv);

/* The usage text of every subcommand, to @out. */
void zsh_ckpt_tool_usage(FILE *out);

/* An option of a subcommand: a flag (@value NULL: *@flag set to 1) or one
 * taking a value (*@value points at it). */
typedef struct zsh_ckpt_tool_opt {
    const char  *name;  /* "--json" */
    const char **value;
    int         *flag;
} zsh_ckpt_tool_opt_t;

/* Parse argv[1..] of subcommand @cmd: the options @opts ("--name VALUE" or
 * "--name=VALUE"), --help, and exactly @npos positional arguments, named
 * @names ("DIR OUT") in messages, into @pos. ZSH_CKPT_TOOL_GO_ON, or the
 * exit status to return now: OK after --help printed the usage, USAGE
 * after a message naming what is wrong. */
int zsh_ckpt_tool_args(const char *cmd, int argc, char **argv, const zsh_ckpt_tool_opt_t *opts,
                       size_t nopts, const char **pos, int npos, const char *names);

/* A usage error of subcommand @cmd: the message, a pointer to --help, and
 * ZSH_CKPT_TOOL_USAGE to return. */
int zsh_ckpt_tool_usage_error(const char *cmd, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* A failure of subcommand @cmd: "zsh_ckpt CMD: WHAT: <the last error>",
 * and ZSH_CKPT_TOOL_FAIL to return. */
int zsh_ckpt_tool_fail(const char *cmd, const char *what);

/* Find the checkpoint @dir names (itself, or the one its `latest` names)
 * into @path and read its manifest into @ck. */
zsh_status_t zsh_ckpt_tool_open(const char *dir, char *path, size_t len, zsh_ckpt_t *ck);

/* The header: its JSON (json-c keeps the keys in the order they were
 * added, so the tensors are listed as they follow) and the spaces that pad
 * it to a multiple of 8. */
typedef struct zsh_ckpt_header {
    json_object *root;
    const char  *text;
    size_t       len, pad;
} zsh_ckpt_header_t;

/* safetensors keys a tensor by its name: a name given twice, or the
 * metadata's, is refused. ZSH_CKPT_TOOL_FAIL when it cannot be made (the
 * caller frees h->root either way). */
int zsh_ckpt_cons_header(const zsh_ckpt_t *ck, zsh_ckpt_header_t *h);

/* An output that would alias what subcommand @cmd reads from checkpoint
 * @path (found from @dir, its manifest @ck) is refused: @out inside @path,
 * or the same file as @dir's latest, the manifest or any shard file (a
 * link or a hard link to one). ZSH_CKPT_TOOL_GO_ON, or
 * ZSH_CKPT_TOOL_FAIL after saying which. */
int zsh_ckpt_tool_out_check(const char *cmd, const char *dir, const char *path,
                            const zsh_ckpt_t *ck, const char *out);

/* @bytes in the largest binary unit that keeps them at 1 or more ("1.50
 * MiB"; whole bytes below 1 KiB), into @buf. */
const char *zsh_ckpt_tool_size(uint64_t bytes, char *buf, size_t len);

/* A byte count above 0, as a ZSH_* variable takes one (an optional k, M
 * or G suffix, powers of 1024, "MiB" and "MB" allowed); -1 if @text is not one. */
int zsh_ckpt_tool_parse_size(const char *text, uint64_t *bytes_p);

/* Elements of every parameter together (the flat space, manifest order). */
uint64_t zsh_ckpt_tool_total(const zsh_ckpt_t *ck);

#endif
