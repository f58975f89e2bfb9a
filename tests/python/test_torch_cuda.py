#!/usr/bin/env python3
"""The torch.distributed backend "zsh" on CUDA tensors, run once per rank
(tests/system/python/run_torch_cuda.sh starts the ranks): every collective
on the device path gives the host path's result; a call is enqueued on the
current stream, a side stream's too; an async Work's wait() orders the
caller's stream, is_completed() and its future follow the stream work; DDP
of a module on the GPU trains to DDP over gloo on the CPU; tensors of two
devices, and the calls the device path has not, are refused by name.

Rank r takes the GPU LOCAL_RANK names (RANK where the launcher sets none).
The cases that need a GPU skip, saying why, where torch has none; those
marked "no GPU needed" run everywhere: the registration, tensors that claim
a GPU refused, and the device path's bookkeeping (write-backs, the Work
following the stream's event, the timeout) with torch.cuda faked on the CPU.

    test_torch_cuda.py [CASE]
"""

import contextlib
import inspect
import os
import sys
import time
import types

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, case, raises  # noqa: E402

import zeroshard  # noqa: E402
import zeroshard.torch  # noqa: E402,F401  registers "zsh"
from zeroshard.torch.backend import ProcessGroupZsh, register  # noqa: E402

REDUCIBLE = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16,
             torch.bfloat16, torch.float32, torch.float64]
OPS = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT, "MIN": dist.ReduceOp.MIN,
       "MAX": dist.ReduceOp.MAX, "AVG": dist.ReduceOp.AVG}
N = 37        # elements per rank: odd, so no world size divides it
SLEEP = int(1e9)  # torch.cuda._sleep cycles: half a second or more on any GPU
LIMIT = 30.0  # seconds a case waits for a future before it fails


def values(rank, n, dtype, salt=0):
    """Values exact in every dtype (products of a few stay exact), different per rank."""
    i = torch.arange(n, dtype=torch.int64)
    if dtype.is_floating_point:
        return (1.0 + ((3 * i + salt + rank) % 5 - 2) * 0.25).to(dtype)
    return ((5 * i + 3 * rank + salt) % 7 - 3).to(dtype)


def tolerance(dtype):
    """How far the device path (NCCL's order and precision) may be from the host path's."""
    return {torch.float16: 1e-3, torch.bfloat16: 1e-2}.get(dtype, 1e-6)


def expect_same(got, want, what):
    """@got (on the GPU) against the host path's @want."""
    got = got.cpu()
    if got.dtype != want.dtype or got.shape != want.shape:
        raise AssertionError("%s: got %s %s, want %s %s" % (what, got.dtype, tuple(got.shape),
                                                            want.dtype, tuple(want.shape)))
    if got.dtype.is_floating_point:
        ok = torch.allclose(got.double(), want.double(), rtol=tolerance(got.dtype), atol=0)
    else:
        ok = torch.equal(got, want)
    if not ok:
        at = (got.double() != want.double()).nonzero()[0].item()
        raise AssertionError("%s: at %d got %s, want %s" % (what, at, got[at].item(),
                                                            want[at].item()))


def backend():
    """The default group's ProcessGroupZsh (torch 2.x keeps it behind the group)."""
    pg = dist.distributed_c10d._get_default_group()
    if not isinstance(pg, ProcessGroupZsh):
        pg = pg._get_backend(torch.device("cpu"))
    return pg


def settled(future, what):
    """@future's value, waiting at most LIMIT seconds for it without wait()."""
    deadline = time.monotonic() + LIMIT
    while not future.done():
        if time.monotonic() > deadline:
            raise AssertionError("%s: its future did not complete within %g s" % (what, LIMIT))
        time.sleep(0.001)
    return future.value()


class FakeDevice(torch.Tensor):
    """A CPU tensor (@data's storage) that says it is on @device: the backend
    reads only .device and .is_sparse of it; what it makes of it (views,
    copies) are plain CPU tensors."""
    __torch_function__ = torch._C._disabled_torch_function_impl

    @staticmethod
    def __new__(cls, device, data=None):
        t = torch.Tensor._make_subclass(cls, torch.zeros(4) if data is None else data)
        t.fake = torch.device(device)
        return t

    @property
    def device(self):
        return self.fake


class FakeCuda:
    """With it: torch.cuda's streams and events faked on the CPU, and
    zeroshard.Comm's *_stream calls run as the host calls, so the backend's
    device path runs without a GPU on FakeDevice("cuda:0") tensors. One
    stream, whose work is done when .done says; events ask it."""

    def __init__(self):
        self.done = True
        self.waits = 0
        self.enqueued = []
        self._saved = []

    def __enter__(self):
        fake = self

        class Stream:
            device = torch.device("cuda", 0)
            cuda_stream = 0

            def wait_event(self, event):
                fake.waits += 1

        class Event:
            def record(self, stream):
                pass

            def query(self):
                return fake.done

        def on_host(name):
            host = getattr(zeroshard.Comm, name)

            def call(comm, *args, stream=None, **kwargs):
                fake.enqueued.append(name)
                return host(comm, *args, **kwargs)
            return call

        stream = Stream()
        swaps = [(torch.cuda, "current_stream", lambda device=None: stream),
                 (torch.cuda, "Event", Event),
                 (torch.cuda, "device", lambda device: contextlib.nullcontext()),
                 (torch.cuda, "stream", lambda s: contextlib.nullcontext()),
                 (zeroshard, "device_available", lambda: (True, ""))]
        for name in ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "all_to_all"):
            swaps.append((zeroshard.Comm, name + "_stream", on_host(name)))
        for owner, name, value in swaps:
            self._saved.append((owner, name, owner.__dict__[name]))
            setattr(owner, name, value)
        return self

    def __exit__(self, *exc):
        for owner, name, value in reversed(self._saved):
            setattr(owner, name, value)
        return False


def plain(t):
    """A FakeDevice's data as a plain CPU tensor."""
    return torch.Tensor._make_subclass(torch.Tensor, t)


def fake_group(**kwargs):
    """A new "zsh" group's ProcessGroupZsh, and the group to destroy."""
    group = dist.new_group(backend="zsh", **kwargs)
    pg = group
    if not isinstance(pg, ProcessGroupZsh):
        pg = pg._get_backend(torch.device("cpu"))
    return pg, group


# ---- no GPU needed ---------------------------------------------------------------------

@case
def test_register_declares_cpu_and_cuda_where_torch_asks_for_devices(ctx):
    """torch >= 2.1 asks which devices a backend serves; 1.13 has no such argument."""
    seen = []

    def with_devices(name, func, extended_api=False, devices=None):
        seen.append(devices)

    def without_devices(name, func, extended_api=False):
        seen.append("no devices argument")

    real = dist.Backend.__dict__["register_backend"]
    plugin = dist.Backend._plugins.pop("ZSH")
    try:
        for fake in (with_devices, without_devices):
            dist.Backend.register_backend = staticmethod(fake)
            register()
    finally:
        dist.Backend.register_backend = real
        dist.Backend._plugins["ZSH"] = plugin
    if seen != [["cpu", "cuda"], "no devices argument"]:
        raise AssertionError("register() passed %s" % seen)
    if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
        declared = getattr(dist.Backend, "backend_capability", {}).get("zsh")
        if declared != ["cpu", "cuda"]:
            raise AssertionError("torch %s holds devices %s for zsh" % (torch.__version__,
                                                                     declared))


@case
def test_a_call_on_tensors_of_two_devices_is_refused_naming_both_and_the_call(ctx):
    """No GPU needed: tensors that say they are on a GPU."""
    pg = backend()
    cpu = torch.zeros(4)
    raises(lambda: pg.allreduce([cpu, FakeDevice("cuda:0")]), ValueError,
           "zsh all_reduce", "cpu", "cuda:0", "one device")
    raises(lambda: pg.allgather([[FakeDevice("cuda:1")] * ctx.size], [FakeDevice("cuda:0")]),
           ValueError, "zsh all_gather", "cuda:0", "cuda:1")
    raises(lambda: pg._reduce_scatter_base(FakeDevice("cuda:0"), cpu), ValueError,
           "zsh reduce_scatter_tensor", "cuda:0", "cpu")
    raises(lambda: pg.broadcast([FakeDevice("meta")]), ValueError,
           "zsh broadcast", "tensor on meta", "CPU and CUDA tensors")


@case
def test_comm_stream_calls_reach_the_library_and_it_refuses_host_buffers(ctx):
    """No GPU needed: zeroshard.Comm's *_stream calls and set_stream() reach
    include/zeroshard/device.h, which names the call it refuses."""
    comm = backend().comm.split(0, ctx.rank)
    try:
        try:  # a torch.cuda.Stream is taken by its cuda_stream
            comm.set_stream(types.SimpleNamespace(cuda_stream=0), enqueue=True)
        except zeroshard.ZshError as e:
            if "no device transport" not in str(e):
                raise
        t = torch.ones(8)
        raises(lambda: comm.all_reduce_stream(t), zeroshard.ZshError, "zsh_allreduce_stream")
        raises(lambda: comm.all_gather_stream(t[:4], torch.empty(4 * ctx.size)),
               zeroshard.ZshError, "zsh_allgather_stream")
        raises(lambda: comm.broadcast_stream(t, 0), zeroshard.ZshError, "zsh_broadcast_stream")
        blocks = torch.ones(2 * ctx.size)
        raises(lambda: comm.reduce_scatter_stream(blocks, torch.empty(2), op="max"),
               zeroshard.ZshError, "zsh_reduce_scatter_stream")
        raises(lambda: comm.all_to_all_stream(blocks, torch.empty(2 * ctx.size)),
               zeroshard.ZshError, "zsh_alltoall_stream")
        raises(lambda: comm.all_reduce_stream(torch.ones(2, 2).t()), ValueError,
               "not a contiguous")
    finally:
        comm.close()


@case
def test_on_a_faked_gpu_every_collective_writes_back_and_its_work_follows_the_stream(ctx):
    """No GPU needed: the device path's bookkeeping around the stream calls."""
    size, rank = ctx.size, ctx.rank
    pg, group = fake_group()
    with FakeCuda() as cuda:
        def fake(t):
            return FakeDevice("cuda:0", t)
        t = (torch.arange(2.0 * N).view(N, 2) + rank).t()  # reduced in a copy, written back
        pg.allreduce([fake(t)]).wait()
        want = sum((torch.arange(2.0 * N).view(N, 2) + r).t() for r in range(size))
        expect_same(t, want, "all_reduce")
        outs = [torch.zeros(N) for _ in range(size)]
        pg.allgather([[fake(o) for o in outs]], [fake(torch.full((N,), rank + 1.0))]).wait()
        expect_same(torch.cat(outs), torch.arange(1.0, size + 1).repeat_interleave(N),
                    "all_gather")
        out = torch.zeros(N)
        pg.reduce_scatter([fake(out)], [[fake(torch.full((N,), r + 1.0))
                                         for r in range(size)]]).wait()
        expect_same(out, torch.full((N,), (rank + 1.0) * size), "reduce_scatter")
        out = torch.zeros(size * 2)
        pg.alltoall_base(fake(out), fake(torch.arange(2.0 * size) + 100 * rank), [], []).wait()
        expect_same(out, torch.tensor([100.0 * r + 2 * rank + k for r in range(size)
                                       for k in range(2)]), "all_to_all_single")
        lists = [[fake(torch.zeros(2)), fake(torch.zeros(1, dtype=torch.int64))]
                 for _ in range(size)]
        pg.allgather_coalesced(lists, [fake(torch.full((2,), float(rank))),
                                       fake(torch.tensor([rank]))]).wait()
        if [plain(ts[1]).item() for ts in lists] != list(range(size)):
            raise AssertionError("all_gather_coalesced gave %s" % lists)
        if sorted(set(cuda.enqueued)) != ["all_gather", "all_reduce", "all_to_all",
                                          "reduce_scatter"]:
            raise AssertionError("the stream calls made: %s" % cuda.enqueued)
        # The Work and its future follow the stream's event, not the call.
        cuda.done, waits = False, cuda.waits
        t = torch.ones(N)
        work = pg.allreduce([fake(t)])
        future = work.get_future()
        time.sleep(0.05)  # the progress thread's turns
        if work.is_completed() or future.done():
            raise AssertionError("the Work completed while its stream work was not done")
        work.wait()
        if cuda.waits != waits + 1:
            raise AssertionError("wait() made the current stream wait %d times"
                                 % (cuda.waits - waits))
        cuda.done = True
        chained = future.then(lambda f: plain(f.value()[0]) + 1)
        expect_same(settled(chained, "all_reduce then +1"), torch.full((N,), size + 1.0),
                    "all_reduce's future then +1")
        if not work.is_completed():
            raise AssertionError("is_completed() after its future")
    dist.destroy_process_group(group)


@case
def test_on_a_faked_gpu_a_call_past_the_timeout_fails_by_name_and_stops_the_device_path_only(ctx):
    """No GPU needed: a stream that never gets to the call."""
    pg, group = fake_group()
    with FakeCuda() as cuda:
        first = pg.allreduce([FakeDevice("cuda:0", torch.ones(2))])  # the device communicator
        settled(first.get_future(), "the first all_reduce")
        timeout, pg.comm.timeout = pg.comm.timeout, 1.0
        cuda.done = False
        work = pg.allreduce([FakeDevice("cuda:0", torch.ones(2))])
        start = time.monotonic()
        raises(lambda: work.get_future().wait(), RuntimeError, "zsh all_reduce on cuda:0",
               "not done 1 s after", "aborted")
        if time.monotonic() - start > LIMIT:
            raise AssertionError("the timeout of 1 s took %.0f s" % (time.monotonic() - start))
        raises(work.wait, RuntimeError, "zsh all_reduce on cuda:0")
        cuda.done = True
        raises(lambda: pg.allreduce([FakeDevice("cuda:0", torch.ones(2))]),
               zeroshard.ZshAbortedError, "aborted")
    pg.comm.timeout = timeout
    t = torch.ones(2)
    dist.all_reduce(t, group=group)
    expect_same(t, torch.full((2,), float(ctx.size)), "the group's host path after the abort")
    dist.destroy_process_group(group)


# ---- on the GPU ------------------------------------------------------------------------

@case
def test_all_reduce_on_cuda_gives_the_host_paths_result_for_every_dtype_and_op(ctx):
    ctx.need_cuda()
    for dtype in REDUCIBLE:
        for name, op in OPS.items():
            if name == "AVG" and not dtype.is_floating_point:
                continue
            want = values(ctx.rank, N, dtype)
            dist.all_reduce(want, op=op)
            got = values(ctx.rank, N, dtype).to(ctx.device)
            dist.all_reduce(got, op=op)
            expect_same(got, want, "all_reduce %s %s" % (dtype, name))
    # Not contiguous: reduced in a copy, written back on the stream.
    want = values(ctx.rank, 2 * N, torch.float32).view(N, 2).t()
    got = want.to(ctx.device)
    dist.all_reduce(want)
    dist.all_reduce(got)
    expect_same(got, want, "all_reduce of a transposed tensor")


@case
def test_every_other_collective_on_cuda_gives_the_host_paths_result(ctx):
    ctx.need_cuda()
    dev, size = ctx.device, ctx.size
    for dtype in (torch.float32, torch.bfloat16, torch.int64, torch.uint8):
        mine = values(ctx.rank, N, dtype)
        for root in range(size):
            want, got = mine.clone(), mine.to(dev)
            dist.broadcast(want, root)
            dist.broadcast(got, root)
            expect_same(got, want, "broadcast %s from %d" % (dtype, root))
        want, got = torch.empty(size * N, dtype=dtype), torch.empty(size * N, dtype=dtype,
                                                                      device=dev)
        dist.all_gather_into_tensor(want, mine)
        dist.all_gather_into_tensor(got, mine.to(dev))
        expect_same(got, want, "all_gather_into_tensor %s" % dtype)
        outs = [torch.empty(N, dtype=dtype, device=dev) for _ in range(size)]
        dist.all_gather(outs, mine.to(dev))
        for r, o in enumerate(outs):
            expect_same(o, values(r, N, dtype), "all_gather %s, rank %d's" % (dtype, r))
        whole = values(ctx.rank, size * N, dtype, salt=1)
        for name, op in OPS.items():
            if name == "AVG" and not dtype.is_floating_point:
                continue
            want = torch.empty(N, dtype=dtype)
            got = torch.empty(N, dtype=dtype, device=dev)
            dist.reduce_scatter_tensor(want, whole, op=op)
            dist.reduce_scatter_tensor(got, whole.to(dev), op=op)
            expect_same(got, want, "reduce_scatter_tensor %s %s" % (dtype, name))
            got = torch.empty(N, dtype=dtype, device=dev)
            dist.reduce_scatter(got, list(whole.to(dev).chunk(size)), op=op)
            expect_same(got, want, "reduce_scatter %s %s" % (dtype, name))
        want, got = torch.empty(size * N, dtype=dtype), torch.empty(size * N, dtype=dtype,
                                                                      device=dev)
        dist.all_to_all_single(want, whole)
        dist.all_to_all_single(got, whole.to(dev))
        expect_same(got, want, "all_to_all_single %s" % dtype)
        for root in range(size):
            want, got = mine.clone(), mine.to(dev)
            dist.reduce(want, root)
            dist.reduce(got, root)
            expect_same(got, want, "reduce %s to %d" % (dtype, root))
    dist.barrier()
    work = dist.barrier(async_op=True)
    work.wait()
    if not work.is_completed():
        raise AssertionError("a barrier's Work is not completed after wait()")


@case
def test_a_call_is_enqueued_on_the_current_stream_a_side_stream_too(ctx):
    """The input is written on the stream behind a long kernel: a call enqueued
    anywhere but behind it would gather what was there before."""
    ctx.need_cuda()
    dev = ctx.device
    for side in (False, True):
        stream = torch.cuda.Stream(dev) if side else torch.cuda.current_stream(dev)
        stream.wait_stream(torch.cuda.current_stream(dev))
        with torch.cuda.stream(stream):
            x = torch.zeros(N, device=dev)
            out = torch.zeros(ctx.size * N, device=dev)
            torch.cuda._sleep(SLEEP)
            x.fill_(ctx.rank + 7)
            dist.all_gather_into_tensor(out, x)
            got = out.cpu()  # on this stream: after the gather
        want = torch.arange(ctx.size).repeat_interleave(N).float() + 7
        if not torch.equal(got, want):
            raise AssertionError("%s stream: gathered %s, want %s" % (
                "a side" if side else "the current", got[::N].tolist(), want[::N].tolist()))


@case
def test_async_work_wait_orders_the_callers_stream_and_its_future_completes_unwaited(ctx):
    ctx.need_cuda()
    dev = ctx.device
    # The device communicator is made before the clock runs.
    dist.all_reduce(torch.zeros(1, device=dev))
    main = torch.cuda.current_stream(dev)
    side = torch.cuda.Stream(dev)
    side.wait_stream(main)
    with torch.cuda.stream(side):
        x = torch.zeros(N, device=dev)
        out = torch.zeros(ctx.size * N, device=dev)
        torch.cuda._sleep(SLEEP)
        x.fill_(ctx.rank + 1)
        work = dist.all_gather_into_tensor(out, x, async_op=True)
    if work.is_completed():
        raise AssertionError("is_completed() while its stream still sleeps")
    future = work.get_future()
    work.wait()  # the main stream now waits for the side stream's gather
    doubled = (out * 2).cpu()
    want = (torch.arange(ctx.size).repeat_interleave(N).float() + 1) * 2
    if not torch.equal(doubled, want):
        raise AssertionError("after wait(), the main stream read %s, want %s"
                             % (doubled[::N].tolist(), want[::N].tolist()))
    value = settled(future, "all_gather_into_tensor")
    if not work.is_completed() or value[0].data_ptr() != out.data_ptr():
        raise AssertionError("after the future: is_completed() %s, the value holds %s"
                             % (work.is_completed(), value))
    # A callback runs with the call's stream current, after its work.
    t = torch.full((N,), float(ctx.rank), device=dev)
    chained = dist.all_reduce(t, async_op=True).get_future().then(lambda f: f.value()[0] + 1)
    got = settled(chained, "all_reduce then +1").cpu()
    want = torch.full((N,), float(sum(range(ctx.size)) + 1))
    if not torch.equal(got, want):
        raise AssertionError("all_reduce then +1 gave %s, want %s" % (got[0].item(),
                                                                    want[0].item()))


def mlp():
    return torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                               torch.nn.Tanh(), torch.nn.Linear(64, 4))


@case
def test_ddp_on_cuda_over_zsh_trains_to_ddp_over_gloo_on_the_cpu(ctx):
    ctx.need_cuda()
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    gloo = dist.new_group(backend="gloo")
    for hook in (None, default_hooks.allreduce_hook):
        torch.manual_seed(0)
        a, b = mlp(), mlp()
        a.load_state_dict(b.state_dict())
        # Rank 0's parameters reach the others through DDP's broadcast.
        if ctx.rank != 0:
            with torch.no_grad():
                for p in a.parameters():
                    p.add_(1.0)
        za = DDP(a.to(ctx.device), device_ids=[ctx.device], bucket_cap_mb=0.005)
        gb = DDP(b, process_group=gloo, bucket_cap_mb=0.005)
        if hook is not None:
            za.register_comm_hook(None, hook)
            gb.register_comm_hook(gloo, hook)
        oa = torch.optim.SGD(za.parameters(), lr=0.1)
        ob = torch.optim.SGD(gb.parameters(), lr=0.1)
        for step in range(4):
            x = torch.randn(8, 16, generator=torch.Generator().manual_seed(100 * ctx.rank + step))
            for model, opt, xs in ((za, oa, x.to(ctx.device)), (gb, ob, x)):
                opt.zero_grad()
                model(xs).pow(2).sum().backward()
                opt.step()
        for (name, pa), pb in zip(a.named_parameters(), b.parameters()):
            if not torch.allclose(pa.cpu(), pb, rtol=1e-4, atol=1e-5):
                raise AssertionError("hook %s: %s differs from gloo's by %g" % (
                    getattr(hook, "__name__", None), name, (pa.cpu() - pb).abs().max().item()))
    dist.destroy_process_group(gloo)


@case
def test_tensors_of_two_devices_and_calls_the_device_path_has_not_are_refused_by_name(ctx):
    ctx.need_cuda()
    dev = ctx.device
    t = torch.ones(4, device=dev)
    raises(lambda: dist.all_gather_into_tensor(torch.empty(4 * ctx.size), t), ValueError,
           "zsh all_gather_into_tensor", "cpu", str(dev))
    raises(lambda: dist.all_gather([torch.empty(4, device=dev)] * (ctx.size - 1) +
                                   [torch.empty(4)], t), ValueError, "zsh all_gather", "cpu")
    if torch.cuda.device_count() > 1:
        other = torch.device("cuda", (dev.index + 1) % torch.cuda.device_count())
        raises(lambda: dist.all_gather_into_tensor(torch.empty(4 * ctx.size, device=other), t),
               ValueError, "zsh all_gather_into_tensor", str(dev), str(other))
    pg = backend()
    raises(lambda: pg.send([t], (ctx.rank + 1) % ctx.size, 0), RuntimeError,
           "send on CUDA tensors", "not supported")
    raises(lambda: pg.recv([t], (ctx.rank + 1) % ctx.size, 0), RuntimeError,
           "recv on CUDA tensors", "not supported")
    raises(lambda: dist.gather(t, [torch.empty(4, device=dev) for _ in range(ctx.size)]
                               if ctx.rank == 0 else None, dst=0), RuntimeError,
           "gather on CUDA tensors", "all_gather_into_tensor")
    raises(lambda: dist.scatter(t, [torch.ones(4, device=dev) for _ in range(ctx.size)]
                                if ctx.rank == 0 else None, src=0), RuntimeError,
           "scatter on CUDA tensors", "broadcast")
    raises(lambda: dist.all_to_all([torch.empty(2, device=dev)] * ctx.size,
                                   [torch.ones(3, device=dev)] * ctx.size), RuntimeError,
           "all_to_all of tensors of unequal sizes on CUDA tensors")
    raises(lambda: dist.all_reduce(t.to_sparse()), ValueError, "sparse")
    # The group goes on after the refusals, on both paths.
    dist.all_reduce(t)
    expect_same(t, torch.full((4,), float(ctx.size)), "all_reduce after the refusals")


# ---- the job -----------------------------------------------------------------------------

class Ctx:
    def __init__(self):
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        self.local_rank = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))
        self.device = None
        if torch.cuda.is_available() and self.local_rank < torch.cuda.device_count():
            self.device = torch.device("cuda", self.local_rank)
            torch.cuda.set_device(self.device)

    def need_cuda(self):
        if not torch.cuda.is_available():
            raise Skip("torch.cuda.is_available() is false (torch %s, CUDA %s)"
                       % (torch.__version__, torch.version.cuda or "not built in"))
        if self.device is None:
            raise Skip("LOCAL_RANK %d names no GPU: the machine has %d"
                       % (self.local_rank, torch.cuda.device_count()))
        available, why = zeroshard.device_available()
        if not available:
            raise Skip("zeroshard has no device path in this process: %s" % why)


if __name__ == "__main__":
    from harness import torch_main
    sys.exit(torch_main(sys.argv, Ctx))
