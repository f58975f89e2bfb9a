/*
 * The config registry: every layer's table registered and listed bottom
 * up, rows that parse, and the parsers on a table of the test's own.
 */
#include "harness/zsh_test.h"

#include "core/config.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

typedef struct zsh_test_opts {
    size_t   size;
    size_t   size_auto;
    double   seconds;
    unsigned count;
    int      opt;
    int      choice;
    char     text[ZSH_CONFIG_STR_MAX];
} zsh_test_opts_t;

/* "" reserves index 2: no value selects it. */
static const char *const zsh_test_choices[] = {"red", "green", "", "blue", NULL};

#define ZSH_TEST_OFF(_f) offsetof(zsh_test_opts_t, _f)

static const zsh_config_field_t zsh_test_fields[] = {
    {"TEST_CFG_SIZE", NULL, "256k", "a size", ZSH_TEST_OFF(size), ZSH_CONFIG_SIZE, NULL, "4k",
     "64m"},
    {"TEST_CFG_SIZE_AUTO", NULL, "auto", "a size or auto", ZSH_TEST_OFF(size_auto),
     ZSH_CONFIG_SIZE_AUTO, NULL, "0", "1g"},
    {"TEST_CFG_SECONDS", NULL, "300", "a time", ZSH_TEST_OFF(seconds), ZSH_CONFIG_TIME, NULL,
     "0.001", "31536000"},
    {"TEST_CFG_COUNT", NULL, "4", "a count", ZSH_TEST_OFF(count), ZSH_CONFIG_UINT, NULL, "2",
     "1024"},
    {"TEST_CFG_OPT", "TEST_CFG_PLAIN", "", "an optional int, also read without the prefix",
     ZSH_TEST_OFF(opt), ZSH_CONFIG_INT_OPT, NULL, "1", "65535"},
    {"TEST_CFG_CHOICE", NULL, "green", "a choice", ZSH_TEST_OFF(choice), ZSH_CONFIG_ENUM,
     zsh_test_choices, NULL, NULL},
    {"TEST_CFG_TEXT", NULL, "", "a string", ZSH_TEST_OFF(text), ZSH_CONFIG_STRING, NULL, NULL,
     NULL},
};

static const zsh_config_table_t zsh_test_table = {
    "test", 0, zsh_test_fields, sizeof(zsh_test_fields) / sizeof(zsh_test_fields[0]),
    sizeof(zsh_test_opts_t), NULL};

static const zsh_config_field_t *zsh_test_field(const char *name)
{
    size_t i;

    for (i = 0; i < zsh_test_table.nfields; i++) {
        if (strcmp(zsh_test_table.fields[i].name, name) == 0) {
            return &zsh_test_table.fields[i];
        }
    }
    return NULL;
}

ZSH_TEST(config, every_layer_registers_its_table_and_they_list_bottom_up)
{
    static const char *const expected[] = {"logging", "bootstrap", "topology", "transport: ucx",
                                           "collectives", "zero", "zero: mem", "zero: aio",
                                           "zero: snapshot"};
    const zsh_config_table_t *table;
    unsigned last = 0;
    size_t n = 0;

    for (table = zsh_config_tables(); table != NULL; table = table->next, n++) {
        ZSH_EXPECT_TRUE(table->order >= last);
        last = table->order;
        if (n < sizeof(expected) / sizeof(expected[0])) {
            ZSH_EXPECT_STR_CONTAINS(table->name, expected[n]);
        }
    }
    ZSH_EXPECT_EQ(sizeof(expected) / sizeof(expected[0]), n);
}

ZSH_TEST(config, every_default_parses_every_row_has_help_and_names_are_unique)
{
    const zsh_config_table_t *table, *found;
    char err[256], value[256];
    void *opts;
    size_t i, rows = 0;

    for (table = zsh_config_tables(); table != NULL; table = table->next) {
        opts = calloc(1, table->size);
        ZSH_ASSERT_TRUE(opts != NULL);
        for (i = 0; i < table->nfields; i++, rows++) {
            const zsh_config_field_t *f = &table->fields[i];

            ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, f->dflt, opts, err, sizeof(err)));
            ZSH_EXPECT_TRUE(strlen(f->help) > 10);
            /* What zsh_info prints must read back to the same value. */
            zsh_config_format(f, opts, value, sizeof(value));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, value, opts, err, sizeof(err)));
            ZSH_EXPECT_TRUE(zsh_config_field_find(f->name, &found) == f);
            ZSH_EXPECT_TRUE(found == table);
        }
        free(opts);
    }
    ZSH_EXPECT_TRUE(rows > 20);
}

ZSH_TEST(config, a_table_reads_its_defaults_then_the_environment)
{
    zsh_test_opts_t opts;

    unsetenv("ZSH_TEST_CFG_SIZE");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_config_read(&zsh_test_table, &opts));
    ZSH_EXPECT_EQ(256 * 1024, opts.size);
    ZSH_EXPECT_TRUE(opts.seconds == 300.0);
    ZSH_EXPECT_EQ(1, opts.choice);
    ZSH_EXPECT_EQ(-1, opts.opt);
    setenv("ZSH_TEST_CFG_SIZE", "1m", 1);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_config_read(&zsh_test_table, &opts));
    ZSH_EXPECT_EQ(1 << 20, opts.size);
    unsetenv("ZSH_TEST_CFG_SIZE");
}

ZSH_TEST(config, sizes_accept_binary_suffixes)
{
    const zsh_config_field_t *f = zsh_test_field("TEST_CFG_SIZE");
    zsh_test_opts_t opts;
    char err[256];

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "64k", &opts, err, sizeof(err)));
    ZSH_EXPECT_EQ(65536, opts.size);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "2MiB", &opts, err, sizeof(err)));
    ZSH_EXPECT_EQ(2 << 20, opts.size);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "4096", &opts, err, sizeof(err)));
    ZSH_EXPECT_EQ(4096, opts.size);
}

ZSH_TEST(config, sizes_that_may_be_auto_take_auto_or_a_byte_count)
{
    const zsh_config_field_t *f = zsh_test_field("TEST_CFG_SIZE_AUTO");
    zsh_test_opts_t opts;
    char err[256], value[64];

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "AUTO", &opts, err, sizeof(err)));
    ZSH_EXPECT_EQ(ZSH_CONFIG_AUTO_SIZE, opts.size_auto);
    zsh_config_format(f, &opts, value, sizeof(value));
    ZSH_EXPECT_EQ(0, strcmp("auto", value));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "3m", &opts, err, sizeof(err)));
    ZSH_EXPECT_EQ(3 << 20, opts.size_auto);
    zsh_config_format(f, &opts, value, sizeof(value));
    ZSH_EXPECT_EQ(0, strcmp("3145728", value));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(f, "automatic", &opts, err,
                                                            sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_TEST_CFG_SIZE_AUTO='automatic' is invalid: expected auto "
                                 "or a byte count");
    ZSH_EXPECT_EQ(3 << 20, opts.size_auto);
}

ZSH_TEST(config, malformed_values_name_the_variable_and_what_is_expected)
{
    zsh_test_opts_t opts;
    char err[256];

    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_SIZE"),
                                                            "12q", &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_TEST_CFG_SIZE='12q'");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_SECONDS"),
                                                            "-3", &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "seconds");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_CHOICE"),
                                                            "purple", &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "one of red, green, blue");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_OPT"),
                                                            "x1", &opts, err, sizeof(err)));
}

ZSH_TEST(config, prefixed_variables_win_over_their_unprefixed_names)
{
    zsh_test_opts_t opts;

    setenv("TEST_CFG_PLAIN", "3", 1);
    setenv("ZSH_TEST_CFG_OPT", "5", 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_read(&zsh_test_table, &opts));
    ZSH_EXPECT_EQ(5, opts.opt);
    ZSH_EXPECT_STR_CONTAINS(zsh_config_source(zsh_test_field("TEST_CFG_OPT")),
                            "ZSH_TEST_CFG_OPT");
    unsetenv("ZSH_TEST_CFG_OPT");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_read(&zsh_test_table, &opts));
    ZSH_EXPECT_EQ(3, opts.opt);
    setenv("TEST_CFG_PLAIN", "three", 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_read(&zsh_test_table, &opts));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "TEST_CFG_PLAIN='three'");
    unsetenv("TEST_CFG_PLAIN");
}

ZSH_TEST(config, a_table_never_reads_another_tables_variables)
{
    const char *was = getenv("ZSH_TIMEOUT");
    char *saved     = (was != NULL) ? strdup(was) : NULL;
    zsh_test_opts_t opts;

    setenv("ZSH_TIMEOUT", "soon", 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_read(&zsh_test_table, &opts));
    if (saved != NULL) {
        setenv("ZSH_TIMEOUT", saved, 1);
    } else {
        unsetenv("ZSH_TIMEOUT");
    }
    free(saved);
}

ZSH_TEST(config, every_number_has_a_range_that_holds_its_default)
{
    const zsh_config_table_t *table;
    char err[256];
    void *opts;
    size_t i;

    for (table = zsh_config_tables(); table != NULL; table = table->next) {
        opts = calloc(1, table->size);
        ZSH_ASSERT_TRUE(opts != NULL);
        for (i = 0; i < table->nfields; i++) {
            const zsh_config_field_t *f = &table->fields[i];

            if ((f->type == ZSH_CONFIG_ENUM) || (f->type == ZSH_CONFIG_STRING) ||
                (f->type == ZSH_CONFIG_SECRET)) {
                ZSH_EXPECT_TRUE((f->min == NULL) && (f->max == NULL));
                continue;
            }
            if ((f->min == NULL) || (f->max == NULL)) {
                zsh_test_fail(__FILE__, __LINE__, "ZSH_%s has no range", f->name);
                continue;
            }
            /* Each bound parses and lies in the range, so min <= max. */
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, f->min, opts, err, sizeof(err)));
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, f->max, opts, err, sizeof(err)));
            if (zsh_config_parse(f, f->dflt, opts, err, sizeof(err)) != ZSH_OK) {
                zsh_test_fail(__FILE__, __LINE__, "ZSH_%s's default: %s", f->name, err);
            }
        }
        free(opts);
    }
}

ZSH_TEST(config, values_outside_the_range_are_refused_naming_variable_value_and_range)
{
    zsh_test_opts_t opts;
    char err[256];

    opts.size = 12345;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_SIZE"), "0",
                                                            &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_TEST_CFG_SIZE='0' is out of range: expected a byte count "
                                 "from 4k to 64m");
    ZSH_EXPECT_EQ(12345, opts.size);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_SIZE"),
                                                            "65m", &opts, err, sizeof(err)));
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(zsh_test_field("TEST_CFG_SIZE"), "64m", &opts, err,
                                               sizeof(err)));
    ZSH_EXPECT_EQ(64 << 20, opts.size);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_SECONDS"),
                                                            "0", &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_TEST_CFG_SECONDS='0' is out of range: expected a number "
                                 "of seconds from 0.001 to 31536000");
    /* Space on either side is refused alike. */
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_SECONDS"),
                                                            " 5", &opts, err, sizeof(err)));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_SECONDS"),
                                                            "5 ", &opts, err, sizeof(err)));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_COUNT"),
                                                            "100000", &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "ZSH_TEST_CFG_COUNT='100000' is out of range: expected an "
                                 "integer from 2 to 1024");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(zsh_test_field("TEST_CFG_OPT"), "0",
                                                            &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "from 1 to 65535, or empty for unset");
}

ZSH_TEST(config, auto_and_unset_stand_outside_the_range)
{
    zsh_test_opts_t opts;
    char err[256];

    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(zsh_test_field("TEST_CFG_SIZE_AUTO"), "auto",
                                               &opts, err, sizeof(err)));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG,
                      zsh_config_parse(zsh_test_field("TEST_CFG_SIZE_AUTO"), "2g", &opts, err,
                                       sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "expected auto or a byte count from 0 to 1g");
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(zsh_test_field("TEST_CFG_OPT"), "", &opts, err,
                                               sizeof(err)));
    ZSH_EXPECT_EQ(-1, opts.opt);
}

ZSH_TEST(config, a_reserved_choice_is_neither_taken_nor_listed)
{
    const zsh_config_field_t *f = zsh_test_field("TEST_CFG_CHOICE");
    zsh_test_opts_t opts;
    char err[256], range[128];

    opts.choice = 1;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_config_parse(f, "", &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "expected one of red, green, blue");
    ZSH_EXPECT_EQ(1, opts.choice);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_config_parse(f, "BLUE", &opts, err, sizeof(err)));
    ZSH_EXPECT_EQ(3, opts.choice);
    zsh_config_range(f, range, sizeof(range));
    ZSH_EXPECT_EQ(0, strcmp("one of red, green, blue", range));
}

ZSH_TEST(config, the_range_zsh_info_prints_names_bounds_and_unit)
{
    static const struct {
        const char *name, *range;
    } cases[] = {{"TEST_CFG_SIZE", "4k to 64m bytes"},
                 {"TEST_CFG_SIZE_AUTO", "auto, or 0 to 1g bytes"},
                 {"TEST_CFG_SECONDS", "0.001 to 31536000 seconds"},
                 {"TEST_CFG_COUNT", "2 to 1024"},
                 {"TEST_CFG_OPT", "1 to 65535, or empty"},
                 {"TEST_CFG_TEXT", "up to 255 characters"}};
    char range[128];
    size_t i;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        zsh_config_range(zsh_test_field(cases[i].name), range, sizeof(range));
        ZSH_EXPECT_STR_CONTAINS(range, cases[i].range);
        ZSH_EXPECT_EQ(strlen(cases[i].range), strlen(range));
    }
}
