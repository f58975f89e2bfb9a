#include "zsh_info_env.h"

#include "core/config.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The directories make install filled, from the Makefile. */
#define ZSH_INFO_ENV_SH ZSH_INFO_PKGDATADIR "/env.sh"

typedef struct {
    const char *var;    /* the variable env.sh sets for it */
    const char *dir;    /* the installed directory */
    const char *effect; /* what fails while it is not found */
    bool (*found)(const char *dir);
} zsh_info_env_check_t;

/* @path with every link resolved, or as it is where it does not exist. */
static void zsh_info_env_real(const char *path, char *buf)
{
    if (realpath(path, buf) == NULL) {
        snprintf(buf, PATH_MAX, "%s", path);
    }
}

static bool zsh_info_env_same(const char *a, const char *b)
{
    char ra[PATH_MAX], rb[PATH_MAX];

    zsh_info_env_real(a, ra);
    zsh_info_env_real(b, rb);
    return strcmp(ra, rb) == 0;
}

/* Whether the colon-separated @list holds @dir. */
static bool zsh_info_env_list_has(const char *list, const char *dir)
{
    char entry[PATH_MAX];
    const char *end;
    size_t len;

    for (; (list != NULL) && (*list != '\0'); list = (*end == ':') ? end + 1 : end) {
        end = strchr(list, ':');
        if (end == NULL) {
            end = list + strlen(list);
        }
        len = (size_t)(end - list);
        if ((len > 0) && (len < sizeof(entry))) {
            memcpy(entry, list, len);
            entry[len] = '\0';
            if (zsh_info_env_same(entry, dir)) {
                return true;
            }
        }
    }
    return false;
}

/* Whether a line of @cmd's output names @want; a line "name => path" (as
 * ldconfig -p prints) names its path. */
static bool zsh_info_env_cmd_has(const char *cmd, const char *want)
{
    char line[PATH_MAX + 256], *path, *nl;
    bool has = false;
    FILE *f;

    fflush(NULL);
    f = popen(cmd, "r");
    if (f == NULL) {
        return false;
    }
    while (fgets(line, sizeof(line), f) != NULL) {
        nl = strchr(line, '\n');
        if (nl != NULL) {
            *nl = '\0';
        }
        path = strstr(line, " => ");
        path = (path != NULL) ? path + 4 : line;
        has |= (path[0] != '\0') && zsh_info_env_same(path, want);
    }
    pclose(f);
    return has;
}

static bool zsh_info_env_found_bin(const char *dir)
{
    return zsh_info_env_list_has(zsh_config_env("PATH"), dir);
}

/* LD_LIBRARY_PATH, else the loader's cache (a libdir in ld.so.conf, after
 * ldconfig). */
static bool zsh_info_env_found_lib(const char *dir)
{
    char lib[PATH_MAX];

    snprintf(lib, sizeof(lib), "%s/libzeroshard.so.0", dir);
    return zsh_info_env_list_has(zsh_config_env("LD_LIBRARY_PATH"), dir) ||
           zsh_info_env_cmd_has("{ /sbin/ldconfig -p || ldconfig -p; } 2>/dev/null", lib);
}

static bool zsh_info_env_found_pc(const char *dir)
{
    char pc[PATH_MAX];

    snprintf(pc, sizeof(pc), "%s/zeroshard.pc", dir);
    return zsh_info_env_cmd_has("pkg-config --path zeroshard 2>/dev/null", pc);
}

static bool zsh_info_env_found_man(const char *dir)
{
    return zsh_info_env_cmd_has("manpath 2>/dev/null | tr : '\\n'", dir);
}

#ifdef ZSH_INFO_PYTHON
static bool zsh_info_env_found_py(const char *dir)
{
    return zsh_info_env_cmd_has("'" ZSH_INFO_PYTHON "' -c 'import sys; print(\"\\n\".join(sys.path))' "
                                "2>/dev/null", dir);
}
#endif

static const zsh_info_env_check_t zsh_info_env_checks[] = {
    {"PATH", ZSH_INFO_BINDIR, "zshrun, zsh_info and the other programs are not found by name",
     zsh_info_env_found_bin},
    {"LD_LIBRARY_PATH", ZSH_INFO_LIBDIR, "programs built with pkg-config fail to load "
     "libzeroshard.so.0", zsh_info_env_found_lib},
    {"PKG_CONFIG_PATH", ZSH_INFO_PKGCONFIGDIR, "pkg-config --cflags --libs zeroshard finds no "
     "zeroshard (or another copy)", zsh_info_env_found_pc},
#ifdef ZSH_INFO_PYTHON
    {"PYTHONPATH", ZSH_INFO_PYTHONDIR, ZSH_INFO_PYTHON " cannot import zeroshard (or imports "
     "another copy)", zsh_info_env_found_py},
#endif
    {"MANPATH", ZSH_INFO_MANDIR, "man zshrun finds no page", zsh_info_env_found_man},
};

#define ZSH_INFO_ENV_NCHECKS (sizeof(zsh_info_env_checks) / sizeof(zsh_info_env_checks[0]))

/* Whether this zsh_info is the one make install put in bindir; a build
 * tree's copy has no installed directories of its own to check. */
static bool zsh_info_env_installed(char *self, size_t len)
{
    char bin[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, len - 1);

    if (n <= 0) {
        return false;
    }
    self[n] = '\0';
    snprintf(bin, sizeof(bin), "%s/zsh_info", ZSH_INFO_BINDIR);
    return zsh_info_env_same(self, bin);
}

int zsh_info_print_env(void)
{
    char self[PATH_MAX];
    size_t i;
    int missing = 0;

    if (!zsh_info_env_installed(self, sizeof(self))) {
        printf("# Environment: this zsh_info (%s) is not the installed one (%s/zsh_info): "
               "nothing to check\n", self, ZSH_INFO_BINDIR);
        return 0;
    }
    printf("# Environment of the copy installed in %s:\n", ZSH_INFO_PREFIX);
    for (i = 0; i < ZSH_INFO_ENV_NCHECKS; i++) {
        const zsh_info_env_check_t *c = &zsh_info_env_checks[i];

        if (c->found(c->dir)) {
            printf("#   %s: ok (%s)\n", c->var, c->dir);
        } else {
            printf("#   %s: missing %s: %s\n", c->var, c->dir, c->effect);
            missing++;
        }
    }
    if (missing > 0) {
        printf("# Set them all with: . %s\n", ZSH_INFO_ENV_SH);
    }
    return 0;
}

void zsh_info_env_hint(void)
{
    char self[PATH_MAX], names[256] = "";
    size_t i, used = 0;

    if (!zsh_info_env_installed(self, sizeof(self))) {
        return;
    }
    for (i = 0; i < ZSH_INFO_ENV_NCHECKS; i++) {
        if (!zsh_info_env_checks[i].found(zsh_info_env_checks[i].dir) && (used < sizeof(names))) {
            used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s",
                                     (used > 0) ? ", " : "", zsh_info_env_checks[i].var);
        }
    }
    if (used > 0) {
        fprintf(stderr, "zsh_info: this installed copy is missing from %s; set them with: . %s "
                "(zsh_info -e says more)\n", names, ZSH_INFO_ENV_SH);
    }
}
