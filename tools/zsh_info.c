/*
 * zsh_info: what this ZeroShard build is and what it sees, like ucx_info.
 *
 * With no option it prints every section; each option selects sections, and
 * several may be combined. The library prints every section but -e
 * (zsh_info_print(), <zeroshard/info.h>), so a program or a Python process
 * asking its own copy gets the same text; -e is about this installed program
 * and its directories, so it stays here.
 */
#include <config.h>

#include "zsh_info_env.h"

#include <zeroshard.h>
#include <zeroshard/info.h>

#include <getopt.h>
#include <stdio.h>

/* -e, beside the library's sections (ZSH_INFO_*), printed after them. */
enum { ZSH_INFO_ENV = ZSH_INFO_ALL + 1 };

/* What main() should do after parsing the command line. */
typedef enum { ZSH_INFO_RUN, ZSH_INFO_EXIT_OK, ZSH_INFO_EXIT_USAGE } zsh_info_action_t;

static void zsh_info_usage(FILE *out, const char *prog)
{
    fprintf(out,
            "Usage: %s [options]\n"
            "Print the ZeroShard version, build, transports, topology and configuration.\n"
            "With no option, print everything; options may be combined.\n\n"
            "  -v, --version    version only\n"
            "  -f, --features   build features only\n"
            "  -d, --devices    UCX transports and devices only\n"
            "  -t, --topology   node topology and the job's rank map only (under zshrun,\n"
            "                   torchrun or mpirun, rank 0 prints every rank's place)\n"
            "  -c, --config     ZSH_* configuration variables only\n"
            "  -s, --select     the collectives' algorithms and how auto picks one only\n"
            "  -e, --env        whether this installed copy is on PATH, LD_LIBRARY_PATH,\n"
            "                   PKG_CONFIG_PATH, PYTHONPATH and MANPATH, and how to set them\n"
            "  -h, --help       this text\n",
            prog);
}

static zsh_info_action_t zsh_info_parse_args(int argc, char **argv, unsigned *sections_p)
{
    static const struct option longopts[] = {
        {"version", no_argument, NULL, 'v'}, {"features", no_argument, NULL, 'f'},
        {"devices", no_argument, NULL, 'd'}, {"topology", no_argument, NULL, 't'},
        {"config", no_argument, NULL, 'c'},  {"select", no_argument, NULL, 's'},
        {"env", no_argument, NULL, 'e'},     {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0}};
    unsigned sections = 0;
    int opt;

    while ((opt = getopt_long(argc, argv, "vfdtcseh", longopts, NULL)) != -1) {
        switch (opt) {
        case 'v': sections |= ZSH_INFO_VERSION; break;
        case 'f': sections |= ZSH_INFO_FEATURES; break;
        case 'd': sections |= ZSH_INFO_DEVICES; break;
        case 't': sections |= ZSH_INFO_TOPOLOGY; break;
        case 'c': sections |= ZSH_INFO_CONFIG; break;
        case 's': sections |= ZSH_INFO_SELECT; break;
        case 'e': sections |= ZSH_INFO_ENV; break;
        case 'h': zsh_info_usage(stdout, argv[0]); return ZSH_INFO_EXIT_OK;
        default:  zsh_info_usage(stderr, argv[0]); return ZSH_INFO_EXIT_USAGE;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        zsh_info_usage(stderr, argv[0]);
        return ZSH_INFO_EXIT_USAGE;
    }
    *sections_p = (sections == 0) ? (ZSH_INFO_ALL | ZSH_INFO_ENV) : sections;
    return ZSH_INFO_RUN;
}

int main(int argc, char **argv)
{
    unsigned sections = 0, library;
    int failed = 0;

    switch (zsh_info_parse_args(argc, argv, &sections)) {
    case ZSH_INFO_EXIT_OK:    return 0;
    case ZSH_INFO_EXIT_USAGE: return 2;
    case ZSH_INFO_RUN:        break;
    }
    /* A newcomer's first zsh_info -v from an installed copy whose directories
     * are not set says so, not only zsh_info -e. */
    if (!(sections & ZSH_INFO_ENV)) {
        zsh_info_env_hint();
    }
    /* A failing section does not stop the others: report all that can be. */
    library = sections & ZSH_INFO_ALL;
    if (library != 0) {
        failed |= (zsh_info_print(stdout, library) != ZSH_OK);
    }
    if (sections & ZSH_INFO_ENV) {
        fputs((library != 0) ? "\n" : "", stdout);
        failed |= zsh_info_print_env();
    }
    return failed ? 1 : 0;
}
