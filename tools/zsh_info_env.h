/*
 * zsh_info -e: whether this installed copy's directories are where programs,
 * the loader, pkg-config, Python and man look for them. Each is asked
 * itself (ldconfig's cache, pkg-config --path, the interpreter's sys.path,
 * manpath), so a directory they reach by their own defaults counts too.
 */
#ifndef ZSH_INFO_ENV_H_
#define ZSH_INFO_ENV_H_

/* The section: one line per variable env.sh sets. Always 0: a missing
 * directory is what the section reports, not a failure of zsh_info. */
int zsh_info_print_env(void);

/* Where another section runs from an installed copy whose directories are
 * not set: one line on stderr naming them and the step that sets them. */
void zsh_info_env_hint(void);

#endif
