#!/usr/bin/env python3
"""zeroshard.Comm, run once per rank (tests/system/python/run_comm.sh starts
the ranks): every collective, blocking and nonblocking, on numpy arrays and
CPU torch tensors, every dtype and op against numpy's or torch's own result;
split, timeouts, abort, mismatched calls, bad input, from_store and the GIL."""

import functools
import gc
import os
import sys
import threading
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, case, main, raises  # noqa: E402

NUMPY_DTYPES = [np.int8, np.uint8, np.int32, np.uint32, np.int64, np.uint64,
                np.float16, np.float32, np.float64]
TORCH_DTYPES = ["int8", "uint8", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
OPS = ["sum", "prod", "min", "max", "avg"]
N = 37  # elements per block: odd, so no size divides it evenly


def is_float(dtype_name):
    return "float" in dtype_name


def values(rank, n, dtype_name):
    """Rank's data: small, exactly representable in every dtype (fp16, bf16 too)."""
    i = np.arange(n)
    if is_float(dtype_name):
        return 1.0 + ((i % 5) - 2) * 0.125 + rank * 0.0625
    # Integers wrap like the library's (two's complement); uint8 cast wraps too.
    return (i * 7 + rank * 13 - 20) % 97 - 40


def np_data(rank, n, dtype):
    v = values(rank, n, np.dtype(dtype).name)
    return v.astype(np.int64).astype(dtype) if not is_float(np.dtype(dtype).name) else v.astype(dtype)


def np_reduce(arrays, op, dtype):
    """numpy's result; fp16 accumulates in fp32 and rounds once, as the library does."""
    name = np.dtype(dtype).name
    work = [a.astype(np.float32) for a in arrays] if name == "float16" else arrays
    if op == "avg":
        out = functools.reduce(np.add, work) / np.asarray(len(arrays), dtype=work[0].dtype)
    else:
        fn = {"sum": np.add, "prod": np.multiply, "min": np.minimum, "max": np.maximum}[op]
        out = functools.reduce(fn, work)
    return out.astype(dtype)


def close(got, want, name, what):
    got, want = np.asarray(got), np.asarray(want)
    if is_float(name):
        rtol = {"float16": 2e-3, "bfloat16": 1e-2, "float32": 1e-5, "float64": 1e-12}[name]
        ok = np.allclose(got.astype(np.float64), want.astype(np.float64), rtol=rtol, atol=0)
    else:
        ok = np.array_equal(got, want)
    if not ok:
        raise AssertionError("%s (%s): got %s, want %s" % (what, name, got[:8], want[:8]))


def ops_for(name):
    return OPS if is_float(name) else OPS[:4]


# ---- torch helpers --------------------------------------------------------------------
def t_data(torch, rank, n, name):
    v = values(rank, n, name)
    return torch.tensor(v, dtype=torch.float64 if is_float(name) else torch.int64).to(getattr(torch, name))


def t_reduce(torch, tensors, op, name):
    # bf16/fp16: the fp32 result rounded once, as the library does.
    work = [t.float() if name in ("float16", "bfloat16") else t for t in tensors]
    if op == "avg":
        out = functools.reduce(torch.add, work) / len(work)
    else:
        fn = {"sum": torch.add, "prod": torch.mul, "min": torch.minimum, "max": torch.maximum}[op]
        out = functools.reduce(fn, work)
    return out.to(getattr(torch, name))


def t_np(t):
    """A tensor as a numpy array to compare (bf16 through fp32)."""
    return t.float().numpy() if str(t.dtype) == "torch.bfloat16" else t.numpy()


# ---- the collectives: one body for numpy and torch, blocking and not ------------------
class Kind:
    """Makes and reduces buffers of one framework."""

    def __init__(self, ctx, framework):
        self.torch = ctx.torch if framework == "torch" else None
        if framework == "torch":
            ctx.need_torch()
        self.names = TORCH_DTYPES if self.torch else [np.dtype(d).name for d in NUMPY_DTYPES]

    def data(self, rank, n, name):
        return t_data(self.torch, rank, n, name) if self.torch else np_data(rank, n, name)

    def empty(self, n, name):
        return self.torch.zeros(n, dtype=getattr(self.torch, name)) if self.torch else np.zeros(n, name)

    def reduce(self, arrays, op, name):
        return t_reduce(self.torch, arrays, op, name) if self.torch else np_reduce(arrays, op, name)

    def cat(self, arrays):
        return self.torch.cat(arrays) if self.torch else np.concatenate(arrays)

    def np(self, a):
        return t_np(a) if self.torch else a


def run(comm, blocking, method, *args, **kw):
    if blocking:
        return getattr(comm, method)(*args, **kw)
    req = getattr(comm, "i" + method)(*args, **kw)
    if hasattr(req, "test"):
        while not req.test():
            time.sleep(0)
    req.wait()  # a completed request waits at once
    return None


def all_gather_body(ctx, framework, blocking):
    k, c = Kind(ctx, framework), ctx.comm
    for name in k.names:
        send = k.data(ctx.rank, N, name)
        recv = k.empty(N * ctx.size, name)
        run(c, blocking, "all_gather", send, recv)
        want = k.cat([k.data(r, N, name) for r in range(ctx.size)])
        close(k.np(recv), k.np(want), name, "all_gather")


def reduce_scatter_body(ctx, framework, blocking):
    k, c = Kind(ctx, framework), ctx.comm
    for name in k.names:
        every = [k.data(r, N * ctx.size, name) for r in range(ctx.size)]
        for op in ops_for(name):
            recv = k.empty(N, name)
            run(c, blocking, "reduce_scatter", every[ctx.rank], recv, op=op)
            want = k.reduce(every, op, name)[ctx.rank * N:(ctx.rank + 1) * N]
            close(k.np(recv), k.np(want), name, "reduce_scatter " + op)


def all_reduce_body(ctx, framework, blocking):
    k, c = Kind(ctx, framework), ctx.comm
    for name in k.names:
        every = [k.data(r, N, name) for r in range(ctx.size)]
        for op in ops_for(name):
            recv = k.empty(N, name)
            run(c, blocking, "all_reduce", every[ctx.rank], recv, op=op)
            close(k.np(recv), k.np(k.reduce(every, op, name)), name, "all_reduce " + op)
            # In place: the result lands in send.
            inplace = k.data(ctx.rank, N, name)
            run(c, blocking, "all_reduce", inplace, op=ctx.zsh.Op[op.upper()])
            close(k.np(inplace), k.np(k.reduce(every, op, name)), name, "in-place all_reduce " + op)


def broadcast_body(ctx, framework, blocking):
    k, c = Kind(ctx, framework), ctx.comm
    for name in k.names:
        for root in range(ctx.size):
            buf = k.data(ctx.rank, N, name) if ctx.rank == root else k.empty(N, name)
            run(c, blocking, "broadcast", buf, root)
            close(k.np(buf), k.np(k.data(root, N, name)), name, "broadcast from %d" % root)


def register(name, fn, *args):
    def one(ctx):
        fn(ctx, *args)
    one.__name__ = name
    case(one)


for _fw in ("numpy", "torch"):
    for _blocking in (True, False):
        for _coll, _body in (("all_gather", all_gather_body), ("reduce_scatter", reduce_scatter_body),
                             ("all_reduce", all_reduce_body)):
            register("%s%s_%s_every_dtype_and_op_matches_%s" % ("" if _blocking else "i", _coll, _fw, _fw),
                     _body, _fw, _blocking)
        register("%sbroadcast_%s_from_every_root" % ("" if _blocking else "i", _fw), broadcast_body,
                 _fw, _blocking)


@case
def test_all_reduce_of_a_large_float32_array(ctx):
    x = np.full(1 << 20, ctx.rank + 1, np.float32)
    ctx.comm.all_reduce(x)
    close(x, np.full(1 << 20, ctx.size * (ctx.size + 1) / 2, np.float32), "float32", "large all_reduce")


@case
def test_barrier_blocking_and_nonblocking(ctx):
    ctx.comm.barrier()
    req = ctx.comm.iall_reduce(np.ones(1, np.int32))
    req.wait()
    req.wait()
    barriers = [ctx.comm.ibarrier() for _ in range(3)]
    while not all([r.test() for r in barriers]):
        pass
    ctx.comm.ibarrier().wait()


@case
def test_isend_irecv_around_the_ring_and_from_any_source_name_the_sender(ctx):
    ctx.need_ranks(2)
    c, right, left = ctx.comm, (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    got = np.zeros(N, np.float64)
    reqs = [c.irecv(got, left, tag=3), c.isend(np_data(ctx.rank, N, np.float64), right, tag=3)]
    for r in reqs:
        r.wait()
    close(got, np_data(left, N, np.float64), "float64", "irecv from the left")
    if reqs[0].source != left or reqs[1].source is not None:
        raise AssertionError("sources %s, %s; want %d, None" % (reqs[0].source, reqs[1].source,
                                                                left))
    if ctx.rank != 0:
        c.isend(np.full(3, ctx.rank, np.int32), 0, tag=ctx.zsh.TAG_MAX).wait()
        return
    senders = []
    for _ in range(ctx.size - 1):
        buf = np.zeros(3, np.int32)
        req = c.irecv(buf, None, tag=ctx.zsh.TAG_MAX)
        req.wait()
        close(buf, np.full(3, req.source, np.int32), "int32", "irecv from any source")
        senders.append(req.source)
    if sorted(senders) != list(range(1, ctx.size)):
        raise AssertionError("senders %s" % senders)
    raises(lambda: c.isend(got, ctx.rank), ctx.zsh.ZshError, "peer=%d is not another rank"
           % ctx.rank)
    raises(lambda: c.irecv(got, left, tag=ctx.zsh.TAG_MAX + 1), ctx.zsh.ZshError,
           "tag=%d is out of range" % (ctx.zsh.TAG_MAX + 1))


@case
def test_split_two_colors_ordered_by_key(ctx):
    color = ctx.rank % 2
    sub = ctx.comm.split(color, key=-ctx.rank)
    members = [r for r in range(ctx.size) if r % 2 == color]
    try:
        assert sub.size == len(members), (sub.size, members)
        assert sub.rank == len(members) - 1 - members.index(ctx.rank), (sub.rank, members)
        x = np.array([ctx.rank], np.int64)
        sub.all_reduce(x)
        assert x[0] == sum(members), (x, members)
    finally:
        sub.close()
    none = ctx.comm.split(-1 if ctx.rank == ctx.size - 1 else 0)
    if ctx.rank == ctx.size - 1:
        assert none is None
    else:
        assert none is not None and none.size == ctx.size - 1
        none.close()


@case
def test_timeout_raises_timeout_when_a_rank_does_not_join(ctx):
    ctx.need_ranks(2)
    if ctx.rank == 0:
        ctx.comm.timeout = 2.0
        assert abs(ctx.comm.timeout - 2.0) < 1e-9
        start = time.monotonic()
        try:
            ctx.comm.barrier()
            raise AssertionError("barrier returned without rank 1")
        except ctx.zsh.ZshError as e:
            took = time.monotonic() - start
            assert isinstance(e, ctx.zsh.ZshTimeoutError) and e.status == -5, repr(e)
            assert e.status_name == "timeout" or "time" in e.status_name, e.status_name
            assert str(e) == "%s: %s" % (e.status_name, e.message) and e.message, str(e)
            assert 1.9 < took < 4.0, "raised after %.2f s for a 2 s timeout" % took


@case
def test_request_set_timeout_fails_a_collective_a_rank_never_joins(ctx):
    ctx.need_ranks(2)
    if ctx.rank == 0:
        req = ctx.comm.iall_reduce(np.ones(4, np.float32))
        req.set_timeout(0.5)
        start = time.monotonic()
        try:
            req.wait()
            raise AssertionError("wait returned without rank 1")
        except ctx.zsh.ZshTimeoutError as e:
            assert time.monotonic() - start < 2.0, e
        try:
            req.wait()  # the same error again
            raise AssertionError("second wait returned")
        except ctx.zsh.ZshTimeoutError:
            pass


@case
def test_abort_from_another_thread_fails_the_waiting_call(ctx):
    ctx.need_ranks(2)
    c, zsh = ctx.comm, ctx.zsh
    if ctx.rank == 0:
        caught = []

        def waiter():
            try:
                c.barrier()
            except BaseException as e:
                caught.append(e)
        t = threading.Thread(target=waiter)
        t.start()
        time.sleep(0.5)
        c.abort()
        t.join(10)
        assert not t.is_alive(), "the waiting barrier did not return after abort"
        assert caught and isinstance(caught[0], zsh.ZshAbortedError) and caught[0].status == -9, caught
    else:
        # Joins after rank 0 aborted, and learns of it: a barrier whose peers
        # had all sent before the abort may still complete, the next one not.
        time.sleep(1.5)
        c.timeout = 20.0
        for attempt in range(2):
            try:
                c.barrier()
            except zsh.ZshError as e:
                assert e.status == -9 and isinstance(e, zsh.ZshAbortedError), repr(e)
                return
        raise AssertionError("two barriers after a peer's abort returned")


def expect_mismatch(ctx, comm, call, *named):
    """call() raises ZshMismatchError within a few seconds, naming every string of named;
    comm is revoked then: its next collective raises the same."""
    zsh = ctx.zsh
    comm.timeout = 30.0  # far beyond detection: a timeout would mean a missed mismatch
    start = time.monotonic()
    try:
        call()
        raise AssertionError("the mismatched call returned")
    except zsh.ZshError as e:
        took = time.monotonic() - start
        assert isinstance(e, zsh.ZshMismatchError) and e.status == -7, repr(e)
        assert str(e).startswith("ranks disagree about a call: "), str(e)
        for text in named:
            assert text in e.message, "%r does not name %r" % (e.message, text)
        assert took < 10.0, "raised after %.1f s" % took
    try:
        comm.barrier()
        raise AssertionError("a barrier on the revoked communicator returned")
    except zsh.ZshMismatchError:
        pass


def all_reduce_against_broadcasts(ctx, n):
    """Rank 0 of the first n ranks all-reduces while the others broadcast: every one raises."""
    ctx.need_ranks(n)
    group = ctx.comm.split(0 if ctx.rank < n else -1, key=ctx.rank)
    if group is None:
        return
    try:
        x = np.ones(8, np.float32)
        call = (lambda: group.all_reduce(x)) if ctx.rank == 0 else (lambda: group.broadcast(x, 0))
        expect_mismatch(ctx, group, call, "called allreduce(count=8, fp32, sum)",
                        "called broadcast(count=8, fp32, root=0)")
    finally:
        group.close()


@case
def test_mismatch_all_reduce_against_broadcast_raises_on_both_ranks(ctx):
    all_reduce_against_broadcasts(ctx, 2)


@case
def test_mismatch_board_all_reduce_against_broadcasts_raises_on_every_rank_of_three(ctx):
    # On three ranks of one node the all-reduce's descriptor goes onto its
    # board; run_comm.sh makes the broadcasts of its 4-rank job binomial,
    # whose descriptors go to their right neighbours through the transport:
    # rank 0 hears rank 2, whose right neighbour it is, though it waits for
    # rank 1 first.
    all_reduce_against_broadcasts(ctx, 3)


@case
def test_mismatch_different_counts_raise_on_every_rank(ctx):
    ctx.need_ranks(2)
    x = np.ones(9 if ctx.rank == ctx.size - 1 else 8, np.float64)
    expect_mismatch(ctx, ctx.comm, lambda: ctx.comm.all_reduce(x),
                    "allreduce(count=8, fp64, sum)", "allreduce(count=9, fp64, sum)")


@case
def test_mismatch_different_ops_raise_on_every_rank(ctx):
    ctx.need_ranks(2)
    x = np.ones(8, np.int32)
    op = "max" if ctx.rank == 1 else "sum"
    expect_mismatch(ctx, ctx.comm, lambda: ctx.comm.all_reduce(x, op=op),
                    "allreduce(count=8, int32, max)", "allreduce(count=8, int32, sum)")


@case
def test_mismatch_different_broadcast_roots_raise_by_the_next_call(ctx):
    ctx.need_ranks(2)
    x = np.zeros(16, np.float32)
    root = 1 if ctx.rank == ctx.size - 1 else 0

    def call():
        # A rank whose path from its root agrees may finish the broadcast
        # itself (zeroshard.h); it learns of the mismatch at its next call.
        ctx.comm.broadcast(x, root)
        ctx.comm.barrier()
    expect_mismatch(ctx, ctx.comm, call, "broadcast(count=16, fp32, root=0)",
                    "broadcast(count=16, fp32, root=1)")


def expect(exc, fn, *args, **kw):
    try:
        fn(*args, **kw)
    except exc as e:
        return str(e)
    raise AssertionError("%s%r did not raise %s" % (fn.__name__, args, exc.__name__))


@case
def test_bad_input_raises_before_anything_is_posted(ctx):
    c, zsh, n = ctx.comm, ctx.zsh, ctx.size
    f = np.zeros(4, np.float32)
    assert "bool" in expect(TypeError, c.all_reduce, np.zeros(4, bool))
    assert "complex64" in expect(TypeError, c.all_reduce, np.zeros(4, np.complex64))
    assert "list" in expect(TypeError, c.all_reduce, [1.0, 2.0])
    assert "same dtype" in expect(TypeError, c.all_reduce, f, np.zeros(4, np.float64))
    assert "recv has" in expect(ValueError, c.all_gather, f, np.zeros(4 * n + 1, np.float32))
    assert "send has" in expect(ValueError, c.reduce_scatter, np.zeros(4 * n + 1, np.float32), f)
    assert "4 elements but recv has 5" in expect(ValueError, c.all_reduce, f, np.zeros(5, np.float32))
    assert "C-contiguous" in expect(ValueError, c.all_reduce, np.zeros(8, np.float32)[::2])
    ro = np.zeros(4, np.float32)
    ro.flags.writeable = False
    assert "read-only" in expect(ValueError, c.all_reduce, f, ro)
    assert "avg" in expect(ValueError, c.all_reduce, np.zeros(4, np.int32), op="avg")
    assert "mean" in expect(ValueError, c.all_reduce, f, op="mean")
    assert "root" in expect(ValueError, c.broadcast, f, n)
    assert "root" in expect(ValueError, c.ibroadcast, f, -1)
    assert "read-only" in expect(ValueError, c.ibroadcast, ro, 0)
    expect(TypeError, c.all_reduce, np.zeros(4, np.dtype(">f4")))
    if ctx.torch is not None:
        torch = ctx.torch
        assert "int16" in expect(TypeError, c.all_reduce, torch.zeros(4, dtype=torch.int16))
        assert "meta" in expect(ValueError, c.all_reduce, torch.empty(4, device="meta"))
        assert "contiguous" in expect(ValueError, c.all_reduce, torch.zeros(4, 4).t())
        assert "same dtype" in expect(TypeError, c.all_reduce, torch.zeros(4), np.zeros(4, np.float64))
    # Nothing was posted: every rank's next collective is the same one.
    x = np.ones(4, np.float32)
    c.all_reduce(x)
    close(x, np.full(4, n, np.float32), "float32", "all_reduce after bad input")
    # A closed communicator refuses everything, and closing again is harmless.
    with c.split(0) as sub:
        pass
    sub.close()
    for call in (sub.barrier, sub.ibarrier, lambda: sub.all_reduce(x), lambda: sub.iall_reduce(x), sub.abort,
                 lambda: sub.split(0), lambda: sub.rank, lambda: sub.timeout):
        expect(zsh.ZshError, call)
    assert "closed" in repr(sub)


@case
def test_gil_is_released_while_a_barrier_waits(ctx):
    ctx.need_ranks(2)
    if ctx.rank != 0:
        time.sleep(1.0)
        ctx.comm.barrier()
        return
    ticks = [0]
    stop = threading.Event()

    def ticker():
        while not stop.is_set():
            ticks[0] += 1
            time.sleep(0.001)
    t = threading.Thread(target=ticker)
    t.start()
    time.sleep(0.05)
    before, start = ticks[0], time.monotonic()
    ctx.comm.barrier()
    during, took = ticks[0] - before, time.monotonic() - start
    stop.set()
    t.join()
    assert took > 0.5, "the barrier returned after %.2f s, before rank 1 joined" % took
    assert during > 50, "the other thread ticked %d times in %.2f s" % (during, took)


@case
def test_calls_from_two_threads_are_serialised(ctx):
    errors = []

    def worker():
        try:
            for _ in range(20):
                x = np.ones(1000, np.float64)
                ctx.comm.all_reduce(x)
                assert (x == ctx.size).all()
        except BaseException as e:
            errors.append(e)
    threads = [threading.Thread(target=worker) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors


@case
def test_collected_inflight_request_is_waited_for(ctx):
    x = np.full(1000, ctx.rank, np.int64)
    req = ctx.comm.iall_reduce(x)
    del req
    gc.collect()
    assert (x == ctx.size * (ctx.size - 1) // 2).all(), x[:4]
    # close() settles requests still out.
    req2 = ctx.comm.iall_reduce(np.ones(4, np.float32))
    assert req2 is not None


class DictStore:
    """A plain store: set/get/delete_key over a dict (get raises KeyError)."""

    def __init__(self):
        self.d = {}

    def set(self, key, value):
        self.d[key] = bytes(value)

    def get(self, key):
        return self.d[key]

    def delete_key(self, key):
        return self.d.pop(key, None) is not None


@case
def test_from_store_over_a_dict_store_deletes_its_data_keys(ctx):
    store = DictStore()
    with ctx.zsh.Comm.from_store(store, 0, 1, prefix="dict") as solo:
        x = np.arange(4, dtype=np.int32)
        solo.all_reduce(x)
        assert list(x) == [0, 1, 2, 3]
    left = sorted(store.d)
    assert left and all("/done/" in k for k in left), left


@case
def test_from_allgather_raising_becomes_a_zsh_error_with_the_cause(ctx):
    def bad(data):
        raise RuntimeError("store went away")
    try:
        ctx.zsh.Comm.from_allgather(0, 1, bad)
        raise AssertionError("from_allgather returned")
    except ctx.zsh.ZshError as e:
        assert isinstance(e.__cause__, RuntimeError) and "store went away" in str(e), repr(e)
    expect(ValueError, ctx.zsh.Comm.from_allgather, 1, 1, bad)


@case
def test_from_store_over_torch_tcpstore_across_processes(ctx):
    ctx.need_torch()
    port = int(os.environ.get("ZSH_PYTEST_STORE_PORT", "0"))
    if not port:
        raise Skip("ZSH_PYTEST_STORE_PORT is not set")
    import datetime
    store = ctx.torch.distributed.TCPStore("127.0.0.1", port, ctx.size, ctx.rank == 0,
                                           datetime.timedelta(seconds=60))
    with ctx.zsh.Comm.from_store(store, ctx.rank, ctx.size) as c:
        assert (c.rank, c.size) == (ctx.rank, ctx.size)
        t = ctx.torch.full((8,), float(ctx.rank))
        c.all_reduce(t)
        assert (t == ctx.size * (ctx.size - 1) / 2).all(), t
    # delete_key says whether the key was there: from_store deleted it already.
    assert not store.delete_key("zsh/0/0/%d" % ctx.rank), "the data key was not deleted"
    ctx.comm.barrier()  # rank 0's store outlives every rank's use of it


@case
def test_version_matches_dunder_version(ctx):
    v = ctx.zsh.version()
    assert len(v) == 3 and ctx.zsh.__version__ == "%d.%d.%d" % v, (v, ctx.zsh.__version__)
    assert int(ctx.zsh.Op.AVG) == 4 and int(ctx.zsh.Op.SUM) == 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
