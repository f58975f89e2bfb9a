#include "mem/huge.h"

#include "core/config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

typedef struct zsh_mem_config {
    int huge_pages; /* index into zsh_huge_names */
} zsh_mem_config_t;

static const char *const zsh_huge_names[] = {"on", "off", NULL};

static const zsh_config_field_t zsh_mem_config_fields[] = {
    {"HUGE_PAGES", NULL, "on",
     "Transparent huge pages for the ZeRO layer's host buffers of a huge page or more "
     "(madvise; ranks copy between them faster): on or off; nothing changes where the "
     "kernel's transparent huge pages are off",
     offsetof(zsh_mem_config_t, huge_pages), ZSH_CONFIG_ENUM, zsh_huge_names, NULL, NULL},
};

static zsh_config_table_t zsh_mem_config_table = {
    "zero: mem", ZSH_CONFIG_ORDER_ZERO + 5, zsh_mem_config_fields,
    sizeof(zsh_mem_config_fields) / sizeof(zsh_mem_config_fields[0]), sizeof(zsh_mem_config_t),
    NULL};

__attribute__((constructor)) static void zsh_mem_config_register(void)
{
    zsh_config_register(&zsh_mem_config_table);
}

zsh_status_t zsh_huge_config_check(void)
{
    zsh_mem_config_t cfg;

    return zsh_config_read(&zsh_mem_config_table, &cfg);
}

static size_t zsh_huge_page;
static pthread_once_t zsh_huge_once = PTHREAD_ONCE_INIT;

/* Read once: the sysfs files say whether the kernel hands out transparent
 * huge pages on advice and of what size (2 MiB on x86-64, larger on some
 * arm64 kernels). */
static void zsh_huge_probe(void)
{
    char mode[128] = "";
    unsigned long long size = 0;
    FILE *f;

    f = fopen("/sys/kernel/mm/transparent_hugepage/enabled", "r");
    if (f != NULL) {
        if (fgets(mode, sizeof(mode), f) == NULL) {
            mode[0] = '\0';
        }
        fclose(f);
    }
    if ((strstr(mode, "[madvise]") == NULL) && (strstr(mode, "[always]") == NULL)) {
        return;
    }
    f = fopen("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size", "r");
    if (f != NULL) {
        if (fscanf(f, "%llu", &size) != 1) {
            size = 0;
        }
        fclose(f);
    }
    /* A power of two no larger than 1 GiB, or nothing. */
    if ((size >= 4096) && (size <= (1ULL << 30)) && ((size & (size - 1)) == 0)) {
        zsh_huge_page = (size_t)size;
    }
}

size_t zsh_huge_align(size_t bytes)
{
    zsh_mem_config_t cfg;
    char err[8];

    pthread_once(&zsh_huge_once, zsh_huge_probe);
    if ((zsh_huge_page == 0) || (bytes < zsh_huge_page)) {
        return 0;
    }
    /* Read at every large allocation, so it may change between optimizers;
     * a malformed value (which creating one refuses) advises nothing. */
    if ((zsh_config_read_quiet(&zsh_mem_config_table, &cfg, err, sizeof(err)) != ZSH_OK) ||
        (cfg.huge_pages != 0)) {
        return 0;
    }
    return zsh_huge_page;
}

/*
 * The live mappings, by address: an open-addressing table with linear
 * probing, grown at half full, under a lock (the layer allocates from the
 * caller's thread and frees from the update threads too).
 */
typedef struct zsh_huge_map {
    uintptr_t addr; /* 0: an empty slot */
    size_t    len;
} zsh_huge_map_t;

static pthread_mutex_t zsh_huge_lock = PTHREAD_MUTEX_INITIALIZER;
static zsh_huge_map_t *zsh_huge_maps;
static size_t zsh_huge_cap, zsh_huge_used; /* cap: 0 or a power of two */

static size_t zsh_huge_slot(uintptr_t addr, size_t cap)
{
    return (size_t)((addr >> 21) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static void zsh_huge_put(zsh_huge_map_t *maps, size_t cap, uintptr_t addr, size_t len)
{
    size_t i = zsh_huge_slot(addr, cap);

    while (maps[i].addr != 0) {
        i = (i + 1) & (cap - 1);
    }
    maps[i] = (zsh_huge_map_t){addr, len};
}

/* Record a mapping; false where the table cannot grow. */
static bool zsh_huge_remember(uintptr_t addr, size_t len)
{
    zsh_huge_map_t *grown;
    size_t cap, i;
    bool ok = true;

    pthread_mutex_lock(&zsh_huge_lock);
    if (2 * (zsh_huge_used + 1) > zsh_huge_cap) {
        cap   = (zsh_huge_cap == 0) ? 64 : 2 * zsh_huge_cap;
        grown = calloc(cap, sizeof(*grown));
        if (grown == NULL) {
            ok = false;
        } else {
            for (i = 0; i < zsh_huge_cap; i++) {
                if (zsh_huge_maps[i].addr != 0) {
                    zsh_huge_put(grown, cap, zsh_huge_maps[i].addr, zsh_huge_maps[i].len);
                }
            }
            free(zsh_huge_maps);
            zsh_huge_maps = grown;
            zsh_huge_cap  = cap;
        }
    }
    if (ok) {
        zsh_huge_put(zsh_huge_maps, zsh_huge_cap, addr, len);
        zsh_huge_used++;
    }
    pthread_mutex_unlock(&zsh_huge_lock);
    return ok;
}

/* Take a mapping out: its length, or 0 where @addr is not one. */
static size_t zsh_huge_forget(uintptr_t addr)
{
    size_t i, j, k, len = 0;

    pthread_mutex_lock(&zsh_huge_lock);
    if (zsh_huge_cap > 0) {
        for (i = zsh_huge_slot(addr, zsh_huge_cap); zsh_huge_maps[i].addr != 0;
             i = (i + 1) & (zsh_huge_cap - 1)) {
            if (zsh_huge_maps[i].addr == addr) {
                len = zsh_huge_maps[i].len;
                break;
            }
        }
    }
    if (len != 0) {
        /* Shift later entries of the run back over the hole, so that every
         * entry stays reachable from its home slot without tombstones. */
        for (j = (i + 1) & (zsh_huge_cap - 1); zsh_huge_maps[j].addr != 0;
             j = (j + 1) & (zsh_huge_cap - 1)) {
            k = zsh_huge_slot(zsh_huge_maps[j].addr, zsh_huge_cap);
            if (((j > i) && ((k <= i) || (k > j))) || ((j < i) && ((k <= i) && (k > j)))) {
                zsh_huge_maps[i] = zsh_huge_maps[j];
                i                = j;
            }
        }
        zsh_huge_maps[i].addr = 0;
        zsh_huge_used--;
    }
    pthread_mutex_unlock(&zsh_huge_lock);
    return len;
}

void *zsh_huge_alloc(size_t bytes)
{
    size_t page = zsh_huge_align(bytes), len, head;
    uintptr_t base, start;
    void *map;

    if (page == 0) {
        return NULL;
    }
    len = (bytes + 4095) & ~(size_t)4095;
    /* A page more than needed, to start on a huge page boundary; the rest
     * is given back at once. */
    map = mmap(NULL, len + page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (map == MAP_FAILED) {
        return NULL;
    }
    base  = (uintptr_t)map;
    start = (base + page - 1) & ~(uintptr_t)(page - 1);
    head  = start - base;
    if (head > 0) {
        (void)munmap(map, head);
    }
    (void)munmap((void *)(start + len), page - head); /* head < page: never empty */
    (void)madvise((void *)start, bytes & ~(page - 1), MADV_HUGEPAGE);
    if (!zsh_huge_remember(start, len)) {
        (void)munmap((void *)start, len);
        return NULL;
    }
    return (void *)start;
}

void *zsh_huge_zalloc(size_t bytes, size_t align)
{
    void *ptr = zsh_huge_alloc(bytes); /* zeroed by the kernel */

    if (ptr != NULL) {
        return ptr;
    }
    /* posix_memalign wants a non-zero size for a pointer that free() takes. */
    if (posix_memalign(&ptr, align, (bytes == 0) ? align : bytes) != 0) {
        return NULL;
    }
    memset(ptr, 0, bytes);
    return ptr;
}

void zsh_huge_free(void *ptr)
{
    size_t len;

    if (ptr == NULL) {
        return;
    }
    len = zsh_huge_forget((uintptr_t)ptr);
    if (len != 0) {
        (void)munmap(ptr, len);
    } else {
        free(ptr);
    }
}
