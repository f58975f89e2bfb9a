#include "boot/store_table.h"
#include "core/status.h"

#include <stdlib.h>
#include <string.h>

uint64_t zsh_store_hash(const uint8_t *key, size_t len)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    size_t i;

    for (i = 0; i < len; i++) {
        h = (h ^ key[i]) * 1099511628211ull;
    }
    return h;
}

zsh_store_entry_t *zsh_store_table_find(const zsh_store_table_t *table, const uint8_t *key,
                                        size_t key_len)
{
    uint64_t hash = zsh_store_hash(key, key_len);
    zsh_store_entry_t *e;

    if (table->nbuckets == 0) {
        return NULL;
    }
    for (e = table->buckets[hash % table->nbuckets]; e != NULL; e = e->next) {
        if ((e->hash == hash) && (e->key_len == key_len) && (memcmp(e->key, key, key_len) == 0)) {
            return e;
        }
    }
    return NULL;
}

/* Keep chains short: double the buckets when they hold one entry each on average. */
zsh_status_t zsh_store_table_grow(zsh_store_table_t *table)
{
    size_t n = (table->nbuckets != 0) ? table->nbuckets * 2 : 64, i;
    zsh_store_entry_t **buckets, *e, *next;

    if (table->count < table->nbuckets) {
        return ZSH_OK;
    }
    buckets = calloc(n, sizeof(*buckets));
    if (buckets == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot grow the store table to %zu buckets", n);
    }
    for (i = 0; i < table->nbuckets; i++) {
        for (e = table->buckets[i]; e != NULL; e = next) {
            next             = e->next;
            e->next          = buckets[e->hash % n];
            buckets[e->hash % n] = e;
        }
    }
    free(table->buckets);
    table->buckets  = buckets;
    table->nbuckets = n;
    return ZSH_OK;
}

/* Store a copy of @frame's value under its key, replacing an older value. */
zsh_status_t zsh_store_table_put(zsh_store_table_t *table, const zsh_store_frame_t *frame,
                                 zsh_store_entry_t **entry_p)
{
    zsh_store_entry_t *e = zsh_store_table_find(table, frame->key, frame->key_len);
    uint8_t *value       = malloc(frame->value_len + 1);
    size_t b;

    if ((value == NULL) || (zsh_store_table_grow(table) != ZSH_OK)) {
        free(value);
        return ZSH_ERR_NO_MEMORY;
    }
    if (e == NULL) {
        e = malloc(sizeof(*e) + frame->key_len);
        if (e == NULL) {
            free(value);
            return ZSH_ERR_NO_MEMORY;
        }
        e->hash    = zsh_store_hash(frame->key, frame->key_len);
        e->key_len = frame->key_len;
        memcpy(e->key, frame->key, frame->key_len);
        e->value        = NULL;
        b               = e->hash % table->nbuckets;
        e->next         = table->buckets[b];
        table->buckets[b] = e;
        table->count++;
        table->bytes += zsh_store_entry_cost(frame->key_len, 0);
    } else {
        table->bytes -= e->value_len;
    }
    table->bytes += frame->value_len;
    memcpy(value, frame->value, frame->value_len);
    free(e->value);
    e->value     = value;
    e->value_len = frame->value_len;
    *entry_p     = e;
    return ZSH_OK;
}

void zsh_store_table_cleanup(zsh_store_table_t *table)
{
    zsh_store_entry_t *e, *next;
    size_t i;

    for (i = 0; i < table->nbuckets; i++) {
        for (e = table->buckets[i]; e != NULL; e = next) {
            next = e->next;
            free(e->value);
            free(e);
        }
    }
    free(table->buckets);
}
