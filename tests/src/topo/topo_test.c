#include "harness/zsh_test.h"

#include "topo/topo.h"

#include <hwloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

ZSH_TEST(topo, hwloc_runtime_matches_the_header_it_was_built_with)
{
    /* Same major version (hwloc's documented ABI rule). */
    ZSH_EXPECT_EQ(HWLOC_API_VERSION >> 16, hwloc_get_api_version() >> 16);
}

ZSH_TEST(topo, synthetic_machines_are_described_by_their_shape)
{
    char line[256];

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_describe("pack:2 numa:2 core:4 pu:2", line, sizeof(line)));
    ZSH_EXPECT_STR_CONTAINS(line, "2 package(s), 4 NUMA node(s), 16 core(s), 32 PU(s)");
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_describe("no such shape", line, sizeof(line)));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_describe(NULL, line, sizeof(line)));
    ZSH_EXPECT_STR_CONTAINS(line, "core(s)");
}

ZSH_TEST(topo, private_cache_is_the_largest_cache_one_core_has_to_itself)
{
    size_t bytes = 1;

    /* L2 per core (1 MB) above L1 (48 kB); the L3 is shared. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_private_cache("pack:1 l3:1(size=32MB) l2:4(size=1MB) "
                                                     "l1d:1(size=48KB) core:1 pu:2", &bytes));
    ZSH_EXPECT_EQ(1000000, bytes);
    /* Two hardware threads of one core share its L1: still private to the core. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_private_cache("pack:1 l2:2(size=4MB) l1d:2(size=32KB) "
                                                     "core:1 pu:2", &bytes));
    ZSH_EXPECT_EQ(32000, bytes);
    /* An L2 that two cores share, and nothing below it. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_private_cache("pack:1 l2:2(size=4MB) core:2 pu:1",
                                                     &bytes));
    ZSH_EXPECT_EQ(0, bytes);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_private_cache("no such shape", &bytes));
    ZSH_EXPECT_EQ(0, bytes);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_topo_private_cache(NULL, &bytes));
}

ZSH_TEST(topo, rank_map_groups_ranks_by_host)
{
    zsh_topo_id_t ids[5];
    const char *hosts[5] = {"a", "b", "a", "c", "b"};
    zsh_topo_t *topo;
    int i;

    for (i = 0; i < 5; i++) {
        memset(&ids[i], 0, sizeof(ids[i]));
        strcpy(ids[i].host, hosts[i]);
    }
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_create(4, 5, ids, &topo));
    ZSH_EXPECT_EQ(3, topo->nnodes);
    ZSH_EXPECT_EQ(1, topo->node);
    ZSH_EXPECT_EQ(1, topo->local_rank);
    ZSH_EXPECT_EQ(2, topo->local_size);
    ZSH_EXPECT_EQ(0, topo->node_of[2]);
    ZSH_EXPECT_EQ(2, topo->node_of[3]);
    zsh_topo_destroy(topo);
}

ZSH_TEST(topo, a_binding_lies_in_the_numa_node_and_package_that_hold_all_its_pus)
{
    /* 2 packages of 2 NUMA nodes of 2 PUs: PUs 0-1 NUMA 0, 2-3 NUMA 1, ... */
    static const struct {
        const char *shape, *cpus;
        int numa, package;
    } cases[] = {
        {"package:2 numa:2 core:2 pu:1", "0-1", 0, 0},
        {"package:2 numa:2 core:2 pu:1", "3", 1, 0},
        {"package:2 numa:2 core:2 pu:1", "4-5", 2, 1},
        {"package:2 numa:2 core:2 pu:1", "1-2", -1, 0},  /* across NUMA nodes */
        {"package:2 numa:2 core:2 pu:1", "3-4", -1, -1}, /* across packages */
        {"package:2 numa:2 core:2 pu:1", NULL, -1, -1},  /* unbound */
        {"package:1 core:2 pu:1", NULL, 0, 0},           /* unbound, but one of each */
    };
    size_t i;
    int numa, package;

    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        numa = package = 99;
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_place(cases[i].shape, cases[i].cpus, &numa, &package));
        ZSH_EXPECT_EQ(cases[i].numa, numa);
        ZSH_EXPECT_EQ(cases[i].package, package);
    }
    numa = 99;
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_place("package:1 core:2 pu:1", "8", &numa,
                                                          &package));
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_place("package:1 core:2 pu:1", "x", &numa,
                                                          &package));
    ZSH_EXPECT_EQ(99, numa);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_topo_place(NULL, NULL, &numa, &package));
}

ZSH_TEST(topo, local_identity_is_the_host_or_zsh_node_name_with_the_boot_id)
{
    char host[ZSH_TOPO_HOST_MAX] = "", long_name[80];
    zsh_topo_id_t id;

    unsetenv("ZSH_NODE_NAME");
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_local_id(&id));
    gethostname(host, sizeof(host) - 1);
    ZSH_EXPECT_STR_CONTAINS(id.host, host);
    ZSH_EXPECT_TRUE(id.machine[0] != '\0');
    ZSH_EXPECT_TRUE((id.numa >= -1) && (id.package >= -1));

    setenv("ZSH_NODE_NAME", "node-7", 1);
    ZSH_EXPECT_STATUS(ZSH_OK, zsh_topo_local_id(&id));
    ZSH_EXPECT_EQ(0, strcmp(id.host, "node-7"));
    memset(long_name, 'n', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = '\0';
    setenv("ZSH_NODE_NAME", long_name, 1);
    ZSH_EXPECT_STATUS(ZSH_ERR_INVALID_ARG, zsh_topo_local_id(&id));
    ZSH_EXPECT_STR_CONTAINS(zsh_last_error(), "ZSH_NODE_NAME");
    ZSH_EXPECT_EQ(0, strcmp(id.host, "node-7"));
    unsetenv("ZSH_NODE_NAME");
}

/* Every communicator asks for this machine's private cache and place: the
 * topology behind them is loaded once per process, not on each call, and
 * answers alike each time. */
ZSH_TEST(topo, this_machine_is_loaded_once_per_process_whoever_asks)
{
    size_t bytes0 = 0, bytes = 0;
    int numa0, package0, numa, package, i;
    char line[256];

    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_private_cache(NULL, &bytes0));
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_place(NULL, NULL, &numa0, &package0));
    for (i = 0; i < 3; i++) {
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_private_cache(NULL, &bytes));
        ZSH_EXPECT_EQ(bytes0, bytes);
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_place(NULL, NULL, &numa, &package));
        ZSH_EXPECT_EQ(numa0, numa);
        ZSH_EXPECT_EQ(package0, package);
        ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_describe(NULL, line, sizeof(line)));
    }
    /* A synthetic machine is its own, and leaves this one's count alone. */
    ZSH_ASSERT_STATUS(ZSH_OK, zsh_topo_describe("pack:2 core:2 pu:1", line, sizeof(line)));
    ZSH_EXPECT_EQ(1, zsh_topo_machine_loads());
}
