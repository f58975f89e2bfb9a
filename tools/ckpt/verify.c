/*
 * zsh_ckpt verify: every byte of a checkpoint against its checksums, as a
 * load checks the bytes it uses, but all of them and without stopping at
 * the first failure: each file whole (its size, every chunk, the file's own
 * checksum), then each piece of each parameter in each kind. The reader
 * stops in a file at its first bad chunk, so the pieces are what name every
 * parameter a corruption touches, with where the piece lies.
 */
#include "ckpt_tool.h"

#include "core/clock.h"

#include "ckpt/reader.h"

#include <inttypes.h>
#include <stdio.h>

typedef struct zsh_ckpt_verify {
    zsh_ckpt_reader_t rd;
    size_t            files, pieces, failed;
} zsh_ckpt_verify_t;

static void zsh_ckpt_verify_files(zsh_ckpt_verify_t *v)
{
    const zsh_ckpt_t *ck = v->rd.ck;
    size_t f;

    for (f = 0; f < (size_t)ck->nshards * (size_t)ck->nkinds; f++) {
        v->files++;
        if (zsh_ckpt_reader_check_file(&v->rd, f) != ZSH_OK) {
            printf("FAILED %s\n", zsh_last_error());
            v->failed++;
        }
    }
}

static void zsh_ckpt_verify_pieces(zsh_ckpt_verify_t *v)
{
    const zsh_ckpt_t *ck = v->rd.ck;
    char name[64];
    size_t i, j;
    int k;

    for (i = 0; i < ck->nparams; i++) {
        for (j = 0; j < ck->params[i].npieces; j++) {
            const zsh_ckpt_piece_t *pc = &ck->params[i].pieces[j];

            for (k = 0; k < ck->nkinds; k++) {
                v->pieces++;
                if (zsh_ckpt_reader_check_piece(&v->rd, k, i, j) == ZSH_OK) {
                    continue;
                }
                zsh_ckpt_file_name(name, sizeof(name), k, pc->shard);
                printf("FAILED %s; the piece holds elements %" PRIu64 "-%" PRIu64 " at byte "
                       "offset %" PRIu64 " of %s\n", zsh_last_error(), pc->start,
                       pc->start + pc->count - 1, pc->offset * sizeof(float), name);
                v->failed++;
            }
        }
    }
}

int zsh_ckpt_tool_verify(int argc, char **argv)
{
    char path[ZSH_CKPT_PATH_MAX], size[32];
    zsh_ckpt_verify_t v = {0};
    const char *pos[1];
    double t0 = zsh_clock_now();
    zsh_ckpt_t ck;
    int rc;

    rc = zsh_ckpt_tool_args("verify", argc, argv, NULL, 0, pos, 1, "DIR");
    if (rc != ZSH_CKPT_TOOL_GO_ON) {
        return rc;
    }
    if (zsh_ckpt_tool_open(pos[0], path, sizeof(path), &ck) != ZSH_OK) {
        return zsh_ckpt_tool_fail("verify", pos[0]);
    }
    if (zsh_ckpt_reader_open(&v.rd, &ck, path) != ZSH_OK) {
        zsh_ckpt_free(&ck);
        return zsh_ckpt_tool_fail("verify", path);
    }
    zsh_ckpt_verify_files(&v);
    zsh_ckpt_verify_pieces(&v);
    printf("%s: %s: %zu files and %zu pieces of %zu parameters checked (%s read in %.2f s)",
           path, (v.failed == 0) ? "OK" : "FAILED", v.files, v.pieces, ck.nparams,
           zsh_ckpt_tool_size(v.rd.read_bytes, size, sizeof(size)), zsh_clock_now() - t0);
    if (v.failed > 0) {
        printf(", %zu failed", v.failed);
    }
    printf("\n");
    zsh_ckpt_reader_close(&v.rd);
    zsh_ckpt_free(&ck);
    return (v.failed == 0) ? ZSH_CKPT_TOOL_OK : ZSH_CKPT_TOOL_FAIL;
}
