/*
 * Text from an untrusted source (a parameter's name from a manifest, the
 * contents of a file, a path with control bytes) is printed through here,
 * so it cannot drive the terminal that shows a message or forge its lines.
 */
#ifndef ZSH_CORE_ESCAPE_H_
#define ZSH_CORE_ESCAPE_H_

#include <stddef.h>

/* Room for an escaped name or path in a message: longer ones are cut. */
#define ZSH_ESCAPED_MAX 320

/* @in's @inlen bytes as printable text: every byte outside printable ASCII
 * (' '..'~': control bytes, DEL and bytes from 0x80, which some terminals
 * take as controls) written as \\xHH. At most @outlen - 1 characters, cut
 * with "..." when longer; returns @out. */
const char *zsh_escape(const char *in, size_t inlen, char *out, size_t outlen);

/* zsh_escape() of a NUL-terminated string ("(null)" for NULL). */
const char *zsh_escape_str(const char *in, char *out, size_t outlen);

#endif
