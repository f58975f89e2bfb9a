/*
 * libFuzzer target for a checkpoint's manifest: the parser and the checks
 * that hold its values as data (zero/ckpt/manifest_read.c). A manifest is
 * handed over with the checkpoint, and its own checksum is no defence (XXH3
 * has no key), so every input is signed here before it is read: the
 * mutations reach the parser instead of stopping at the checksum.
 * Built with -fsanitize=fuzzer,address,undefined by run_fuzz.sh and seeded
 * with the manifests of real checkpoints.
 *
 * Besides memory safety it checks the reader's contract on what it accepts:
 *   - the format's ranges: version 1, stage 0-3, 1 to 2^24 shards and ranks,
 *     counters at most ZSH_CKPT_COUNTER_MAX and in order;
 *   - the kinds are those the rule and its momentum keep;
 *   - the rule's settings are what zsh_optim_create accepts;
 *   - every parameter's pieces tile it in order, each inside its shard's
 *     files, and no two pieces of a shard overlap;
 *   - every file has the chunks its size gives.
 * A refusal always comes with a message.
 */
#include "fuzz_check.h"
#include "fuzz_manifest.h"
#include "optim/rule/hyper.h"

#include <zeroshard.h>


static void check_accepted(const zsh_ckpt_t *ck)
{
    zsh_optim_config_t cfg;
    uint64_t next;
    size_t i, j, f, a, b;

    FUZZ_CHECK(ck->version == ZSH_CKPT_VERSION);
    FUZZ_CHECK((ck->stage >= 0) && (ck->stage <= 3));
    FUZZ_CHECK((ck->world_size >= 1) && ((uint32_t)ck->world_size <= ZSH_CKPT_SHARDS_MAX));
    FUZZ_CHECK((ck->nshards >= 1) && (ck->nshards <= ZSH_CKPT_SHARDS_MAX));
    FUZZ_CHECK(ck->steps <= ZSH_CKPT_COUNTER_MAX);
    FUZZ_CHECK((ck->step <= ck->steps) && (ck->skipped_steps <= ck->steps));
    FUZZ_CHECK(ck->nkinds == 1 + zsh_optim_rule_states(ck->kind, ck->hyper.momentum));
    zsh_ckpt_hyper_config(ck, &cfg);
    FUZZ_CHECK(zsh_optim_check_hyper("fuzz", &cfg) == ZSH_OK);
    FUZZ_CHECK((ck->scaler.scale > 0.0f) && (ck->scaler.window > 0));
    for (f = 0; f < (size_t)ck->nshards * (size_t)ck->nkinds; f++) {
        FUZZ_CHECK(ck->files[f].bytes % ZSH_CKPT_ALIGN == 0);
        FUZZ_CHECK(ck->files[f].nchunks == zsh_ckpt_nchunks(ck->files[f].bytes));
    }
    for (i = 0; i < ck->nparams; i++) {
        const zsh_ckpt_param_t *p = &ck->params[i];

        FUZZ_CHECK(p->name != NULL);
        for (j = 0, next = 0; j < p->npieces; j++) {
            const zsh_ckpt_piece_t *pc = &p->pieces[j];
            uint64_t elems = ck->files[(size_t)pc->shard * ck->nkinds].bytes / sizeof(float);

            FUZZ_CHECK((pc->start == next) && (pc->count > 0) && (pc->shard < ck->nshards));
            FUZZ_CHECK((pc->offset <= elems) && (pc->count <= elems - pc->offset));
            next += pc->count;
        }
        FUZZ_CHECK(next == p->numel);
    }
    /* No two pieces of one shard overlap (quadratic: inputs are small). */
    for (a = 0; a < ck->nparams; a++) {
        for (i = 0; i < ck->params[a].npieces; i++) {
            const zsh_ckpt_piece_t *x = &ck->params[a].pieces[i];

            for (b = a; b < ck->nparams; b++) {
                for (j = (b == a) ? i + 1 : 0; j < ck->params[b].npieces; j++) {
                    const zsh_ckpt_piece_t *y = &ck->params[b].pieces[j];

                    FUZZ_CHECK((x->shard != y->shard) || (x->offset + x->count <= y->offset) ||
                               (y->offset + y->count <= x->offset));
                }
            }
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_signed_manifest(data, size);
    zsh_status_t status;
    zsh_ckpt_t ck;

    if (text == NULL) {
        return 0;
    }
    status = zsh_ckpt_manifest_parse("fuzz/manifest.json", text, size, &ck);
    if (status == ZSH_OK) {
        check_accepted(&ck);
        zsh_ckpt_free(&ck);
    } else {
        FUZZ_CHECK(status < 0);
        FUZZ_CHECK(zsh_last_error()[0] != '\0');
    }
    free(text);
    return 0;
}
