/*
 * zsh_info_print(): the library describing itself, the sections zsh_info
 * prints. It lives in libzeroshard, above every layer (it reads the config
 * registry, the selection rule, the topology, the transport's UCX and the
 * NVMe engine's probe), so that a program or a Python process is told about
 * the copy it loaded, not the one a zsh_info program was linked with.
 */
#include <config.h>

#include "aio/backend.h"
#include "boot/config.h"
#include "boot/pmix.h"
#include "comm/comm.h"
#include "core/config.h"
#include "core/status.h"
#include "select/select.h"
#include "topo/topo.h"

#include <zeroshard.h>
#include <zeroshard/device.h>
#include <zeroshard/info.h>
#include <zeroshard/version.h>

#include <hwloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <ucp/api/ucp.h>

/* Headers and library can differ when an old libzeroshard.so is found first. */
static zsh_status_t zsh_info_print_version(FILE *out)
{
    int major, minor, patch;

    zsh_get_version(&major, &minor, &patch);
    fprintf(out, "# ZeroShard version: headers %s, library %d.%d.%d\n", ZSH_VERSION_STRING,
            major, minor, patch);
    return ZSH_OK;
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
static void zsh_info_print_aio(FILE *out)
{
    char why[512];
    zsh_aio_kind_t kind;

    fprintf(out, "#   liburing: %s (io_uring backend of the NVMe I/O engine)\n",
            zsh_info_on_off(ZSH_FEATURE_LIBURING));
    fprintf(out, "#   libaio: %s (libaio backend of the NVMe I/O engine; threads always built)\n",
            zsh_info_on_off(ZSH_FEATURE_LIBAIO));
    kind = zsh_aio_probe_auto(why, sizeof(why));
    fprintf(out, "#   NVMe I/O: %s (taken by ZSH_AIO=auto here%s%s)\n",
            zsh_aio_backend_ops(kind)->name, (why[0] != '\0') ? "; passed over " : "", why);
}

/* Whether device buffers can be used here: a build with NCCL on a machine
 * with no GPU (or no driver) says why not. */
static void zsh_info_print_device(FILE *out)
{
    if (zsh_device_available()) {
        fprintf(out, "#   device path: available (buffers in CUDA memory go over NCCL)\n");
    } else {
        fprintf(out, "#   device path: not here (%s)\n", zsh_last_error());
    }
}

/* Build time (configure) next to run time, since the two may disagree. UCX
 * and hwloc are required, so they are always on. */
static zsh_status_t zsh_info_print_features(FILE *out)
{
    char hwloc_built[32], hwloc_run[32];

    zsh_info_hwloc_version(HWLOC_API_VERSION, hwloc_built, sizeof(hwloc_built));
    zsh_info_hwloc_version(hwloc_get_api_version(), hwloc_run, sizeof(hwloc_run));
    fprintf(out, "# Build features: %s\n", ZSH_BUILD_FEATURES);
    fprintf(out, "#   UCX:    on (configured %s, running %s)\n", ZSH_UCX_VERSION,
            ucp_get_version_string());
    fprintf(out, "#   hwloc:  on (configured %s, API built %s, API running %s)\n",
            ZSH_HWLOC_VERSION, hwloc_built, hwloc_run);
    fprintf(out, "#   PMIx:   %s (zsh_comm_init() under mpirun and srun)\n",
            zsh_info_on_off(ZSH_FEATURE_PMIX));
    fprintf(out, "#   MPI:    %s (<zeroshard/mpi.h> tests and examples)\n",
            zsh_info_on_off(ZSH_FEATURE_MPI));
    fprintf(out, "#   CUDA:   %s\n", zsh_info_on_off(ZSH_FEATURE_CUDA));
    fprintf(out, "#   NCCL:   %s (collectives on CUDA device buffers, <zeroshard/device.h>)\n",
            zsh_info_on_off(ZSH_FEATURE_NCCL));
    zsh_info_print_device(out);
    zsh_info_print_aio(out);
    return ZSH_OK;
}

/* The same features the UCX transport asks for, so the resources listed are
 * the ones ZeroShard would get. */
static zsh_status_t zsh_info_print_devices(FILE *out)
{
    ucp_params_t params = {.field_mask = UCP_PARAM_FIELD_FEATURES,
                           .features   = UCP_FEATURE_TAG | UCP_FEATURE_RMA};
    ucp_config_t *config;
    ucs_status_t status;
    ucp_context_h ctx;

    status = ucp_config_read(NULL, NULL, &config);
    if (status != UCS_OK) {
        fprintf(stderr, "zsh_info: ucp_config_read failed: %s\n", ucs_status_string(status));
        return ZSH_ERR_TRANSPORT;
    }
    status = ucp_init(&params, config, &ctx);
    ucp_config_release(config);
    if (status != UCS_OK) {
        fprintf(stderr, "zsh_info: ucp_init failed: %s\n", ucs_status_string(status));
        return ZSH_ERR_TRANSPORT;
    }
    fprintf(out, "# UCX transports and devices (features TAG|RMA):\n");
    ucp_context_print_info(ctx, out);
    ucp_cleanup(ctx);
    return ZSH_OK;
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
static void zsh_info_print_map(FILE *out, const zsh_topo_t *topo, const char *whose)
{
    const zsh_topo_rank_t *r;
    char line[4096], numa[16], package[16];
    const int *ranks;
    int node, n, i;

    zsh_topo_format(topo, line, sizeof(line));
    fprintf(out, "# Rank map (%s): %s\n", whose, line);
    for (node = 0; node < topo->nnodes; node++) {
        ranks = zsh_topo_node_ranks(topo, node, &n);
        fprintf(out, "#   node %d: %s (boot id %.8s), %d rank(s), leader %d:", node,
                topo->node_id[node].host,
                (topo->node_id[node].machine[0] != '\0') ? topo->node_id[node].machine
                                                         : "unknown",
                n, ranks[0]);
        for (i = 0; i < n; i++) {
            fprintf(out, " %d", ranks[i]);
        }
        fprintf(out, "\n");
    }
    fprintf(out, "#   rank  node  local  numa  package\n");
    for (i = 0; i < topo->size; i++) {
        r = &topo->ranks[i];
        fprintf(out, "#   %4d  %4d  %5d  %4s  %7s\n", i, r->node, r->local_rank,
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
    default:
        return (boot.rank >= 0) || (boot.pmix_launched && zsh_boot_pmix_built());
    }
}

/* This node from hwloc: its shape, and what ZSH_STREAM_MIN_SIZE=auto becomes. */
static zsh_status_t zsh_info_print_node(FILE *out)
{
    char buf[512];
    zsh_status_t st;
    size_t cache;

    st = zsh_topo_describe(NULL, buf, sizeof(buf));
    if (st != ZSH_OK) {
        fprintf(stderr, "zsh_info: topology: %s\n", zsh_last_error());
        return st;
    }
    fprintf(out, "# Topology: %s\n", buf);
    st = zsh_topo_private_cache(NULL, &cache);
    if (st != ZSH_OK) {
        fprintf(stderr, "zsh_info: topology: %s\n", zsh_last_error());
        return st;
    }
    if (cache > 0) {
        fprintf(out, "# Private cache per core: %zu bytes (ZSH_STREAM_MIN_SIZE=auto)\n", cache);
    } else {
        fprintf(out, "# Private cache per core: none known (ZSH_STREAM_MIN_SIZE=auto: never)\n");
    }
    return ZSH_OK;
}

/* Rank 0's node and the map of the job this process is a rank of (every
 * rank holds the same map, so the others print nothing); or this node and
 * the map of this process alone. */
static zsh_status_t zsh_info_print_topology(FILE *out)
{
    zsh_status_t st = ZSH_OK, st2;
    zsh_topo_t *topo;
    zsh_topo_id_t id;
    zsh_comm_t *comm;

    if (zsh_info_in_job()) {
        st = zsh_comm_init(&comm);
        if (st != ZSH_OK) {
            fprintf(stderr, "zsh_info: rank map: %s\n", zsh_last_error());
            return st;
        }
        if (comm->rank == 0) {
            st = zsh_info_print_node(out);
            zsh_info_print_map(out, comm->topo, "the job, as every rank holds it");
        }
        st2 = zsh_comm_destroy(comm);
        if (st2 != ZSH_OK) {
            fprintf(stderr, "zsh_info: rank map: %s\n", zsh_last_error());
        }
        return (st != ZSH_OK) ? st : st2;
    }
    st = zsh_info_print_node(out);
    st2 = zsh_topo_local_id(&id);
    if (st2 == ZSH_OK) {
        st2 = zsh_topo_create(0, 1, &id, &topo);
    }
    if (st2 != ZSH_OK) {
        fprintf(stderr, "zsh_info: rank map: %s\n", zsh_last_error());
        return st2;
    }
    zsh_info_print_map(out, topo, "this process alone; run under a launcher for a job's");
    zsh_topo_destroy(topo);
    return st;
}

/* One variable, as `ucx_info -c` would: commented help, what it takes,
 * then NAME=value. */
static void zsh_info_print_field(FILE *out, const zsh_config_field_t *field, const void *opts,
                                 int from_env)
{
    const char *source = from_env ? zsh_config_source(field) : NULL;
    char value[ZSH_CONFIG_STR_MAX], range[192];

    zsh_config_format(field, opts, value, sizeof(value));
    zsh_config_range(field, range, sizeof(range));
    fprintf(out, "# %s\n", field->help);
    fprintf(out, "# range: %s\n", range);
    fprintf(out, "# default: %s", (field->dflt[0] != '\0') ? field->dflt : "(unset)");
    if (field->fallback != NULL) {
        fprintf(out, ", also read from: %s", field->fallback);
    }
    if (source != NULL) {
        fprintf(out, ", set by: %s", source);
    }
    fprintf(out, "\n%s%s=%s\n\n", ZSH_CONFIG_PREFIX, field->name, value);
}

/* One layer's table, headed by its name; defaults alone when the
 * environment holds a malformed value for it, which is reported. */
static zsh_status_t zsh_info_print_table(FILE *out, const zsh_config_table_t *table)
{
    zsh_status_t st;
    void *opts;
    size_t i;

    opts = calloc(1, table->size);
    if (opts == NULL) {
        fprintf(stderr, "zsh_info: out of memory\n");
        return ZSH_ERR_NO_MEMORY;
    }
    fprintf(out, "# ---- %s ----\n\n", table->name);
    st = zsh_config_read(table, opts);
    if (st != ZSH_OK) {
        fprintf(stderr, "zsh_info: %s\n", zsh_last_error());
        fprintf(out, "# The environment could not be read; showing defaults.\n\n");
        zsh_config_defaults(table, opts);
    }
    for (i = 0; i < table->nfields; i++) {
        zsh_info_print_field(out, &table->fields[i], opts, st == ZSH_OK);
    }
    free(opts);
    return st;
}

static zsh_status_t zsh_info_print_config(FILE *out)
{
    const zsh_config_table_t *table;
    zsh_status_t st = ZSH_OK, st_table;

    for (table = zsh_config_tables(); table != NULL; table = table->next) {
        st_table = zsh_info_print_table(out, table);
        if (st == ZSH_OK) {
            st = st_table;
        }
    }
    return st;
}

static zsh_status_t zsh_info_print_select(FILE *out)
{
    zsh_select_describe(out);
    return ZSH_OK;
}

zsh_status_t zsh_info_print(FILE *out, unsigned sections)
{
    /* Indexes match the ZSH_INFO_* bits. */
    static zsh_status_t (*const printers[])(FILE *) = {
        zsh_info_print_version,  zsh_info_print_features, zsh_info_print_devices,
        zsh_info_print_topology, zsh_info_print_config,   zsh_info_print_select};
    zsh_status_t st = ZSH_OK, st_section;
    unsigned i;
    int printed = 0;

    _Static_assert(ZSH_INFO_ALL == (1u << (sizeof(printers) / sizeof(printers[0]))) - 1,
                   "a printer for every section bit");
    if (out == NULL) {
        return zsh_error(ZSH_ERR_INVALID_ARG, "zsh_info_print: out is NULL");
    }
    if ((sections == 0) || ((sections & ~(unsigned)ZSH_INFO_ALL) != 0)) {
        return zsh_error(ZSH_ERR_INVALID_ARG,
                         "zsh_info_print: sections 0x%x: not a nonzero OR of ZSH_INFO_* bits (0x%x)",
                         sections, (unsigned)ZSH_INFO_ALL);
    }
    /* A failing section does not stop the others: report all that can be. */
    for (i = 0; i < sizeof(printers) / sizeof(printers[0]); i++) {
        if (sections & (1u << i)) {
            fputs(printed++ ? "\n" : "", out);
            st_section = printers[i](out);
            if (st == ZSH_OK) {
                st = st_section;
            }
        }
    }
    fflush(out);
    return st;
}
