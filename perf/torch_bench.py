#!/usr/bin/env python3
"""The zsh torch.distributed backend against gloo, in one job, on the same tensors.

    zshrun -n 2 /usr/bin/python3 perf/torch_bench.py [--min 8] [--max 64m] [--iters N]
                                                     [--csv FILE] [--train [OPTIONS]]

The default group is "zsh"; a gloo group over the same ranks runs the same
calls in turn, size by size, so both see the same machine at the same moment.
Each cell is the median over iterations of the slowest rank's time, and
bus bandwidth as the OSU and nccl-tests define it. A collective gloo does not
have prints "unsupported" in gloo's columns. --train adds one training step
of examples/torch/train_gpt.py's model (see perf/torch_train_step.py).
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

import zeroshard.torch  # noqa: F401  registers "zsh"

COLLECTIVES = ["all_reduce", "all_gather_into_tensor", "reduce_scatter_tensor", "broadcast"]


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def human(nbytes):
    for unit, scale in (("G", 1 << 30), ("M", 1 << 20), ("K", 1 << 10)):
        if nbytes >= scale and nbytes % scale == 0:
            return "%d%s" % (nbytes // scale, unit)
    return "%d" % nbytes


def bus_factor(coll, n):
    """Bytes each rank moves per byte of the message, as nccl-tests count them."""
    if coll == "all_reduce":
        return 2.0 * (n - 1) / n
    if coll in ("all_gather_into_tensor", "reduce_scatter_tensor"):
        return (n - 1) / n
    return 1.0


def make_call(coll, nbytes, group, n):
    """A closure running @coll on @nbytes of float32 (the whole message) in @group."""
    count = max(nbytes // 4, 1)
    if coll == "all_reduce":
        t = torch.ones(count)
        return lambda: dist.all_reduce(t, group=group)
    if coll == "broadcast":
        t = torch.ones(count)
        return lambda: dist.broadcast(t, src=0, group=group)
    per = max(count // n, 1)
    if coll == "all_gather_into_tensor":
        src, dst = torch.ones(per), torch.empty(per * n)
        return lambda: dist.all_gather_into_tensor(dst, src, group=group)
    src, dst = torch.ones(per * n), torch.empty(per)
    return lambda: dist.reduce_scatter_tensor(dst, src, group=group)


def time_call(call, iters, group):
    """Median over @iters of the slowest rank's time for one call."""
    for _ in range(max(2, iters // 10)):
        call()
    times = []
    for _ in range(iters):
        dist.barrier(group=group)
        start = time.perf_counter()
        call()
        took = torch.tensor([time.perf_counter() - start], dtype=torch.float64)
        dist.all_reduce(took, op=dist.ReduceOp.MAX)  # over zsh, outside the timing
        times.append(took.item())
    return statistics.median(times)


def supported(coll, nbytes, group, n):
    try:
        make_call(coll, nbytes, group, n)()
        return True
    except RuntimeError:
        return False


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--min", default="8")
    ap.add_argument("--max", default="64m")
    ap.add_argument("--iters", type=int, default=0,
                    help="iterations per size (default: fewer as sizes grow)")
    ap.add_argument("--collectives", default=",".join(COLLECTIVES))
    ap.add_argument("--csv", default=None)
    ap.add_argument("--train", nargs="?", const="", default=None, metavar="OPTIONS",
                    help="also time one training step of examples/torch/train_gpt.py's model "
                         "(OPTIONS: its options, e.g. \"--layers 4 --dim 256 --steps 10\"); "
                         "--collectives '' times training only")
    args = ap.parse_args()

    dist.init_process_group("zsh")
    rank, n = dist.get_rank(), dist.get_world_size()
    gloo = dist.new_group(backend="gloo")
    groups = {"zsh": dist.group.WORLD, "gloo": gloo}
    rows = []
    sizes = []
    size = parse_size(args.min)
    while size <= parse_size(args.max):
        sizes.append(size)
        size *= 2
    if rank == 0:
        # zshrun turns huge pages on for malloc (see man zshrun); copies between ranks run
        # faster on them, so a table says which it was measured with.
        thp = "glibc.malloc.hugetlb=1" in os.environ.get("GLIBC_TUNABLES", "")
        print("# %d ranks, torch %s, float32; time in us (median of the slowest rank), busbw "
              "in GB/s; malloc huge pages %s" % (n, torch.__version__, "on" if thp else "off"))
    for coll in [c for c in args.collectives.split(",") if c]:
        if rank == 0:
            print("\n# %s\n%10s %12s %10s %12s %10s %8s" % (coll, "bytes", "zsh us", "zsh GB/s",
                                                           "gloo us", "gloo GB/s", "ratio"))
        gloo_ok = supported(coll, 1024, gloo, n)
        for nbytes in sizes:
            iters = args.iters or max(15, min(200, (64 << 20) // max(nbytes, 1) // 8))
            cell = {}
            for name, group in groups.items():
                if name == "gloo" and not gloo_ok:
                    continue
                t = time_call(make_call(coll, nbytes, group, n), iters, group)
                cell[name] = (t, nbytes * bus_factor(coll, n) / t / 1e9)
            rows.append((coll, nbytes, cell))
            if rank == 0:
                z = cell["zsh"]
                if "gloo" in cell:
                    g = cell["gloo"]
                    print("%10s %12.1f %10.3f %12.1f %10.3f %8.2f" % (
                        human(nbytes), z[0] * 1e6, z[1], g[0] * 1e6, g[1], g[0] / z[0]))
                else:
                    print("%10s %12.1f %10.3f %12s %10s %8s" % (
                        human(nbytes), z[0] * 1e6, z[1], "unsupported", "-", "-"))
                sys.stdout.flush()
    if rank == 0 and args.csv:
        with open(args.csv, "w") as f:
            f.write("collective,bytes,zsh_us,zsh_busbw,gloo_us,gloo_busbw\n")
            for coll, nbytes, cell in rows:
                z = cell["zsh"]
                g = cell.get("gloo")
                f.write("%s,%d,%.3f,%.4f,%s,%s\n" % (
                    coll, nbytes, z[0] * 1e6, z[1], "%.3f" % (g[0] * 1e6) if g else "unsupported",
                    "%.4f" % g[1] if g else "unsupported"))
    if args.train is not None:
        import shlex
        import torch_train_step
        torch.set_num_threads(1)
        torch_train_step.report(gloo, ["--steps", "10"] + shlex.split(args.train),
                                out=lambda line: print(line, flush=True))
    dist.destroy_process_group(gloo)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
