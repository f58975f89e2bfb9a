#!/usr/bin/env python3
"""A training step on one GPU, every way side by side in one run: ZeRO's
stages against plain torch and against the compute alone.

    python3 perf/torch_gpu.py [--device cuda|cpu] [--models gpt,gpt4x,vit]
        [--steps 20] [--warmup 3] [--only NAMES]

Models: examples/torch/train_gpt.py's GPT at its default sizes (4 layers,
width 128, 64 tokens, 8 sequences), one 4x wider (512), and a small ViT
(torchvision's VisionTransformer: 32x32 images, 8x8 patches, 2 layers, width
32; where torchvision is missing, one of nn.TransformerEncoder, said in the
output). For each, in turn, on the same batches, from the same initial
weights:

- compute: forward and backward alone, no optimizer;
- torch: plain torch with torch.optim.AdamW;
- zero0 .. zero3: zeroshard.torch.ZeRO at that stage, one rank;
- zero3+cpu: stage 3 with offload_optimizer cpu (states and master weights
  in pinned host memory, the update on the host).

Each row: the median step time over --steps steps after --warmup steps
(torch.cuda.synchronize() before and after each timed step), its ratio to
compute and to torch, the peak device memory (torch's allocator's peak plus
the layer's own device_peak_bytes), the last loss and the largest
relative difference of the losses from torch's over every step. fp32 runs
in fp32 (no TF32), attention and convolutions on deterministic kernels, so
the losses differ from torch's by the update's rounding only; a difference
above 1e-4 is marked MISMATCH and makes the exit status 1. Prints a markdown
table; the default run takes well under a minute on an H200.

--device cpu runs the same code on the CPU with tiny models and few steps:
a check of the script, not a measurement.
"""
import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples",
                                "torch"))
import train_gpt  # noqa: E402

LR, WD = 1e-3, 0.1
BOUND = 1e-4
RUNS = ("compute", "torch", "zero0", "zero1", "zero2", "zero3", "zero3+cpu")


def fp32_exact():
    """fp32 matmuls and convolutions without TF32, deterministic cuDNN, and
    attention on the math kernel. torch 2.9 and later refuse a mix of the
    legacy allow_tf32 flags and the fp32_precision ones, so each is set one
    way: the new one where this torch has it."""
    try:
        torch.backends.cuda.matmul.fp32_precision = "ieee"
    except Exception:  # torch before 2.9: no such setting
        torch.backends.cuda.matmul.allow_tf32 = False
    try:
        torch.backends.cudnn.conv.fp32_precision = "ieee"
    except Exception:
        torch.backends.cudnn.allow_tf32 = False
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    for name in ("enable_flash_sdp", "enable_mem_efficient_sdp", "enable_cudnn_sdp"):
        fn = getattr(torch.backends.cuda, name, None)  # torch 2.x
        if fn is not None:
            fn(False)


class EncoderViT(nn.Module):
    """A ViT of nn.TransformerEncoder, where torchvision is missing: patches by
    a strided convolution, a class token, learned positions, pre-norm layers."""

    def __init__(self, image=32, patch=8, dim=32, heads=2, layers=2, mlp=64, classes=10):
        super().__init__()
        self.patches = nn.Conv2d(3, dim, patch, stride=patch)
        self.cls = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos = nn.Parameter(torch.randn(1, (image // patch) ** 2 + 1, dim) * 0.02)
        layer = nn.TransformerEncoderLayer(dim, heads, mlp, dropout=0.0, batch_first=True,
                                           norm_first=True)
        self.encoder = nn.TransformerEncoder(layer, layers)
        self.norm = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, classes)

    def forward(self, x):
        x = self.patches(x).flatten(2).transpose(1, 2)
        x = torch.cat([self.cls.expand(x.shape[0], -1, -1), x], dim=1) + self.pos
        return self.head(self.norm(self.encoder(x))[:, 0])


def vit_maker():
    """(make, name): make() builds torchvision's small VisionTransformer, else
    an EncoderViT of the same shape, with seed 11."""
    try:
        import torchvision
        build = lambda: torchvision.models.VisionTransformer(  # noqa: E731
            image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
            num_classes=10)
        name = "torchvision VisionTransformer"
    except Exception as e:  # missing, or built for another torch (its operators fail to load)
        print("ViT: torchvision is not importable (%s: %s): a ViT of nn.TransformerEncoder"
              % (type(e).__name__, e))
        build, name = EncoderViT, "EncoderViT"

    def make():
        torch.manual_seed(11)
        return build()
    return make, name


def vit_batch(step, batch=4):
    """Random images and labels for @step: (inputs, target, loss function)."""
    g = torch.Generator().manual_seed(300 + step)
    x = torch.randn(batch, 3, 32, 32, generator=g)
    y = torch.randint(0, 10, (batch,), generator=g)
    return (x,), y, F.cross_entropy


def gpt_problem(argv):
    """(make, batch(step), name) of train_gpt.py's GPT with those arguments."""
    args = train_gpt.parse_args(argv)
    data = train_gpt.load_text(args.text)

    def make():
        return train_gpt.build(args, torch.float32)

    def batch(step):
        x, y = train_gpt.batch(data, step, 0, 1, args.batch, args.seq, args.seed)
        return (x,), y, lambda out, t: F.cross_entropy(out.view(-1, train_gpt.VOCAB), t.view(-1))
    return make, batch, "GPT %d layers, width %d, %d x %d tokens" % (args.layers, args.dim,
                                                                      args.batch, args.seq)


def problems(names, tiny):
    """{name: (make, batch, description)}."""
    gpt = ["--layers", "2", "--dim", "32", "--heads", "2", "--seq", "16", "--batch", "2"] \
        if tiny else []
    wide = ["--layers", "2", "--dim", "64", "--heads", "2", "--seq", "16", "--batch", "2"] \
        if tiny else ["--dim", "512"]
    out = {}
    for name in names:
        if name == "gpt":
            out[name] = gpt_problem(gpt)
        elif name == "gpt4x":
            out[name] = gpt_problem(wide)
        elif name == "vit":
            make, what = vit_maker()
            out[name] = (make, vit_batch, what + ", 4 images of 32x32")
        else:
            raise SystemExit("unknown model %r: gpt, gpt4x, vit" % name)
    return out


def sync(dev):
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)


def run(kind, make, batches, dev, comm, steps, warmup):
    """One row: {ms, peak, losses}."""
    model = make().to(dev)
    zero = opt = None
    if kind == "torch":
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    elif kind.startswith("zero"):
        from zeroshard.torch import ZeRO
        offload = "cpu" if kind.endswith("+cpu") else "none"
        zero = ZeRO(model, stage=int(kind[4]), comm=comm, lr=LR, weight_decay=WD,
                    offload_optimizer=offload)
    if dev.type == "cuda":
        torch.cuda.reset_peak_memory_stats(dev)
    times, losses = [], []
    try:
        for step in range(warmup + steps):
            inputs, target, loss_fn = batches[step]
            sync(dev)
            start = time.perf_counter()
            loss = loss_fn(model(*inputs), target)
            if zero is not None:
                zero.backward(loss)
                zero.step()
                zero.zero_grad()
            else:
                loss.backward()
                if opt is not None:
                    opt.step()
                for p in model.parameters():
                    p.grad = None
            sync(dev)
            if step >= warmup:
                times.append(time.perf_counter() - start)
            losses.append(loss.item())
        peak = None
        if dev.type == "cuda":
            # torch's allocator's, and the layer's own device memory beside it.
            peak = torch.cuda.max_memory_allocated(dev)
            if zero is not None:
                peak += zero.stats()["device_peak_bytes"]
    finally:
        if zero is not None:
            zero.close()
    return {"ms": statistics.median(times) * 1e3, "peak": peak, "losses": losses}


def table(name, what, nparams, rows):
    """The markdown table of one model; the names of the rows that mismatch."""
    ref = rows.get("torch")
    compute = rows.get("compute")
    bad = []
    print("\n### %s: %s, %d parameters\n" % (name, what, nparams))
    print("| run | median step ms | / compute | / torch | peak device MiB | last loss "
          "| max rel. diff from torch |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for kind, r in rows.items():
        diff = "-"
        if ref is not None and kind not in ("compute", "torch"):
            d = max(abs(a - b) / abs(b) for a, b in zip(r["losses"], ref["losses"]))
            ok = d <= BOUND
            diff = "%.2g%s" % (d, "" if ok else " MISMATCH")
            if not ok:
                bad.append("%s %s" % (name, kind))
        print("| %s | %.2f | %s | %s | %s | %s | %s |" % (
            kind, r["ms"], "%.2f" % (r["ms"] / compute["ms"]) if compute else "-",
            "%.2f" % (r["ms"] / ref["ms"]) if ref else "-",
            "%.1f" % (r["peak"] / 2**20) if r["peak"] is not None else "-",
            "-" if kind == "compute" else "%.6f" % r["losses"][-1], diff))
    return bad


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"],
                    help="cpu: tiny models, a check of the script (default %(default)s)")
    ap.add_argument("--models", default="gpt,gpt4x,vit")
    ap.add_argument("--steps", type=int, default=None, help="timed steps (20; 3 on cpu)")
    ap.add_argument("--warmup", type=int, default=None, help="untimed first steps (3; 1 on cpu)")
    ap.add_argument("--only", default=",".join(RUNS),
                    help="the runs, comma-separated, of %s" % ", ".join(RUNS))
    args = ap.parse_args(argv)
    tiny = args.device == "cpu"
    steps = args.steps if args.steps is not None else (3 if tiny else 20)
    warmup = args.warmup if args.warmup is not None else (1 if tiny else 3)
    kinds = [k for k in args.only.split(",") if k]
    unknown = [k for k in kinds if k not in RUNS]
    if unknown or steps < 1 or warmup < 0:
        ap.error("--only %s: runs are %s; --steps >= 1, --warmup >= 0"
                 % (",".join(unknown) or args.only, ", ".join(RUNS)))

    import zeroshard
    if args.device == "cuda":
        if not torch.cuda.is_available():
            print("ERROR: torch %s sees no CUDA device; --device cpu checks the script"
                  % torch.__version__)
            return 2
        available, why = zeroshard.device_available()
        if not available:
            print("ERROR: libzeroshard cannot run on the device: %s" % why)
            return 2
        dev = torch.device("cuda", torch.cuda.current_device())
        print("device: %s, torch %s, CUDA %s" % (torch.cuda.get_device_name(dev),
                                                 torch.__version__, torch.version.cuda))
    else:
        dev = torch.device("cpu")
        torch.set_num_threads(1)
        print("device: cpu (a check of the script), torch %s" % torch.__version__)
    fp32_exact()
    print("%d timed steps after %d warm-up steps, one rank, AdamW lr %g weight decay %g"
          % (steps, warmup, LR, WD))
    bad = []
    with zeroshard.Comm.from_allgather(0, 1, lambda data: [data]) as comm:
        for name, (make, batch, what) in problems(args.models.split(","), tiny).items():
            batches = []
            for s in range(warmup + steps):
                inputs, target, loss_fn = batch(s)
                batches.append(([x.to(dev) for x in inputs], target.to(dev), loss_fn))
            nparams = sum(p.numel() for p in make().parameters())
            rows = {}
            for kind in kinds:
                t0 = time.perf_counter()
                rows[kind] = run(kind, make, batches, dev, comm, steps, warmup)
                print("%s %s: %.1f s" % (name, kind, time.perf_counter() - t0), flush=True)
            bad += table(name, what, nparams, rows)
    if bad:
        print("\nMISMATCH: %s: losses differ from torch's by more than %g" % (", ".join(bad),
                                                                          BOUND))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
