/*
 * libFuzzer target for the safetensors header zsh_ckpt consolidate writes
 * from a checkpoint (tools/ckpt/header.c). There is no safetensors reader
 * on the C side: the header is what the tool makes of a manifest for
 * readers elsewhere (Python's load_consolidated, safetensors itself), so
 * the target feeds it every manifest the reader accepts (signed here, as in
 * manifest_fuzz.c, so mutations reach the names and sizes) and checks what
 * a reader of the file relies on:
 *   - the header parses back as JSON, holding every parameter under its
 *     own name (whatever bytes the name holds) and __metadata__, and
 *     nothing else;
 *   - each tensor is F32 of shape [numel], its data_offsets contiguous from
 *     0 in the manifest's order;
 *   - names that would collide are refused, never written.
 */
#include "ckpt/ckpt_tool.h"
#include "fuzz_check.h"
#include "fuzz_manifest.h"


static void check_header(const zsh_ckpt_t *ck, const zsh_ckpt_header_t *h)
{
    json_object *back = json_tokener_parse(h->text), *t, *v;
    uint64_t begin = 0;
    size_t i;

    FUZZ_CHECK(back != NULL);
    FUZZ_CHECK((h->len + h->pad) % 8 == 0);
    FUZZ_CHECK((size_t)json_object_object_length(back) == ck->nparams + 1);
    FUZZ_CHECK(json_object_object_get_ex(back, "__metadata__", NULL));
    for (i = 0; i < ck->nparams; i++) {
        FUZZ_CHECK(json_object_object_get_ex(back, ck->params[i].name, &t));
        FUZZ_CHECK(json_object_object_get_ex(t, "dtype", &v));
        FUZZ_CHECK(strcmp(json_object_get_string(v), "F32") == 0);
        FUZZ_CHECK(json_object_object_get_ex(t, "shape", &v));
        FUZZ_CHECK(json_object_array_length(v) == 1);
        FUZZ_CHECK(json_object_get_uint64(json_object_array_get_idx(v, 0)) ==
                   ck->params[i].numel);
        FUZZ_CHECK(json_object_object_get_ex(t, "data_offsets", &v));
        FUZZ_CHECK(json_object_array_length(v) == 2);
        FUZZ_CHECK(json_object_get_uint64(json_object_array_get_idx(v, 0)) == begin);
        begin += ck->params[i].numel * sizeof(float);
        FUZZ_CHECK(json_object_get_uint64(json_object_array_get_idx(v, 1)) == begin);
    }
    json_object_put(back);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_signed_manifest(data, size);
    zsh_ckpt_header_t h = {0};
    zsh_ckpt_t ck;
    int rc;

    if (text == NULL) {
        return 0;
    }
    if (zsh_ckpt_manifest_parse("fuzz/manifest.json", text, size, &ck) == ZSH_OK) {
        rc = zsh_ckpt_cons_header(&ck, &h);
        if (rc == ZSH_CKPT_TOOL_OK) {
            check_header(&ck, &h);
        }
        json_object_put(h.root);
        zsh_ckpt_free(&ck);
    }
    free(text);
    return 0;
}
