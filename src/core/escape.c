#include "core/escape.h"

#include <stdio.h>
#include <string.h>

const char *zsh_escape(const char *in, size_t inlen, char *out, size_t outlen)
{
    static const char hex[] = "0123456789abcdef";
    size_t i, o = 0, need;
    unsigned char c;

    if (outlen == 0) {
        return out;
    }
    for (i = 0; i < inlen; i++) {
        c    = (unsigned char)in[i];
        need = ((c < ' ') || (c > '~')) ? 4 : 1;
        /* Keep room for "..." unless this is the last byte and it fits. */
        if (o + need + ((i + 1 < inlen) ? 3 : 0) > outlen - 1) {
            snprintf(out + o, outlen - o, "...");
            return out;
        }
        if (need == 1) {
            out[o++] = (char)c;
        } else {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = '\0';
    return out;
}

const char *zsh_escape_str(const char *in, char *out, size_t outlen)
{
    if (in == NULL) {
        snprintf(out, outlen, "(null)");
        return out;
    }
    return zsh_escape(in, strlen(in), out, outlen);
}
