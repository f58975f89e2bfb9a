/*
 * The registry of ZSH_* configuration variables.
 *
 * Each layer owns a table of rows for its own variables, filling an options
 * struct of its own, and registers it here from a constructor, as UCX's
 * components register theirs; zsh_info lists every registered table, lower
 * layers first. A row names a variable (without the ZSH_ prefix), its
 * default, its help text, where it lands in the table's struct and how it
 * is parsed. A row may carry a fallback name without the prefix (RANK for
 * ZSH_RANK), read when the prefixed variable is unset, so torchrun-style
 * launchers work unchanged. The environment is read here and nowhere else:
 * a layer reads its own table, so a malformed variable of another layer
 * never fails it.
 *
 * Every number has a range: a row of type TIME, SIZE, SIZE_AUTO, UINT or
 * INT_OPT names its smallest and largest value, inclusive, written as the
 * variable is ("4k", "0.001"), and a value outside it is refused naming the
 * variable, the value and the range; zsh_info -c prints it. A value of 0
 * is in range only where the row's help says what 0 does. "auto" (SIZE_AUTO)
 * and empty (INT_OPT) stand outside the range. An ENUM row's choices may
 * hold an empty name: that index is reserved and no value selects it, so
 * rows whose values index a shared list (the *_ALGO rows) take and name
 * only the entries that are theirs.
 *
 * A row, all nine fields positional:
 *   {"CHUNK_SIZE", NULL, "256k", "Bytes per message ...", offsetof(opts_t, chunk_size),
 *    ZSH_CONFIG_SIZE, NULL, "4k", "64m"},
 * and for ENUM, STRING and SECRET rows the range is NULL, NULL.
 */
#ifndef ZSH_CORE_CONFIG_H_
#define ZSH_CORE_CONFIG_H_

#include <zeroshard.h>

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ZSH_CONFIG_PREFIX  "ZSH_"
#define ZSH_CONFIG_STR_MAX 256

/* A ZSH_CONFIG_SIZE_AUTO variable set to "auto": whoever reads it decides. */
#define ZSH_CONFIG_AUTO_SIZE SIZE_MAX

typedef enum {
    ZSH_CONFIG_TIME,   /* seconds, fractional allowed: "300", "0.5" */
    ZSH_CONFIG_SIZE,   /* bytes with an optional k/m/g suffix (powers of 1024) */
    ZSH_CONFIG_SIZE_AUTO, /* "auto" (stored as ZSH_CONFIG_AUTO_SIZE) or as ZSH_CONFIG_SIZE */
    ZSH_CONFIG_UINT,   /* unsigned int */
    ZSH_CONFIG_INT_OPT,/* int >= 0, or empty for unset (-1) */
    ZSH_CONFIG_STRING, /* up to ZSH_CONFIG_STR_MAX - 1 bytes */
    ZSH_CONFIG_SECRET, /* a STRING never printed: formatted as "(set)", left out of errors */
    ZSH_CONFIG_ENUM    /* one of the row's choices, case-insensitive; stored as its index (int) */
} zsh_config_type_t;

typedef struct zsh_config_field {
    const char        *name;      /* without the ZSH_ prefix */
    const char        *fallback;  /* unprefixed variable read when ZSH_<name> is unset, or NULL */
    const char        *dflt;      /* default, in the same syntax as the variable */
    const char        *help;
    size_t             offset;    /* into the table's options struct */
    zsh_config_type_t  type;
    const char *const *choices;   /* ZSH_CONFIG_ENUM only, NULL-terminated; "" reserves an index */
    const char        *min;       /* numbers: the smallest value taken, in the variable's syntax */
    const char        *max;       /* and the largest; NULL for ENUM, STRING, SECRET */
} zsh_config_field_t;

/* Where a table lists, lowest first: the layers bottom to top. */
enum {
    ZSH_CONFIG_ORDER_SERVICES   = 100,
    ZSH_CONFIG_ORDER_TRANSPORTS = 200,
    ZSH_CONFIG_ORDER_COLL       = 300,
    ZSH_CONFIG_ORDER_ZERO       = 400
};

typedef struct zsh_config_table {
    const char                *name;     /* what its rows are for: "collectives" */
    unsigned                   order;    /* ZSH_CONFIG_ORDER_*, plus an offset within the layer */
    const zsh_config_field_t  *fields;
    size_t                     nfields;
    size_t                     size;     /* bytes of the options struct the rows fill */
    struct zsh_config_table   *next;     /* the registry's list; set by zsh_config_register() */
} zsh_config_table_t;

/* Add @table to the registry, in listing order; called from a constructor of
 * the layer that owns it. */
void zsh_config_register(zsh_config_table_t *table);

/* The first registered table, lowest order first; walk on with ->next. */
const zsh_config_table_t *zsh_config_tables(void);

/* The row of ZSH_<@name> in any registered table, and its table in
 * *@table_p (may be NULL), or NULL. */
const zsh_config_field_t *zsh_config_field_find(const char *name,
                                                const zsh_config_table_t **table_p);

/* Fill @opts (the table's struct) with the defaults, then the environment.
 * On a malformed value, fails with ZSH_ERR_INVALID_ARG naming the variable
 * and its value (via zsh_error). */
zsh_status_t zsh_config_read(const zsh_config_table_t *table, void *opts);

/* The same without touching the last error or the log: the logger uses it
 * to learn its own level. @err gets the message on failure. */
zsh_status_t zsh_config_read_quiet(const zsh_config_table_t *table, void *opts, char *err,
                                   size_t err_len);

/* Fill @opts with the table's defaults alone. */
void zsh_config_defaults(const zsh_config_table_t *table, void *opts);

/* A byte count as the size rows take it: digits, then an optional k, m or
 * g (powers of 1024, any case) and "b" or "ib"; 0 on success. */
int zsh_config_parse_size(const char *value, size_t *out);

/* Parse @value into the field's slot of @opts; on failure (malformed, or
 * outside the row's range) @err says why and the slot is unchanged. */
zsh_status_t zsh_config_parse(const zsh_config_field_t *field, const char *value, void *opts,
                              char *err, size_t err_len);

/* Write the field's current value in @opts as text (the syntax it is read in). */
void zsh_config_format(const zsh_config_field_t *field, const void *opts, char *buf, size_t len);

/* What the field takes, for zsh_info -c: "4k to 64m bytes", "0.001 to
 * 31536000 seconds", "auto, or 0 to 1024g bytes", "1 to 65535, or empty",
 * "one of 0, 1", "up to 255 characters". */
void zsh_config_range(const zsh_config_field_t *field, char *buf, size_t len);

/* The variable that set @field in this environment ("ZSH_RANK", "RANK") or NULL. */
const char *zsh_config_source(const zsh_config_field_t *field);

/* Whether a variable that is not one of ours, but says something about how
 * the process was started or how a library underneath is set up
 * (PMIX_NAMESPACE, UCX_*), is set; the value, or NULL. */
const char *zsh_config_env(const char *name);

#endif
