/*
 * The safetensors header zsh_ckpt consolidate writes: one entry per
 * parameter, in the manifest's order, named as the manifest names it. The
 * names come from a checkpoint, so json-c escapes them as JSON strings, and
 * a name that would collide (twice, or __metadata__) is refused.
 */
#include "ckpt_tool.h"

#include "core/dtype.h"
#include "core/escape.h"

#include <stdio.h>
#include <string.h>

int zsh_ckpt_cons_header(const zsh_ckpt_t *ck, zsh_ckpt_header_t *h)
{
    json_object *t, *shape, *offs, *meta;
    uint64_t begin = 0, end;
    char step[32], esc[ZSH_ESCAPED_MAX];
    size_t i;

    h->root = json_object_new_object();
    for (i = 0; i < ck->nparams; i++) {
        if ((strcmp(ck->params[i].name, "__metadata__") == 0) ||
            json_object_object_get_ex(h->root, ck->params[i].name, NULL)) {
            fprintf(stderr, "zsh_ckpt consolidate: two tensors would be named '%s'; a "
                    "safetensors file needs distinct names (and none named __metadata__)\n",
                    zsh_escape_str(ck->params[i].name, esc, sizeof(esc)));
            return ZSH_CKPT_TOOL_FAIL;
        }
        end   = begin + ck->params[i].numel * sizeof(float);
        t     = json_object_new_object();
        shape = json_object_new_array();
        offs  = json_object_new_array();
        json_object_array_add(shape, json_object_new_uint64(ck->params[i].numel));
        json_object_array_add(offs, json_object_new_uint64(begin));
        json_object_array_add(offs, json_object_new_uint64(end));
        json_object_object_add(t, "dtype", json_object_new_string("F32"));
        json_object_object_add(t, "shape", shape);
        json_object_object_add(t, "data_offsets", offs);
        json_object_object_add(h->root, ck->params[i].name, t);
        begin = end;
    }
    meta = json_object_new_object();
    snprintf(step, sizeof(step), "%lu", ck->steps);
    json_object_object_add(meta, "format", json_object_new_string("zeroshard"));
    json_object_object_add(meta, "step", json_object_new_string(step));
    json_object_object_add(meta, "precision",
                           json_object_new_string(zsh_dtype_name(ck->precision)));
    json_object_object_add(h->root, "__metadata__", meta);
    h->text = json_object_to_json_string_length(h->root, JSON_C_TO_STRING_PLAIN |
                                                             JSON_C_TO_STRING_NOSLASHESCAPE,
                                                &h->len);
    if (h->text == NULL) {
        fprintf(stderr, "zsh_ckpt consolidate: no memory for the header of %zu tensors\n",
                ck->nparams);
        return ZSH_CKPT_TOOL_FAIL;
    }
    h->pad = (8 - h->len % 8) % 8;
    return ZSH_CKPT_TOOL_OK;
}

