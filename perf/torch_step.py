#!/usr/bin/env python3
"""One training step of examples/torch/train_gpt.py's GPT, every way of data
parallelism side by side in one job, against the compute alone:

    build/tools/zshrun -n 2 /usr/bin/python3 perf/torch_step.py [--dims 512,2048]
        [--layers 4] [--batch 2] [--seq 32] [--steps 8] [--warmup 2] [--only NAMES]

For each width (--dims; the default is the GPT of the README and one 4x
wider), in turn on the same batches:

- compute: forward and backward of the bare model, no communication, no update;
- DDP over gloo and over zsh, each with torch.optim.AdamW;
- torch's ZeroRedundancyOptimizer (its stage 1) under DDP over gloo;
- ZeroShard's ZeRO at stages 1-3, and again with offload (the optimizer
  states in host memory; at stage 3 the parameter shards too).

Each row's floor is what it moves and updates without any compute: for
ZeRO, a zeroshard.Optimizer over the same parameters doing the step's calls
(at stage 3 a gather of every parameter for forward and again for backward,
then every gradient handed over as ZeRO hands it over, then the step); for
DDP, one all-reduce of all the gradients and the optimizer's step. A row's
time over compute plus its floor says how much of the step is neither:
Python's overhead and waiting that overlap did not hide.

Every figure is the median over --steps steps of the slowest rank's time,
after --warmup steps: wall-clock, and CPU time (the most any rank's process
used), which holds still where other jobs share the cores and the wall
clock does not. Each row's ratios are to the compute timed beside it: every
step of the row is followed by a compute-only step of a bare model on the
same batch, so a core that slows for a while slows both (a compute row
timed once at the start misjudged the rows after it where the cores' speed
drifts; docs/python.md). torch runs 1 thread per rank (--threads).
Rank 0 prints a markdown table.
"""
import argparse
import collections
import gc
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F
from torch.distributed.optim import ZeroRedundancyOptimizer
from torch.nn.parallel import DistributedDataParallel

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "torch"))
import train_gpt  # noqa: E402

import zeroshard  # noqa: E402
from zeroshard.torch import ZeRO  # noqa: E402

LR, WEIGHT_DECAY = 1e-3, 0.1
Time = collections.namedtuple("Time", "wall cpu")


def _slowest(*seconds):
    t = torch.tensor(seconds, dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.tolist()


def _median_step(args, step, beside=None):
    """(wall, cpu): medians over args.steps of the slowest rank's wall-clock
    time of step(i), and of the most CPU time a rank's process used in it;
    with beside, ((wall, cpu), (wall, cpu) of beside(i)), each step of it
    timed right after step(i)'s."""
    times = ([], []) if beside is None else ([], [], [], [])
    for i in range(args.warmup + args.steps):
        for k, fn in enumerate((step,) if beside is None else (step, beside)):
            dist.barrier()
            start, start_cpu = time.perf_counter(), time.process_time()
            fn(i)
            took = _slowest(time.perf_counter() - start, time.process_time() - start_cpu)
            if i >= args.warmup:
                times[2 * k].append(took[0])
                times[2 * k + 1].append(took[1])
    out = [Time(statistics.median(times[k]), statistics.median(times[k + 1]))
           for k in range(0, len(times), 2)]
    return out[0] if beside is None else tuple(out)


def _loss(model, args, i):
    rank, world = dist.get_rank(), dist.get_world_size()
    x, y = train_gpt.batch(args.data, i, rank, world, args.batch, args.seq, args.seed)
    return F.cross_entropy(model(x).view(-1, train_gpt.VOCAB), y.view(-1))


# ---- the ways of training, each (step time, floor time or None) ---------------------

def _compute_step(args):
    """A step of forward and backward of a bare model, no communication."""
    model = train_gpt.build(args, torch.float32)

    def step(i):
        _loss(model, args, i).backward()
        # Zeroed in place, as the other rows keep their gradient buffers
        # (torch.optim's zero_grad() in 1.13, DDP's and ZeRO's buckets):
        # fresh ones each step made backward pay the first touch of every
        # gradient, and ZeRO came out under compute (docs/python.md).
        for p in model.parameters():
            if p.grad is not None:
                p.grad.zero_()
    return step


def _compute(args, gloo):
    t = _median_step(args, args.compute)
    return t, t, None


def _ddp(args, group, zero_redundancy):
    model = train_gpt.build(args, torch.float32)
    params = list(model.parameters())
    if zero_redundancy:
        opt = ZeroRedundancyOptimizer(params, optimizer_class=torch.optim.AdamW,
                                      process_group=group, lr=LR, weight_decay=WEIGHT_DECAY)
    else:
        opt = torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY)

    # The floor first, on the bare model: one all-reduce of every gradient
    # over the group, and the update.
    grads = [torch.full_like(p, 1e-3) for p in params]
    flat = torch.cat([g.view(-1) for g in grads])

    def floor(i):
        dist.all_reduce(flat, group=group)
        for p, g in zip(params, grads):
            p.grad = g
        opt.step()

    floor_t = _median_step(args, floor)
    ddp = DistributedDataParallel(model, process_group=group)

    def step(i):
        opt.zero_grad()
        _loss(ddp, args, i).backward()
        opt.step()

    return _median_step(args, step, args.compute) + (floor_t,)


def _zero_settings(stage, offload):
    if not offload:
        return {}
    return dict(offload_optimizer="cpu", offload_params="cpu" if stage == 3 else None)


def _flat_storage(opt, zp):
    """Stages 1-2: each bucket's parameters moved into one flat tensor, as
    ZeRO moves the module's (its step all-gathers there in place)."""
    moved = set()
    for z in zp:
        bucket, _, numel = opt.place(z)
        if bucket not in moved:
            opt.set_bucket_storage(bucket, torch.zeros(numel))
            moved.add(bucket)


def _zero_floor(args, stage, offload, comm):
    """The layer's own calls for one step of the model's parameters, no compute."""
    named = [(n, p) for n, p in train_gpt.build(args, torch.float32).named_parameters()]
    opt = zeroshard.Optimizer(comm, stage=stage, kind="adamw", lr=LR,
                              weight_decay=WEIGHT_DECAY, **_zero_settings(stage, offload))
    zp = [opt.register(n, p.data.view(-1)) for n, p in named]
    opt.setup()
    if stage in (1, 2):
        _flat_storage(opt, zp)
    full = [torch.empty(p.numel()) for _, p in named]
    grads = [torch.full((p.numel(),), 1e-3) for _, p in named]
    mul = 1.0 / dist.get_world_size()  # averaged as ZeRO hands them over

    def step(i):
        if stage == 3:
            for z, f in zip(zp, full):
                opt.gather_many([z], [f])
            for z, f in zip(reversed(zp), reversed(full)):
                opt.gather_many([z], [f])
        for z, g in zip(reversed(zp), reversed(grads)):
            opt.grad_lend(z, g, mul, wait=True)
        opt.step()

    try:
        return _median_step(args, step)
    finally:
        opt.close()


def _zero(args, stage, offload, comm):
    floor_t = _zero_floor(args, stage, offload, comm)
    model = train_gpt.build(args, torch.float32)
    zero = ZeRO(model, stage=stage, comm=comm, lr=LR, weight_decay=WEIGHT_DECAY,
                **_zero_settings(stage, offload))

    def step(i):
        zero.backward(_loss(model, args, i))
        zero.step()
        zero.zero_grad()

    try:
        return _median_step(args, step, args.compute) + (floor_t,)
    finally:
        zero.close()


def ways(gloo, comm):
    """(name, label, function(args) -> (step s, floor s or None)), in table order."""
    out = [("compute", "compute only (forward + backward)", lambda a: _compute(a, gloo)),
           ("ddp-gloo", "DDP over gloo + AdamW", lambda a: _ddp(a, gloo, False)),
           ("ddp-zsh", "DDP over zsh + AdamW", lambda a: _ddp(a, dist.group.WORLD, False)),
           ("zero1-gloo", "torch ZeroRedundancyOptimizer over gloo",
            lambda a: _ddp(a, gloo, True))]
    for offload in (False, True):
        for stage in (1, 2, 3):
            name = "stage%d%s" % (stage, "-offload" if offload else "")
            label = "ZeroShard stage %d%s" % (stage, ", offload" if offload else "")
            out.append((name, label, lambda a, s=stage, o=offload: _zero(a, s, o, comm)))
    return out


def table(rows_by_dim, out):
    """rows_by_dim: [(dim, params, [(label, step Time, compute Time beside
    it, floor Time or None)])]. Per width: the step's wall-clock ms, the
    compute's timed beside it and the ratio of the two, then the floor and
    the ratio to compute + floor; the ratios again in CPU time."""
    head, rule = "| |", "|---|"
    for d, n, _ in rows_by_dim:
        head += (" dim %d (%.1fM): step ms | compute beside ms | x compute | floor ms "
                 "| x (compute + floor) | CPU: x compute | x (compute + floor) |"
                 % (d, n / 1e6))
        rule += "---|" * 7
    out(head)
    out(rule)
    labels = [row[0] for row in rows_by_dim[0][2]]
    for k, label in enumerate(labels):
        cells = []
        for _, _, rows in rows_by_dim:
            _, t, compute, floor_t = rows[k]
            cells.append("%.0f" % (t.wall * 1e3))
            cells += ["%.0f" % (compute.wall * 1e3), "%.2f" % (t.wall / compute.wall)] \
                if k else ["", ""]
            if floor_t is None:
                cells += ["", "", "%.2f" % (t.cpu / compute.cpu) if k else "", ""]
            else:
                cells += ["%.0f" % (floor_t.wall * 1e3),
                          "%.2f" % (t.wall / (compute.wall + floor_t.wall)),
                          "%.2f" % (t.cpu / compute.cpu),
                          "%.2f" % (t.cpu / (compute.cpu + floor_t.cpu))]
        out("| %s | %s |" % (label, " | ".join(cells)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dims", default="512,2048", help="model widths, comma-separated")
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--batch", type=int, default=2, help="sequences per rank")
    ap.add_argument("--seq", type=int, default=32)
    ap.add_argument("--steps", type=int, default=8, help="timed steps per row")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    ap.add_argument("--only", default=None,
                    help="comma-separated rows to run (compute always runs): "
                         "ddp-gloo, ddp-zsh, zero1-gloo, stage1..3, stage1-offload..stage3-offload")
    opts = ap.parse_args(argv)
    torch.set_num_threads(opts.threads)

    dist.init_process_group("zsh")
    gloo = dist.new_group(backend="gloo")
    comm = dist.distributed_c10d._get_default_group().comm
    all_ways = ways(gloo, comm)
    if opts.only:
        wanted = set(opts.only.split(","))
        unknown = wanted - {name for name, _, _ in all_ways}
        if unknown:
            ap.error("--only: no row %s; the rows are %s" % (
                ", ".join(sorted(unknown)), ", ".join(name for name, _, _ in all_ways)))
        all_ways = [w for w in all_ways if w[0] == "compute" or w[0] in wanted]

    rank, world = dist.get_rank(), dist.get_world_size()
    say = (lambda line: print(line, flush=True)) if rank == 0 else (lambda line: None)
    results = []
    for dim in [int(d) for d in opts.dims.split(",")]:
        args = train_gpt.parse_args(["--layers", str(opts.layers), "--dim", str(dim),
                                     "--heads", str(opts.heads), "--seq", str(opts.seq),
                                     "--batch", str(opts.batch)])
        args.data = train_gpt.load_text(args.text)
        args.steps, args.warmup = opts.steps, opts.warmup
        nparams = sum(p.numel() for p in train_gpt.build(args, torch.float32).parameters())
        args.compute = _compute_step(args)
        rows = []
        for name, label, fn in all_ways:
            t, compute, floor_t = fn(args)
            gc.collect()
            rows.append((label, t, compute, floor_t))
            say("# dim %d %-14s %9.1f ms (CPU %.1f ms)  compute beside %.1f ms%s" % (
                dim, name, t.wall * 1e3, t.cpu * 1e3, compute.wall * 1e3, "" if floor_t is None
                else "  floor %.1f ms (CPU %.1f ms)" % (floor_t.wall * 1e3, floor_t.cpu * 1e3)))
        del args.compute
        gc.collect()
        results.append((dim, nparams, rows))

    say("\n%d ranks, %d torch thread%s each, %d layers, %d x %d tokens per rank, fp32 AdamW; "
        "median of the slowest rank over %d steps; torch %s; load average %.1f\n"
        % (world, opts.threads, "" if opts.threads == 1 else "s", opts.layers, opts.batch,
           opts.seq, opts.steps, torch.__version__, os.getloadavg()[0]))
    if rank == 0:
        table(results, say)
    dist.destroy_process_group(gloo)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
