#!/usr/bin/env python3
"""torch's own test cases of torch.distributed (DistributedTest of
torch/testing/_internal/distributed/distributed_test.py) over the zsh
backend, run once per rank (tests/system/python/run_torch_dist.sh starts
the ranks): send/recv (from any source, with tags, isend/irecv), reduce,
gather, scatter, all_gather_coalesced, all_reduce_coalesced, all_to_all and
monitored_barrier.

torch's own driver (TestDistBackend) spawns the ranks anew for every case,
and each imports torch again: tens of seconds a case here. This one starts
the ranks once: each joins the job with dist.init_process_group("zsh")
through env://, as torch's driver does through a file, then runs the cases
in order on an instance of the same test class, as a spawned rank would,
between barriers. A case torch marks skipped, or that exits with one of
torch's skip codes, reports SKIPPED with torch's reason. torch marks its
monitored_barrier cases gloo-only, and torch.distributed.monitored_barrier
refuses other backends: those cases run here unmarked, through
zeroshard.torch.monitored_barrier, torch's for zsh groups too.

    torch_dist_cases.py [--all | CASE...]      the cases (FAST without any)
    torch_dist_cases.py --count [--all | CASE...]   how many

with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and TEMP_DIR (a folder
with an empty barrier/ and test_dir/, for torch's file barrier) set. Prints
"RESULT <case> OK|SKIPPED <why>|FAILED <what>" for each case.
"""
import gc
import os
import sys
import time
import traceback
import types
import unittest
from datetime import timedelta

try:
    import expecttest  # noqa: F401
except ImportError:
    # torch's common_utils takes its TestCase's base from expecttest, which
    # Debian does not package; its cases here compare no expected output.
    expecttest = types.ModuleType("expecttest")
    expecttest.TestCase = unittest.TestCase
    expecttest.ACCEPT = False
    sys.modules["expecttest"] = expecttest

# What runs in CI: every operation; well under a second a case, but for
# test_monitored_barrier_gloo (its 2 s timeout).
FAST = [
    "test_send_recv", "test_send_recv_any_source", "test_send_recv_with_tag", "test_isend",
    "test_irecv", "test_reduce_sum", "test_reduce_full_group_max", "test_gather",
    "test_gather_checks", "test_scatter", "test_scatter_checks",
    "test_all_gather_coalesced_simple", "test_all_gather_coalesced_with_empty",
    "test_all_reduce_coalesced_sum", "test_all_reduce_coalesced_group_max",
    "test_all_reduce_coalesced_max_complex_unsupported",
    "test_all_to_all_single_equal_split", "test_all_to_all_single_unequal_split",
    "test_all_to_all", "test_all_to_all_single_unequal_split_group",
    "test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
    "test_monitored_barrier_gloo_rank_0_timeout", "test_monitored_barrier_failure_order",
    "test_monitored_barrier_wait_all_ranks",
]

# Every case of these operations (--all); the ones for CUDA skip without it.
ALL_PREFIXES = ("test_send_recv", "test_isend", "test_irecv", "test_reduce_sum",
                "test_reduce_product", "test_reduce_min", "test_reduce_max", "test_reduce_group",
                "test_reduce_full_group", "test_gather", "test_scatter",
                "test_all_gather_coalesced", "test_all_reduce_coalesced", "test_all_to_all",
                "test_monitored_barrier")

# Cases torch marks for other CPU backends only (gloo's monitored_barrier,
# all_reduce_coalesced and object gather/scatter, MPI's all_to_all), which run
# here unmarked; the ones
# that make NCCL groups or take CUDA tensors stay as torch marks them.
UNMARKED = ["test_monitored_barrier_gloo", "test_monitored_barrier_gloo_subgroup",
            "test_monitored_barrier_gloo_rank_0_timeout", "test_monitored_barrier_failure_order",
            "test_monitored_barrier_wait_all_ranks",
            "test_all_reduce_coalesced_sum", "test_all_reduce_coalesced_product",
            "test_all_reduce_coalesced_min", "test_all_reduce_coalesced_max",
            "test_all_reduce_coalesced_group_sum", "test_all_reduce_coalesced_group_product",
            "test_all_reduce_coalesced_group_min", "test_all_reduce_coalesced_group_max",
            "test_all_reduce_coalesced_full_group_sum",
            "test_all_reduce_coalesced_full_group_product",
            "test_all_reduce_coalesced_full_group_min", "test_all_reduce_coalesced_full_group_max",
            "test_all_to_all_single_equal_split", "test_all_to_all_single_equal_split_complex",
            "test_all_to_all_single_unequal_split", "test_all_to_all_single_unequal_split_complex",
            "test_all_to_all", "test_all_to_all_complex",
            "test_all_to_all_single_equal_split_group", "test_all_to_all_single_unequal_split_group",
            "test_all_to_all_group", "test_all_to_all_single_equal_split_full_group",
            "test_all_to_all_single_unequal_split_full_group", "test_all_to_all_full_group",
            "test_gather_object", "test_gather_object_subgroup", "test_scatter_object_list"]

if (__name__ == "__main__") and (sys.argv[1:] == ["--count"]):
    print(len(FAST))  # for the script that starts the ranks, before torch is imported
    sys.exit(0)




os.environ["BACKEND"] = "zsh"  # read when distributed_test is imported
os.environ.setdefault("WORLD_SIZE", "2")  # read too, and --count starts no ranks

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402

import zeroshard.torch  # noqa: E402  registers "zsh"
from torch.testing._internal.common_distributed import TEST_SKIPS  # noqa: E402
from torch.testing._internal.distributed.distributed_test import (  # noqa: E402
    Barrier, DistributedTest, TestDistBackend)

dist.monitored_barrier = zeroshard.torch.monitored_barrier

def unmarked(fn):
    """A copy of torch's case @fn without its skip marks (set on the function itself)."""
    copy = types.FunctionType(fn.__code__, fn.__globals__, fn.__name__, fn.__defaults__,
                              fn.__closure__)
    copy.__dict__.update({k: v for k, v in fn.__dict__.items()
                          if not k.startswith("__unittest_skip")})
    return copy


class TestZsh(TestDistBackend, DistributedTest._DistTestBase):
    """torch's cases, as one rank runs them."""


for _name in UNMARKED:
    setattr(TestZsh, _name, unmarked(getattr(DistributedTest._DistTestBase, _name)))

# exit codes with which torch's decorators skip a case from inside a rank
SKIP_CODES = {skip.exit_code: skip.message for skip in TEST_SKIPS.values()}


def run_case(name, rank):
    """"OK", "SKIPPED why" or "FAILED what" for case @name on this rank."""
    fn = getattr(TestZsh, name)
    if getattr(fn, "__unittest_skip__", False):
        return "SKIPPED " + fn.__unittest_skip_why__
    test = TestZsh(name)
    test.rank = rank
    try:
        getattr(test, name)()
    except unittest.SkipTest as e:
        return "SKIPPED %s" % e
    except SystemExit as e:
        if e.code in SKIP_CODES:
            return "SKIPPED " + SKIP_CODES[e.code]
        return "FAILED exited with %s" % e.code
    except Exception as e:  # noqa: BLE001  the case's failure, reported
        traceback.print_exc()
        return "FAILED %s: %s" % (type(e).__name__, " ".join(str(e).split())[:300])
    return "OK"


def resync():
    """Align torch's file barrier after a case that failed between its barriers."""
    ids = torch.tensor([Barrier.barrier_id])
    dist.all_reduce(ids, op=dist.ReduceOp.MAX)
    Barrier.barrier_id = int(ids)
    dist.barrier()


def main(argv):
    count = argv[:1] == ["--count"]
    argv = argv[1:] if count else argv
    if argv == ["--all"]:
        names = sorted(n for n in dir(TestZsh)
                       if n.startswith(ALL_PREFIXES) and callable(getattr(TestZsh, n)))
    else:
        names = argv or FAST
    if count:
        print(len(names))
        return 0
    rank = int(os.environ["RANK"])
    dist.init_process_group("zsh", timeout=timedelta(seconds=60))
    for name in names:
        start = time.time()
        result = run_case(name, rank)
        took = "" if result.startswith("SKIPPED") else " (%.2f s)" % (time.time() - start)
        print("RESULT %s %s%s" % (name, result, took), flush=True)
        resync()
    # Every group's teardown fences its ranks, as destroy_process_group drops
    # the groups in the order they were made. A case's garbage can still hold
    # one of them: test_monitored_barrier_gloo_subgroup's frames, kept by the
    # error rank 0 expects, hold its subgroup there alone; the subgroup then
    # outlived the world group on rank 0 only, and each rank's first fence
    # waited for the other's until ZSH_TIMEOUT (300 s; the 100 s of the
    # script's timeout killed the ranks first). Torch's driver starts a fresh
    # process for each case, so that no case's garbage outlives it.
    gc.collect()
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
