#include "topo/topo.h"

#include "core/status.h"

#include <hwloc.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

zsh_status_t zsh_topo_local_id(zsh_topo_id_t *id)
{
    memset(id, 0, sizeof(*id));
    if (gethostname(id->host, sizeof(id->host) - 1) != 0) {
        return zsh_error(ZSH_ERR_IO, "gethostname failed");
    }
    return ZSH_OK;
}

zsh_status_t zsh_topo_create(int rank, int size, const zsh_topo_id_t *ids, zsh_topo_t **topo_p)
{
    zsh_topo_t *topo;
    int i, j;

    topo = calloc(1, sizeof(*topo));
    if (topo == NULL) {
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map");
    }
    topo->node_of = calloc((size_t)size, sizeof(int));
    if (topo->node_of == NULL) {
        free(topo);
        return zsh_error(ZSH_ERR_NO_MEMORY, "cannot allocate the rank map of %d ranks", size);
    }
    /* A node's index is the order in which its first rank appears: O(size^2)
     * string compares, once per job, which is negligible below 10^4 ranks. */
    for (i = 0; i < size; i++) {
        topo->node_of[i] = -1;
        for (j = 0; j < i; j++) {
            if (strncmp(ids[i].host, ids[j].host, ZSH_TOPO_HOST_MAX) == 0) {
                topo->node_of[i] = topo->node_of[j];
                break;
            }
        }
        if (topo->node_of[i] < 0) {
            topo->node_of[i] = topo->nnodes++;
        }
    }
    topo->node      = topo->node_of[rank];
    topo->node_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    topo->node_cpus = (topo->node_cpus > 0) ? topo->node_cpus : 1;
    for (i = 0; i < size; i++) {
        if (topo->node_of[i] == topo->node) {
            topo->local_rank += (i < rank) ? 1 : 0;
            topo->local_size++;
        }
    }
    *topo_p = topo;
    return ZSH_OK;
}

void zsh_topo_destroy(zsh_topo_t *topo)
{
    free(topo->node_of);
    free(topo);
}

static int zsh_topo_count(hwloc_topology_t t, hwloc_obj_type_t type)
{
    int n = hwloc_get_nbobjs_by_type(t, type);

    return (n < 0) ? 0 : n;
}

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
    *t_p = t;
    return ZSH_OK;
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
    status   = zsh_topo_load(synthetic, &t);
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
    hwloc_topology_destroy(t);
    return ZSH_OK;
}

zsh_status_t zsh_topo_describe(const char *synthetic, char *buf, size_t len)
{
    hwloc_bitmap_t binding = NULL;
    hwloc_topology_t t;
    char cpus[128] = "unknown";
    zsh_status_t status;

    status = zsh_topo_load(synthetic, &t);
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
    hwloc_topology_destroy(t);
    return ZSH_OK;
}
