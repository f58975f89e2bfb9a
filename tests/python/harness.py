"""A tiny per-rank test runner for the Python package (no pytest needed).

Every rank runs the same cases in the same order. Each case gets a fresh
communicator split from the world one, so a case that breaks its communicator
(a timeout, an abort) leaves the others alone; a world barrier follows each
case. Each rank prints one line per case:

    RESULT <name> OK
    RESULT <name> FAILED <reason>
    RESULT <name> SKIPPED <reason>

tests/system/python/run_comm.sh merges the ranks' lines into GoogleTest-style ones.
"""

import os
import sys
import time
import traceback

CASES = []


class Skip(Exception):
    """Raise in a case to skip it, with the reason."""


def case(fn):
    CASES.append(fn)
    return fn


class Context:
    def __init__(self, zeroshard, world, torch):
        self.zsh = zeroshard
        self.world = world
        self.rank = world.rank
        self.size = world.size
        self.torch = torch
        self.comm = None

    def need_ranks(self, n):
        if self.size < n:
            raise Skip("needs %d ranks, the job has %d" % (n, self.size))

    def need_torch(self):
        if self.torch is None:
            raise Skip(TORCH_MISSING)


TORCH_MISSING = "torch is not importable by %s" % sys.executable


def raises(fn, exc, *words):
    """Call fn and require exc, with every one of words in its message."""
    try:
        fn()
    except exc as e:
        missing = [w for w in words if w not in str(e)]
        if missing:
            raise AssertionError("%r does not say %s" % (e, missing))
        return
    raise AssertionError("no %s raised (wanted one naming %s)" % (exc.__name__, words))


def load_torch():
    global TORCH_MISSING
    if os.environ.get("ZSH_PYTEST_NO_TORCH"):
        TORCH_MISSING = "ZSH_PYTEST_NO_TORCH is set"
        return None
    try:
        import torch
        return torch
    except ImportError as e:
        TORCH_MISSING = "torch is not importable by %s (%s)" % (sys.executable, e)
        return None


def case_name(fn):
    return fn.__name__[len("test_"):] if fn.__name__.startswith("test_") else fn.__name__


def report_case(fn, ctx):
    """Run one case and print its RESULT line; True unless it failed."""
    start = time.monotonic()
    ok = True
    try:
        fn(ctx)
        line = "OK"
    except Skip as e:
        line = "SKIPPED %s" % e
    except BaseException as e:  # reported, and the next case runs
        ok = False
        line = "FAILED %s: %s" % (type(e).__name__, str(e).replace("\n", " | "))
        traceback.print_exc()
    if not line.startswith("SKIPPED"):
        line += " (%.2f s)" % (time.monotonic() - start)
    print("RESULT %s %s" % (case_name(fn), line), flush=True)
    return ok


def main(argv):
    import zeroshard
    torch = load_torch()
    only = argv[1] if len(argv) > 1 else None
    world = zeroshard.Comm()
    # A case that hangs fails instead, well before run_comm.sh's own limit.
    world.timeout = float(os.environ.get("ZSH_PYTEST_TIMEOUT", "60"))
    ctx = Context(zeroshard, world, torch)
    failed = 0
    for fn in CASES:
        if only and only not in case_name(fn):
            continue
        ctx.comm = world.split(0)
        failed += not report_case(fn, ctx)
        try:
            ctx.comm.close()
        except zeroshard.ZshError as e:
            print("close after %s: %s" % (case_name(fn), e), file=sys.stderr)
        world.barrier()
    world.close()
    return 1 if failed else 0


class TorchCtx:
    """What a case over torch.distributed's "zsh" default group gets: its
    rank and size, the group, a gloo group beside it to compare with, and
    the group's zeroshard.Comm."""

    def __init__(self):
        import torch.distributed as dist
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        self.group = dist.distributed_c10d._get_default_group()
        self.gloo = dist.new_group(backend="gloo")
        self.comm = self.group.comm


def torch_main(argv, make_ctx=None):
    """Run CASES (argv[1], if given, picks those whose name holds it) in a
    job of torch.distributed over "zsh", one RESULT line each; each case
    gets make_ctx() (default: a TorchCtx)."""
    import datetime
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    # A case that breaks the job fails the rest within a minute, not torch's 30.
    dist.init_process_group("zsh", timeout=datetime.timedelta(seconds=60))
    ctx = (make_ctx or TorchCtx)()
    only = argv[1] if len(argv) > 1 else None
    failed = 0
    for fn in CASES:
        if only and only not in fn.__name__:
            continue
        failed += not report_case(fn, ctx)
        dist.barrier()
    dist.destroy_process_group()
    return 1 if failed else 0
