/*
 * The bootstrap store server's key -> value map, kept apart from the sockets
 * so the server file is only about connections. It holds plain copies of the
 * latest value per key; deferred GETs wait on their connections, not here,
 * and the server walks them itself after each put.
 */
#ifndef ZSH_BOOT_STORE_TABLE_H_
#define ZSH_BOOT_STORE_TABLE_H_

#include "boot/store_frame.h"

#include <zeroshard.h>

#include <stddef.h>
#include <stdint.h>

typedef struct zsh_store_entry {
    struct zsh_store_entry *next;
    uint64_t                hash;
    uint8_t                *value;
    size_t                  value_len;
    size_t                  key_len;
    uint8_t                 key[];
} zsh_store_entry_t;

/* Chained hash table: allgathers over thousands of ranks look up N^2 keys. */
typedef struct {
    zsh_store_entry_t **buckets;
    size_t              nbuckets, count;
    size_t              bytes;  /* what the entries hold, as zsh_store_entry_cost counts it */
} zsh_store_table_t;

/* What an entry of this key and value costs the store: its bytes and header. */
static inline size_t zsh_store_entry_cost(size_t key_len, size_t value_len)
{
    return sizeof(zsh_store_entry_t) + key_len + value_len;
}

uint64_t zsh_store_hash(const uint8_t *key, size_t len);

/* NULL when @key has never been set. */
zsh_store_entry_t *zsh_store_table_find(const zsh_store_table_t *table, const uint8_t *key,
                                        size_t key_len);

zsh_status_t zsh_store_table_grow(zsh_store_table_t *table);

/* *@entry_p stays valid until cleanup: entries are never freed or moved before
 * then, only relinked when the table grows, so the server may hold on to it. */
zsh_status_t zsh_store_table_put(zsh_store_table_t *table, const zsh_store_frame_t *frame,
                                 zsh_store_entry_t **entry_p);

void zsh_store_table_cleanup(zsh_store_table_t *table);

#endif
