/*
 * What hwloc and the kernel say of this machine: its identity, where this
 * process runs in it, its private cache, its shape.
 */
#include "topo/topo.h"

#include "core/log.h"
#include "core/status.h"
#include "topo/config.h"

#include <hwloc.h>
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int zsh_topo_count(hwloc_topology_t t, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(t, type);

    return (n < 0) ? 0 : n;
}

/* Topologies of this machine loaded (tests: once per process). */
static size_t zsh_topo_loads;

/* Load hwloc's view of this machine, or of @synthetic. */
static zsh_status_t zsh_topo_load(const char *synthetic, hwloc_topology_t *t_p)
{
    hwloc_topology_t t;

    if (hwloc_topology_init(&t) != 0) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "hwloc_topology_init failed");
    }
    if ((synthetic != NULL) && (hwloc_topology_set_synthetic(t, synthetic) != 0)) {
        hwloc_topology_destroy(t);
        return zsh_error(ZSH_ERR_INVALID_ARG, "hwloc rejected the synthetic topology '%s'",
                         synthetic);
    }
    if (hwloc_topology_load(t) != 0) {
        hwloc_topology_destroy(t);
        return zsh_error(ZSH_ERR_IO, "hwloc_topology_load failed");
    }
    if (synthetic == NULL) {
        __atomic_add_fetch(&zsh_topo_loads, 1, __ATOMIC_RELAXED);
    }
    *t_p = t;
    return ZSH_OK;
}

/*
 * This machine's topology, loaded once per process and kept until exit.
 * hwloc's discovery reads all of /sys's CPU and cache tree, and every
 * communicator asks for it twice (its private cache and its place), so a
 * process making many of them (a rank of each in-process test, torch's
 * process groups) paid it each time (docs/DECISIONS.md, "The test house's
 * time"). hwloc allows concurrent queries of a loaded topology; where this
 * process runs is asked of the kernel at every call. A synthetic machine
 * is loaded for each call.
 */
static hwloc_topology_t zsh_topo_machine_t;
static pthread_once_t   zsh_topo_machine_once = PTHREAD_ONCE_INIT;

static void zsh_topo_machine_load(void)
{
    hwloc_topology_t t = NULL;

    if (zsh_topo_load(NULL, &t) == ZSH_OK) {
        zsh_topo_machine_t = t;
    }
}

/* @synthetic's topology, to be put back with zsh_topo_put(); this
 * machine's (shared) when NULL. A failed load of this machine is tried
 * again, so that each caller gets the error. */
static zsh_status_t zsh_topo_get(const char *synthetic, hwloc_topology_t *t_p)
{
    if (synthetic == NULL) {
        pthread_once(&zsh_topo_machine_once, zsh_topo_machine_load);
        if (zsh_topo_machine_t != NULL) {
            *t_p = zsh_topo_machine_t;
            return ZSH_OK;
        }
    }
    return zsh_topo_load(synthetic, t_p);
}

static void zsh_topo_put(hwloc_topology_t t)
{
    if (t != zsh_topo_machine_t) {
        hwloc_topology_destroy(t);
    }
}

size_t zsh_topo_machine_loads(void)
{
    return zsh_topo_loads;
}

/* The first processor this process may run on (of a synthetic machine: its
 * first), or NULL. */
static hwloc_obj_t zsh_topo_first_pu(hwloc_topology_t t, bool synthetic)
{
    hwloc_bitmap_t binding;
    hwloc_obj_t pu = NULL;

    binding = synthetic ? NULL : hwloc_bitmap_alloc();
    if ((binding != NULL) && (hwloc_get_cpubind(t, binding, HWLOC_CPUBIND_PROCESS) == 0) &&
        !hwloc_bitmap_iszero(binding)) {
        pu = hwloc_get_pu_obj_by_os_index(t, (unsigned)hwloc_bitmap_first(binding));
    }
    hwloc_bitmap_free(binding);
    return (pu != NULL) ? pu : hwloc_get_obj_by_type(t, HWLOC_OBJ_PU, 0);
}

zsh_status_t zsh_topo_private_cache(const char *synthetic, size_t *bytes_p)
{
    hwloc_topology_t t;
    hwloc_obj_t obj;
    zsh_status_t status;
    int cores;

    *bytes_p = 0;
    status   = zsh_topo_get(synthetic, &t);
    if (status != ZSH_OK) {
        return status;
    }
    /* Caches above a processor grow outwards; the first one that more than
     * one core shares ends the walk, since every one above it is shared too.
     * Where hwloc knows no cores, processors stand in for them. */
    obj = zsh_topo_first_pu(t, synthetic != NULL);
    for (obj = (obj != NULL) ? obj->parent : NULL; obj != NULL; obj = obj->parent) {
        if (!hwloc_obj_type_is_dcache(obj->type)) {
            continue;
        }
        cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, obj->cpuset, HWLOC_OBJ_CORE);
        if (cores <= 0) {
            cores = hwloc_get_nbobjs_inside_cpuset_by_type(t, obj->cpuset, HWLOC_OBJ_PU);
        }
        if (cores > 1) {
            break;
        }
        *bytes_p = (obj->attr->cache.size > *bytes_p) ? obj->attr->cache.size : *bytes_p;
    }
    zsh_topo_put(t);
    return ZSH_OK;
}

zsh_status_t zsh_topo_describe(const char *synthetic, char *buf, size_t len)
{
    hwloc_bitmap_t binding = NULL;
    hwloc_topology_t t;
    char cpus[128] = "unknown";
    zsh_status_t status;

    status = zsh_topo_get(synthetic, &t);
    if (status != ZSH_OK) {
        return status;
    }
    if (synthetic == NULL) {
        binding = hwloc_bitmap_alloc();
        if ((binding != NULL) && (hwloc_get_cpubind(t, binding, HWLOC_CPUBIND_PROCESS) == 0)) {
            hwloc_bitmap_list_snprintf(cpus, sizeof(cpus), binding);
        }
        hwloc_bitmap_free(binding);
    }
    snprintf(buf, len, "%d package(s), %d NUMA node(s), %d core(s), %d PU(s); bound to PUs %s",
             zsh_topo_count(t, HWLOC_OBJ_PACKAGE), zsh_topo_count(t, HWLOC_OBJ_NUMANODE),
             zsh_topo_count(t, HWLOC_OBJ_CORE), zsh_topo_count(t, HWLOC_OBJ_PU),
             (synthetic == NULL) ? cpus : "(synthetic)");
    zsh_topo_put(t);
    return ZSH_OK;
}

/* The first line of @path, without its newline, into @buf; "" if unreadable. */
static void zsh_topo_read_line(const char *path, char *buf, size_t len)
{
    FILE *f = fopen(path, "r");

    buf[0] = '\0';
    if (f == NULL) {
        return;
    }
    if (fgets(buf, (int)len, f) == NULL) {
        buf[0] = '\0';
    }
    buf[strcspn(buf, "\n")] = '\0';
    fclose(f);
}

/* The object of @type whose processors hold all of @set: its index (the
 * kernel's number for NUMA nodes, hwloc's logical one otherwise), or -1. */
static int zsh_topo_holder(hwloc_topology_t t, hwloc_obj_type_t type, hwloc_const_bitmap_t set)
{
    hwloc_obj_t obj = NULL;

    while ((obj = hwloc_get_next_obj_by_type(t, type, obj)) != NULL) {
        if ((obj->cpuset != NULL) && hwloc_bitmap_isincluded(set, obj->cpuset)) {
            return (type == HWLOC_OBJ_NUMANODE) ? (int)obj->os_index : (int)obj->logical_index;
        }
    }
    return -1;
}

zsh_status_t zsh_topo_place(const char *synthetic, const char *cpulist, int *numa_p,
                            int *package_p)
{
    hwloc_topology_t t;
    hwloc_bitmap_t set;
    zsh_status_t status;
    int numa = -1, package = -1;

    status = zsh_topo_get(synthetic, &t);
    if (status != ZSH_OK) {
        return status;
    }
    set = hwloc_bitmap_alloc();
    if (set == NULL) {
        status = zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate a cpuset");
        goto out_topo;
    }
    if (cpulist != NULL) {
        if ((hwloc_bitmap_list_sscanf(set, cpulist) != 0) || hwloc_bitmap_iszero(set) ||
            !hwloc_bitmap_isincluded(set, hwloc_topology_get_complete_cpuset(t))) {
            status = zsh_error(ZSH_ERR_INVALID_ARG, "'%s' is not a list of this machine's PUs",
                               cpulist);
            goto out_set;
        }
    } else if (synthetic != NULL) {
        hwloc_bitmap_copy(set, hwloc_topology_get_topology_cpuset(t));
    } else if (hwloc_get_cpubind(t, set, HWLOC_CPUBIND_PROCESS) != 0) {
        /* Binding unknown (not supported here): nothing holds it for sure. */
        hwloc_bitmap_zero(set);
    }
    /* An unbound process may run anywhere: only an object holding the
     * whole machine (a single NUMA node, a single package) holds it. */
    if (!hwloc_bitmap_iszero(set)) {
        numa    = zsh_topo_holder(t, HWLOC_OBJ_NUMANODE, set);
        package = zsh_topo_holder(t, HWLOC_OBJ_PACKAGE, set);
    }
    *numa_p    = numa;
    *package_p = package;
out_set:
    hwloc_bitmap_free(set);
out_topo:
    zsh_topo_put(t);
    return status;
}

zsh_status_t zsh_topo_local_id(zsh_topo_id_t *id)
{
    zsh_topo_config_t cfg;
    zsh_status_t status;
    int numa, package;

    status = zsh_topo_config_read(&cfg);
    if (status != ZSH_OK) {
        return status;
    }
    memset(id, 0, sizeof(*id));
    if (cfg.node_name[0] != '\0') {
        memcpy(id->host, cfg.node_name, strlen(cfg.node_name)); /* checked to fit */
    } else if (gethostname(id->host, sizeof(id->host) - 1) != 0) {
        return zsh_error(ZSH_ERR_IO, "gethostname failed: %s", strerror(errno));
    }
    /* The boot id changes with every boot of every machine; containers and
     * UTS namespaces of one kernel share it, and their host names tell
     * them apart. */
    zsh_topo_read_line("/proc/sys/kernel/random/boot_id", id->machine, sizeof(id->machine));
    if (id->machine[0] == '\0') {
        zsh_topo_read_line("/etc/machine-id", id->machine, sizeof(id->machine));
    }
    /* Where this process runs is worth knowing, not worth failing for. */
    if (zsh_topo_place(NULL, NULL, &numa, &package) != ZSH_OK) {
        zsh_log(ZSH_LOG_DEBUG, "no NUMA node or package known (%s)", zsh_last_error());
        numa    = -1;
        package = -1;
    }
    id->numa    = numa;
    id->package = package;
    return ZSH_OK;
}
