#!/usr/bin/env python3
"""The torch.distributed backend "zsh", run once per rank (tests/system/python/
run_torch.sh starts the ranks). Every collective torch routes to a process
group, every dtype and op against torch's own arithmetic, groups, async work
with futures, point to point (from any source too), reduce, gather, scatter and
all-to-all in unequal splits against gloo bit for bit, monitored_barrier, DDP
and ZeroRedundancyOptimizer against gloo in the same job,
the init methods, and the failures: mismatched calls raise in every rank, a
timeout and a killed rank raise in the others, with ZeroShard's message.

    test_torch_backend.py cases|mismatch|init_env|init_file FILE|init_tcp PORT|timeout|killed
"""

import datetime
import gc
import os
import signal
import sys
import time
import traceback

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, case, report_case  # noqa: E402

import zeroshard.torch  # noqa: E402,F401  registers "zsh"

REDUCIBLE = [torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16,
             torch.bfloat16, torch.float32, torch.float64]
OPS = {"SUM": dist.ReduceOp.SUM, "PRODUCT": dist.ReduceOp.PRODUCT, "MIN": dist.ReduceOp.MIN,
       "MAX": dist.ReduceOp.MAX, "AVG": dist.ReduceOp.AVG}
N = 29  # elements per rank: odd, so no world size divides it


def data(rank, n, dtype, salt=0):
    """Small values, exact in every dtype, that differ between ranks."""
    i = torch.arange(n, dtype=torch.int64)
    if dtype.is_floating_point:
        return (1.0 + ((i + salt) % 5 - 2) * 0.125 + rank * 0.0625).to(dtype)
    v = (i * 7 + rank * 13 + salt) % 7 - 3  # in [-3, 3]: products of 4 fit in int8
    return v.to(dtype)


def torch_reduce(tensors, name):
    """torch's result; 16-bit floats are reduced in fp32 and rounded once, as the library does."""
    work = [t.float() if t.dtype in (torch.float16, torch.bfloat16) else t for t in tensors]
    out = work[0].clone()
    for t in work[1:]:
        if name in ("SUM", "AVG"):
            out = out + t
        elif name == "PRODUCT":
            out = out * t
        elif name == "MIN":
            out = torch.minimum(out, t)
        else:
            out = torch.maximum(out, t)
    if name == "AVG":
        out = out / len(tensors)
    return out.to(tensors[0].dtype)


def expect_equal(got, want, what):
    if got.dtype.is_floating_point:
        ok = torch.allclose(got.double(), want.double(), rtol=1e-6, atol=0)
    else:
        ok = torch.equal(got, want)
    if not ok:
        raise AssertionError("%s: got %s, want %s" % (what, got[:8].tolist(), want[:8].tolist()))


def expect_raises(fn, text, what):
    try:
        fn()
    except (RuntimeError, TypeError, ValueError) as e:
        if text not in str(e):
            raise AssertionError("%s raised %r, without '%s'" % (what, str(e), text))
        return e
    raise AssertionError("%s did not raise" % what)


# ---- the cases ---------------------------------------------------------------------------

@case
def test_all_reduce_matches_torch_for_every_dtype_and_op(ctx):
    for dtype in REDUCIBLE:
        for name, op in OPS.items():
            if name == "AVG" and not dtype.is_floating_point:
                continue
            t = data(ctx.rank, N, dtype)
            dist.all_reduce(t, op=op)
            want = torch_reduce([data(r, N, dtype) for r in range(ctx.size)], name)
            expect_equal(t, want, "all_reduce %s %s" % (dtype, name))


@case
def test_register_deterministic_makes_later_groups_reduce_in_rank_order(ctx):
    """register(deterministic=True): groups made after it take the mode; an
    all-reduce of floats whose sum depends on its order then gives the rank
    order fold, every rank the same bits."""
    zeroshard.torch.register(deterministic=True)
    try:
        group = dist.new_group(backend="zsh")
    finally:
        zeroshard.torch.register(deterministic=False)
    later = dist.new_group(backend="zsh")
    if not group.comm.deterministic or later.comm.deterministic:
        raise AssertionError("deterministic: the group after register(True) %s, after False %s"
                             % (group.comm.deterministic, later.comm.deterministic))
    gen = torch.Generator().manual_seed(7)
    inputs = [torch.randn(100000, generator=gen) * 1e3 for _ in range(ctx.size)]
    want = inputs[0].clone()
    for r in range(1, ctx.size):
        want += inputs[r]
    t, u = inputs[ctx.rank].clone(), inputs[ctx.rank].clone()
    dist.all_reduce(t, group=group)
    dist.all_reduce(u, group=later)
    if not torch.equal(t, want):
        raise AssertionError("the all-reduce differs from the rank-order sum at %d elements"
                             % int((t != want).sum()))
    # Without the mode, 400 KB run direct or ring, in orders of their own.
    if ctx.size >= 3 and torch.equal(u, want):
        raise AssertionError("without the mode the all-reduce also gave the rank-order sum: "
                             "the comparison cannot fail here")


@case
def test_all_reduce_refuses_bitwise_ops_and_avg_on_integers_before_posting(ctx):
    t = data(ctx.rank, N, torch.int32)
    expect_raises(lambda: dist.all_reduce(t, op=dist.ReduceOp.BAND), "not supported by the zsh "
                  "backend", "BAND")
    expect_raises(lambda: dist.all_reduce(t, op=dist.ReduceOp.AVG), "floating", "AVG on int32")
    expect_raises(lambda: dist.all_reduce(torch.zeros(3, dtype=torch.int16)),
                  "cannot be reduced by the zsh backend", "int16")
    # Nothing was posted: the group still works.
    dist.all_reduce(t)
    expect_equal(t, torch_reduce([data(r, N, torch.int32) for r in range(ctx.size)], "SUM"),
                 "all_reduce after the refusals")


@case
def test_all_reduce_of_a_non_contiguous_tensor_writes_the_result_back(ctx):
    base = torch.arange(24, dtype=torch.float32).view(4, 6) + ctx.rank
    t = base.t()  # a transposed view: not contiguous
    dist.all_reduce(t)
    want = sum(torch.arange(24, dtype=torch.float32).view(4, 6) + r for r in range(ctx.size))
    expect_equal(base, want, "transposed all_reduce")


@case
def test_broadcast_from_every_root_moves_any_dtype(ctx):
    for dtype in [torch.float32, torch.bfloat16, torch.int16, torch.bool, torch.complex64]:
        for root in range(ctx.size):
            t = (torch.arange(N) * (root + 1)).to(dtype) if ctx.rank == root else \
                torch.zeros(N, dtype=dtype)
            dist.broadcast(t, src=root)
            expect_equal(t, (torch.arange(N) * (root + 1)).to(dtype),
                         "broadcast %s from %d" % (dtype, root))


@case
def test_all_gather_into_tensor_and_into_a_list(ctx):
    for dtype in [torch.float32, torch.int64, torch.float16, torch.bool]:
        mine = data(ctx.rank, N, torch.int64).to(dtype)
        want = torch.cat([data(r, N, torch.int64).to(dtype) for r in range(ctx.size)])
        out = torch.empty(ctx.size * N, dtype=dtype)
        dist.all_gather_into_tensor(out, mine)
        expect_equal(out, want, "all_gather_into_tensor %s" % dtype)
        outs = [torch.empty(N, dtype=dtype) for _ in range(ctx.size)]
        dist.all_gather(outs, mine)
        expect_equal(torch.cat(outs), want, "all_gather %s" % dtype)
    expect_raises(lambda: dist.all_gather_into_tensor(torch.empty(N), torch.empty(N)),
                  "expected", "a short output") if ctx.size > 1 else None


@case
def test_all_gather_coalesced_gathers_every_tensor_of_every_rank_exactly(ctx):
    # torch asks for one dtype per call; the shapes differ, one is empty.
    for dtype in [torch.float32, torch.bfloat16, torch.int32]:
        def inputs(r):
            return [data(r, N, dtype), data(r, 6, dtype, salt=1).view(3, 2),
                    torch.empty(0, dtype=dtype), data(r, 5, dtype, salt=2)]
        mine = inputs(ctx.rank)
        outs = [[torch.empty_like(t) for t in mine] for _ in range(ctx.size)]
        dist.all_gather_coalesced(outs, mine)
        for r in range(ctx.size):
            for k, w in enumerate(inputs(r)):
                if not torch.equal(outs[r][k], w):
                    raise AssertionError("all_gather_coalesced %s: rank %d's tensor %d is %s, "
                                         "want %s" % (dtype, r, k, outs[r][k].tolist()[:4],
                                                      w.tolist()[:4]))
    if ctx.size > 1:
        expect_raises(lambda: dist.all_gather_coalesced([[torch.empty(N)]], [torch.empty(N)]),
                      "output lists", "too few output lists")


@case
def test_reduce_scatter_tensor_and_list_match_torch(ctx):
    for dtype in [torch.float32, torch.int32, torch.bfloat16]:
        for name in ["SUM", "MAX", "AVG"]:
            if name == "AVG" and not dtype.is_floating_point:
                continue
            inp = data(ctx.rank, ctx.size * N, dtype)
            whole = torch_reduce([data(r, ctx.size * N, dtype) for r in range(ctx.size)], name)
            want = whole[ctx.rank * N:(ctx.rank + 1) * N]
            out = torch.empty(N, dtype=dtype)
            dist.reduce_scatter_tensor(out, inp, op=OPS[name])
            expect_equal(out, want, "reduce_scatter_tensor %s %s" % (dtype, name))
            out = torch.empty(N, dtype=dtype)
            dist.reduce_scatter(out, list(inp.chunk(ctx.size)), op=OPS[name])
            expect_equal(out, want, "reduce_scatter %s %s" % (dtype, name))


@case
def test_reduce_gather_and_scatter_reach_their_root(ctx):
    root = ctx.size - 1
    t = data(ctx.rank, N, torch.float64)
    dist.reduce(t, dst=root)
    if ctx.rank == root:
        expect_equal(t, torch_reduce([data(r, N, torch.float64) for r in range(ctx.size)], "SUM"),
                     "reduce")
    outs = [torch.empty(N, dtype=torch.int64) for _ in range(ctx.size)] if ctx.rank == root else None
    dist.gather(data(ctx.rank, N, torch.int64), gather_list=outs, dst=root)
    if ctx.rank == root:
        expect_equal(torch.cat(outs), torch.cat([data(r, N, torch.int64) for r in range(ctx.size)]),
                     "gather")
    pieces = [data(r, N, torch.float32, salt=3) for r in range(ctx.size)] if ctx.rank == root else None
    out = torch.empty(N)
    dist.scatter(out, scatter_list=pieces, src=root)
    expect_equal(out, data(ctx.rank, N, torch.float32, salt=3), "scatter")


@case
def test_async_work_completes_in_call_order_and_runs_future_callbacks(ctx):
    tensors = [torch.full((1000,), float(ctx.rank + k)) for k in range(8)]
    works = [dist.all_reduce(t, async_op=True) for t in tensors]
    seen = []
    fut = works[-1].get_future().then(lambda f: seen.append(f.value()[0][0].item()) or 1)
    for w in works:
        w.wait()
    fut.wait()
    for k, t in enumerate(tensors):
        want = float(sum(r + k for r in range(ctx.size)))
        if not torch.all(t == want):
            raise AssertionError("async all_reduce %d: %s, want %s" % (k, t[0].item(), want))
    if seen != [float(sum(r + 7 for r in range(ctx.size)))]:
        raise AssertionError("the future's callback saw %s" % seen)


@case
def test_async_all_reduce_returns_before_it_completes_and_completes_without_wait(ctx):
    ctx.need_ranks(2)
    big = torch.full((1 << 22,), float(ctx.rank + 1))  # 16 MB
    # Rank 0 posts late: no rank's call can complete before then.
    if ctx.rank == 0:
        time.sleep(0.3)
    work = dist.all_reduce(big, async_op=True)
    if work.is_completed():
        raise AssertionError("an all-reduce that waits for a late rank returned completed")
    fut = work.get_future()
    deadline = time.monotonic() + 30
    while not fut.done():  # nobody waits: the group's progress completes it
        if time.monotonic() > deadline:
            raise AssertionError("the future did not complete without wait()")
        time.sleep(0.001)
    if not work.is_completed():
        raise AssertionError("the future completed but the work says it has not")
    want = float(ctx.size * (ctx.size + 1) // 2)
    if not torch.all(big == want) or not torch.all(fut.value()[0] == want):
        raise AssertionError("async all_reduce: %s, want %s" % (big[0].item(), want))
    work.wait()


@case
def test_future_then_chains_run_once_the_collective_completes(ctx):
    t = torch.full((4099,), float(ctx.rank))
    chained = dist.all_reduce(t, async_op=True).get_future() \
        .then(lambda f: f.value()[0] * 2) \
        .then(lambda f: f.value().sum().item())
    want = 2.0 * 4099 * sum(range(ctx.size))
    if chained.wait() != want:
        raise AssertionError("the chained future gave %s, want %s" % (chained.value(), want))


@case
def test_async_broadcast_and_barrier_complete_through_wait_and_futures(ctx):
    bufs = [torch.full((1000 + r,), float(ctx.rank)) for r in range(ctx.size)]
    works = [dist.broadcast(b, src=r, async_op=True) for r, b in enumerate(bufs)]
    barrier = dist.barrier(async_op=True)
    futs = [w.get_future() for w in works]
    torch.futures.wait_all(futs + [barrier.get_future()])
    for r, (b, w) in enumerate(zip(bufs, works)):
        w.wait()
        if not torch.all(b == float(r)):
            raise AssertionError("async broadcast from %d gave %s" % (r, b[0].item()))
    barrier.wait()
    if not barrier.is_completed() or not barrier.is_success():
        raise AssertionError("a waited barrier is not completed and successful")


@case
def test_barrier_and_object_collectives(ctx):
    dist.barrier()
    objs = [None] * ctx.size
    dist.all_gather_object(objs, {"rank": ctx.rank, "name": "r%d" % ctx.rank})
    if objs != [{"rank": r, "name": "r%d" % r} for r in range(ctx.size)]:
        raise AssertionError("all_gather_object: %s" % objs)
    lst = [("from", 0, [1, 2])] if ctx.rank == 0 else [None]
    dist.broadcast_object_list(lst, src=0)
    if lst != [("from", 0, [1, 2])]:
        raise AssertionError("broadcast_object_list: %s" % lst)


@case
def test_new_group_runs_collectives_among_its_members_only(ctx):
    ctx.need_ranks(2)
    members = [0, ctx.size - 1]
    group = dist.new_group(ranks=members)
    if ctx.rank in members:
        t = torch.tensor([float(ctx.rank + 1)])
        dist.all_reduce(t, group=group)
        want = float(sum(r + 1 for r in members))
        if t.item() != want:
            raise AssertionError("all_reduce in %s: %s, want %s" % (members, t.item(), want))
        if dist.get_world_size(group) != 2:
            raise AssertionError("group size %d" % dist.get_world_size(group))
        dist.destroy_process_group(group)
    elif group != dist.GroupMember.NON_GROUP_MEMBER:
        raise AssertionError("rank %d is not a member, yet got a group" % ctx.rank)
    dist.barrier()


@case
def test_a_group_of_all_ranks_after_a_group_of_some_bootstraps(ctx):
    # The creator runs on members only: the bootstrap's keys must not depend
    # on how many groups each process joined before.
    ctx.need_ranks(3)
    some = dist.new_group(ranks=[0, 1])
    every = dist.new_group(timeout=datetime.timedelta(seconds=20))
    t = torch.ones(3)
    dist.all_reduce(t, group=every)
    expect_equal(t, torch.full((3,), float(ctx.size)), "all_reduce on the group of all ranks")
    dist.destroy_process_group(every)
    if ctx.rank < 2:
        dist.destroy_process_group(some)


@case
def test_a_group_made_after_destroying_one_stays_open_when_the_old_one_dies(ctx):
    """group = new_group(); destroy_process_group(group); group = new_group():
    the old group dies as the name moves to the new one, which
    torch.distributed still has, so it stays open (it used to close with the
    old one: "the communicator was closed")."""
    group = dist.new_group(backend="zsh")
    dist.all_reduce(torch.ones(1), group=group)
    dist.destroy_process_group(group)
    group = dist.new_group(backend="zsh")
    gc.collect()
    t = torch.ones(2)
    dist.all_reduce(t, group=group)
    expect_equal(t, torch.full((2,), float(ctx.size)), "all_reduce on the group made after")
    dist.destroy_process_group(group)


P2P_DTYPES = REDUCIBLE + [torch.int16, torch.bool, torch.complex64]


@case
def test_send_recv_and_isend_irecv_deliver_every_dtype_around_the_ring(ctx):
    ctx.need_ranks(2)
    right, left = (ctx.rank + 1) % ctx.size, (ctx.rank - 1) % ctx.size
    for k, dtype in enumerate(P2P_DTYPES):
        mine, want = data(ctx.rank, N, torch.int64).to(dtype), data(left, N, torch.int64).to(dtype)
        got = torch.zeros(N, dtype=dtype)
        # even ranks send first, odd ones receive first: blocking calls cannot deadlock
        if ctx.rank % 2 == 0:
            dist.send(mine, right, tag=k)
            dist.recv(got, left, tag=k)
        else:
            dist.recv(got, left, tag=k)
            dist.send(mine, right, tag=k)
        expect_equal(got, want, "send/recv %s" % dtype)
        # nonblocking, into a non-contiguous tensor, written back once it completes
        got = torch.zeros(2, N, dtype=dtype)[:, 0]
        works = [dist.irecv(got, left, tag=k), dist.isend(mine[:2].clone(), right, tag=k)]
        for w in works:
            w.wait()
        expect_equal(got, want[:2], "isend/irecv %s" % dtype)
    # a message of 0 elements
    dist.isend(torch.empty(0), right).wait()
    dist.irecv(torch.empty(0), left).wait()


@case
def test_recv_from_any_source_returns_each_senders_rank(ctx):
    ctx.need_ranks(2)
    if ctx.rank != 0:
        for _ in range(2):
            dist.send(torch.full((5,), ctx.rank, dtype=torch.int32), 0, tag=7)
        return
    senders = []
    for _ in range(ctx.size - 1):
        got = torch.full((5,), -1, dtype=torch.int32)
        sender = dist.recv(got, tag=7)
        expect_equal(got, torch.full((5,), sender, dtype=torch.int32), "recv from any source")
        senders.append(sender)
    for _ in range(ctx.size - 1):
        got = torch.full((5,), -1, dtype=torch.int32)
        work = dist.irecv(got, tag=7)
        work.wait()
        sender = work._source_rank()
        expect_equal(got, torch.full((5,), sender, dtype=torch.int32), "irecv from any source")
        senders.append(sender)
    if sorted(senders) != sorted(list(range(1, ctx.size)) * 2):
        raise AssertionError("senders %s: each of ranks 1..%d should send twice"
                             % (senders, ctx.size - 1))


@case
def test_tags_keep_messages_apart_and_one_tag_keeps_its_order(ctx):
    ctx.need_ranks(2)
    if ctx.rank == 0:
        works = [dist.isend(torch.tensor([v]), 1, tag=1) for v in (10.0, 20.0, 30.0)]
        works.append(dist.isend(torch.tensor([99.0]), 1, tag=2))
        for w in works:
            w.wait()
    elif ctx.rank == 1:
        got = torch.zeros(1)
        dist.recv(got, 0, tag=2)  # asked for first, gets its own message only
        expect_equal(got, torch.tensor([99.0]), "tag 2")
        for v in (10.0, 20.0, 30.0):
            dist.recv(got, 0, tag=1)
            expect_equal(got, torch.tensor([v]), "tag 1 in order")


@case
def test_a_collectives_future_completes_while_an_earlier_receive_waits(ctx):
    ctx.need_ranks(2)
    if ctx.rank == 0:
        dist.all_reduce(torch.ones(3))
        dist.recv(torch.zeros(1), 1, tag=5)  # rank 1 sends it once its future completed
        dist.send(torch.tensor([6.0]), 1, tag=6)
    elif ctx.rank == 1:
        got = torch.zeros(1)
        early = dist.irecv(got, 0, tag=6)
        fut = dist.all_reduce(torch.ones(3), async_op=True).get_future()
        deadline = time.time() + 10
        while not fut.done() and time.time() < deadline:
            time.sleep(0.01)
        done = fut.done()
        dist.send(torch.zeros(1), 0, tag=5)
        early.wait()
        if not done:
            raise AssertionError("the all_reduce's future waited for the receive posted before it")
        expect_equal(got, torch.tensor([6.0]), "the earlier receive")
    else:
        dist.all_reduce(torch.ones(3))


@case
def test_point_to_point_refuses_this_rank_and_tags_out_of_range_before_posting(ctx):
    t = torch.zeros(4)
    # torch 2.x refuses a send to this rank itself before the backend sees
    # it; the backend's own check is then reached through the group.
    try:
        dist.send(t, dst=ctx.rank)
    except (RuntimeError, ValueError) as e:
        if "is not another rank" not in str(e) and "should not be the same" not in str(e):
            raise AssertionError("send to itself raised %r, naming neither check" % str(e))
    else:
        raise AssertionError("send to itself did not raise")
    pg = dist.distributed_c10d._get_default_group()
    if not isinstance(pg, zeroshard.torch.backend.ProcessGroupZsh):
        pg = pg._get_backend(torch.device("cpu"))
    expect_raises(lambda: pg.send([t], ctx.rank, 0), "is not another rank",
                  "the backend's send to itself")
    if ctx.size > 1:
        peer = (ctx.rank + 1) % ctx.size
        expect_raises(lambda: dist.isend(t, peer, tag=-1), "tag -1 is out of range", "tag -1")
        top = zeroshard.torch.backend.USER_TAG_MAX
        expect_raises(lambda: dist.irecv(t, peer, tag=top + 1), "tag %d is out of range"
                      % (top + 1), "a tag of the group's own")


def splits_of(rank, size):
    """Rows rank sends to each rank in the unequal all-to-alls: 1 + (rank + j) % 3."""
    return [1 + (rank + j) % 3 for j in range(size)]


@case
def test_unequal_all_to_all_single_and_list_give_gloos_result_bit_for_bit(ctx):
    gloo = dist.new_group(backend="gloo")
    for dtype in [torch.float32, torch.int64, torch.uint8]:  # gloo's all-to-all dtypes
        ins = splits_of(ctx.rank, ctx.size)
        outs = [splits_of(r, ctx.size)[ctx.rank] for r in range(ctx.size)]
        mine = data(ctx.rank, sum(ins) * 3, torch.int64).to(dtype).view(sum(ins), 3)
        results = []
        for group in (None, gloo):
            out = torch.full((sum(outs), 3), 7, dtype=torch.int64).to(dtype)
            dist.all_to_all_single(out, mine, outs, ins, group=group)
            results.append(out)
        if not torch.equal(results[0], results[1]):
            raise AssertionError("all_to_all_single %s: zsh %s, gloo %s"
                                 % (dtype, results[0].tolist(), results[1].tolist()))
        # gloo has no list form: its all_to_all_single says what the blocks must be
        got = [torch.zeros(n, 3, dtype=dtype) for n in outs]
        dist.all_to_all(got, list(mine.split(ins)))
        if not torch.equal(torch.cat(got), results[1]):
            raise AssertionError("all_to_all of unequal tensors %s differs from gloo's" % dtype)
    expect_raises(lambda: dist.all_to_all_single(torch.zeros(ctx.size + 1), torch.zeros(ctx.size + 1),
                                                 [1] * ctx.size, [2] * ctx.size),
                  "split sizes", "splits that do not add up")
    dist.destroy_process_group(gloo)


@case
def test_reduce_gather_and_scatter_from_every_root_give_gloos_result_bit_for_bit(ctx):
    gloo = dist.new_group(backend="gloo")
    for root in range(ctx.size):
        for dtype in [torch.float32, torch.float64, torch.int32]:
            for name in ("SUM", "PRODUCT", "MIN", "MAX"):
                results = []
                for group in (None, gloo):
                    t = data(ctx.rank, N, dtype, salt=root)
                    dist.reduce(t, dst=root, op=OPS[name], group=group)
                    results.append(t)
                if (ctx.rank == root) and not torch.equal(results[0], results[1]):
                    raise AssertionError("reduce %s %s to %d: zsh %s, gloo %s" % (
                        name, dtype, root, results[0][:8].tolist(), results[1][:8].tolist()))
                if (ctx.rank != root) and not torch.equal(results[0],
                                                          data(ctx.rank, N, dtype, salt=root)):
                    raise AssertionError("reduce changed the tensor of rank %d, not the root"
                                         % ctx.rank)
        for dtype in P2P_DTYPES:
            mine = data(ctx.rank, N, torch.int64, salt=root).to(dtype)
            outs = [torch.zeros(N, dtype=dtype) for _ in range(ctx.size)] if ctx.rank == root else None
            dist.gather(mine, gather_list=outs, dst=root)
            if ctx.rank == root:
                expect_equal(torch.stack(outs), torch.stack([data(r, N, torch.int64, salt=root)
                                                             .to(dtype) for r in range(ctx.size)]),
                             "gather %s to %d" % (dtype, root))
            pieces = ([data(r, N, torch.int64, salt=root + 1).to(dtype) for r in range(ctx.size)]
                      if ctx.rank == root else None)
            out = torch.zeros(N, dtype=dtype)
            dist.scatter(out, scatter_list=pieces, src=root)
            expect_equal(out, data(ctx.rank, N, torch.int64, salt=root + 1).to(dtype),
                         "scatter %s from %d" % (dtype, root))
    dist.destroy_process_group(gloo)


@case
def test_monitored_barrier_passes_when_all_come_and_names_who_did_not(ctx):
    ctx.need_ranks(2)
    timeout = datetime.timedelta(seconds=0.5)
    for wait_all in (False, True):
        zeroshard.torch.monitored_barrier(timeout=timeout, wait_all_ranks=wait_all)
    # rank 1 stays away
    if ctx.rank == 0:
        expect_raises(lambda: zeroshard.torch.monitored_barrier(timeout=timeout),
                      "Rank 1 failed to pass monitoredBarrier in 500 ms", "rank 1 missing")
    elif ctx.rank > 1:
        expect_raises(lambda: zeroshard.torch.monitored_barrier(timeout=timeout),
                      "Rank %d successfully reached monitoredBarrier, but received errors while "
                      "waiting for send/recv from rank 0" % ctx.rank, "rank 0 gave no word")
    dist.barrier()
    # every rank but 0 stays away: all of them named, or the first
    if ctx.rank == 0:
        missing = ", ".join(str(r) for r in range(1, ctx.size))
        expect_raises(lambda: dist.group.WORLD.monitored_barrier(timeout, wait_all_ranks=True),
                      "Ranks %s failed to pass monitoredBarrier" % missing, "wait_all_ranks")
        expect_raises(lambda: zeroshard.torch.monitored_barrier(timeout=timeout),
                      "Rank 1 failed to pass monitoredBarrier", "the first missing")
    dist.barrier()
    zeroshard.torch.monitored_barrier(timeout=timeout)  # late messages of the failed ones match nothing


def exchange(rank, size, n, dtype):
    """What rank gets from an all-to-all where rank s sends data(s, size * n)'s block r to r."""
    return torch.cat([data(s, size * n, torch.int64)[rank * n:(rank + 1) * n].to(dtype)
                      for s in range(size)])


@case
def test_all_to_all_single_and_list_give_the_expected_exchange_for_every_dtype(ctx):
    for dtype in REDUCIBLE + [torch.int16, torch.bool, torch.float64]:
        mine = data(ctx.rank, ctx.size * N, torch.int64).to(dtype)
        want = exchange(ctx.rank, ctx.size, N, dtype)
        out = torch.empty(ctx.size * N, dtype=dtype)
        dist.all_to_all_single(out, mine)
        expect_equal(out, want, "all_to_all_single %s" % dtype)
        # equal split sizes given explicitly are the same call
        out = torch.empty(ctx.size * N, dtype=dtype)
        dist.all_to_all_single(out, mine, [N] * ctx.size, [N] * ctx.size)
        expect_equal(out, want, "all_to_all_single %s with equal splits" % dtype)
        outs = [torch.empty(N, dtype=dtype) for _ in range(ctx.size)]
        dist.all_to_all(outs, list(mine.split(N)))
        expect_equal(torch.cat(outs), want, "all_to_all %s" % dtype)
    # async, with a 2-D output written through its future
    mine = data(ctx.rank, ctx.size * 4096, torch.int64).float().view(ctx.size, 4096)
    out = torch.empty(ctx.size, 4096)
    work = dist.all_to_all_single(out, mine, async_op=True)
    done = work.get_future()
    work.wait()
    expect_equal(out.reshape(-1), exchange(ctx.rank, ctx.size, 4096, torch.float32),
                 "async all_to_all_single")
    if not done.done():
        raise AssertionError("the future of a waited all_to_all_single is not done")
    expect_raises(lambda: dist.all_to_all_single(torch.empty(ctx.size + 1), torch.zeros(ctx.size)),
                  "output has %d rows (dim 0), not a multiple of the group's %d ranks"
                  % (ctx.size + 1, ctx.size), "a longer output")


def expect_mismatch(group, call, *named):
    """call() raises, within a few seconds, a RuntimeError with ZeroShard's mismatch message
    naming every string of named; the group is revoked then: its next barrier raises too.
    Each case runs on a group of its own, since a mismatch leaves a group unusable."""
    start = time.monotonic()
    try:
        call()
        raise AssertionError("the mismatched call returned")
    except RuntimeError as e:
        took = time.monotonic() - start
        if not str(e).startswith("ranks disagree about a call: "):
            raise AssertionError("not ZeroShard's mismatch message: %s" % e)
        for text in named:
            if text not in str(e):
                raise AssertionError("%r does not name %r" % (str(e), text))
        if took > 10:
            raise AssertionError("raised after %.1f s" % took)
    expect_raises(lambda: dist.barrier(group=group), "ranks disagree about a call",
                  "a barrier on the revoked group")
    dist.destroy_process_group(group)


MISMATCH_CASES = []


def mismatch_case(fn):
    """A mismatch case: run in the job "mismatch", away from the other cases,
    since a mismatch leaves its group revoked."""
    MISMATCH_CASES.append(fn)
    return fn


def mismatch_group(ranks=None):
    # A timeout far beyond detection: raising after it would mean a missed mismatch.
    return dist.new_group(ranks=ranks, timeout=datetime.timedelta(seconds=30))


@mismatch_case
def test_mismatch_all_reduce_against_broadcast_raises_on_both_ranks(ctx):
    ctx.need_ranks(2)
    group = mismatch_group([0, 1])
    if ctx.rank > 1:
        return
    t = torch.ones(N)
    call = (lambda: dist.all_reduce(t, group=group)) if ctx.rank == 0 else \
        (lambda: dist.broadcast(t, src=0, group=group))
    # The backend broadcasts a tensor as bytes.
    expect_mismatch(group, call, "called allreduce(count=%d, fp32, sum)" % N,
                    "called broadcast(count=%d, uint8, root=0)" % (4 * N))


@mismatch_case
def test_mismatch_different_all_reduce_counts_raise_on_every_rank(ctx):
    ctx.need_ranks(2)
    group = mismatch_group()
    t = torch.ones(N + 1 if ctx.rank == ctx.size - 1 else N, dtype=torch.float64)
    expect_mismatch(group, lambda: dist.all_reduce(t, group=group),
                    "allreduce(count=%d, fp64, sum)" % N, "allreduce(count=%d, fp64, sum)" % (N + 1))


@mismatch_case
def test_mismatch_different_reduce_ops_raise_on_every_rank(ctx):
    ctx.need_ranks(2)
    group = mismatch_group()
    t = torch.ones(N, dtype=torch.int32)
    op = dist.ReduceOp.MAX if ctx.rank == 1 else dist.ReduceOp.SUM
    expect_mismatch(group, lambda: dist.all_reduce(t, op=op, group=group),
                    "allreduce(count=%d, int32, max)" % N, "allreduce(count=%d, int32, sum)" % N)


@mismatch_case
def test_mismatch_different_broadcast_roots_raise_by_the_next_call(ctx):
    ctx.need_ranks(2)
    group = mismatch_group()
    t = torch.zeros(N)
    root = 1 if ctx.rank == ctx.size - 1 else 0

    def call():
        # A rank whose path from its root agrees may finish the broadcast
        # (zeroshard.h); it learns of the mismatch at its next call.
        dist.broadcast(t, src=root, group=group)
        dist.barrier(group=group)
    expect_mismatch(group, call, "broadcast(count=%d, uint8, root=0)" % (4 * N),
                    "broadcast(count=%d, uint8, root=1)" % (4 * N))


@case
def test_ddp_over_zsh_gives_gloos_gradients_and_runs_comm_hooks(ctx):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    gloo = dist.new_group(backend="gloo")
    torch.manual_seed(0)
    a = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    b = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 4))
    b.load_state_dict(a.state_dict())
    za = DDP(a, bucket_cap_mb=0.001)  # several buckets: several async all-reduces per step
    gb = DDP(b, process_group=gloo, bucket_cap_mb=0.001)
    oa = torch.optim.SGD(za.parameters(), lr=0.1)
    ob = torch.optim.SGD(gb.parameters(), lr=0.1)
    for step in range(3):
        x = torch.randn(8, 16, generator=torch.Generator().manual_seed(100 * ctx.rank + step))
        for model, opt in ((za, oa), (gb, ob)):
            opt.zero_grad()
            model(x).pow(2).sum().backward()
            opt.step()
        for pa, pb in zip(a.parameters(), b.parameters()):
            if not torch.allclose(pa, pb, rtol=1e-6, atol=1e-7):
                raise AssertionError("step %d: DDP over zsh and over gloo differ by %g"
                                     % (step, (pa - pb).abs().max().item()))
    za.register_comm_hook(dist.group.WORLD, default_hooks.allreduce_hook)
    oa.zero_grad()
    za(torch.ones(2, 16)).sum().backward()
    dist.destroy_process_group(gloo)


def _fp16_then_allreduce_hook(state, bucket):
    """A custom hook: the bucket all-reduced in fp16, back to fp32 in a then()."""
    buf = bucket.buffer() if hasattr(bucket, "buffer") else bucket.get_tensor()
    half = buf.to(torch.float16).div_(dist.get_world_size())
    fut = dist.all_reduce(half, async_op=True).get_future()
    return fut.then(lambda f: buf.copy_(f.value()[0]))


@case
def test_ddp_with_comm_hooks_trains_to_gloos_parameters(ctx):
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks
    from torch.nn.parallel import DistributedDataParallel as DDP

    gloo = dist.new_group(backend="gloo")
    # gloo sums fp16 a rank at a time, ZeroShard in fp32 rounded once: at 3
    # ranks the fp16 hook's gradients may differ in their last bit.
    for hook, tol in ((default_hooks.allreduce_hook, 1e-6), (_fp16_then_allreduce_hook, 1e-3)):
        torch.manual_seed(0)
        a = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                                torch.nn.Tanh(), torch.nn.Linear(64, 4))
        b = torch.nn.Sequential(torch.nn.Linear(16, 64), torch.nn.Tanh(), torch.nn.Linear(64, 64),
                                torch.nn.Tanh(), torch.nn.Linear(64, 4))
        b.load_state_dict(a.state_dict())
        za = DDP(a, bucket_cap_mb=0.005)  # several buckets in flight during backward
        gb = DDP(b, process_group=gloo, bucket_cap_mb=0.005)
        za.register_comm_hook(None, hook)
        gb.register_comm_hook(gloo, hook)
        oa = torch.optim.SGD(za.parameters(), lr=0.1)
        ob = torch.optim.SGD(gb.parameters(), lr=0.1)
        for step in range(4):
            x = torch.randn(8, 16, generator=torch.Generator().manual_seed(100 * ctx.rank + step))
            for model, opt in ((za, oa), (gb, ob)):
                opt.zero_grad()
                model(x).pow(2).sum().backward()
                opt.step()
        for pa, pb in zip(a.parameters(), b.parameters()):
            if not torch.allclose(pa, pb, rtol=10 * tol, atol=tol):
                raise AssertionError("%s: DDP over zsh and over gloo differ by %g"
                                     % (hook.__name__, (pa - pb).abs().max().item()))
    dist.destroy_process_group(gloo)


@case
def test_zero_redundancy_optimizer_over_zsh_matches_adam(ctx):
    from torch.distributed.optim import ZeroRedundancyOptimizer
    from torch.nn.parallel import DistributedDataParallel as DDP

    torch.manual_seed(1)
    a = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8),
                            torch.nn.Linear(8, 2))
    b = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.ReLU(), torch.nn.Linear(8, 8),
                            torch.nn.Linear(8, 2))
    b.load_state_dict(a.state_dict())
    da, db = DDP(a), DDP(b)
    za = ZeroRedundancyOptimizer(da.parameters(), optimizer_class=torch.optim.Adam, lr=0.01)
    ob = torch.optim.Adam(db.parameters(), lr=0.01)
    for step in range(3):
        x = torch.randn(4, 8, generator=torch.Generator().manual_seed(7 * ctx.rank + step))
        for model, opt in ((da, za), (db, ob)):
            opt.zero_grad()
            model(x).sum().backward()
            opt.step()
    for pa, pb in zip(a.parameters(), b.parameters()):
        if not torch.allclose(pa, pb, rtol=1e-5, atol=1e-6):
            raise AssertionError("ZeroRedundancyOptimizer differs from Adam by %g"
                                 % (pa - pb).abs().max().item())


# ---- the jobs ----------------------------------------------------------------------------

class Ctx:
    def __init__(self):
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()

    def need_ranks(self, n):
        if self.size < n:
            raise Skip("needs %d ranks, the job has %d" % (n, self.size))


def run_cases(only=None, cases=None):
    from harness import CASES
    ctx = Ctx()
    failed = 0
    for fn in (CASES if cases is None else cases):
        if only and only not in fn.__name__:
            continue
        failed += not report_case(fn, ctx)
        dist.barrier()
    return failed


def job_init(kind, arg):
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    start = time.monotonic()
    try:
        if kind == "env":
            dist.init_process_group("zsh")
        elif kind == "file":
            dist.init_process_group("zsh", init_method="file://" + arg, rank=rank, world_size=size)
        else:
            dist.init_process_group("zsh", init_method="tcp://127.0.0.1:" + arg, rank=rank,
                                    world_size=size)
        if dist.get_backend() != "zsh":
            raise AssertionError("the default group's backend is %s" % dist.get_backend())
        t = torch.tensor([1.0])
        dist.all_reduce(t)
        if t.item() != size:
            raise AssertionError("all_reduce gave %s, want %d" % (t.item(), size))
        dist.destroy_process_group()
        line = "OK (%.2f s)" % (time.monotonic() - start)
    except BaseException as e:
        traceback.print_exc()
        line = "FAILED %s: %s" % (type(e).__name__, str(e).replace("\n", " | "))
    print("RESULT init_process_group_with_%s_init_method %s" % (kind, line), flush=True)
    return 0 if line.startswith("OK") else 1


def job_timeout():
    """A rank that never joins the collective: the others raise within about the timeout."""
    # The group's 2 s is for the collective. Rendezvous gets a store of its own
    # with a minute: torch gives a store it makes the group's timeout, and
    # under load a rank can take longer than 2 s to import torch and connect.
    rank, size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), size,
                          rank == 0, timeout=datetime.timedelta(seconds=60))
    dist.init_process_group("zsh", store=store, rank=rank, world_size=size,
                            timeout=datetime.timedelta(seconds=2))
    line = "OK"
    if rank == 1:
        time.sleep(6)
    else:
        start = time.monotonic()
        try:
            dist.all_reduce(torch.ones(4))
            line = "FAILED the all_reduce returned although rank 1 never called it"
        except RuntimeError as e:
            took = time.monotonic() - start
            if "timed out" not in str(e) and "TIMEOUT" not in str(e).upper():
                line = "FAILED the error does not say it timed out: %s" % e
            elif took > 5:
                line = "FAILED raised after %.1f s, with a 2 s timeout" % took
            else:
                line = "OK (raised after %.2f s: %s)" % (took, str(e).split("\n")[0][:160])
    print("RESULT a_collective_a_rank_never_joins_raises_after_the_timeout %s" % line, flush=True)
    return 0


def job_killed():
    """The last rank is killed mid-job: every other rank raises, naming it."""
    dist.init_process_group("zsh", timeout=datetime.timedelta(seconds=60))
    rank, size = dist.get_rank(), dist.get_world_size()
    victim = size - 1
    dist.all_reduce(torch.ones(4))
    if rank == victim:
        print("RESULT a_killed_rank_makes_the_others_raise_naming_it OK (the victim)", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    start = time.monotonic()
    line = "FAILED nothing raised"
    try:
        for _ in range(1000):
            dist.all_reduce(torch.ones(1 << 16))
    except RuntimeError as e:
        took = time.monotonic() - start
        if "rank %d" % victim not in str(e):
            line = "FAILED the error does not name rank %d: %s" % (victim, e)
        elif took > 10:
            line = "FAILED raised %.1f s after the kill" % took
        else:
            line = "OK (%.2f s: %s)" % (took, str(e).split("\n")[0][:160])
    print("RESULT a_killed_rank_makes_the_others_raise_naming_it %s" % line, flush=True)
    os._exit(0)  # the group is broken: no teardown fence with a dead rank


def job_close_order():
    """A subgroup kept alive on rank 0 only, as an exception's frames keep one:
    destroy_process_group drops it on rank 1 before the world group, and on
    rank 0 only the world group. Closing the world group closes the groups made
    after it first, so both ranks close the subgroup, then the world group, and
    no teardown fence waits for a close that comes in the other order. A
    fence that did would wait out the group's 20 s timeout: the bound below is
    half of it, far from the fraction of a second the two closes take."""
    dist.init_process_group("zsh", timeout=datetime.timedelta(seconds=20))
    rank = dist.get_rank()
    sub = dist.new_group(list(range(dist.get_world_size())))
    dist.all_reduce(torch.ones(1), group=sub)
    kept = [sub] if rank == 0 else []
    del sub
    gc.collect()
    start = time.monotonic()
    dist.destroy_process_group()
    took = time.monotonic() - start
    line = "OK (%.2f s, %d group(s) still referenced)" % (took, len(kept))
    if took > 10:
        line = "FAILED destroy_process_group took %.1f s: a teardown fence waited for its timeout" % took
    print("RESULT groups_close_in_one_order_whichever_a_rank_still_holds %s" % line, flush=True)
    return 0 if line.startswith("OK") else 1


def main(argv):
    mode = argv[1] if len(argv) > 1 else "cases"
    if mode == "cases":
        dist.init_process_group("zsh", timeout=datetime.timedelta(seconds=60))
        failed = run_cases(argv[2] if len(argv) > 2 else None)
        dist.destroy_process_group()
        return 1 if failed else 0
    if mode.startswith("init_"):
        return job_init(mode[len("init_"):], argv[2] if len(argv) > 2 else "")
    if mode == "mismatch":
        dist.init_process_group("zsh", timeout=datetime.timedelta(seconds=60))
        failed = run_cases(argv[2] if len(argv) > 2 else None, MISMATCH_CASES)
        sys.stdout.flush()
        os._exit(1 if failed else 0)  # revoked groups: no teardown fence
    if mode == "timeout":
        return job_timeout()
    if mode == "killed":
        return job_killed()
    if mode == "close_order":
        return job_close_order()
    print("unknown mode %s" % mode, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
