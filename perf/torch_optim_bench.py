#!/usr/bin/env python3
"""torch's optimizer step on one parameter, the comparison for zsh_optim_bench.

    /usr/bin/python3 perf/torch_optim_bench.py [-n 1m,16m,64m] [-r sgd,adam,adamw]
                                               [-p fp32,bf16] [-i ITERS] [--threads 2] [--json]

For each size, rule and precision: one parameter of N elements with a
gradient set once, torch.optim.SGD (momentum 0.9), Adam or AdamW with
foreach=True and weight decay 0.01, as zsh_optim_bench configures the layer;
one untimed step, then the median of ITERS timed steps gives Gparam/s.
bf16 parameters are updated in bf16 (torch keeps no master weights).
perf/optim_compare.sh runs both benchmarks and prints the speedup.
"""

import argparse
import json
import statistics
import sys
import time

import torch


def parse_size(text):
    units = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}
    text = text.strip().lower()
    if text and text[-1] in units:
        return int(text[:-1]) * units[text[-1]]
    return int(text)


def make(rule, params):
    if rule == "sgd":
        return torch.optim.SGD(params, lr=1e-3, momentum=0.9, weight_decay=0.01, foreach=True)
    cls = torch.optim.Adam if rule == "adam" else torch.optim.AdamW
    return cls(params, lr=1e-3, weight_decay=0.01, foreach=True)


def run(rule, prec, n, iters):
    dtype = torch.float32 if prec == "fp32" else torch.bfloat16
    p = torch.nn.Parameter((torch.rand(n) * 2 - 1).to(dtype))
    p.grad = (torch.rand(n) * 2e-3 - 1e-3).to(dtype)
    opt = make(rule, [p])
    times = []
    with torch.no_grad():
        for it in range(iters + 1):
            t = time.perf_counter()
            opt.step()
            t = time.perf_counter() - t
            if it > 0:
                times.append(t)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-n", default="1m,16m,64m")
    ap.add_argument("-r", default="sgd,adam,adamw")
    ap.add_argument("-p", default="fp32,bf16")
    ap.add_argument("-i", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    rules = a.r.split(",")
    precs = a.p.split(",")
    bad = [r for r in rules if r not in ("sgd", "adam", "adamw")] + \
          [p for p in precs if p not in ("fp32", "bf16")]
    if bad or a.i < 1 or a.threads < 1:
        sys.exit("torch_optim_bench: bad rule, precision, -i or --threads: %s" % (bad or ""))
    torch.set_num_threads(a.threads)
    rows = []
    if not a.json:
        print("# torch %s optimizer step, foreach=True, %d threads, median of %d steps"
              % (torch.__version__, a.threads, a.i))
        print("%-6s %-5s %11s %10s %9s" % ("# rule", "prec", "elements", "step_ms", "Gparam/s"))
    for n in [parse_size(s) for s in a.n.split(",")]:
        for rule in rules:
            for prec in precs:
                sec = run(rule, prec, n, a.i)
                row = {"rule": rule, "precision": prec, "elements": n, "step_s": sec,
                       "gparams": n / sec * 1e-9, "threads": a.threads}
                rows.append(row)
                if not a.json:
                    print("%-6s %-5s %11d %10.3f %9.4f" % (rule, prec, n, sec * 1e3, row["gparams"]),
                          flush=True)
    if a.json:
        json.dump(rows, sys.stdout, indent=1)
        print()


if __name__ == "__main__":
    main()
