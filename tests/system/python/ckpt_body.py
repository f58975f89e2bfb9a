#!/usr/bin/env python3
"""zeroshard.torch.ZeRO.save / load, run once per rank under the "zsh" process
group (tests/system/python/run_ckpt.sh starts the ranks):

    ckpt_body.py np2 DIR TOOL   the 2-rank job: CASES_NP2
    ckpt_body.py np1 DIR TOOL   the 1-rank job after it: CASES_NP1

DIR is a directory both jobs share (the 2-rank job leaves its checkpoints
and losses there for the 1-rank one); TOOL is tools/zsh_ckpt, or "" when the
build has none (its cases are then skipped).

The 2-rank job trains a small MLP 10 steps straight and 5 + save + a new
ZeRO (on a differently initialised module) + load + 5, at stages 0-3: the
losses must be the same bit for bit, and the module must hold the saved
values right after the load. Then: the loaded hyperparameters win over the
new ZeRO's, bf16 with dynamic loss scaling (the scaler's state), SGD with
momentum, a checkpoint of stage 1 loaded at stage 3, a load inside
gathered() at stage 3, snapshot() and restore() at stage 3 (ZSH_SNAPSHOT_DIR),
a corrupted shard file and another model refused
with the module and the optimizer unchanged, zsh_ckpt consolidate against
the saved parameters, and load_consolidated on made-up files (tiles, a plain
file, the errors). The 1-rank job resumes each stage's checkpoint: its first
loss matches the 2-rank run's within 1e-6, the one after a step within 1e-5.
"""

import datetime
import json
import os
import struct
import subprocess
import sys
import tempfile

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "python"))
from harness import Skip, report_case  # noqa: E402

import zeroshard  # noqa: E402
from zeroshard.errors import ERR_INVALID_ARG, ERR_IO  # noqa: E402
from zeroshard.torch import ZeRO, load_consolidated  # noqa: E402

STAGES = (0, 1, 2, 3)
STEPS = 10
HALF = 5
# Several buckets (bytes), so shards split parameters across ranks.
SETTINGS = dict(optimizer="adamw", lr=1e-2, weight_decay=0.01, max_grad_norm=1.0,
                bucket_size=1024)
CASES_NP2 = []
CASES_NP1 = []
DIR = None
TOOL = ""
STRAIGHT = {}   # key -> this rank's losses over STEPS straight steps
SAVED = {}      # key -> the module's state_dict when its checkpoint was saved


def np2(fn):
    CASES_NP2.append(fn)
    return fn


def np1(fn):
    CASES_NP1.append(fn)
    return fn


# ---- the model, the data and the loops ------------------------------------------------

def model(seed=0, dtype=torch.float32, widths=(8, 32, 32, 4)):
    torch.manual_seed(seed)
    layers = []
    for a, b in zip(widths[:-1], widths[1:]):
        layers += [nn.Linear(a, b), nn.Tanh()]
    return nn.Sequential(*layers[:-1]).to(dtype)


def batch(step, rank, dtype=torch.float32):
    g = torch.Generator().manual_seed(7919 * step + rank)
    return torch.randn(4, 8, generator=g).to(dtype), torch.randn(4, 4, generator=g).to(dtype)


def train(zero, m, steps, first, rank, dtype=torch.float32, scales=None):
    losses = []
    for s in range(first, first + steps):
        x, y = batch(s, rank, dtype)
        loss = F.mse_loss(m(x).float(), y.float())  # torch 1.13 has no bf16 mse_loss
        zero.backward(loss)
        zero.step()
        zero.zero_grad()
        losses.append(loss.item())
        if scales is not None:
            scales.append(zero.loss_scale)
    return losses


def straight(ctx, key, stage, dtype=torch.float32, **settings):
    """This rank's losses (and loss scales) over STEPS steps without a stop, once per job."""
    if key not in STRAIGHT:
        m = model(0, dtype)
        zero = ZeRO(m, stage=stage, group=ctx.group, **settings)
        scales = []
        losses = train(zero, m, STEPS, 0, ctx.rank, dtype, scales)
        zero.close()
        STRAIGHT[key] = (losses, scales)
    return STRAIGHT[key]


def same_bits(a, b, what):
    if a != b:
        first = next(i for i, (u, v) in enumerate(zip(a, b)) if u != v) if len(a) == len(b) else -1
        raise AssertionError("%s differ (first at %d): %r vs %r" % (what, first, a, b))


def same_tensors(got, want, what):
    if list(got) != list(want):
        raise AssertionError("%s: names %s, expected %s" % (what, list(got), list(want)))
    for k in want:
        g, w = got[k], want[k]
        if g.dtype != w.dtype or g.shape != w.shape or not torch.equal(g, w):
            diff = (g.float() - w.float()).abs().max().item() if g.shape == w.shape else None
            raise AssertionError("%s: %s is %s %s, expected %s %s (max difference %s)"
                                 % (what, k, g.dtype, tuple(g.shape), w.dtype, tuple(w.shape),
                                    diff))


def training_state(zero, m):
    """The module's state dict and the optimizer's states, flat: what a
    checkpoint must give back."""
    out = {k: v.clone() for k, v in m.state_dict().items()}
    for n, entry in zero.state_dict()["state"].items():
        out.update(("optim.%d.%s" % (n, k), v) for k, v in entry.items() if v is not None)
    return out


def rel(a, b):
    return abs(a - b) / max(abs(b), 1e-30)


def raises_zsh(fn, status, what):
    try:
        fn()
    except zeroshard.ZshError as e:
        if e.status != status:
            raise AssertionError("%s raised %s, not status %d" % (what, e, status))
        return e
    raise AssertionError("%s did not raise ZshError" % what)


def resume(ctx, key, stage, dtype=torch.float32, load_stage=None, load_settings=None,
           **settings):
    """HALF steps, save to DIR/key, a new ZeRO at load_stage on a module of
    another seed, load, HALF more steps: (losses, loss scales, the module's
    state_dict right after the load, the saved one)."""
    m = model(0, dtype)
    zero = ZeRO(m, stage=stage, group=ctx.group, **settings)
    scales = []
    losses = train(zero, m, HALF, 0, ctx.rank, dtype, scales)
    state = training_state(zero, m)
    saved = {k: v.clone() for k, v in m.state_dict().items()}
    SAVED[key] = saved
    path = zero.save(os.path.join(DIR, key))
    want = os.path.join(DIR, key, "step-%08d" % HALF)
    if path != want or not os.path.isdir(path):
        raise AssertionError("save() returned %r; %r expected, a directory" % (path, want))
    zero.close()
    m2 = model(1234, dtype)
    ls = stage if load_stage is None else load_stage
    zero2 = ZeRO(m2, stage=ls, group=ctx.group, **(settings if load_settings is None
                                                     else load_settings))
    zero2.load(os.path.join(DIR, key))
    loaded = {k: v.clone() for k, v in m2.state_dict().items()}
    same_tensors(training_state(zero2, m2), state, "the parameters and optimizer states after "
                 "load at stage %d" % ls)
    if ls < 3:
        # The module's own tensors, not a gathered copy, hold the values.
        direct = {n: p.detach().clone() for n, p in m2.named_parameters()}
        same_tensors(direct, saved, "the module's parameters after load at stage %d" % ls)
    losses += train(zero2, m2, STEPS - HALF, HALF, ctx.rank, dtype, scales)
    zero2.close()
    if ls == 3:
        # close() gives the module back whole: the trained values, not stale ones.
        if any(p.numel() == 0 for p in m2.parameters()):
            raise AssertionError("close() left stage 3 parameters empty")
    return losses, scales, loaded, saved


def write_losses(ctx, key, losses):
    with open(os.path.join(DIR, "%s.losses.%d.json" % (key, ctx.rank)), "w") as f:
        json.dump(losses, f)


def read_losses(key, rank):
    path = os.path.join(DIR, "%s.losses.%d.json" % (key, rank))
    if not os.path.exists(path):
        raise AssertionError("%s is missing: the 2-rank job's case for %s failed" % (path, key))
    with open(path) as f:
        return json.load(f)


# ---- 2 ranks: 10 straight against 5 + save + load + 5 --------------------------------

def _resume_case(stage):
    def fn(ctx):
        key = "stage%d" % stage
        want, _ = straight(ctx, key, stage, **SETTINGS)
        got, _, loaded, saved = resume(ctx, key, stage, **SETTINGS)
        same_tensors(loaded, saved, "state_dict() right after load")
        same_bits(got, want, "losses of 5 + save + load + 5 and of 10 straight steps")
        write_losses(ctx, key, want)
    fn.__name__ = "test_stage_%d_5_steps_save_load_5_match_10_straight_bit_for_bit" % stage
    return np2(fn)


for _s in STAGES:
    _resume_case(_s)


@np2
def test_load_restores_the_hyperparameters_over_the_new_zeros(ctx):
    want, _ = straight(ctx, "stage2", 2, **SETTINGS)
    other = dict(SETTINGS, lr=0.5, weight_decay=0.3, max_grad_norm=0.0)
    got, _, _, _ = resume(ctx, "hyper", 2, load_settings=other, **SETTINGS)
    same_bits(got, want, "losses after loading into a ZeRO of lr 0.5, weight decay 0.3, "
              "no clipping")


@np2
def test_bf16_with_dynamic_loss_scaling_resumes_bit_for_bit_with_its_scaler(ctx):
    bf16 = dict(SETTINGS, loss_scale=1024.0, dynamic_loss_scale=True, loss_scale_window=3)
    want, want_scales = straight(ctx, "bf16", 3, torch.bfloat16, **bf16)
    got, scales, loaded, saved = resume(ctx, "bf16", 3, torch.bfloat16, **bf16)
    same_tensors(loaded, saved, "bf16 state_dict() right after load")
    same_bits(got, want, "bf16 losses")
    same_bits(scales, want_scales, "loss scales")
    if len(set(want_scales)) < 2:
        raise AssertionError("the loss scale never moved (%r): the case tests nothing"
                             % want_scales)


@np2
def test_sgd_with_momentum_resumes_bit_for_bit(ctx):
    sgd = dict(optimizer="sgd", lr=5e-2, momentum=0.9, nesterov=True, bucket_size=1024)
    want, _ = straight(ctx, "sgd", 2, **sgd)
    got, _, _, _ = resume(ctx, "sgd", 2, **sgd)
    same_bits(got, want, "SGD losses")


@np2
def test_a_stage_1_checkpoint_resumes_at_stage_3(ctx):
    want, _ = straight(ctx, "stage1", 1, **SETTINGS)
    got, _, loaded, saved = resume(ctx, "cross", 1, load_stage=3, **SETTINGS)
    same_tensors(loaded, saved, "stage 3 state_dict() after loading stage 1's checkpoint")
    worst = max(rel(a, b) for a, b in zip(got, want))
    if worst > 1e-6:
        raise AssertionError("losses differ by %.3g relative: %r vs %r" % (worst, got, want))


@np2
def test_stage_3_load_inside_gathered_refreshes_the_held_parameter(ctx):
    if "stage3" not in SAVED:
        raise AssertionError("the stage 3 case saved no checkpoint")
    m = model(99)
    zero = ZeRO(m, stage=3, group=ctx.group, **SETTINGS)
    w = m[0].weight
    with zero.gathered(w):
        before = w.detach().clone()
        zero.load(os.path.join(DIR, "stage3"))
        if not torch.equal(w.detach(), SAVED["stage3"]["0.weight"]):
            raise AssertionError("the held parameter kept its old values (%s) after load"
                                 % ("unchanged" if torch.equal(w.detach(), before) else "other"))
    if w.numel() != 0:
        raise AssertionError("the parameter stayed gathered after the with block")
    zero.close()


@np2
def test_stage_3_restore_goes_back_to_the_newest_snapshot_and_repeats_its_steps_bit_for_bit(ctx):
    snap = os.path.join(DIR, "snapshots")
    m = model(0)
    zero = ZeRO(m, stage=3, group=ctx.group, **SETTINGS)
    os.environ.pop("ZSH_SNAPSHOT_DIR", None)
    e = raises_zsh(zero.snapshot, ERR_INVALID_ARG, "snapshot() without ZSH_SNAPSHOT_DIR")
    if "ZSH_SNAPSHOT_DIR" not in str(e):
        raise AssertionError("the refusal does not name ZSH_SNAPSHOT_DIR: %s" % e)
    os.environ["ZSH_SNAPSHOT_DIR"] = snap
    try:
        train(zero, m, 2, 0, ctx.rank)
        zero.snapshot()
        train(zero, m, 2, 2, ctx.rank)
        zero.snapshot()
        kept = sorted(d for d in os.listdir(snap) if d.startswith("step-"))
        if kept != ["step-00000004"]:
            raise AssertionError("snapshots kept: %s, only the newest expected" % kept)
        at4 = training_state(zero, m)
        after = train(zero, m, 3, 4, ctx.rank)
        zero.restore()
        same_tensors(training_state(zero, m), at4, "the training state right after restore")
        same_bits(train(zero, m, 3, 4, ctx.rank), after,
                  "losses of the 3 steps after the snapshot, again after restore")
    finally:
        os.environ.pop("ZSH_SNAPSHOT_DIR", None)
        zero.close()


def flip_a_byte(ckpt):
    """Flip a byte of the first parameter's first element in its weights shard."""
    with open(os.path.join(ckpt, "manifest.json")) as f:
        manifest = json.load(f)
    piece = manifest["params"][0]["pieces"][0]
    name = next(f["name"] for f in manifest["files"]
                if f["kind"] == "weights" and f["shard"] == piece["shard"])
    path = os.path.join(ckpt, name)
    with open(path, "r+b") as f:
        f.seek(4 * piece["offset"] + 1)
        b = f.read(1)
        f.seek(4 * piece["offset"] + 1)
        f.write(bytes([b[0] ^ 0x10]))
    return path


def _corrupt_case(stage):
    def fn(ctx):
        key = "stage%d" % stage
        want, _ = straight(ctx, key, stage, **SETTINGS)
        m = model(0)
        zero = ZeRO(m, stage=stage, group=ctx.group, **SETTINGS)
        got = train(zero, m, HALF, 0, ctx.rank)
        root = os.path.join(DIR, "corrupt%d" % stage)
        path = zero.save(root)
        dist.barrier()
        if ctx.rank == 0:
            flip_a_byte(path)
        dist.barrier()
        before = training_state(zero, m)
        e = raises_zsh(lambda: zero.load(root), ERR_IO, "a load of a corrupted shard")
        same_tensors(training_state(zero, m), before, "the training state after a refused load "
                     "(%s)" % e)
        raises_zsh(lambda: zero.load(os.path.join(DIR, "no-such-checkpoint")), ERR_IO,
                   "a load of a missing directory")
        om = model(0, widths=(8, 16, 4))
        other = ZeRO(om, stage=stage, group=ctx.group, **SETTINGS)
        before_other = training_state(other, om)
        raises_zsh(lambda: other.load(os.path.join(DIR, "stage%d" % stage)), ERR_INVALID_ARG,
                   "a load of another model's checkpoint")
        same_tensors(training_state(other, om), before_other,
                     "another model after a refused load")
        other.close()
        # The optimizer states, step counters and parameters are untouched:
        # the run continues exactly as the straight one.
        got += train(zero, m, STEPS - HALF, HALF, ctx.rank)
        zero.close()
        same_bits(got, want, "losses of a run whose load was refused and of the straight run")
    fn.__name__ = "test_stage_%d_corrupted_shard_or_other_model_is_refused_and_changes_nothing" \
        % stage
    return np2(fn)


for _s in (0, 3):
    _corrupt_case(_s)


def _consolidate_case(key):
    def fn(ctx):
        if not TOOL:
            raise Skip("tools/zsh_ckpt is not built")
        if key not in SAVED:
            raise AssertionError("the case that saves %s failed" % key)
        out = os.path.join(DIR, "%s.safetensors" % key)
        err = ""
        if ctx.rank == 0:
            try:
                r = subprocess.run([TOOL, "consolidate", os.path.join(DIR, key), out],
                                   stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60,
                                   universal_newlines=True)
                if r.returncode != 0:
                    err = "zsh_ckpt consolidate exited %d: %s" % (r.returncode, r.stdout.strip())
            except (OSError, subprocess.SubprocessError) as e:
                err = "zsh_ckpt consolidate: %s" % e
        dist.barrier()
        if err:
            raise AssertionError(err)
        if not os.path.exists(out):
            raise AssertionError("zsh_ckpt consolidate left no %s" % out)
        dtype = SAVED[key]["0.weight"].dtype
        got = load_consolidated(out, model(5, dtype))
        same_tensors(got, SAVED[key], "load_consolidated(%s, module)" % os.path.basename(out))
        flat = load_consolidated(out)
        for name, t in flat.items():
            if t.numel() != SAVED[key][name].numel():
                raise AssertionError("load_consolidated(%s) without a module: %s has %d elements"
                                     % (out, name, t.numel()))
    fn.__name__ = "test_zsh_ckpt_consolidate_of_%s_loads_as_the_saved_parameters" % key
    return np2(fn)


for _k in ("stage0", "stage3", "bf16"):
    _consolidate_case(_k)


# ---- load_consolidated on made-up files ----------------------------------------------

def write_safetensors(path, tensors, metadata=None, pad=7):
    """A safetensors file of {name: tensor}, the header padded with spaces."""
    names = {torch.float32: "F32", torch.bfloat16: "BF16", torch.float16: "F16",
             torch.int64: "I64"}
    header, blobs, at = {}, [], 0
    for name, t in tensors.items():
        raw = t.contiguous().view(-1).view(torch.uint8).numpy().tobytes()
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    if metadata is not None:
        header["__metadata__"] = metadata
    text = json.dumps(header).encode() + b" " * pad
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for raw in blobs:
            f.write(raw)


def raises(fn, kind, text, what):
    try:
        fn()
    except kind as e:
        if text not in str(e):
            raise AssertionError("%s raised %r, without %r" % (what, e, text))
        return e
    raise AssertionError("%s did not raise %s" % (what, kind.__name__))


@np2
def test_load_consolidated_joins_tiles_reads_plain_files_and_names_mismatches(ctx):
    m = model(3)
    params = {n: p.detach().clone() for n, p in m.named_parameters()}
    with tempfile.TemporaryDirectory() as tmp:
        # Tiles of flat fp32 values, out of order in the file, with metadata.
        tiled = {}
        for name, p in reversed(list(params.items())):
            flat = p.view(-1)
            parts = flat.split(7) if flat.numel() > 7 else [flat]
            for k in reversed(range(len(parts))):
                tiled["%s[%d]" % (name, k)] = parts[k].clone()
        path = os.path.join(tmp, "tiled.safetensors")
        write_safetensors(path, tiled, {"format": "zeroshard", "step": "5"})
        same_tensors(load_consolidated(path, model(4)), dict(reversed(list(params.items()))),
                     "tiles with a module")
        flat = load_consolidated(path)
        for name, p in params.items():
            if not torch.equal(flat[name], p.view(-1)):
                raise AssertionError("tiles of %s without a module: not the values" % name)
        # A plain file, shaped, no metadata; cast to the module's bf16.
        plain = os.path.join(tmp, "plain.safetensors")
        write_safetensors(plain, params, pad=0)
        got = load_consolidated(plain, model(4, torch.bfloat16))
        same_tensors(got, {n: p.to(torch.bfloat16) for n, p in params.items()}, "a plain file")
        same_tensors(zeroshard.checkpoint.load_consolidated(plain), params, "no module")
        # Mismatches, named.
        raises(lambda: load_consolidated(plain, model(4, widths=(8, 32, 4))), ValueError,
               "not parameters of the module: 4.weight, 4.bias", "extra names")
        fewer = dict(params)
        del fewer["2.bias"]
        write_safetensors(plain, fewer)
        raises(lambda: load_consolidated(plain, model(4)), ValueError,
               "missing from the file: 2.bias", "a missing parameter")
        write_safetensors(plain, params)
        raises(lambda: load_consolidated(plain, model(4, widths=(8, 32, 16, 4))), ValueError,
               "2.weight has 1024 elements; the module's parameter has 512", "another size")
        gap = {k: v for k, v in tiled.items() if k != "0.weight[1]"}
        write_safetensors(path, gap)
        raises(lambda: load_consolidated(path), ValueError, "0.weight[1] missing", "a lost tile")
        # Broken files.
        with open(path, "r+b") as f:
            f.truncate(os.path.getsize(path) - 3)
        raises(lambda: load_consolidated(path), ValueError, "data_offsets", "a truncated file")
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", 10 ** 6) + b"{}")
        raises(lambda: load_consolidated(path), ValueError, "header claims", "a header too long")
        with open(path, "wb") as f:
            f.write(struct.pack("<Q", 4) + b"{x:1")
        raises(lambda: load_consolidated(path), ValueError, "not JSON", "a bad header")


@np1
def test_load_consolidated_bounds_indices_and_sizes_by_the_file(ctx):
    """A file from elsewhere: a tile index of 10^11 (a set of 10^11 integers
    was built to name the missing tiles), one of 5000 digits, a shape no
    file holds, and a FIFO are refused or read as plain names, at once."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "x.safetensors")
        one = torch.ones(2)
        write_safetensors(path, {"w[0]": one, "w[100000000000]": one})
        raises(lambda: load_consolidated(path), ValueError,
               "the tiles of 'w' are not 0..100000000000: w[1] missing (and 99999999998 more)",
               "a tile index of 10^11")
        long_name = "w[%s]" % ("9" * 5000)
        write_safetensors(path, {long_name: one})
        if not torch.equal(load_consolidated(path)[long_name], one):
            raise AssertionError("a name with a 5000-digit index is not read as a plain name")
        write_safetensors(path, {"w": torch.ones(0)})
        with open(path, "r+b") as f:
            (n,) = struct.unpack("<Q", f.read(8))
            text = f.read(n).replace(b'"shape": [0]', b'"shape": [0, 1000000000000000000000]')
            f.seek(0)
            f.write(struct.pack("<Q", len(text)) + text)
            f.truncate()
        raises(lambda: load_consolidated(path), ValueError, "is not a list of sizes up to the "
               "file's", "a shape larger than the file")
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        raises(lambda: load_consolidated(fifo), ValueError, "it is a FIFO, not a regular file",
               "a FIFO")


# ---- 1 rank: the 2-rank job's checkpoints resumed ---------------------------------------

def _one_rank_case(stage):
    def fn(ctx):
        key = "stage%d" % stage
        w0, w1 = read_losses(key, 0), read_losses(key, 1)
        m = model(77)
        zero = ZeRO(m, stage=stage, group=ctx.group, **SETTINGS)
        zero.load(os.path.join(DIR, key))
        with torch.no_grad():
            x, y = batch(HALF, 0)
            first = F.mse_loss(m(x), y).item()
        if rel(first, w0[HALF]) > 1e-6:
            raise AssertionError("the first loss at 1 rank is %r; rank 0 of 2 had %r (%.3g)"
                                 % (first, w0[HALF], rel(first, w0[HALF])))
        # A step on both ranks' batches is the 2-rank step (averaged gradients).
        for s in (HALF, HALF + 1):
            (x0, y0), (x1, y1) = batch(s, 0), batch(s, 1)
            loss = F.mse_loss(m(torch.cat([x0, x1])), torch.cat([y0, y1]))
            zero.backward(loss)
            zero.step()
            zero.zero_grad()
        with torch.no_grad():
            s = HALF + 2
            (x0, y0), (x1, y1) = batch(s, 0), batch(s, 1)
            later = F.mse_loss(m(torch.cat([x0, x1])), torch.cat([y0, y1])).item()
        want = (w0[s] + w1[s]) / 2
        if rel(later, want) > 1e-5:
            raise AssertionError("after 2 steps at 1 rank the loss is %r; the 2 ranks' mean "
                                 "%r (%.3g)" % (later, want, rel(later, want)))
        zero.close()
    fn.__name__ = "test_stage_%d_checkpoint_of_2_ranks_resumes_at_1_rank" % stage
    return np1(fn)


for _s in STAGES:
    _one_rank_case(_s)


class Ctx:
    def __init__(self):
        self.rank = dist.get_rank()
        self.size = dist.get_world_size()
        self.group = dist.distributed_c10d._get_default_group()


def main(argv):
    global DIR, TOOL
    mode, DIR, TOOL = argv[1], argv[2], argv[3] if len(argv) > 3 else ""
    torch.set_num_threads(1)
    dist.init_process_group("zsh", timeout=datetime.timedelta(seconds=60))
    ctx = Ctx()
    cases = {"np2": CASES_NP2, "np1": CASES_NP1}[mode]
    only = argv[4] if len(argv) > 4 else None
    failed = 0
    for fn in cases:
        if only and only not in fn.__name__:
            continue
        failed += not report_case(fn, ctx)
        dist.barrier()
    dist.destroy_process_group()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
