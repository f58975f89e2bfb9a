#!/usr/bin/env python3
"""A small GPT trained with ZeroShard's ZeRO, on a text file Debian ships.

    zshrun -n 4 /usr/bin/python3 examples/torch/train_gpt.py --stage 3 [--precision bf16]

Character-level (bytes: a vocabulary of 256), learned position embeddings, a
few pre-norm transformer blocks and an output layer tied to the token
embedding. Every step each rank trains on its own slice of one global batch;
rank 0 prints the loss averaged over the ranks, the step time and the bytes
each rank holds for the model (parameters, gradients, optimizer states, as
the optimizer layer counts them).

--compare-ddp trains a second, identical model in the same job with
DistributedDataParallel over a gloo group and torch.optim.AdamW, on the same
batches, and prints both losses and their largest relative difference.
--json FILE writes the losses and bytes (rank 0) for scripts.

--warmup N and --schedule cosine set the learning rate each step through
torch.optim.lr_scheduler.LambdaLR on the ZeRO itself (a torch.optim
optimizer with one parameter group), as on the DDP twin's AdamW.

The recipe is GPT's: AdamW with betas (0.9, 0.95), weight decay 0.1 and the
gradients' global norm clipped to 1.0 (--max-grad-norm; without it the loss
sits on a plateau for a number of steps that any small change moves).
--quantize-weights and --quantize-grads turn on ZeRO++'s qwZ and qgZ (auto:
across nodes), and the summary shows what travelled quantized.

--offload-optimizer and --offload-params move the optimizer states (with the
master weights and, at stages 2-3, the gradient shards) and the stage 3
parameter shards to host memory (cpu) or to files under --nvme-dir (nvme),
swapped through at most --host-mem-limit bytes of host buffers. The losses
do not change; the summary line adds the bytes per tier and the bytes read
and written.
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

TEXT = "/usr/share/common-licenses/GPL-3"
VOCAB = 256


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(d // self.heads)
        mask = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = att.masked_fill(~mask, float("-inf")).softmax(dim=-1)
        return self.proj((att @ v).transpose(1, 2).reshape(b, t, d))


class Block(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = Attention(dim, heads)
        self.ln2 = nn.LayerNorm(dim)
        self.fc = nn.Linear(dim, 4 * dim)
        self.out = nn.Linear(4 * dim, dim)

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class GPT(nn.Module):
    def __init__(self, layers, dim, heads, seq):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, dim)
        self.wpe = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList(Block(dim, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, VOCAB, bias=False)
        self.head.weight = self.wte.weight  # tied: one parameter, used twice per step
        self.apply(self._init)

    @staticmethod
    def _init(m):
        # GPT-2's: small weights keep the tied output's first logits near uniform.
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)
        if isinstance(m, nn.Linear) and m.bias is not None:
            nn.init.zeros_(m.bias)

    def forward(self, idx):
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln_f(x))


def load_text(path):
    with open(path, "rb") as f:
        data = f.read()
    return torch.tensor(list(data), dtype=torch.long)


def batch(data, step, rank, world, per_rank, seq, seed):
    """This rank's slice of step's global batch: the same draw on every rank."""
    g = torch.Generator().manual_seed(seed * 1000003 + step)
    starts = torch.randint(0, len(data) - seq - 1, (world * per_rank,), generator=g)
    mine = starts[rank * per_rank:(rank + 1) * per_rank]
    x = torch.stack([data[s:s + seq] for s in mine.tolist()])
    y = torch.stack([data[s + 1:s + seq + 1] for s in mine.tolist()])
    return x, y


TIERS = ["none", "cpu", "nvme"]
QUANTIZE = ["off", "on", "auto"]


def size_arg(text):
    """Bytes, with an optional k, m, g or t suffix (powers of 1024), as zsh_train takes."""
    scale = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
    t = text.strip().lower()
    mul = scale.get(t[-1:], 1)
    try:
        value = float(t[:-1] if mul > 1 else t) * mul
    except ValueError:
        raise argparse.ArgumentTypeError("%r is not a byte count (k/m/g/t suffixes)" % text)
    if value < 0 or value != int(value):
        raise argparse.ArgumentTypeError("%r is not a whole number of bytes >= 0" % text)
    return int(value)


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--stage", type=int, default=0, choices=range(4))
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--dim", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=8, help="sequences per rank per step")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--betas", type=float, nargs=2, default=(0.9, 0.95), metavar=("B1", "B2"),
                   help="AdamW's betas (default 0.9 0.95, GPT's: with torch's 0.999 a constant "
                        "learning rate leaves the loss on a plateau for a number of steps that "
                        "any small change moves)")
    p.add_argument("--weight-decay", type=float, default=0.1)
    p.add_argument("--schedule", choices=["constant", "cosine"], default="constant",
                   help="the learning rate after the warmup: constant, or a cosine decay to "
                        "a tenth of --lr at the last step (torch.optim.lr_scheduler's, on "
                        "ZeRO as on the DDP twin)")
    p.add_argument("--warmup", type=int, default=0,
                   help="steps of linear warmup from --lr / (warmup + 1) to --lr")
    p.add_argument("--max-grad-norm", type=float, default=1.0,
                   help="clip the gradients' global L2 norm to this each step, 0 for no "
                        "clipping (default 1.0, GPT's: without it the loss waits on a "
                        "plateau for a number of steps that any small change moves)")
    p.add_argument("--bucket-size", type=int, default=0, help="bytes; 0 takes ZSH_BUCKET_SIZE")
    p.add_argument("--offload-optimizer", choices=TIERS, default=None,
                   help="tier of the optimizer states and master weights, and at stages 2-3 "
                        "of the gradient shards (default: ZSH_OFFLOAD_OPTIMIZER)")
    p.add_argument("--offload-params", choices=TIERS, default=None,
                   help="stage 3: tier of the parameter shards (default: ZSH_OFFLOAD_PARAMS)")
    p.add_argument("--nvme-dir", default=None,
                   help="directory of the nvme tier's files (default: ZSH_NVME_DIR)")
    p.add_argument("--host-mem-limit", type=size_arg, default=0,
                   help="bytes of host buffers of the nvme tier, k/m/g suffixes "
                        "(default: ZSH_HOST_MEM_LIMIT)")
    p.add_argument("--sub-group-size", type=size_arg, default=0,
                   help="elements of state the step updates at a time "
                        "(default: ZSH_SUB_GROUP_SIZE)")
    p.add_argument("--quantize-weights", choices=QUANTIZE, default=None,
                   help="stage 3: ZeRO++'s qwZ, forward's gathers as int8 (default: "
                        "ZSH_QUANTIZE_WEIGHTS; auto is on across nodes)")
    p.add_argument("--quantize-grads", choices=QUANTIZE, default=None,
                   help="stages 2-3: ZeRO++'s qgZ, gradients quantized across nodes "
                        "(default: ZSH_QUANTIZE_GRADS; auto is on across nodes)")
    p.add_argument("--quantize-grad-bits", type=int, choices=(4, 8), default=None,
                   help="bits of qgZ's levels (default: ZSH_QUANTIZE_GRAD_BITS)")
    p.add_argument("--quantize-block", type=int, default=None,
                   help="elements per quantization block, each with its own scale "
                        "(default: ZSH_QUANTIZE_BLOCK)")
    p.add_argument("--deterministic", action="store_true",
                   help="the same loss bits whatever the bucket size, sub-group size, offload "
                        "or node layout (ZeRO's deterministic=)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--text", default=TEXT)
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--compare-ddp", action="store_true",
                   help="also train DDP(gloo) + torch.optim.AdamW and compare losses")
    p.add_argument("--json", help="write losses and bytes here (rank 0)")
    args = p.parse_args(argv)
    if args.dim % args.heads:
        p.error("--dim %d is not a multiple of --heads %d" % (args.dim, args.heads))
    if args.warmup < 0:
        p.error("--warmup %d is negative" % args.warmup)
    if args.compare_ddp and args.precision != "fp32":
        p.error("--compare-ddp compares fp32 training")
    return args


def schedule(args, optimizer):
    """--schedule and --warmup as a torch.optim.lr_scheduler of optimizer
    (a ZeRO is one); None for a constant rate."""
    if args.schedule == "constant" and args.warmup == 0:
        return None

    def factor(step):
        if step < args.warmup:
            return (step + 1) / (args.warmup + 1)
        if args.schedule == "constant":
            return 1.0
        done = (step - args.warmup) / max(args.steps - 1 - args.warmup, 1)
        return 0.1 + 0.45 * (1 + math.cos(math.pi * min(done, 1.0)))
    return torch.optim.lr_scheduler.LambdaLR(optimizer, factor)


def build(args, dtype):
    torch.manual_seed(args.seed)
    return GPT(args.layers, args.dim, args.heads, args.seq).to(dtype)


def mean_over_ranks(value):
    t = torch.tensor([value], dtype=torch.float64)
    dist.all_reduce(t)
    return t.item() / dist.get_world_size()


def train(args, log=print):
    """Train under an initialised default process group (zsh); the result dict."""
    import zeroshard.torch

    rank, world = dist.get_rank(), dist.get_world_size()
    dtype = torch.bfloat16 if args.precision == "bf16" else torch.float32
    data = load_text(args.text)

    model = build(args, dtype)
    nparams = sum(p.numel() for p in model.parameters())  # a tied parameter counts once
    zero = zeroshard.torch.ZeRO(model, stage=args.stage, optimizer="adamw", lr=args.lr,
                                betas=tuple(args.betas),
                                weight_decay=args.weight_decay, max_grad_norm=args.max_grad_norm,
                                bucket_size=args.bucket_size,
                                offload_optimizer=args.offload_optimizer,
                                offload_params=args.offload_params, nvme_dir=args.nvme_dir,
                                host_mem_limit=args.host_mem_limit,
                                sub_group_size=args.sub_group_size,
                                quantize_weights=args.quantize_weights,
                                quantize_grads=args.quantize_grads,
                                quantize_grad_bits=args.quantize_grad_bits,
                                quantize_block=args.quantize_block,
                                deterministic=args.deterministic)
    sched, ref = schedule(args, zero), None
    if args.compare_ddp:
        gloo = dist.new_group(backend="gloo")
        ref = torch.nn.parallel.DistributedDataParallel(build(args, dtype), process_group=gloo)
        ref_opt = torch.optim.AdamW(ref.parameters(), lr=args.lr, betas=tuple(args.betas),
                                      weight_decay=args.weight_decay)
        ref_sched = schedule(args, ref_opt)

    losses, ref_losses, times = [], [], []
    for step in range(args.steps):
        x, y = batch(data, step, rank, world, args.batch, args.seq, args.seed)
        start = time.perf_counter()
        loss = F.cross_entropy(model(x).float().view(-1, VOCAB), y.view(-1))
        zero.backward(loss)
        zero.step()
        zero.zero_grad()
        if sched is not None:
            sched.step()
        times.append(time.perf_counter() - start)
        losses.append(mean_over_ranks(loss.item()))
        line = "step %3d loss %.6f step_ms %.1f" % (step, losses[-1], times[-1] * 1e3)
        if ref is not None:
            ref_opt.zero_grad()
            rl = F.cross_entropy(ref(x).view(-1, VOCAB), y.view(-1))
            rl.backward()
            if args.max_grad_norm > 0:
                torch.nn.utils.clip_grad_norm_(ref.parameters(), args.max_grad_norm)
            ref_opt.step()
            if ref_sched is not None:
                ref_sched.step()
            ref_losses.append(mean_over_ranks(rl.item()))
            line += " ddp_loss %.6f" % ref_losses[-1]
        if rank == 0:
            log(line)

    st = zero.stats()
    held = {k: st[k] for k in ("param_bytes", "grad_bytes", "state_bytes")}
    tiers = {k: st[k] for k in ("compute_bytes", "host_bytes", "nvme_bytes",
                                "host_buffer_peak_bytes", "io_read_bytes", "io_write_bytes",
                                "io_wait_s", "io_overlap_s", "io_engine")}
    quant = {k: st[k] for k in ("quantize_weights", "quantize_grads", "qwz_gathers",
                                "qgz_reductions", "comm_bytes_quantized_last_step")}
    result = {"stage": args.stage, "precision": args.precision, "ranks": world,
              "params": nparams, "losses": losses, "step_ms": [t * 1e3 for t in times],
              "offload_optimizer": args.offload_optimizer,
              "offload_params": args.offload_params, **held, **tiers, **quant}
    if rank == 0:
        mid = sorted(times)[len(times) // 2] * 1e3
        log("stage %d %s on %d ranks: %d parameters; per rank: params %d B, grads %d B, "
            "optimizer states %d B; median step %.1f ms"
            % (args.stage, args.precision, world, nparams, held["param_bytes"],
               held["grad_bytes"], held["state_bytes"], mid))
        if st["host_bytes"] or st["nvme_bytes"]:
            log("tiers per rank: compute %d B, host %d B, nvme %d B; host buffers peak %d B; "
                "read %d B, written %d B, I/O wait %.3f s (%s)"
                % (st["compute_bytes"], st["host_bytes"], st["nvme_bytes"],
                   st["host_buffer_peak_bytes"], st["io_read_bytes"], st["io_write_bytes"],
                   st["io_wait_s"], st["io_engine"] or "no I/O engine"))
        if st["quantize_weights"] or st["quantize_grads"]:
            log("quantized per rank: qwZ %s (%d gathers), qgZ %s (%d reductions); "
                "%d B of the last step's %d B sent quantized"
                % ("on" if st["quantize_weights"] else "off", st["qwz_gathers"],
                   "on" if st["quantize_grads"] else "off", st["qgz_reductions"],
                   st["comm_bytes_quantized_last_step"], st["comm_bytes_last_step"]))
    if ref is not None:
        result["ddp_losses"] = ref_losses
        result["max_rel_diff"] = max(abs(a - b) / abs(b) for a, b in zip(losses, ref_losses))
        if rank == 0:
            log("largest relative difference from DDP(gloo) + AdamW: %.3g" % result["max_rel_diff"])
        dist.destroy_process_group(gloo)
    zero.close()
    return result


def main(argv=None):
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    import zeroshard.torch  # noqa: F401  registers "zsh"

    dist.init_process_group("zsh")
    result = train(args, log=lambda line: print(line, flush=True))
    if args.json and dist.get_rank() == 0:
        with open(args.json, "w") as f:
            json.dump(result, f)
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
