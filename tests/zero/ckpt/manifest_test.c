/*
 * The manifest is checked before anything trusts it: a manifest written and
 * read back gives the same checkpoint; one changed anywhere without its own
 * checksum following is corrupt; one changed and signed again (as a hostile
 * writer could, XXH3 having no key) with a wrong type, a piece past its
 * file, files of unequal size or a parameter with more updates than the
 * optimizer is refused, never dereferenced. One from before per-parameter
 * counts gives every parameter the optimizer's.
 */
#include "harness/zsh_test.h"
#include "ckpt/format.h"
#include "ckpt/hash.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Two parameters over two shards of weights and exp_avg. */
static void zsh_mt_make(zsh_ckpt_t *ck, zsh_ckpt_param_t *params, zsh_ckpt_piece_t *pieces,
                        zsh_ckpt_file_t *files, uint64_t *chunks)
{
    size_t i;

    memset(ck, 0, sizeof(*ck));
    ck->version    = ZSH_CKPT_VERSION;
    ck->world_size = 2;
    ck->stage      = 1;
    ck->precision  = ZSH_BFLOAT16;
    ck->kind       = ZSH_OPTIM_SGD;
    ck->nkinds     = 2;
    ck->nshards    = 2;
    ck->step       = 7;
    ck->steps      = 9;
    ck->scaler.scale  = 1024.0f;
    ck->scaler.window = 1000;
    ck->scaler.min_scale = 1.0f;
    ck->hyper.lr      = 0.1;
    ck->hyper.beta1   = 0.9;
    ck->hyper.beta2   = 0.999;
    ck->hyper.eps     = 1e-8;
    ck->hyper.momentum = 0.9;
    params[0] = (zsh_ckpt_param_t){"layer.weight", 3000, pieces, 2, 7};
    params[1] = (zsh_ckpt_param_t){"layer.bias", 10, pieces + 2, 1, 5}; /* left out twice */
    pieces[0] = (zsh_ckpt_piece_t){0, 0, 0, 1505, {1, 2, 0}};
    pieces[1] = (zsh_ckpt_piece_t){1, 0, 1505, 1495, {3, 4, 0}};
    pieces[2] = (zsh_ckpt_piece_t){1, 1495, 0, 10, {5, 6, 0}};
    for (i = 0; i < 4; i++) {
        files[i] = (zsh_ckpt_file_t){8192, 100 + i, chunks + i, 1};
        chunks[i] = 200 + i;
    }
    ck->params  = params;
    ck->nparams = 2;
    ck->files   = files;
}

static char *zsh_mt_slurp(const char *path, size_t *len_p)
{
    FILE *f = fopen(path, "rb");
    char *text = malloc(1 << 16);
    size_t n = (f != NULL && text != NULL) ? fread(text, 1, (1 << 16) - 1, f) : 0;

    if (f != NULL) {
        fclose(f);
    }
    if (text != NULL) {
        text[n] = '\0';
    }
    *len_p = n;
    return text;
}

/* Replace the first @from in @path's text by @to; sign it again if @sign. */
static bool zsh_mt_edit(const char *path, const char *from, const char *to, bool sign)
{
    size_t len, flen = strlen(from), tlen = strlen(to);
    char *text = zsh_mt_slurp(path, &len), *at, *out, *digits, hex[17];
    FILE *f;

    if ((text == NULL) || ((at = strstr(text, from)) == NULL)) {
        free(text);
        return false;
    }
    out = malloc(len - flen + tlen + 1);
    memcpy(out, text, (size_t)(at - text));
    memcpy(out + (at - text), to, tlen);
    memcpy(out + (at - text) + tlen, at + flen, len - (size_t)(at - text) - flen + 1);
    len = len - flen + tlen;
    digits = zsh_ckpt_self_digits(out, len);
    if (sign && (digits != NULL)) {
        memset(digits, '0', 16);
        snprintf(hex, sizeof(hex), "%016" PRIx64, XXH3_64bits(out, len));
        memcpy(digits, hex, 16);
    }
    f = fopen(path, "wb");
    fwrite(out, 1, len, f);
    fclose(f);
    free(out);
    free(text);
    return true;
}

ZSH_TEST(ckpt_manifest, is_read_back_as_written_and_refused_when_changed_or_inconsistent)
{
    static const struct {
        const char  *from, *to;
        bool         sign;
        zsh_status_t want;
        const char  *needle;
    } edits[] = {
        {"\"lr\":0.1", "\"lr\":0.2", false, ZSH_ERR_IO, "does not match its own checksum"},
        {"\"kinds\":[", "\"kinds\":[ null,", true, ZSH_ERR_INVALID_ARG, "kinds: entry 0"},
        {"\"count\":1505", "\"count\":4611686018427387904", true, ZSH_ERR_INVALID_ARG,
         "piece 0"},
        {"\"offset\":1495", "\"offset\":18446744073709551615", true, ZSH_ERR_INVALID_ARG,
         "'layer.bias'"},
        {"\"bytes\":8192", "\"bytes\":4096", true, ZSH_ERR_INVALID_ARG, "files[1]"},
        {"\"name\":\"layer.bias\"", "\"name\":7", true, ZSH_ERR_INVALID_ARG, "\"name\""},
        {"\"params\":[", "\"params\":[ [],", true, ZSH_ERR_INVALID_ARG, "params[0]"},
        {"\"pieces\":[", "\"pieces\":{", true, ZSH_ERR_IO, "not valid JSON"},
        {"\"updates\":5", "\"updates\":8", true, ZSH_ERR_INVALID_ARG, "\"updates\" is 8"},
    };
    zsh_ckpt_param_t params[2];
    zsh_ckpt_piece_t pieces[3];
    zsh_ckpt_file_t files[4];
    uint64_t chunks[4];
    zsh_ckpt_t ck, back;
    char dir[] = "/var/tmp/zsh-manifest-test-XXXXXX", path[96];
    size_t i;

    ZSH_ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    zsh_mt_make(&ck, params, pieces, files, chunks);
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_manifest_write(&ck, path));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_manifest_read(path, &back));
    ZSH_EXPECT_EQ(2, back.nparams);
    ZSH_EXPECT_EQ(9, back.steps);
    ZSH_EXPECT_TRUE(back.hyper.lr == 0.1);
    ZSH_EXPECT_TRUE(back.hyper.momentum == 0.9);
    ZSH_EXPECT_EQ(ZSH_BFLOAT16, back.precision);
    ZSH_EXPECT_EQ(1495, back.params[1].pieces[0].offset);
    ZSH_EXPECT_EQ(6, back.params[1].pieces[0].hash[1]);
    ZSH_EXPECT_EQ(203, back.files[3].chunks[0]);
    ZSH_EXPECT_EQ(7, back.params[0].updates);
    ZSH_EXPECT_EQ(5, back.params[1].updates);
    zsh_ckpt_free(&back);
    /* A manifest from before per-parameter counts: each took every update. */
    ZSH_ASSERT_TRUE(zsh_mt_edit(path, "\"updates\":5,", "", true));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_manifest_read(path, &back));
    ZSH_EXPECT_EQ(7, back.params[1].updates);
    zsh_ckpt_free(&back);
    for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_manifest_write(&ck, path));
        ZSH_ASSERT_TRUE(zsh_mt_edit(path, edits[i].from, edits[i].to, edits[i].sign));
        ZSH_EXPECT_STATUS(edits[i].want, zsh_ckpt_manifest_read(path, &back));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), edits[i].needle);
    }
    unlink(path);
    rmdir(dir);
}

/* A manifest is data: every value is held to the range zsh_optim_create
 * accepts (with its words), counters cannot wrap a narrower field or pass
 * ZSH_CKPT_COUNTER_MAX, the kinds saved are those the rule keeps, and
 * pieces do not overlap. Each edit is signed again, as a hostile writer
 * would. */
ZSH_TEST(ckpt_manifest, values_are_held_to_the_ranges_the_optimizer_accepts)
{
    static const struct {
        const char *from, *to, *needle;
    } edits[] = {
        {"\"lr\":0.1", "\"lr\":-1000", "lr=-1000 eps=1e-08"},
        {"\"lr\":0.1", "\"lr\":NaN", "lr=nan"},
        {"\"lr\":0.1", "\"lr\":1e999", "lr=inf"},
        {"\"beta2\":0.999", "\"beta2\":5", "beta2=5 "},
        {"\"eps\":1e-08", "\"eps\":0", "eps=0 "},
        {"\"weight_decay\":0", "\"weight_decay\":-1", "weight_decay=-1 "},
        {"\"min_scale\":1", "\"min_scale\":0", "min_loss_scale=0:"},
        {"\"scale\":1024", "\"scale\":0", "scale 0 and window 1000 must be above 0"},
        {"\"window\":1000", "\"window\":4294967297", "\"window\" is 4294967297, more than"},
        {"\"momentum\":0.9", "\"momentum\":-0.5", "momentum=-0.5 "},
        {"\"steps\":9", "\"steps\":18446744073709551615", "\"steps\" is 18446744073709551615"},
        {"\"steps\":9", "\"steps\":5", "step 7 and skipped_steps 0 cannot be more than steps 5"},
        {"\"version\":1", "\"version\":4294967297", "format version 4294967297"},
        {"\"stage\":1", "\"stage\":2147483653", "stage 2147483653 is out of range"},
        {"\"world_size\":2", "\"world_size\":4294967299", "world_size 4294967299 or"},
        {"\"momentum\":0.9", "\"momentum\":0", "sgd with momentum 0 keeps 0 state(s) per "
                                                 "element, but the kinds saved hold 1"},
        {"\"shard\":1,\n          \"offset\":1495", "\"shard\":4294967297,\n          \"offset\":1495",
         "\"shard\" is 4294967297, more than 1"},
        {"\"offset\":1495", "\"offset\":1490", "shard 1: the pieces at elements 0+1495 and "
                                                 "1490+10 of its files overlap"},
        {"\"name\":\"layer.bias\"", "\"name\":\"b\\u001b[2J\"", NULL},
    };
    zsh_ckpt_param_t params[2];
    zsh_ckpt_piece_t pieces[3];
    zsh_ckpt_file_t files[4];
    uint64_t chunks[4];
    zsh_ckpt_t ck, back;
    char dir[] = "/var/tmp/zsh-manifest-test-XXXXXX", path[96];
    size_t i;

    ZSH_ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    zsh_mt_make(&ck, params, pieces, files, chunks);
    for (i = 0; i < sizeof(edits) / sizeof(edits[0]); i++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_ckpt_manifest_write(&ck, path));
        ZSH_ASSERT_TRUE(zsh_mt_edit(path, edits[i].from, edits[i].to, true));
        if (edits[i].needle == NULL) {
            /* A name with an escape sequence is read as it is, and printed escaped. */
            ZSH_EXPECT_STATUS(ZSH_OK, zsh_ckpt_manifest_read(path, &back));
            ZSH_EXPECT_TRUE(strcmp(back.params[1].name, "b\x1b[2J") == 0);
            zsh_ckpt_free(&back);
            continue;
        }
        ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_ckpt_manifest_read(path, &back));
        ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), edits[i].needle);
    }
    unlink(path);
    rmdir(dir);
}

/* The manifest is opened as a regular file: a FIFO is refused by name
 * without blocking, a link (to /dev/zero, say) is not followed, nor is a
 * directory read. */
ZSH_TEST(ckpt_manifest, is_read_only_from_a_regular_file_within_its_bound)
{
    char dir[] = "/var/tmp/zsh-manifest-test-XXXXXX", path[96];
    zsh_ckpt_t back;

    ZSH_ASSERT_TRUE(mkdtemp(dir) != NULL);
    snprintf(path, sizeof(path), "%s/manifest.json", dir);
    ZSH_ASSERT_TRUE(0 == mkfifo(path, 0600));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_ckpt_manifest_read(path, &back));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "manifest.json is a FIFO, not a regular file");
    unlink(path);
    ZSH_ASSERT_TRUE(0 == symlink("/dev/zero", path));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_ckpt_manifest_read(path, &back));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "it is a symbolic link");
    unlink(path);
    ZSH_ASSERT_TRUE(0 == mkdir(path, 0700));
    ZSH_EXPECT_STATUS(ZSH_ERR_IO, zsh_ckpt_manifest_read(path, &back));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "is a directory, not a regular file");
    rmdir(path);
    rmdir(dir);
}
