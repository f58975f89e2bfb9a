"""One training step of examples/torch/train_gpt.py's model, ZeroShard against
torch's own data parallelism over gloo, in the same job on the same batches
(perf/torch_bench.py --train runs it):

- ZeroShard ZeRO stage 1 against DistributedDataParallel over gloo with
  torch's ZeroRedundancyOptimizer (its stage 1);
- ZeroShard ZeRO stage 3 against DistributedDataParallel over gloo with AdamW
  (torch 1.13 has no CPU stage 3: FSDP refuses CPU-only execution).

Each figure is the median over steps of the slowest rank's step time
(forward, backward and optimizer step), after warm-up steps.
"""
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

from zeroshard.torch import ZeRO  # noqa: E402


def _slowest(seconds):
    t = torch.tensor([seconds], dtype=torch.float64)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return t.item()


def _time_steps(args, forward, step, warmup):
    rank, world = dist.get_rank(), dist.get_world_size()
    data = train_gpt.load_text(args.text)
    times = []
    for i in range(warmup + args.steps):
        x, y = train_gpt.batch(data, i, rank, world, args.batch, args.seq, args.seed)
        dist.barrier()
        start = time.perf_counter()
        loss = F.cross_entropy(forward(x).float().view(-1, train_gpt.VOCAB), y.view(-1))
        step(loss)
        took = _slowest(time.perf_counter() - start)
        if i >= warmup:
            times.append(took)
    return statistics.median(times)


def _zsh(args, stage, warmup):
    model = train_gpt.build(args, torch.float32)
    zero = ZeRO(model, stage=stage, lr=args.lr, weight_decay=args.weight_decay)

    def step(loss):
        zero.backward(loss)
        zero.step()
        zero.zero_grad()

    t = _time_steps(args, model, step, warmup)
    zero.close()
    return t


def _ddp(args, gloo, zero_redundancy, warmup):
    model = DistributedDataParallel(train_gpt.build(args, torch.float32), process_group=gloo)
    if zero_redundancy:
        opt = ZeroRedundancyOptimizer(model.parameters(), optimizer_class=torch.optim.AdamW,
                                      process_group=gloo, lr=args.lr,
                                      weight_decay=args.weight_decay)
    else:
        opt = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=args.weight_decay)

    def step(loss):
        opt.zero_grad()
        loss.backward()
        opt.step()

    return _time_steps(args, model, step, warmup)


def compare(gloo, argv, warmup=3):
    """Rows (what, zsh ms, gloo ms, gloo / zsh) for train_gpt.py's model built
    from @argv (its options; --steps is the number of timed steps)."""
    args = train_gpt.parse_args(argv)
    rows = []
    for label, stage, redundancy in (("stage 1 vs DDP + ZeroRedundancyOptimizer", 1, True),
                                     ("stage 3 vs DDP + AdamW", 3, False)):
        z = _zsh(args, stage, warmup)
        g = _ddp(args, gloo, redundancy, warmup)
        rows.append((label, z * 1e3, g * 1e3, g / z))
    return args, rows


def report(gloo, argv, out=print):
    args, rows = compare(gloo, argv)
    if dist.get_rank() != 0:
        return rows
    params = sum(p.numel() for p in train_gpt.build(args, torch.float32).parameters())
    out("\n# one training step of train_gpt.py's model: %d parameters, %d layers, dim %d, "
        "%d x %d tokens per rank, fp32 AdamW; ms, median of the slowest rank over %d steps"
        % (params, args.layers, args.dim, args.batch, args.seq, args.steps))
    out("%-42s %10s %10s %8s" % ("comparison", "zsh ms", "gloo ms", "ratio"))
    for label, z, g, r in rows:
        out("%-42s %10.1f %10.1f %8.2f" % (label, z, g, r))
    return rows
