/*
 * zsh_info: what this ZeroShard build is and what it sees, like ucx_info.
 *
 * With no option it prints every section; each option selects sections, and
 * several may be combined. It links the internal library, so it reads the
 * config registry, the selection rule and the topology code directly
 * instead of duplicating them.
 */
#include <config.h>

#include "aio/backend.h"
#include "boot/config.h"
#include "boot/pmix.h"
#include "comm/comm.h"
#include "core/config.h"
#include "select/select.h"
#include "topo/topo.h"
#include "zsh_info_env.h"

#include <zeroshard.h>
#include <zeroshard/device.h>
#include <zeroshard/version.h>

#include <getopt.h>
#include <stdbool.h>
#include <hwloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucp/api/ucp.h>

enum {
    ZSH_INFO_VERSION  = 1u << 0,
    ZSH_INFO_FEATURES = 1u << 1,
    ZSH_INFO_DEVICES  = 1u << 2,
    ZSH_INFO_TOPOLOGY = 1u << 3,
    ZSH_INFO_CONFIG   = 1u << 4,
    ZSH_INFO_SELECT   = 1u << 5,
    ZSH_INFO_ENV      = 1u << 6,
    ZSH_INFO_ALL      = (1u << 7) - 1
};

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
    *sections_p = (sections == 0) ? ZSH_INFO_ALL : sections;
    return ZSH_INFO_RUN;
}

/* Headers and library can differ when an old libzeroshard.so is found first. */
static int zsh_info_print_version(void)
{
    int major, minor, patch;

    zsh_get_version(&major, &minor, &patch);
    printf("# ZeroShard version: headers %s, library %d.%d.%d\n", ZSH_VERSION_STRING, major,
           minor, patch);
    return 0;
}

/* hwloc packs its API version as 0xMMmmpp. */
static void zsh_info_hwloc_version(unsigned api, char *buf, size_t len)
{
    snprintf(buf, len, "%u.%u.%u", api >> 16, (api >> 8) & 0xffu, api & 0xffu);
}

/* "yes"/"no" from configure, printed as on/off. */
static const char *zsh_info_on_off(const char *configured)
{
    return (configured[0] == 'y') ? "on" : "off";
}

/* The NVMe tier's I/O backends this build has, and the one ZSH_AIO=auto takes
 * on this machine: the kernel (or a container's seccomp profile) may refuse
 * io_uring or libaio that the build has. */
static void zsh_info_print_aio(void)
{
    char why[512];
    zsh_aio_kind_t kind;

    printf("#   liburing: %s (io_uring backend of the NVMe I/O engine)\n",
           zsh_info_on_off(ZSH_FEATURE_LIBURING));
    printf("#   libaio: %s (libaio backend of the NVMe I/O engine; threads always built)\n",
           zsh_info_on_off(ZSH_FEATURE_LIBAIO));
    kind = zsh_aio_probe_auto(why, sizeof(why));
    printf("#   NVMe I/O: %s (taken by ZSH_AIO=auto here%s%s)\n",
           zsh_aio_backend_ops(kind)->name, (why[0] != '\0') ? "; passed over " : "", why);
}

/* Whether device buffers can be used here: a build with NCCL on a machine
 * with no GPU (or no driver) says why not. */
static void zsh_info_print_device(void)
{
    if (zsh_device_available()) {
        printf("#   device path: available (buffers in CUDA memory go over NCCL)\n");
    } else {
        printf("#   device path: not here (%s)\n", zsh_last_error());
    }
}

/* Build time (configure) next to run time, since the two may disagree. UCX
 * and hwloc are required, so they are always on. */
static int zsh_info_print_features(void)
{
    char hwloc_built[32], hwloc_run[32];

    zsh_info_hwloc_version(HWLOC_API_VERSION, hwloc_built, sizeof(hwloc_built));
    zsh_info_hwloc_version(hwloc_get_api_version(), hwloc_run, sizeof(hwloc_run));
    printf("# Build features: %s\n", ZSH_BUILD_FEATURES);
    printf("#   UCX:    on (configured %s, running %s)\n", ZSH_UCX_VERSION,
           ucp_get_version_string());
    printf("#   hwloc:  on (configured %s, API built %s, API running %s)\n", ZSH_HWLOC_VERSION,
           hwloc_built, hwloc_run);
    printf("#   PMIx:   %s (zsh_comm_init() under mpirun and srun)\n",
           zsh_info_on_off(ZSH_FEATURE_PMIX));
    printf("#   MPI:    %s (<zeroshard/mpi.h> tests and examples)\n",
           zsh_info_on_off(ZSH_FEATURE_MPI));
    printf("#   CUDA:   %s\n", zsh_info_on_off(ZSH_FEATURE_CUDA));
    printf("#   NCCL:   %s (collectives on CUDA device buffers, <zeroshard/device.h>)\n",
           zsh_info_on_off(ZSH_FEATURE_NCCL));
    zsh_info_print_device();
    zsh_info_print_aio();
    return 0;
}

/* The same features the UCX transport asks for, so the resources listed are
 * the ones ZeroShard would get. */
static int zsh_info_print_devices(void)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA};
    ucp_config_t *config;
    ucs_status_t status;
    ucp_context_h ctx;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        fprintf(stderr, "zsh_info: ucp_config_read failed: %s\n", ucs_status_string(status));
        return 1;
    }
    status = ucp_init(&params, config, &ctx);
    ucp_config_release(config);
    if (status != UCS_OK) {
        fprintf(stderr, "zsh_info: ucp_init failed: %s\n", ucs_status_string(status));
        return 1;
    }
    printf("# UCX transports and devices (features TAG|RMA):\n");
    ucp_context_print_info(ctx, stdout);
    ucp_cleanup(ctx);
    return 0;
}

/* A NUMA node's or package's index, "-" where unknown. */
static const char *zsh_info_index(int index, char *buf, size_t len)
{
    if (index < 0) {
        return "-";
    }
    snprintf(buf, len, "%d", index);
    return buf;
}

/* The map, then a line per node and per rank: a node's first rank names
 * it; its boot id tells apart machines that share a host name. */
static void zsh_info_print_map(const zsh_topo_t *topo, const char *whose)
{
    const zsh_topo_rank_t *r;
    char line[4096], numa[16], package[16];
    const int *ranks;
    int node, n, i;

    zsh_topo_format(topo, line, sizeof(line));
    printf("# Rank map (%s): %s\n", whose, line);
    for (node = 0; node < topo->nnodes; node++) {
        ranks = zsh_topo_node_ranks(topo, node, &n);
        printf("#   node %d: %s (boot id %.8s), %d rank(s), leader %d:", node,
               topo->node_id[node].host,
               (topo->node_id[node].machine[0] != '\0') ? topo->node_id[node].machine : "unknown",
               n, ranks[0]);
        for (i = 0; i < n; i++) {
            printf(" %d", ranks[i]);
        }
        printf("\n");
    }
    printf("#   rank  node  local  numa  package\n");
    for (i = 0; i < topo->size; i++) {
        r = &topo->ranks[i];
        printf("#   %4d  %4d  %5d  %4s  %7s\n", i, r->node, r->local_rank,
               zsh_info_index(r->numa, numa, sizeof(numa)),
               zsh_info_index(r->package, package, sizeof(package)));
    }
}

/* Whether a launcher started this process as a rank of a job: then
 * zsh_comm_init() meets the other ranks, as any job's first call would. */
static bool zsh_info_in_job(void)
{
    zsh_boot_config_t boot;

    if (zsh_boot_config_read(&boot) != ZSH_OK) {
        return true; /* let zsh_comm_init() name the malformed variable */
    }
    switch (boot.bootstrap) {
    case ZSH_BOOTSTRAP_ENV:  return true;
    case ZSH_BOOTSTRAP_PMIX: return true;
    default:                 return (boot.rank >= 0) || (boot.pmix_launched && zsh_boot_pmix_built());
    }
}

/* This node from hwloc: its shape, and what ZSH_STREAM_MIN_SIZE=auto becomes. */
static int zsh_info_print_node(void)
{
    char buf[512];
    size_t cache;

    if (zsh_topo_describe(NULL, buf, sizeof(buf)) != ZSH_OK) {
        fprintf(stderr, "zsh_info: topology: %s\n", zsh_last_error());
        return 1;
    }
    printf("# Topology: %s\n", buf);
    if (zsh_topo_private_cache(NULL, &cache) != ZSH_OK) {
        fprintf(stderr, "zsh_info: topology: %s\n", zsh_last_error());
        return 1;
    }
    if (cache > 0) {
        printf("# Private cache per core: %zu bytes (ZSH_STREAM_MIN_SIZE=auto)\n", cache);
    } else {
        printf("# Private cache per core: none known (ZSH_STREAM_MIN_SIZE=auto: never)\n");
    }
    return 0;
}

/* Rank 0's node and the map of the job this process is a rank of (every
 * rank holds the same map, so the others print nothing); or this node and
 * the map of this process alone. */
static int zsh_info_print_topology(void)
{
    zsh_topo_t *topo;
    zsh_topo_id_t id;
    zsh_comm_t *comm;
    int failed = 0;

    if (zsh_info_in_job()) {
        if (zsh_comm_init(&comm) != ZSH_OK) {
            fprintf(stderr, "zsh_info: rank map: %s\n", zsh_last_error());
            return 1;
        }
        if (comm->rank == 0) {
            failed = zsh_info_print_node();
            zsh_info_print_map(comm->topo, "the job, as every rank holds it");
        }
        if (zsh_comm_destroy(comm) != ZSH_OK) {
            fprintf(stderr, "zsh_info: rank map: %s\n", zsh_last_error());
            failed = 1;
        }
        return failed;
    }
    failed = zsh_info_print_node();
    if ((zsh_topo_local_id(&id) != ZSH_OK) || (zsh_topo_create(0, 1, &id, &topo) != ZSH_OK)) {
        fprintf(stderr, "zsh_info: rank map: %s\n", zsh_last_error());
        return 1;
    }
    zsh_info_print_map(topo, "this process alone; run under a launcher for a job's");
    zsh_topo_destroy(topo);
    return failed;
}

/* One variable, as `ucx_info -c` would: commented help, what it takes,
 * then NAME=value. */
static void zsh_info_print_field(const zsh_config_field_t *field, const void *opts, int from_env)
{
    const char *source = from_env ? zsh_config_source(field) : NULL;
    char value[ZSH_CONFIG_STR_MAX], range[192];

    zsh_config_format(field, opts, value, sizeof(value));
    zsh_config_range(field, range, sizeof(range));
    printf("# %s\n", field->help);
    printf("# range: %s\n", range);
    printf("# default: %s", (field->dflt[0] != '\0') ? field->dflt : "(unset)");
    if (field->fallback != NULL) {
        printf(", also read from: %s", field->fallback);
    }
    if (source != NULL) {
        printf(", set by: %s", source);
    }
    printf("\n%s%s=%s\n\n", ZSH_CONFIG_PREFIX, field->name, value);
}

/* One layer's table, headed by its name; defaults alone when the
 * environment holds a malformed value for it, which is reported. */
static int zsh_info_print_table(const zsh_config_table_t *table)
{
    int from_env = 1;
    void *opts;
    size_t i;

    opts = calloc(1, table->size);
    if (opts == NULL) {
        fprintf(stderr, "zsh_info: out of memory\n");
        return 1;
    }
    printf("# ---- %s ----\n\n", table->name);
    if (zsh_config_read(table, opts) != ZSH_OK) {
        fprintf(stderr, "zsh_info: %s\n", zsh_last_error());
        printf("# The environment could not be read; showing defaults.\n\n");
        zsh_config_defaults(table, opts);
        from_env = 0;
    }
    for (i = 0; i < table->nfields; i++) {
        zsh_info_print_field(&table->fields[i], opts, from_env);
    }
    free(opts);
    return from_env ? 0 : 1;
}

static int zsh_info_print_config(void)
{
    const zsh_config_table_t *table;
    int failed = 0;

    for (table = zsh_config_tables(); table != NULL; table = table->next) {
        failed |= zsh_info_print_table(table);
    }
    return failed;
}

static int zsh_info_print_select(void)
{
    zsh_select_describe(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    /* Indexes match the ZSH_INFO_* bits. */
    static int (*const printers[])(void) = {zsh_info_print_version, zsh_info_print_features,
                                            zsh_info_print_devices, zsh_info_print_topology,
                                            zsh_info_print_config, zsh_info_print_select,
                                            zsh_info_print_env};
    unsigned sections = 0, i;
    int failed = 0, printed = 0;

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
    for (i = 0; i < sizeof(printers) / sizeof(printers[0]); i++) {
        if (sections & (1u << i)) {
            fputs(printed++ ? "\n" : "", stdout);
            failed |= printers[i]();
        }
    }
    return failed ? 1 : 0;
}
