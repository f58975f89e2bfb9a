/**
 * @file zeroshard/info.h
 * @brief What this copy of the library is and what it sees, as zsh_info prints it.
 *
 * zsh_info_print() writes the text of the zsh_info program's sections for
 * the library the caller loaded: a program or a Python process that finds
 * another libzeroshard.so than the installed zsh_info was built with learns
 * which one it runs, its build features and its configuration. zsh_info
 * itself prints through it, so the two never differ.
 */
#ifndef ZEROSHARD_INFO_H_
#define ZEROSHARD_INFO_H_

#include <zeroshard.h>

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/** The sections of zsh_info_print(), one bit each, as zsh_info's options name them. */
enum {
    ZSH_INFO_VERSION  = 1u << 0, /**< the version (zsh_info -v) */
    ZSH_INFO_FEATURES = 1u << 1, /**< build features against what runs (zsh_info -f) */
    ZSH_INFO_DEVICES  = 1u << 2, /**< UCX transports and devices (zsh_info -d) */
    ZSH_INFO_TOPOLOGY = 1u << 3, /**< this node and the job's rank map (zsh_info -t) */
    ZSH_INFO_CONFIG   = 1u << 4, /**< every ZSH_* variable, its default and value (zsh_info -c) */
    ZSH_INFO_SELECT   = 1u << 5, /**< the collectives' algorithms and the rule (zsh_info -s) */
    ZSH_INFO_ALL      = (1u << 6) - 1 /**< every section above */
};

/**
 * @brief Print the sections of @p sections to @p out, in the order of their
 *        bits, a blank line between two.
 *
 * The topology section, in a process a launcher started as a rank of a job
 * (zshrun, torchrun, mpirun), calls zsh_comm_init(): every rank of the job
 * must call it, and rank 0 prints the job's rank map.
 *
 * A section that fails says why on stderr and the others are still printed;
 * the configuration section shows the defaults when the environment holds a
 * malformed ZSH_* value.
 *
 * @param out      where the text goes
 * @param sections a nonzero OR of ZSH_INFO_* bits
 * @return ZSH_OK when every section printed; ZSH_ERR_INVALID_ARG, printing
 *         nothing, for a NULL @p out or @p sections zero or with a bit
 *         outside ::ZSH_INFO_ALL; else the status of the first section that
 *         failed (ZSH_ERR_TRANSPORT where UCX could not start, the status
 *         of zsh_comm_init(), ZSH_ERR_INVALID_ARG for a malformed ZSH_* value)
 */
zsh_status_t zsh_info_print(FILE *out, unsigned sections);

#ifdef __cplusplus
}
#endif

#endif /* ZEROSHARD_INFO_H_ */
