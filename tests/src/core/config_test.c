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

static const char *const zsh_test_choices[] = {"red", "green", NULL};

#define ZSH_TEST_OFF(_f) offsetof(zsh_test_opts_t, _f)

static const zsh_config_field_t zsh_test_fields[] = {
    {"TEST_CFG_SIZE", NULL, "256k", "a size", ZSH_TEST_OFF(size), ZSH_CONFIG_SIZE, NULL},
    {"TEST_CFG_SIZE_AUTO", NULL, "auto", "a size or auto", ZSH_TEST_OFF(size_auto),
     ZSH_CONFIG_SIZE_AUTO, NULL},
    {"TEST_CFG_SECONDS", NULL, "300", "a time", ZSH_TEST_OFF(seconds), ZSH_CONFIG_TIME, NULL},
    {"TEST_CFG_COUNT", NULL, "4", "a count", ZSH_TEST_OFF(count), ZSH_CONFIG_UINT, NULL},
    {"TEST_CFG_OPT", "TEST_CFG_PLAIN", "", "an optional int, also read without the prefix",
     ZSH_TEST_OFF(opt), ZSH_CONFIG_INT_OPT, NULL},
    {"TEST_CFG_CHOICE", NULL, "green", "a choice", ZSH_TEST_OFF(choice), ZSH_CONFIG_ENUM,
     zsh_test_choices},
    {"TEST_CFG_TEXT", NULL, "", "a string", ZSH_TEST_OFF(text), ZSH_CONFIG_STRING, NULL},
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
    static const char *const expected[] = {"logging", "bootstrap", "transport: ucx",
                                           "collectives", "zero"};
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
                                                            "blue", &opts, err, sizeof(err)));
    ZSH_EXPECT_STR_CONTAINS(err, "one of red, green");
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
