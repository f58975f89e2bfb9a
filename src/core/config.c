#include "core/config.h"

#include "core/status.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The registered tables, lowest order first. */
static zsh_config_table_t *zsh_config_registry;

void zsh_config_register(zsh_config_table_t *table)
{
    zsh_config_table_t **at = &zsh_config_registry;

    while ((*at != NULL) && ((*at)->order <= table->order)) {
        at = &(*at)->next;
    }
    table->next = *at;
    *at         = table;
}

const zsh_config_table_t *zsh_config_tables(void)
{
    return zsh_config_registry;
}

const zsh_config_field_t *zsh_config_field_find(const char *name,
                                                const zsh_config_table_t **table_p)
{
    const zsh_config_table_t *table;
    size_t i;

    for (table = zsh_config_registry; table != NULL; table = table->next) {
        for (i = 0; i < table->nfields; i++) {
            if (strcmp(table->fields[i].name, name) == 0) {
                if (table_p != NULL) {
                    *table_p = table;
                }
                return &table->fields[i];
            }
        }
    }
    return NULL;
}

const char *zsh_config_env(const char *name)
{
    return getenv(name);
}

static int zsh_config_parse_time(const char *value, double *out)
{
    char *end;
    double v;

    errno = 0;
    v     = strtod(value, &end);
    /* strtod skips leading space; a trailing one is refused, so is this. */
    if ((end == value) || isspace((unsigned char)value[0]) || (*end != '\0') || (errno != 0) || !isfinite(v) || (v < 0)) {
        return -1;
    }
    *out = v;
    return 0;
}

int zsh_config_parse_size(const char *value, size_t *out)
{
    unsigned long long v, mult = 1;
    char *end;

    if (!isdigit((unsigned char)value[0])) {
        return -1;
    }
    errno = 0;
    v     = strtoull(value, &end, 10);
    if (errno != 0) {
        return -1;
    }
    switch (tolower((unsigned char)*end)) {
    case '\0': break;
    case 'k':  mult = 1ull << 10; end++; break;
    case 'm':  mult = 1ull << 20; end++; break;
    case 'g':  mult = 1ull << 30; end++; break;
    default:   return -1;
    }
    if ((tolower((unsigned char)*end) == 'b') || (tolower((unsigned char)*end) == 'i')) {
        end += (tolower((unsigned char)*end) == 'i') ? 1 : 0;
        end += (tolower((unsigned char)*end) == 'b') ? 1 : 0;
    }
    if ((*end != '\0') || (v > SIZE_MAX / mult)) {
        return -1;
    }
    *out = (size_t)(v * mult);
    return 0;
}

static int zsh_config_parse_uint(const char *value, unsigned *out)
{
    unsigned long v;
    char *end;

    if (!isdigit((unsigned char)value[0])) {
        return -1;
    }
    errno = 0;
    v     = strtoul(value, &end, 10);
    if ((*end != '\0') || (errno != 0) || (v > UINT_MAX)) {
        return -1;
    }
    *out = (unsigned)v;
    return 0;
}

static int zsh_config_parse_int_opt(const char *value, int *out)
{
    unsigned v;

    if (value[0] == '\0') {
        *out = -1;
        return 0;
    }
    if ((zsh_config_parse_uint(value, &v) != 0) || (v > INT_MAX)) {
        return -1;
    }
    *out = (int)v;
    return 0;
}

static int zsh_config_parse_enum(const char *value, const char *const *choices, int *out)
{
    int i;

    for (i = 0; choices[i] != NULL; i++) {
        /* An empty choice is a reserved index: nothing selects it. */
        if ((choices[i][0] != '\0') && (strcasecmp(value, choices[i]) == 0)) {
            *out = i;
            return 0;
        }
    }
    return -1;
}

/* A parsed number, before it is range-checked and stored. */
typedef union zsh_config_value {
    double   seconds;  /* TIME */
    size_t   bytes;    /* SIZE, SIZE_AUTO */
    unsigned count;    /* UINT */
    int      opt;      /* INT_OPT, ENUM */
} zsh_config_value_t;

/* Parse a number of the row's type (not STRING): 0, or -1 if malformed. */
static int zsh_config_scan(const zsh_config_field_t *field, const char *value,
                           zsh_config_value_t *v)
{
    switch (field->type) {
    case ZSH_CONFIG_TIME:    return zsh_config_parse_time(value, &v->seconds);
    case ZSH_CONFIG_SIZE:    return zsh_config_parse_size(value, &v->bytes);
    case ZSH_CONFIG_SIZE_AUTO:
        if (strcasecmp(value, "auto") == 0) {
            v->bytes = ZSH_CONFIG_AUTO_SIZE;
            return 0;
        }
        return zsh_config_parse_size(value, &v->bytes);
    case ZSH_CONFIG_UINT:    return zsh_config_parse_uint(value, &v->count);
    case ZSH_CONFIG_INT_OPT: return zsh_config_parse_int_opt(value, &v->opt);
    case ZSH_CONFIG_ENUM:    return zsh_config_parse_enum(value, field->choices, &v->opt);
    case ZSH_CONFIG_STRING:
    case ZSH_CONFIG_SECRET:  break;
    }
    return -1;
}

/* -1, 0 or 1 as @a is below, equal to or above @b. */
static int zsh_config_compare(zsh_config_type_t type, const zsh_config_value_t *a,
                              const zsh_config_value_t *b)
{
    switch (type) {
    case ZSH_CONFIG_TIME:      return (a->seconds > b->seconds) - (a->seconds < b->seconds);
    case ZSH_CONFIG_SIZE:
    case ZSH_CONFIG_SIZE_AUTO: return (a->bytes > b->bytes) - (a->bytes < b->bytes);
    case ZSH_CONFIG_UINT:      return (a->count > b->count) - (a->count < b->count);
    case ZSH_CONFIG_INT_OPT:
    case ZSH_CONFIG_ENUM:      return (a->opt > b->opt) - (a->opt < b->opt);
    case ZSH_CONFIG_STRING:
    case ZSH_CONFIG_SECRET:    break;
    }
    return 0;
}

/* Whether @v lies within the row's bounds; "auto" and unset lie outside
 * every range and are always taken. A bound that does not parse takes
 * nothing, so that a table test finds it. */
static bool zsh_config_in_range(const zsh_config_field_t *field, const zsh_config_value_t *v)
{
    zsh_config_value_t bound;

    if (((field->type == ZSH_CONFIG_SIZE_AUTO) && (v->bytes == ZSH_CONFIG_AUTO_SIZE)) ||
        ((field->type == ZSH_CONFIG_INT_OPT) && (v->opt < 0)) ||
        (field->type == ZSH_CONFIG_ENUM)) {
        return true;
    }
    if ((field->min != NULL) && ((zsh_config_scan(field, field->min, &bound) != 0) ||
                                 (zsh_config_compare(field->type, v, &bound) < 0))) {
        return false;
    }
    if ((field->max != NULL) && ((zsh_config_scan(field, field->max, &bound) != 0) ||
                                 (zsh_config_compare(field->type, v, &bound) > 0))) {
        return false;
    }
    return true;
}

/* "from 4k to 64m", "from 2", "to 16", or nothing without bounds. */
static void zsh_config_bounds(const zsh_config_field_t *field, char *buf, size_t len)
{
    if ((field->min != NULL) && (field->max != NULL)) {
        snprintf(buf, len, " from %s to %s", field->min, field->max);
    } else if (field->min != NULL) {
        snprintf(buf, len, " of at least %s", field->min);
    } else if (field->max != NULL) {
        snprintf(buf, len, " of at most %s", field->max);
    } else {
        buf[0] = '\0';
    }
}

/* The choices a row takes, "a, b, c": the reserved ones left out. */
static void zsh_config_choices(const zsh_config_field_t *field, char *buf, size_t len)
{
    size_t used = 0;
    int i, n = 0;

    buf[0] = '\0';
    for (i = 0; (field->choices[i] != NULL) && (used < len); i++) {
        if (field->choices[i][0] != '\0') {
            used += (size_t)snprintf(buf + used, len - used, "%s%s", (n++ == 0) ? "" : ", ",
                                     field->choices[i]);
        }
    }
}

static void zsh_config_expected(const zsh_config_field_t *field, char *buf, size_t len)
{
    char bounds[96], choices[128];

    zsh_config_bounds(field, bounds, sizeof(bounds));
    switch (field->type) {
    case ZSH_CONFIG_TIME:
        snprintf(buf, len, "a number of seconds%s", (bounds[0] != '\0') ? bounds : " >= 0");
        return;
    case ZSH_CONFIG_SIZE:
    case ZSH_CONFIG_SIZE_AUTO:
        /* The bounds show the syntax; without them, examples do. */
        snprintf(buf, len, "%sa byte count%s",
                 (field->type == ZSH_CONFIG_SIZE_AUTO) ? "auto or " : "",
                 (bounds[0] != '\0') ? bounds : " such as 4096, 64k or 1m");
        return;
    case ZSH_CONFIG_UINT:
        snprintf(buf, len, "an integer%s", (bounds[0] != '\0') ? bounds : " >= 0");
        return;
    case ZSH_CONFIG_INT_OPT:
        snprintf(buf, len, "an integer%s, or empty for unset",
                 (bounds[0] != '\0') ? bounds : " >= 0");
        return;
    case ZSH_CONFIG_STRING:
    case ZSH_CONFIG_SECRET:
        snprintf(buf, len, "at most %d characters", ZSH_CONFIG_STR_MAX - 1);
        return;
    case ZSH_CONFIG_ENUM:
        zsh_config_choices(field, choices, sizeof(choices));
        snprintf(buf, len, "one of %s", choices);
        return;
    }
}

void zsh_config_range(const zsh_config_field_t *field, char *buf, size_t len)
{
    const char *min = (field->min != NULL) ? field->min : "0";
    const char *max = (field->max != NULL) ? field->max : "any";
    char choices[128];

    switch (field->type) {
    case ZSH_CONFIG_TIME:      snprintf(buf, len, "%s to %s seconds", min, max); return;
    case ZSH_CONFIG_SIZE:      snprintf(buf, len, "%s to %s bytes", min, max); return;
    case ZSH_CONFIG_SIZE_AUTO: snprintf(buf, len, "auto, or %s to %s bytes", min, max); return;
    case ZSH_CONFIG_UINT:      snprintf(buf, len, "%s to %s", min, max); return;
    case ZSH_CONFIG_INT_OPT:   snprintf(buf, len, "%s to %s, or empty", min, max); return;
    case ZSH_CONFIG_STRING:
        snprintf(buf, len, "up to %d characters", ZSH_CONFIG_STR_MAX - 1);
        return;
    case ZSH_CONFIG_SECRET:
        snprintf(buf, len, "up to %d characters, never printed", ZSH_CONFIG_STR_MAX - 1);
        return;
    case ZSH_CONFIG_ENUM:
        zsh_config_choices(field, choices, sizeof(choices));
        snprintf(buf, len, "one of %s", choices);
        return;
    }
}

/* @varname is the variable the value came from, for the message. */
static zsh_status_t zsh_config_parse_var(const zsh_config_field_t *field, const char *varname,
                                         const char *value, void *opts, char *err,
                                         size_t err_len)
{
    void *slot = (char *)opts + field->offset;
    char expected[192];
    zsh_config_value_t v;

    if ((field->type == ZSH_CONFIG_STRING) || (field->type == ZSH_CONFIG_SECRET)) {
        if (strlen(value) < ZSH_CONFIG_STR_MAX) {
            strcpy((char *)slot, value);
            return ZSH_OK;
        }
        if (field->type == ZSH_CONFIG_SECRET) {
            /* A secret is not echoed, not even a malformed one. */
            snprintf(err, err_len, "%s (%zu characters) is invalid: expected at most %d",
                     varname, strlen(value), ZSH_CONFIG_STR_MAX - 1);
            return ZSH_ERR_INVALID_ARG;
        }
    } else if (zsh_config_scan(field, value, &v) == 0) {
        if (!zsh_config_in_range(field, &v)) {
            zsh_config_expected(field, expected, sizeof(expected));
            snprintf(err, err_len, "%s='%s' is out of range: expected %s", varname, value,
                     expected);
            return ZSH_ERR_INVALID_ARG;
        }
        switch (field->type) {
        case ZSH_CONFIG_TIME:      *(double *)slot = v.seconds; break;
        case ZSH_CONFIG_SIZE:
        case ZSH_CONFIG_SIZE_AUTO: *(size_t *)slot = v.bytes; break;
        case ZSH_CONFIG_UINT:      *(unsigned *)slot = v.count; break;
        case ZSH_CONFIG_INT_OPT:
        case ZSH_CONFIG_ENUM:      *(int *)slot = v.opt; break;
        case ZSH_CONFIG_STRING:
        case ZSH_CONFIG_SECRET:    break;
        }
        return ZSH_OK;
    }
    zsh_config_expected(field, expected, sizeof(expected));
    snprintf(err, err_len, "%s='%s' is invalid: expected %s", varname, value, expected);
    return ZSH_ERR_INVALID_ARG;
}

zsh_status_t zsh_config_parse(const zsh_config_field_t *field, const char *value, void *opts,
                              char *err, size_t err_len)
{
    char varname[128];

    snprintf(varname, sizeof(varname), "%s%s", ZSH_CONFIG_PREFIX, field->name);
    return zsh_config_parse_var(field, varname, value, opts, err, err_len);
}

void zsh_config_format(const zsh_config_field_t *field, const void *opts, char *buf, size_t len)
{
    const void *slot = (const char *)opts + field->offset;
    int v;

    switch (field->type) {
    case ZSH_CONFIG_TIME:   snprintf(buf, len, "%g", *(const double *)slot); return;
    case ZSH_CONFIG_SIZE:   snprintf(buf, len, "%zu", *(const size_t *)slot); return;
    case ZSH_CONFIG_SIZE_AUTO:
        if (*(const size_t *)slot == ZSH_CONFIG_AUTO_SIZE) {
            snprintf(buf, len, "auto");
        } else {
            snprintf(buf, len, "%zu", *(const size_t *)slot);
        }
        return;
    case ZSH_CONFIG_UINT:   snprintf(buf, len, "%u", *(const unsigned *)slot); return;
    case ZSH_CONFIG_STRING: snprintf(buf, len, "%s", (const char *)slot); return;
    case ZSH_CONFIG_SECRET:
        snprintf(buf, len, "%s", (((const char *)slot)[0] != '\0') ? "(set)" : "");
        return;
    case ZSH_CONFIG_INT_OPT:
        v = *(const int *)slot;
        if (v < 0) {
            snprintf(buf, len, "%s", "");
        } else {
            snprintf(buf, len, "%d", v);
        }
        return;
    case ZSH_CONFIG_ENUM:
        snprintf(buf, len, "%s", field->choices[*(const int *)slot]);
        return;
    }
}

/* The variable that sets @field here ("ZSH_RANK", else "RANK"), or NULL.
 * Writes the name into @name. */
static const char *zsh_config_env_var(const zsh_config_field_t *field, char *name, size_t len)
{
    snprintf(name, len, "%s%s", ZSH_CONFIG_PREFIX, field->name);
    if (getenv(name) != NULL) {
        return name;
    }
    if ((field->fallback != NULL) && (getenv(field->fallback) != NULL)) {
        snprintf(name, len, "%s", field->fallback);
        return name;
    }
    return NULL;
}

const char *zsh_config_source(const zsh_config_field_t *field)
{
    static _Thread_local char name[128];

    return zsh_config_env_var(field, name, sizeof(name));
}

void zsh_config_defaults(const zsh_config_table_t *table, void *opts)
{
    char err[ZSH_ERROR_MSG_MAX];
    size_t i;

    memset(opts, 0, table->size);
    for (i = 0; i < table->nfields; i++) {
        /* Defaults parse: a test holds every table to it. */
        (void)zsh_config_parse(&table->fields[i], table->fields[i].dflt, opts, err, sizeof(err));
    }
}

zsh_status_t zsh_config_read_quiet(const zsh_config_table_t *table, void *opts, char *err,
                                   size_t err_len)
{
    const zsh_config_field_t *field;
    zsh_status_t status;
    char varname[128];
    size_t i;

    memset(opts, 0, table->size);
    for (i = 0; i < table->nfields; i++) {
        field  = &table->fields[i];
        status = zsh_config_parse(field, field->dflt, opts, err, err_len);
        if (status != ZSH_OK) {
            return ZSH_ERR_INTERNAL; /* a default that does not parse is a bug */
        }
        if (zsh_config_env_var(field, varname, sizeof(varname)) == NULL) {
            continue;
        }
        status = zsh_config_parse_var(field, varname, getenv(varname), opts, err, err_len);
        if (status != ZSH_OK) {
            return status;
        }
    }
    return ZSH_OK;
}

zsh_status_t zsh_config_read(const zsh_config_table_t *table, void *opts)
{
    char err[ZSH_ERROR_MSG_MAX];
    zsh_status_t status;

    status = zsh_config_read_quiet(table, opts, err, sizeof(err));
    if (status != ZSH_OK) {
        return zsh_error(status, "%s", err);
    }
    return ZSH_OK;
}
