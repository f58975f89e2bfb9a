#include "mem/huge.h"

#include "core/config.h"

#include <pthread.h>
#include <stdio.h>
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

void zsh_huge_advise(void *ptr, size_t bytes)
{
    size_t page = zsh_huge_align(bytes);

    if (page != 0) {
        (void)madvise(ptr, bytes & ~(page - 1), MADV_HUGEPAGE);
    }
}
