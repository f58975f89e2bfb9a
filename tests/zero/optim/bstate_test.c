/*
 * The stage 3 bucket's states (optim/bstate.h), with no ranks: the table
 * allows exactly the moves listed here, zsh_obucket_move() makes each of
 * them, and refuses every other one, leaving the bucket as it was and
 * naming the bucket and both states.
 */
#include "harness/zsh_test.h"

#include "optim/optim_impl.h"

#include <stdio.h>

/* The moves the fetch path makes (fetch.c), written out apart from the
 * header's table so that a change to either shows here. */
static const zsh_bstate_t zsh_bst_allowed[][2] = {
    {ZSH_BSTATE_SHARDED, ZSH_BSTATE_READING},     /* an NVMe read */
    {ZSH_BSTATE_SHARDED, ZSH_BSTATE_GATHERING},   /* a fetch */
    {ZSH_BSTATE_SHARDED, ZSH_BSTATE_PREFETCHED},  /* a prefetch */
    {ZSH_BSTATE_READING, ZSH_BSTATE_SHARDED},     /* dropped, or the read failed */
    {ZSH_BSTATE_READING, ZSH_BSTATE_GATHERING},   /* a fetch */
    {ZSH_BSTATE_READING, ZSH_BSTATE_PREFETCHED},  /* a prefetch */
    {ZSH_BSTATE_GATHERING, ZSH_BSTATE_SHARDED},   /* the gather failed */
    {ZSH_BSTATE_GATHERING, ZSH_BSTATE_LIVE},      /* waited for */
    {ZSH_BSTATE_PREFETCHED, ZSH_BSTATE_SHARDED},  /* dropped, or the gather failed */
    {ZSH_BSTATE_PREFETCHED, ZSH_BSTATE_LIVE},     /* a hit */
    {ZSH_BSTATE_LIVE, ZSH_BSTATE_CACHED},         /* the last release */
    {ZSH_BSTATE_CACHED, ZSH_BSTATE_SHARDED},      /* evicted or dropped */
    {ZSH_BSTATE_CACHED, ZSH_BSTATE_LIVE},         /* fetched again */
};

#define ZSH_BST_NALLOWED (sizeof(zsh_bst_allowed) / sizeof(zsh_bst_allowed[0]))

static bool zsh_bst_listed(zsh_bstate_t from, zsh_bstate_t to)
{
    size_t i;

    for (i = 0; i < ZSH_BST_NALLOWED; i++) {
        if ((zsh_bst_allowed[i][0] == from) && (zsh_bst_allowed[i][1] == to)) {
            return true;
        }
    }
    return false;
}

/* A bucket of one parameter, as the layout makes them, in state @state. */
typedef struct {
    zsh_param_t   param;
    zsh_param_t  *params[1];
    zsh_obucket_t b;
} zsh_bst_bucket_t;

static void zsh_bst_init(zsh_bst_bucket_t *t, zsh_bstate_t state)
{
    *t                = (zsh_bst_bucket_t){0};
    t->param.name     = "layers.3.weight";
    t->param.bucket   = 7;
    t->params[0]      = &t->param;
    t->b.params       = t->params;
    t->b.nparams      = 1;
    t->b.fetch.state  = state;
}

ZSH_TEST(optim_bstate, the_table_allows_exactly_the_fetch_paths_moves)
{
    int from, to;

    for (from = 0; from < ZSH_BSTATE_COUNT; from++) {
        for (to = 0; to < ZSH_BSTATE_COUNT; to++) {
            if (zsh_bstate_allowed(from, to) != zsh_bst_listed(from, to)) {
                zsh_test_fail(__FILE__, __LINE__, "%s -> %s: the table says %s, expected %s",
                              zsh_bstate_name(from), zsh_bstate_name(to),
                              zsh_bstate_allowed(from, to) ? "allowed" : "refused",
                              zsh_bst_listed(from, to) ? "allowed" : "refused");
            }
        }
        ZSH_EXPECT_TRUE(!zsh_bstate_allowed(from, from)); /* no move to itself */
    }
}

ZSH_TEST(optim_bstate, every_allowed_move_is_made)
{
    zsh_bst_bucket_t t;
    size_t i;

    for (i = 0; i < ZSH_BST_NALLOWED; i++) {
        zsh_bst_init(&t, zsh_bst_allowed[i][0]);
        ZSH_EXPECT_STATUS(ZSH_OK, zsh_obucket_move(&t.b, zsh_bst_allowed[i][1]));
        ZSH_EXPECT_EQ(zsh_bst_allowed[i][1], t.b.fetch.state);
    }
}

ZSH_TEST(optim_bstate, every_other_move_is_refused_naming_the_bucket_and_both_states)
{
    char want[128];
    zsh_bst_bucket_t t;
    int from, to, refused = 0;

    for (from = 0; from < ZSH_BSTATE_COUNT; from++) {
        for (to = 0; to < ZSH_BSTATE_COUNT; to++) {
            if (zsh_bst_listed(from, to)) {
                continue;
            }
            zsh_bst_init(&t, from);
            ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_obucket_move(&t.b, to));
            ZSH_EXPECT_EQ(from, t.b.fetch.state); /* left as it was */
            snprintf(want, sizeof(want), "no move from state %s to %s", zsh_bstate_name(from),
                     zsh_bstate_name(to));
            ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), want);
            ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "bucket 7 (from parameter 'layers.3.weight')");
            refused++;
        }
    }
    ZSH_EXPECT_EQ(ZSH_BSTATE_COUNT * ZSH_BSTATE_COUNT - (int)ZSH_BST_NALLOWED, refused);
}

ZSH_TEST(optim_bstate, a_refused_move_lists_where_the_state_may_go)
{
    zsh_bst_bucket_t t;

    zsh_bst_init(&t, ZSH_BSTATE_CACHED);
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_obucket_move(&t.b, ZSH_BSTATE_READING));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "cached may move to sharded or live");
    zsh_bst_init(&t, ZSH_BSTATE_SHARDED);
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_obucket_move(&t.b, ZSH_BSTATE_LIVE));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(),
                            "sharded may move to reading, gathering or prefetched");
}

ZSH_TEST(optim_bstate, a_value_outside_the_enum_is_refused_both_ways)
{
    zsh_bst_bucket_t t;

    zsh_bst_init(&t, ZSH_BSTATE_SHARDED);
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_obucket_move(&t.b, ZSH_BSTATE_COUNT));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "no move from state sharded to invalid");
    ZSH_EXPECT_EQ(ZSH_BSTATE_SHARDED, t.b.fetch.state);
    zsh_bst_init(&t, (zsh_bstate_t)42);
    ZSH_EXPECT_STATUS(ZSH_ERR_INTERNAL, zsh_obucket_move(&t.b, ZSH_BSTATE_SHARDED));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "no move from state invalid to sharded");
}

ZSH_TEST(optim_bstate, the_gathered_states_are_those_holding_the_gathered_buffer)
{
    ZSH_EXPECT_TRUE(!zsh_bstate_gathered(ZSH_BSTATE_SHARDED));
    ZSH_EXPECT_TRUE(!zsh_bstate_gathered(ZSH_BSTATE_READING));
    ZSH_EXPECT_TRUE(zsh_bstate_gathered(ZSH_BSTATE_GATHERING));
    ZSH_EXPECT_TRUE(zsh_bstate_gathered(ZSH_BSTATE_PREFETCHED));
    ZSH_EXPECT_TRUE(zsh_bstate_gathered(ZSH_BSTATE_LIVE));
    ZSH_EXPECT_TRUE(zsh_bstate_gathered(ZSH_BSTATE_CACHED));
    ZSH_EXPECT_TRUE(!zsh_bstate_gathered(ZSH_BSTATE_COUNT));
}
