/*
 * Where each local rank runs (--bind). A rank left to the scheduler on a
 * busy node migrates between cores and shares them with its peers; small
 * collectives then wait on a descheduled peer (zsh_bench's small all-reduce
 * measured in the commit that brought this in). So, as mpirun does, ranks are
 * bound to a core each where the node has a core for every rank, spread over
 * the NUMA nodes in blocks proportional to their cores (consecutive ranks
 * side by side), or with --bind numa to their NUMA node's cores.
 *
 * More ranks than cores are left unbound unless --bind numa is asked for:
 * binding them to cores would put two on one core while another may be idle.
 * A job of one rank is left unbound too, unless --bind asks otherwise.
 * The cores counted are those zshrun may run on (its own CPU set, as taskset
 * or a cgroup leave it).
 */
#include "run/run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const zsh_run_bind_names[] = {"auto", "none", "core", "numa"};

/* NUMA nodes with cores, or the whole machine as one where hwloc sees none. */
static int zsh_run_bind_groups(hwloc_topology_t topo, hwloc_obj_type_t unit,
                               hwloc_obj_t *groups, int max)
{
    hwloc_obj_t numa = NULL;
    int n = 0;

    while ((n < max) && ((numa = hwloc_get_next_obj_by_type(topo, HWLOC_OBJ_NUMANODE, numa)))) {
        if (hwloc_get_nbobjs_inside_cpuset_by_type(topo, numa->cpuset, unit) > 0) {
            groups[n++] = numa;
        }
    }
    if (n == 0) {
        groups[n++] = hwloc_get_root_obj(topo);
    }
    return n;
}

/* The cpus of local rank @local of @nproc: group g takes a block of ranks in
 * proportion to its cores, rounded so that no group gets more ranks than it
 * has cores while nproc is at most their sum (as hwloc_distrib() rounds). */
static void zsh_run_bind_place(hwloc_topology_t topo, hwloc_obj_type_t unit,
                               hwloc_obj_t *groups, int ngroups, int total, int nproc,
                               bool per_core, int local, zsh_run_place_t *p)
{
    int g, before = 0, first, next, cores;

    for (g = 0; g < ngroups; g++) {
        cores = hwloc_get_nbobjs_inside_cpuset_by_type(topo, groups[g]->cpuset, unit);
        first = (before * nproc + total - 1) / total;
        next  = ((before + cores) * nproc + total - 1) / total;
        if (local < next) {
            p->numa = (groups[g]->type == HWLOC_OBJ_NUMANODE) ? (int)groups[g]->logical_index : 0;
            if (per_core) {
                hwloc_obj_t core = hwloc_get_obj_inside_cpuset_by_type(topo, groups[g]->cpuset,
                                                                       unit, (unsigned)(local - first));
                p->core = (int)core->logical_index;
                p->cpus = hwloc_bitmap_dup(core->cpuset);
            } else {
                p->core = -1;
                p->cpus = hwloc_bitmap_dup(groups[g]->cpuset);
            }
            return;
        }
        before += cores;
    }
}

int zsh_run_bind_parse(const char *text, int *bind)
{
    int i;

    for (i = ZSH_RUN_BIND_NONE; i <= ZSH_RUN_BIND_NUMA; i++) {
        if (strcmp(text, zsh_run_bind_names[i]) == 0) {
            *bind = i;
            return 0;
        }
    }
    fprintf(stderr, "zshrun: --bind '%s' is not one of none, core, numa\n", text);
    return -1;
}

/* Restrict @topo to the CPUs zshrun itself may run on. */
static void zsh_run_bind_restrict(hwloc_topology_t topo)
{
    hwloc_bitmap_t own = hwloc_bitmap_alloc();

    if ((own != NULL) && (hwloc_get_cpubind(topo, own, HWLOC_CPUBIND_PROCESS) == 0) &&
        !hwloc_bitmap_isincluded(hwloc_topology_get_topology_cpuset(topo), own)) {
        hwloc_topology_restrict(topo, own, 0);
    }
    hwloc_bitmap_free(own);
}

int zsh_run_bind_plan(const zsh_run_opts_t *o, zsh_run_job_t *job)
{
    hwloc_obj_t groups[256];
    hwloc_obj_type_t unit;
    int ngroups, total = 0, g, i;

    job->places = NULL;
    job->topo   = NULL;
    if (o->bind == ZSH_RUN_BIND_NONE) {
        return 0;
    }
    if ((hwloc_topology_init(&job->topo) != 0) || (hwloc_topology_load(job->topo) != 0)) {
        fprintf(stderr, "zshrun: hwloc cannot read this machine's topology (%s); ranks left "
                "unbound\n", strerror(errno));
        zsh_run_bind_free(o, job);
        return 0;
    }
    zsh_run_bind_restrict(job->topo);
    unit    = (hwloc_get_nbobjs_by_type(job->topo, HWLOC_OBJ_CORE) > 0) ? HWLOC_OBJ_CORE : HWLOC_OBJ_PU;
    ngroups = zsh_run_bind_groups(job->topo, unit, groups, 256);
    for (g = 0; g < ngroups; g++) {
        total += hwloc_get_nbobjs_inside_cpuset_by_type(job->topo, groups[g]->cpuset, unit);
    }
    job->cores = total;
    /* One rank waits on no peer, and may run threads on every core. */
    if ((o->nproc == 1) && (o->bind == ZSH_RUN_BIND_AUTO)) {
        zsh_run_bind_free(o, job);
        return 0;
    }
    if ((o->nproc > total) && (o->bind != ZSH_RUN_BIND_NUMA)) {
        if (o->bind == ZSH_RUN_BIND_CORE) {
            fprintf(stderr, "zshrun: --bind core: %d ranks but %d cores to run on; two ranks "
                    "would share a core (--bind numa or none leaves the scheduler to spread "
                    "them)\n", o->nproc, total);
            zsh_run_bind_free(o, job);
            return 2;
        }
        zsh_run_bind_free(o, job);
        return 0;
    }
    job->places = calloc((size_t)o->nproc, sizeof(*job->places));
    if (job->places == NULL) {
        fprintf(stderr, "zshrun: out of memory\n");
        zsh_run_bind_free(o, job);
        return 1;
    }
    for (i = 0; i < o->nproc; i++) {
        zsh_run_bind_place(job->topo, unit, groups, ngroups, total, o->nproc,
                           o->bind != ZSH_RUN_BIND_NUMA, i, &job->places[i]);
    }
    /* A synthetic or XML topology (HWLOC_SYNTHETIC, HWLOC_XMLFILE) is some
     * other machine's: its plan can be reported, not applied. */
    job->apply = hwloc_topology_is_thissystem(job->topo);
    return 0;
}

void zsh_run_bind_report(const zsh_run_opts_t *o, const zsh_run_job_t *job)
{
    char *cpus;
    int i, rank;

    if (job->places == NULL) {
        fprintf(stderr, "zshrun: ranks left unbound (%s)\n",
                (o->bind == ZSH_RUN_BIND_NONE) ? "--bind none" :
                (job->cores == 0) ? "no topology" :
                (o->nproc == 1) ? "one rank: its threads may use every core" :
                                  "more ranks than cores: none shares a core");
        return;
    }
    for (i = 0; i < o->nproc; i++) {
        rank = o->node_rank * o->nproc + i;
        if (hwloc_bitmap_list_asprintf(&cpus, job->places[i].cpus) < 0) {
            return;
        }
        if (job->places[i].core >= 0) {
            fprintf(stderr, "zshrun: rank %d bound to core %d (cpus %s) of NUMA node %d%s\n",
                    rank, job->places[i].core, cpus, job->places[i].numa,
                    job->apply ? "" : " (not applied: not this machine's topology)");
        } else {
            fprintf(stderr, "zshrun: rank %d bound to NUMA node %d (cpus %s)%s\n", rank,
                    job->places[i].numa, cpus,
                    job->apply ? "" : " (not applied: not this machine's topology)");
        }
        free(cpus);
    }
}

void zsh_run_bind_apply(const zsh_run_job_t *job, int local)
{
    char *cpus = NULL;

    if ((job->places == NULL) || !job->apply) {
        return;
    }
    if (hwloc_set_cpubind(job->topo, job->places[local].cpus, HWLOC_CPUBIND_PROCESS) != 0) {
        hwloc_bitmap_list_asprintf(&cpus, job->places[local].cpus);
        fprintf(stderr, "zshrun: cannot bind this rank to cpus %s (%s); it runs unbound\n",
                (cpus != NULL) ? cpus : "?", strerror(errno));
        free(cpus);
    }
}

void zsh_run_bind_free(const zsh_run_opts_t *o, zsh_run_job_t *job)
{
    int i;

    if (job->places != NULL) {
        for (i = 0; i < o->nproc; i++) {
            hwloc_bitmap_free(job->places[i].cpus);
        }
        free(job->places);
        job->places = NULL;
    }
    if (job->topo != NULL) {
        hwloc_topology_destroy(job->topo);
        job->topo = NULL;
    }
}
