#!/usr/bin/env python3
"""zeroshard.torch.ZeRO, run once per rank under the "zsh" process group
(tests/system/python/run_zero.sh starts the ranks).

examples/torch/train_gpt.py at every stage against DistributedDataParallel
over gloo with torch.optim.AdamW in the same job; stage 3's parameter bytes
against stage 0's; tied parameters, a module called twice and in-place ops
at stage 3 against plain torch; a branch taken on some steps and a module
never called against torch.optim.AdamW bit for bit; stage 3's units against
stage 0 on nn.Transformer (its encoder fast path in eval included),
torchvision's ViT and Swin, tied, reused, looped, checkpointed (reentrant
and not), frozen and unused parameters, with units by class, size and
callable, and a parameter read outside its module found; state_dict /
load_state_dict through every copy the layer keeps; mixed precision; the
calls a stage 3 step makes into the layer (a unit gathered in one call, in
the same order each step, gradients averaged in place); qwZ's backward on
exact weights, nn.Linear's included, and what autograd saved of stage
3's weights holding no memory between the forward and the backward; the
offload tiers (train_gpt.py with the optimizer states in
host memory or with states and parameter shards in files, bit for bit the
in-memory run, inside its host buffer budget, its files gone after close);
and the refusals.
"""

import contextlib
import copy
import io
import os
import shutil
import sys
import tempfile
import weakref

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "torch"))
from harness import Skip, case  # noqa: E402

import train_gpt  # noqa: E402
import zeroshard  # noqa: E402
from zeroshard.torch import ZeRO  # noqa: E402

STAGES = (0, 1, 2, 3)
GPT_ARGS = ["--steps", "20", "--layers", "2", "--dim", "32", "--heads", "2", "--seq", "16",
            "--batch", "2", "--lr", "3e-3", "--bucket-size", "16384", "--max-grad-norm", "0"]
RESULTS = {}


def gpt(stage):
    """train_gpt.py's run at @stage (with its DDP twin), once per job."""
    if stage not in RESULTS:
        args = train_gpt.parse_args(GPT_ARGS + ["--stage", str(stage), "--compare-ddp"])
        RESULTS[stage] = train_gpt.train(args, log=lambda line: None)
    return RESULTS[stage]


def near(a, b, rtol, what):
    a, b = a.detach().float(), b.detach().float()
    diff = ((a - b).abs() / b.abs().clamp_min(1e-6)).max().item() if a.numel() else 0.0
    if a.shape != b.shape or diff > rtol:
        raise AssertionError("%s: relative difference %.3g > %.3g (shapes %s, %s)"
                             % (what, diff, rtol, tuple(a.shape), tuple(b.shape)))


def raises(fn, text, what):
    try:
        fn()
    except Exception as e:  # the message is what is checked
        if text not in str(e):
            raise AssertionError("%s raised %r, without %r" % (what, e, text))
        return e
    raise AssertionError("%s did not raise" % what)


# ---- train_gpt.py against DDP(gloo) + AdamW ------------------------------------------

def spy_gathers(zero, record):
    """Call record(params) at each of stage 3's gathers into the layer, lent
    (fetch_many) or copied (gather_storages)."""
    opt = zero.optimizer
    real_fetch, real_copy = opt.fetch_many, opt.gather_storages

    def fetch_many(params):
        record(params)
        return real_fetch(params)

    def gather_storages(params, storages):
        record(params)
        return real_copy(params, storages)

    opt.fetch_many, opt.gather_storages = fetch_many, gather_storages


def _gpt_case(stage):
    def fn(ctx):
        r = gpt(stage)
        # fp32 throughout; the two differ only in the order ranks' gradients are summed.
        if not r["max_rel_diff"] <= 1e-5:
            raise AssertionError("losses differ from DDP by %.3g: %s vs %s"
                                 % (r["max_rel_diff"], r["losses"], r["ddp_losses"]))
        if not r["losses"][-1] < r["losses"][0]:
            raise AssertionError("the loss did not fall: %s" % r["losses"])
    fn.__name__ = "test_train_gpt_stage_%d_matches_ddp_with_adamw_over_20_steps" % stage
    return case(fn)


for _s in STAGES:
    _gpt_case(_s)


@case
def test_train_gpt_under_warmup_and_cosine_decay_matches_ddp_with_the_same_schedule(ctx):
    args = train_gpt.parse_args(GPT_ARGS + ["--stage", "3", "--compare-ddp", "--warmup", "5",
                                            "--schedule", "cosine"])
    r = train_gpt.train(args, log=lambda line: None)
    if not r["max_rel_diff"] <= 1e-5:
        raise AssertionError("losses differ from DDP by %.3g: %s vs %s"
                             % (r["max_rel_diff"], r["losses"], r["ddp_losses"]))
    # The schedule moved the rate: the constant-rate run's losses are others.
    if r["losses"][2:] == gpt(3)["losses"][2:]:
        raise AssertionError("the schedule changed nothing: %s" % r["losses"])


@case
def test_stage_3_holds_a_world_size_share_of_the_parameter_bytes_of_stage_0(ctx):
    s0, s3, s2 = gpt(0), gpt(3), gpt(2)
    share = s3["param_bytes"] / s0["param_bytes"]
    # Shards are padded to equal sizes per bucket: a little over 1/N, never under.
    if not 1.0 / ctx.size <= share <= 1.0 / ctx.size + 0.02:
        raise AssertionError("stage 3 holds %d of stage 0's %d parameter bytes (%.3f), not 1/%d"
                             % (s3["param_bytes"], s0["param_bytes"], share, ctx.size))
    if s0["param_bytes"] != 4 * s0["params"]:
        raise AssertionError("stage 0 counts %d bytes for %d fp32 parameters"
                             % (s0["param_bytes"], s0["params"]))
    if not s2["grad_bytes"] <= s0["grad_bytes"] / ctx.size + 0.02 * s0["grad_bytes"]:
        raise AssertionError("stage 2 keeps %d gradient bytes of %d" % (s2["grad_bytes"],
                                                                       s0["grad_bytes"]))


# ---- the offload tiers -----------------------------------------------------------------

# Small sub-groups and a small host budget, so the step swaps several
# sub-groups through the pool and the budget is what bounds it.
OFFLOAD_ARGS = GPT_ARGS + ["--steps", "6", "--sub-group-size", "2048"]
HOST_MEM_LIMIT = 128 * 1024
TIERED = {}


def tiered(stage, optimizer, params):
    """train_gpt.py at @stage with the given tiers (nvme ones in a fresh
    directory of this rank under /var/tmp, checked empty after the run and
    removed); its result and the files left behind, once per job."""
    key = (stage, optimizer, params)
    if key not in TIERED:
        args = ["--stage", str(stage), "--offload-optimizer", optimizer,
                "--offload-params", params]
        tmp = None
        if "nvme" in (optimizer, params):
            tmp = tempfile.mkdtemp(prefix="zsh-pytest-", dir="/var/tmp")
            args += ["--nvme-dir", tmp, "--host-mem-limit", str(HOST_MEM_LIMIT)]
        try:
            result = train_gpt.train(train_gpt.parse_args(OFFLOAD_ARGS + args),
                                     log=lambda line: None)
            left = []
            if tmp is not None:
                for root, dirs, files in os.walk(tmp):
                    left += [os.path.join(root, n) for n in dirs + files]
        finally:
            if tmp is not None:
                shutil.rmtree(tmp, ignore_errors=True)
        TIERED[key] = (result, left)
    return TIERED[key]


def same_losses(got, want, what):
    # Offloading moves state, never changes the arithmetic: equal floats, not near ones.
    if got["losses"] != want["losses"]:
        raise AssertionError("%s: losses %s differ from the in-memory run's %s"
                             % (what, got["losses"], want["losses"]))


@case
def test_stage_3_with_states_and_parameters_in_files_trains_bit_for_bit_as_in_memory(ctx):
    ref, _ = tiered(3, "none", "none")
    got, left = tiered(3, "nvme", "nvme")
    same_losses(got, ref, "stage 3, optimizer and parameters on nvme")
    if not (got["nvme_bytes"] > 0 and got["io_read_bytes"] > 0 and got["io_write_bytes"] > 0):
        raise AssertionError("no state in files or no I/O counted: nvme %d B, read %d B, "
                             "written %d B" % (got["nvme_bytes"], got["io_read_bytes"],
                                               got["io_write_bytes"]))
    if not 0 < got["host_buffer_peak_bytes"] <= HOST_MEM_LIMIT:
        raise AssertionError("host buffers peaked at %d B, the budget is %d B"
                             % (got["host_buffer_peak_bytes"], HOST_MEM_LIMIT))
    if not isinstance(got["io_engine"], str):
        raise AssertionError("io_engine is %r with an nvme tier" % (got["io_engine"],))
    if ref["nvme_bytes"] or ref["host_bytes"] or ref["io_read_bytes"] or ref["io_engine"]:
        raise AssertionError("the in-memory run counts tiers: %s" % ref)
    if left:
        raise AssertionError("files left after close: %s" % left)


@case
def test_deterministic_mode_trains_bit_for_bit_across_buckets_sub_groups_and_offload(ctx):
    """ZeRO(deterministic=True) at stage 3 with clipping: 16 KiB buckets, 2 KiB
    buckets, and the optimizer in host memory in sub-groups, the same losses."""
    group = dist.distributed_c10d._get_default_group()
    runs = {}
    try:
        for name, extra in (("16k", []), ("2k", ["--bucket-size", "2048"]),
                            ("cpu", ["--offload-optimizer", "cpu", "--sub-group-size", "4096",
                                     "--bucket-size", "4096"])):
            args = train_gpt.parse_args(OFFLOAD_ARGS + ["--stage", "3", "--deterministic",
                                                        "--max-grad-norm", "0.5"] + extra)
            runs[name] = train_gpt.train(args, log=lambda line: None)["losses"]
        if not group.comm.deterministic:
            raise AssertionError("deterministic=True left the group's communicator as it was")
    finally:
        group.comm.deterministic = False
    for name in ("2k", "cpu"):
        if runs[name] != runs["16k"]:
            raise AssertionError("%s: losses %s, with 16 KiB buckets %s"
                                 % (name, runs[name], runs["16k"]))


@case
def test_stage_2_with_optimizer_states_in_host_memory_trains_bit_for_bit_as_in_memory(ctx):
    ref, _ = tiered(2, "none", "none")
    got, _ = tiered(2, "cpu", "none")
    same_losses(got, ref, "stage 2, optimizer on cpu")
    # The states, master weights and gradient shards move; the parameters stay.
    if not (got["host_bytes"] > 0 and got["compute_bytes"] < ref["compute_bytes"]):
        raise AssertionError("host tier %d B, compute %d B (in memory: %d B)"
                             % (got["host_bytes"], got["compute_bytes"], ref["compute_bytes"]))
    if got["nvme_bytes"] or got["io_read_bytes"] or got["io_write_bytes"]:
        raise AssertionError("a cpu tier counted files or I/O: %s" % got)


@case
def test_bad_tiers_and_nvme_without_a_directory_are_refused_by_name(ctx):
    for bad in ("disk", "NVMe0", 3):
        e = raises(lambda: ZeRO(nn.Linear(2, 2), group=ctx.group, offload_optimizer=bad),
                   "none, cpu, nvme", "offload_optimizer=%r" % (bad,))
        if not isinstance(e, ValueError):
            raise AssertionError("offload_optimizer=%r raised %r, not a ValueError" % (bad, e))
    e = raises(lambda: zeroshard.Optimizer(ctx.comm, stage=3, offload_params="tape"),
               "offload_params 'tape' is not one of none, cpu, nvme", "offload_params='tape'")
    if not isinstance(e, ValueError):
        raise AssertionError("offload_params='tape' raised %r, not a ValueError" % e)
    if zeroshard.optim.config_defaults()["offload_optimizer"] is not None:
        raise AssertionError("the default tier is %r, not None (ZSH_OFFLOAD_OPTIMIZER)"
                             % zeroshard.optim.config_defaults()["offload_optimizer"])
    saved = os.environ.pop("ZSH_NVME_DIR", None)
    try:
        for where in (dict(offload_optimizer="nvme"), dict(offload_params="nvme", nvme_dir="")):
            e = raises(lambda: ZeRO(nn.Linear(2, 2), group=ctx.group, stage=3, **where),
                       "ZSH_NVME_DIR", "%s without a directory" % where)
            if not isinstance(e, zeroshard.ZshError):
                raise AssertionError("%s raised %r, not a ZshError" % (where, e))
    finally:
        if saved is not None:
            os.environ["ZSH_NVME_DIR"] = saved


# ---- stage 3 on awkward modules, against plain torch ---------------------------------

class Awkward(nn.Module):
    """A tied output, a block called twice per forward, an in-place ReLU on a
    Linear's output, a child's parameter read by the parent, a parameter of
    the parent itself, and a module left unused."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 6)
        self.block = nn.Sequential(nn.Linear(6, 6), nn.ReLU(inplace=True))
        self.norm = nn.LayerNorm(6)
        self.out = nn.Linear(6, 11, bias=False)
        self.out.weight = self.emb.weight
        self.scale = nn.Parameter(torch.full((6,), 0.5))
        self.unused = nn.Linear(3, 3)

    def forward(self, idx, zero=None):
        x = self.emb(idx)
        x = self.block(x) + self.block(x * 0.5)
        bias = self.block[0].bias  # a child's parameter, outside the child's forward
        if zero is not None:
            with zero.gathered(bias):
                x = x * self.scale + bias
        else:
            x = x * self.scale + bias
        return self.out(self.norm(x))


def awkward(dtype=torch.float32):
    torch.manual_seed(7)
    return Awkward().to(dtype)


def batch(step):
    g = torch.Generator().manual_seed(100 + step)
    x = torch.randint(0, 11, (3, 5), generator=g)
    y = torch.randint(0, 11, (3, 5), generator=g)
    return x, y


def reference_run(steps, kind=torch.optim.AdamW, **opt):
    """Plain torch, one process: every rank trains on the same batch, so the
    averaged gradient equals the local one."""
    m = awkward()
    o = kind(m.parameters(), **opt)
    losses = []
    for step in range(steps):
        x, y = batch(step)
        o.zero_grad()
        loss = F.cross_entropy(m(x).view(-1, 11), y.view(-1))
        loss.backward()
        o.step()
        losses.append(loss.item())
    return m, losses


def zero_run(zero, m, steps):
    """reference_run's training of m through zero: its losses."""
    losses = []
    for step in range(steps):
        x, y = batch(step)
        loss = F.cross_entropy(m(x, zero).view(-1, 11), y.view(-1))
        zero.backward(loss)
        zero.step()
        zero.zero_grad()
        losses.append(loss.item())
    return losses


@case
def test_tied_reused_and_in_place_modules_train_as_plain_torch_at_every_stage(ctx):
    opt = dict(lr=1e-2, weight_decay=0.05)
    ref, ref_losses = reference_run(6, **opt)
    for stage in STAGES:
        m = awkward()
        zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=256, **opt)
        losses = zero_run(zero, m, 6)
        near(torch.tensor(losses), torch.tensor(ref_losses), 1e-5, "stage %d losses" % stage)
        sd = m.state_dict()
        for k, v in ref.state_dict().items():
            # The unused module too: left as torch.optim leaves it.
            near(sd[k], v, 1e-4, "stage %d %s" % (stage, k))
        if stage == 3 and m.emb.weight.numel() != 0:
            raise AssertionError("stage 3 left the embedding gathered after the step")
        zero.close()
        near(m.emb.weight, ref.emb.weight, 1e-4, "stage %d close() gives the module back" % stage)


@case
def test_clip_grad_norm_returns_torchs_norm_and_clips_the_step_as_torch_does(ctx):
    """zero.clip_grad_norm_() between backward and step, as FSDP's: the norm
    torch.nn.utils.clip_grad_norm_ returns for the same gradients, and the
    step clipped as torch clips them (within rounding: ATen adds up each
    parameter's squares in its own order). A bound above every norm changes
    no bit of the unclipped run; a norm other than L2 is refused."""
    opt, max_norm, steps = dict(lr=1e-2, weight_decay=0.05), 0.5, 6
    ref = awkward()
    o = torch.optim.AdamW(ref.parameters(), **opt)
    want, want_norms = [], []
    for step in range(steps):
        x, y = batch(step)
        o.zero_grad()
        loss = F.cross_entropy(ref(x).view(-1, 11), y.view(-1))
        loss.backward()
        want_norms.append(torch.nn.utils.clip_grad_norm_(ref.parameters(), max_norm).item())
        o.step()
        want.append(loss.item())
    if min(want_norms) <= max_norm:
        raise AssertionError("the bound clips no step: norms %s" % want_norms)
    for stage in STAGES:
        runs = {}
        for bound in (max_norm, 1e6, None):
            m = awkward()
            zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=256, **opt)
            losses, norms = [], []
            for step in range(steps):
                x, y = batch(step)
                loss = F.cross_entropy(m(x, zero).view(-1, 11), y.view(-1))
                zero.backward(loss)
                if bound is not None:
                    norm = zero.clip_grad_norm_(bound)
                    if norm.dtype != torch.float32 or norm.dim() != 0:
                        raise AssertionError("the norm is %s of shape %s"
                                             % (norm.dtype, tuple(norm.shape)))
                    norms.append(norm.item())
                zero.step()
                zero.zero_grad()
                losses.append(loss.item())
            if bound == max_norm:
                raises(lambda: zero.clip_grad_norm_(1.0, norm_type=1), "norm_type=1",
                       "an L1 norm")
            zero.close()
            runs[bound] = losses, norms
        near(torch.tensor(runs[max_norm][1]), torch.tensor(want_norms), 1e-5,
             "stage %d norms" % stage)
        near(torch.tensor(runs[max_norm][0]), torch.tensor(want), 1e-5, "stage %d losses" % stage)
        if runs[1e6][0] != runs[None][0]:
            raise AssertionError("stage %d: a bound above every norm changed the losses: %s, "
                                 "unclipped %s" % (stage, runs[1e6][0], runs[None][0]))


class Branchy(nn.Module):
    """A branch taken on odd steps only, and a module never called."""

    def __init__(self):
        super().__init__()
        self.body = nn.Linear(6, 6)
        self.extra = nn.Linear(6, 6)
        self.never = nn.Linear(6, 6)
        self.head = nn.Linear(6, 3)

    def forward(self, x, step):
        y = torch.tanh(self.body(x))
        if step % 2:
            y = y + self.extra(x)
        return self.head(y)


def branchy_batch(step):
    g = torch.Generator().manual_seed(300 + step)
    return torch.randn(4, 6, generator=g), torch.randint(0, 3, (4,), generator=g)


def branchy_check(ctx, zero, m, stage, want, init):
    """Closes zero after comparing its module with torch's state dict want:
    bit for bit where the ranks are a power of two, within 1e-5 elsewhere; the
    module never called at its initial values init."""
    got = m.state_dict()
    zero.close()
    for k, v in want.items():
        if ctx.size & (ctx.size - 1):
            near(got[k], v, 1e-5, "stage %d %s" % (stage, k))
        elif not torch.equal(got[k], v):
            raise AssertionError("stage %d: %s differs from torch.optim.AdamW's by up to %.3g"
                                 % (stage, k, (got[k] - v).abs().max().item()))
    for k in ("never.weight", "never.bias"):
        if not torch.equal(got[k], init[k]):
            raise AssertionError("stage %d: %s moved from its initial values" % (stage, k))


@case
def test_a_branch_taken_on_some_steps_trains_as_torch_optim_adamw_bit_for_bit(ctx):
    """torch.optim.AdamW skips a parameter whose gradient is None: no weight
    decay, no moment update, and its own step count (bias correction) stays.
    Every rank trains on the same batch, so torch in one process is DDP's
    result; stages 0 and 3 give its bits, the rarely used branch's weights
    and the never used module's (its initial values) included. Bit for bit
    where the ranks are a power of two (the averaged gradient is then the
    local one exactly); within 1e-5 elsewhere."""
    opt = dict(lr=1e-2, weight_decay=0.1)
    torch.manual_seed(3)
    ref = Branchy()
    init = {k: v.clone() for k, v in ref.state_dict().items()}
    o = torch.optim.AdamW(ref.parameters(), **opt)
    for step in range(6):
        x, y = branchy_batch(step)
        o.zero_grad(set_to_none=True)  # torch >= 2.0's default; 1.13 zeroes them
        F.cross_entropy(ref(x, step), y).backward()
        o.step()
    want = ref.state_dict()
    for stage in (0, 3):
        torch.manual_seed(3)
        m = Branchy()
        zero = ZeRO(m, stage=stage, group=ctx.group, **opt)
        for step in range(6):
            x, y = branchy_batch(step)
            zero.backward(F.cross_entropy(m(x, step), y))
            zero.step()
            zero.zero_grad(set_to_none=True)
        branchy_check(ctx, zero, m, stage, want, init)


class OneRanksBranch(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(8, 8)
        self.b = nn.Linear(8, 8)

    def forward(self, x, take):
        h = torch.tanh(self.a(x))
        return self.b(h) if take else h


@case
def test_ranks_taking_different_branches_are_told_to_pass_find_unused_parameters(ctx):
    """Rank 0 alone runs a layer: without find_unused_parameters its buckets'
    reductions leave step with the others', and every rank's error says
    what to pass; with it the same steps train."""
    if ctx.size < 2:
        raise Skip("needs 2 ranks")
    x = torch.randn(4, 8, generator=torch.Generator().manual_seed(ctx.rank))
    for stage in (0, 2):
        # A communicator of its own: the mismatch leaves it unusable.
        comm = ctx.comm.split(0, ctx.rank)
        torch.manual_seed(3)
        m = OneRanksBranch()
        zero = ZeRO(m, stage=stage, comm=comm, bucket_size=64)

        def step():
            zero.backward(m(x, ctx.rank == 0).square().mean())
            zero.step()
        try:
            raises(step, "pass find_unused_parameters=True to ZeRO",
                   "stage %d, rank %d without find_unused_parameters" % (stage, ctx.rank))
        finally:
            zero.close()
            comm.close()
        torch.manual_seed(3)
        m = OneRanksBranch()
        zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=64, find_unused_parameters=True)
        try:
            for _ in range(2):
                step()
                zero.zero_grad()
        finally:
            zero.close()


@case
def test_micro_batches_under_no_sync_train_as_torch_optim_accumulating_bit_for_bit(ctx):
    """Two micro-batches a step, the first under no_sync(): the branch runs in
    the first only, so its gradient waits in p.grad and step() hands it
    over; the module never called stays as it was. Against torch.optim.AdamW
    accumulating the same micro-batches in one process (every rank trains on
    the same batch): its bits at every stage where the ranks are a power of
    two, within 1e-5 elsewhere."""
    opt = dict(lr=1e-2, weight_decay=0.1)
    torch.manual_seed(3)
    ref = Branchy()
    init = {k: v.clone() for k, v in ref.state_dict().items()}
    o = torch.optim.AdamW(ref.parameters(), **opt)
    for step in range(4):
        o.zero_grad(set_to_none=True)
        for k in (2 * step, 2 * step + 1):
            x, y = branchy_batch(k)
            (F.cross_entropy(ref(x, k + 1), y) / 2).backward()
        o.step()
    want = ref.state_dict()
    for stage in STAGES:
        torch.manual_seed(3)
        m = Branchy()
        zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=256, **opt)
        for step in range(4):
            for k in (2 * step, 2 * step + 1):
                x, y = branchy_batch(k)
                with zero.no_sync() if k % 2 == 0 else contextlib.nullcontext():
                    zero.backward(F.cross_entropy(m(x, k + 1), y) / 2)
                if k % 2 == 0 and m.extra.weight.grad is None:
                    raise AssertionError("stage %d: no_sync() left no gradient in p.grad" % stage)
            zero.step()
            zero.zero_grad(set_to_none=True)
        branchy_check(ctx, zero, m, stage, want, init)


@case
def test_adamw_left_to_its_defaults_trains_as_torch_optim_adamw_left_to_its_own(ctx):
    # torch.optim.AdamW decays by 0.01 when not told: so does ZeRO's AdamW.
    ref, ref_losses = reference_run(4, lr=1e-2)
    for stage in (0, 3):
        m = awkward()
        zero = ZeRO(m, stage=stage, group=ctx.group, lr=1e-2)
        losses = zero_run(zero, m, 4)
        near(torch.tensor(losses), torch.tensor(ref_losses), 1e-6, "stage %d losses" % stage)
        near(m.state_dict()["emb.weight"], ref.state_dict()["emb.weight"], 1e-5,
             "stage %d emb.weight" % stage)
        zero.close()


@case
def test_sgd_sees_gradients_averaged_over_the_ranks_as_ddp_does(ctx):
    # Adam hardly notices a gradient N times too large; SGD moves N times as far.
    ref, ref_losses = reference_run(4, torch.optim.SGD, lr=0.1, momentum=0.9)
    for stage in (0, 3):
        m = awkward()
        zero = ZeRO(m, stage=stage, group=ctx.group, optimizer="sgd", lr=0.1, momentum=0.9)
        zero_run(zero, m, 4)
        sd = m.state_dict()
        near(sd["emb.weight"], ref.state_dict()["emb.weight"], 1e-4, "stage %d" % stage)
        zero.close()


class Gain(nn.Module):
    """x * gain: autograd saves the parameter itself, so backward reads what
    the parameter holds then."""

    def __init__(self, n):
        super().__init__()
        self.gain = nn.Parameter(torch.randn(n))

    def forward(self, x):
        return x * self.gain


@case
def test_stage_3_with_qwz_gives_the_last_units_backward_the_exact_weights(ctx):
    """qwZ gathers the weights as int8 for the forward only. The unit that ran
    last in the forward is the first whose backward gathers, before any
    gradient exists: it must get the exact weights there, not the forward's
    int8 copy still cached. The linear layer's gradients go through the
    gain alone (the loss is a sum), so they are the unquantized run's, bit
    for bit."""
    def run(quantize):
        torch.manual_seed(11)
        m = nn.Sequential(nn.Linear(64, 64), Gain(64))
        zero = ZeRO(m, stage=3, group=ctx.group, optimizer="sgd", lr=1.0,
                    quantize_weights=quantize, quantize_block=64)
        grads = {}
        for name in ("weight", "bias"):
            getattr(m[0], name).register_hook(
                lambda g, name=name: grads.__setitem__(name, g.clone()))
        x = torch.randn(4, 64, generator=torch.Generator().manual_seed(5))
        zero.backward(m(x).sum())
        zero.step()
        stats = zero.stats()
        zero.close()
        return grads, stats

    (exact, plain), (got, quant) = run("off"), run("on")
    if not (quant["qwz_gathers"] > 0 and plain["qwz_gathers"] == 0):
        raise AssertionError("int8 gathers: %d with qwZ, %d without"
                             % (quant["qwz_gathers"], plain["qwz_gathers"]))
    for k in ("weight", "bias"):
        if not torch.equal(got[k], exact[k]):
            raise AssertionError("the linear layer's %s gradient differs from the unquantized "
                                 "run's by up to %.3g: the gain's backward saw rounded values"
                                 % (k, (got[k] - exact[k]).abs().max().item()))


@case
def test_stage_3_with_qwz_in_bf16_and_fp16_quantizes_the_forward_within_its_bound(ctx):
    """ZeRO(..., quantize_weights="on") on a bf16 or fp16 module: the forward
    computes with int8 weights (its output differs from the unquantized
    run's, each weight by no more than half its block's step and one
    rounding in the precision), the int8 gathers are counted, and backward
    and the step go on in the precision."""
    def run(dtype, quantize):
        torch.manual_seed(11)
        m = Gain(256).to(dtype)
        gain = m.gain.detach().float().clone()
        zero = ZeRO(m, stage=3, group=ctx.group, optimizer="sgd", lr=0.1,
                    quantize_weights=quantize, quantize_block=64)
        x = torch.randn(4, 256, generator=torch.Generator().manual_seed(5)).to(dtype)
        y = m(x)
        zero.backward(y.float().sum())
        zero.step()
        stats = zero.stats()
        zero.close()
        return y.detach().float(), x.float(), gain, stats

    for dtype, u in ((torch.bfloat16, 2.0 ** -8), (torch.float16, 2.0 ** -11)):
        (exact, x, gain, plain), (got, _, _, quant) = run(dtype, "off"), run(dtype, "on")
        if not (quant["qwz_gathers"] > 0 and plain["qwz_gathers"] == 0):
            raise AssertionError("%s int8 gathers: %d with qwZ, %d without"
                                 % (dtype, quant["qwz_gathers"], plain["qwz_gathers"]))
        # Each weight within half the largest block's step (blocks restart at
        # each rank's part, so take the largest) and one rounding into the
        # precision; each product rounded in the precision with and without.
        half = gain.abs().view(-1, 64).amax(1).repeat_interleave(64) / 127 / 2 * 1.001
        bound = x.abs() * (half.max() + gain.abs() * u) + (exact.abs() + got.abs()) * u
        if torch.equal(got, exact) or not bool(((got - exact).abs() <= bound).all()):
            raise AssertionError("%s forward with qwZ: differs from the exact one by %.3g, "
                                 "beyond the bound where it does, or not at all"
                                 % (dtype, (got - exact).abs().max().item()))


def _saved_weight_bytes(module, run):
    """run() under a hook that sees what autograd saves for backward: (its
    result, the tensors saved that are module's parameters or views of
    them, their storages' bytes now)."""
    params = {id(p) for p in module.parameters()}
    saved = []

    def pack(t):
        saved.append(t)
        return t

    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        out = run()
    weights = [t for t in saved if id(t) in params or id(t._base) in params]
    held = sum(t.storage().nbytes() if not hasattr(t, "untyped_storage")
               else t.untyped_storage().nbytes() for t in weights)
    return out, len(weights), held


@case
def test_stage_3_saved_weights_hold_no_memory_between_forward_and_backward(ctx):
    """F.linear saves a view of the weight for backward. Stage 3 frees a
    unit's weights after its forward; the views autograd saved must not
    keep them, or the whole model's weights stay until backward. Backward
    then gathers them again and gives plain torch's gradients."""
    def linears():
        torch.manual_seed(21)
        return nn.Sequential(*[nn.Sequential(nn.Linear(96, 96), nn.ReLU()) for _ in range(4)])

    def encoder():
        torch.manual_seed(22)
        layer = nn.TransformerEncoderLayer(32, 2, dim_feedforward=64, dropout=0.0,
                                           batch_first=True)
        return nn.TransformerEncoder(layer, 2)

    for build, shape in ((linears, (3, 96)), (encoder, (2, 5, 32))):
        m = build()
        ref = build()
        zero = ZeRO(m, stage=3, group=ctx.group)
        try:
            x = torch.randn(*shape, generator=torch.Generator().manual_seed(4))
            xz, xr = x.clone().requires_grad_(), x.clone().requires_grad_()
            out, nweights, held = _saved_weight_bytes(m, lambda: m(xz))
            if nweights == 0:
                raise AssertionError("%s: autograd saved no weight" % build.__name__)
            if held:
                raise AssertionError("%s: %d weights saved for backward hold %d bytes between "
                                     "the forward and the backward" % (build.__name__, nweights,
                                                                       held))
            zero.backward(out.square().sum())
            ref(xr).square().sum().backward()
            if not torch.equal(xz.grad, xr.grad):
                raise AssertionError("%s: the input's gradient differs from plain torch's by "
                                     "%.3g" % (build.__name__,
                                               (xz.grad - xr.grad).abs().max().item()))
        finally:
            zero.close()


class Queries(nn.Module):
    """Returns a view of its own weight (learned queries, expanded)."""

    def __init__(self):
        super().__init__()
        self.q = nn.Parameter(torch.randn(4, 8))

    def forward(self, x):
        return self.q.expand(x.shape[0], 4, 8)


class OnQueries(nn.Module):
    def __init__(self):
        super().__init__()
        self.queries = Queries()
        self.proj = nn.Linear(8, 8)

    def forward(self, x):
        return self.proj(self.queries(x) + x)


@case
def test_stage_3_unit_returning_a_view_of_its_weight_computes_as_plain_torch(ctx):
    """A unit whose output is a view of its weight: the release after its
    forward frees the weight's storage, so the output must not be left
    pointing there."""
    torch.manual_seed(23)
    m, ref = OnQueries(), OnQueries()
    ref.load_state_dict(m.state_dict())
    zero = ZeRO(m, stage=3, group=ctx.group, optimizer="sgd", lr=0.1)
    try:
        grads = {}
        m.queries.q.register_hook(lambda g: grads.__setitem__("q", g.clone()))
        x = torch.randn(2, 4, 8, generator=torch.Generator().manual_seed(8))
        out, want = m(x), ref(x)
        zero.backward(out.square().sum())
        want.square().sum().backward()
        if not (torch.equal(out, want) and torch.equal(grads["q"], ref.queries.q.grad)):
            raise AssertionError("the output or the weight's gradient differs from plain torch's")
    finally:
        zero.close()


@case
def test_stage_3_with_qwz_backward_reads_the_exact_weights_through_linear_layers(ctx):
    """nn.Linear saves a view of its weight for backward: that view must see
    backward's exact gather, not keep the forward's int8 one. The loss is
    linear in the output, so the input's gradient and the first layer's
    gradients go through exact weights only: the unquantized run's bits."""
    def run(quantize):
        torch.manual_seed(12)
        m = nn.Sequential(nn.Linear(64, 64), nn.Linear(64, 64))
        zero = ZeRO(m, stage=3, group=ctx.group, optimizer="sgd", lr=1.0,
                    quantize_weights=quantize, quantize_block=64)
        grads = {}
        for name in ("weight", "bias"):
            getattr(m[0], name).register_hook(
                lambda g, name=name: grads.__setitem__(name, g.clone()))
        g = torch.Generator().manual_seed(6)
        x = torch.randn(4, 64, generator=g).requires_grad_()
        c = torch.randn(4, 64, generator=g)
        out = m(x)
        zero.backward((out * c).sum())
        grads["input"] = x.grad
        zero.step()
        zero.close()
        return out.detach(), grads

    (exact_out, exact), (quant_out, got) = run("off"), run("on")
    if torch.equal(exact_out, quant_out):
        raise AssertionError("the forward with qwZ gave the exact output: nothing was quantized")
    for k in ("input", "weight", "bias"):
        if not torch.equal(got[k], exact[k]):
            raise AssertionError("the %s gradient differs from the unquantized run's by up to "
                                 "%.3g: backward computed through the forward's int8 weights"
                                 % (k, (got[k] - exact[k]).abs().max().item()))


@case
def test_stage_3_with_qwz_reads_out_the_exact_weights(ctx):
    """state_dict(), Optimizer.gather() and close() read the exact values,
    before and after steps, not qwZ's int8 gather; and reading them leaves
    the next forward quantized as it would have been. The loss is linear in
    the output, so the updates do not depend on the forward's values."""
    def run(quantize, read):
        torch.manual_seed(13)
        m = nn.Linear(64, 48)
        zero = ZeRO(m, stage=3, group=ctx.group, optimizer="sgd", lr=0.5,
                    quantize_weights=quantize, quantize_block=64)
        g = torch.Generator().manual_seed(7)
        dicts, outs = [], []
        for _ in range(2):
            if read:
                dicts.append(m.state_dict())
                z = zero.optimizer.params[0]
                dicts.append({"gather": zero.optimizer.gather(z, torch.empty(z.numel))})
            x, c = torch.randn(4, 64, generator=g), torch.randn(4, 48, generator=g)
            out = m(x)
            outs.append(out.detach())
            zero.backward((out * c).sum())
            zero.step()
            zero.zero_grad()
        dicts.append(m.state_dict())
        zero.close()
        dicts.append({"closed." + n: p.detach().clone() for n, p in m.named_parameters()})
        return dicts, outs

    (exact, exact_outs), (got, quant_outs) = run("off", True), run("on", True)
    _, unread_outs = run("on", False)
    for k, (a, b) in enumerate(zip(got, exact)):
        for name in b:
            if not torch.equal(a[name], b[name]):
                raise AssertionError("read %d, %s: differs from the unquantized run's by up to "
                                     "%.3g" % (k, name, (a[name] - b[name]).abs().max().item()))
    if any(torch.equal(a, b) for a, b in zip(quant_outs, exact_outs)):
        raise AssertionError("a forward with qwZ gave the exact output: nothing was quantized")
    if not all(torch.equal(a, b) for a, b in zip(quant_outs, unread_outs)):
        raise AssertionError("reading the weights out changed the next quantized forward")


@case
def test_load_state_dict_reaches_the_shards_and_master_weights(ctx):
    ref, _ = reference_run(3, lr=1e-2)
    want = ref.state_dict()
    for stage in STAGES:
        for dtype in (torch.float32, torch.bfloat16):
            m = awkward(dtype)
            zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=256, lr=1e-2,
                        weight_decay=0.0)
            m.load_state_dict({k: v.to(dtype) for k, v in want.items()})
            got = m.state_dict()
            for k, v in want.items():
                near(got[k].float(), v.to(dtype).float(), 0, "stage %d %s %s" % (stage, dtype, k))
            # A step from the loaded values with zero gradients and no decay
            # keeps them: the masters were loaded too (else it would jump back).
            zero.step()
            after = m.state_dict()
            for k, v in want.items():
                near(after[k].float(), v.to(dtype).float(), 0,
                     "stage %d %s %s after a step" % (stage, dtype, k))
            # A step with gradients updates the masters: from the loaded
            # values, as on a module that held them when its ZeRO was made.
            zero_run(zero, m, 1)
            fresh = awkward(dtype)
            fresh.load_state_dict({k: v.to(dtype) for k, v in want.items()})
            zero2 = ZeRO(fresh, stage=stage, group=ctx.group, bucket_size=256, lr=1e-2,
                         weight_decay=0.0)
            zero_run(zero2, fresh, 1)
            got, expect = m.state_dict(), fresh.state_dict()
            for k, v in expect.items():
                near(got[k].float(), v.float(), 0, "stage %d %s %s after a trained step"
                     % (stage, dtype, k))
            zero2.close()
            zero.close()


@case
def test_bf16_gradients_are_averaged_by_the_layer_at_a_power_of_two_rank_count_with_torchs_bits(ctx):
    """bf16 gradients go over in one call, averaged as the layer copies
    them, where the factor 1/ranks is a power of two (torch 1.13 rounds a
    half type's factor to the type first: exact there, so the same bits);
    elsewhere torch multiplies. Either way the training is that of
    gradients multiplied by torch. (fp16 takes the same path; torch 1.13
    has no fp16 matmul on CPU to train with.)"""
    exact = ctx.size in (1, 2, 4, 8)
    for dtype in (torch.bfloat16,):
        for stage in (0, 2, 3):
            runs = []
            for layer_scales in (True, False):
                m = awkward(dtype)
                # SGD: the step is the gradient's size (Adam's hardly is).
                zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=256, optimizer="sgd",
                            lr=0.1, momentum=0.9)
                calls = []
                real = zero.optimizer.grad_lend

                def spy(param, grad, mul, wait=False, real=real, calls=calls):
                    calls.append(mul)
                    real(param, grad, mul, wait)
                zero.optimizer.grad_lend = spy
                zero._scale_on_hand_over = layer_scales and zero._scale_on_hand_over
                losses = zero_run(zero, m, 3)
                runs.append((losses, copy.deepcopy(m.state_dict())))
                zero.close()
                if layer_scales and bool(calls) != exact:
                    raise AssertionError("%s stage %d, %d ranks: %d gradients averaged by the "
                                         "layer" % (dtype, stage, ctx.size, len(calls)))
                if calls and set(calls) != {1.0 / ctx.size}:
                    raise AssertionError("factors %s" % sorted(set(calls)))
            if runs[0][0] != runs[1][0]:
                raise AssertionError("%s stage %d: losses %s by the layer, %s by torch"
                                     % (dtype, stage, runs[0][0], runs[1][0]))
            for k, v in runs[1][1].items():
                if not torch.equal(runs[0][1][k], v):
                    raise AssertionError("%s stage %d: %s differs" % (dtype, stage, k))


def bf16_resumed(stage, group, msd, osd, optimizer_first):
    """A fresh bf16 Awkward and ZeRO given the module's and the optimizer's
    state dicts, the optimizer's first or last, then 2 steps: its losses,
    module state dict and masters."""
    m = awkward(torch.bfloat16)
    zero = ZeRO(m, stage=stage, group=group, bucket_size=256, lr=1e-2)
    if optimizer_first:
        zero.load_state_dict(osd)
    m.load_state_dict(msd)
    if not optimizer_first:
        zero.load_state_dict(osd)
    losses = zero_run(zero, m, 2)
    out = (losses, copy.deepcopy(m.state_dict()), zero.state_dict())
    zero.close()
    return out


@case
def test_a_mixed_precision_state_dict_keeps_the_master_weights_in_either_load_order(ctx):
    """bf16 at every stage: each entry of zero.state_dict() holds the
    parameter's fp32 master weights ("master_weight"), which round to the
    module's parameters and hold more than them; a fresh module and ZeRO
    given model.state_dict() and zero.state_dict(), in either order, train
    on with the first's losses, parameters and masters, bit for bit (with
    the masters left out they do not); an fp32 ZeRO takes the masters as its
    parameters. At stage 3 an element changed in place inside gathered()
    takes the new value as its master; the others keep theirs."""
    for stage in STAGES:
        m = awkward(torch.bfloat16)
        zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=256, lr=1e-2)
        zero_run(zero, m, 3)
        # Copies: at stages 0-2 the module's dict holds the parameters themselves.
        osd, msd = zero.state_dict(), copy.deepcopy(m.state_dict())
        names = [name for name, _ in m.named_parameters()]
        richer = 0
        for n, entry in osd["state"].items():
            master = entry["master_weight"]
            if master.dtype != torch.float32 or not torch.equal(master.bfloat16(), msd[names[n]]):
                raise AssertionError("stage %d: %s's master_weight (%s) does not round to the "
                                     "parameter" % (stage, names[n], master.dtype))
            richer += int((master != msd[names[n]].float()).sum())
        if richer < 20:
            raise AssertionError("stage %d: only %d masters differ from their parameters "
                                 "widened: the test cannot tell them apart" % (stage, richer))
        want = (zero_run(zero, m, 2), copy.deepcopy(m.state_dict()), zero.state_dict())
        for optimizer_first in (False, True):
            got = bf16_resumed(stage, ctx.group, msd, osd, optimizer_first)
            what = "stage %d, the optimizer's dict loaded %s" % (
                stage, "first" if optimizer_first else "last")
            if got[0] != want[0]:
                raise AssertionError("%s: losses %s, not %s" % (what, got[0], want[0]))
            for k, v in want[1].items():
                if not torch.equal(got[1][k], v):
                    raise AssertionError("%s: %s differs" % (what, k))
            for n, entry in want[2]["state"].items():
                if not torch.equal(got[2]["state"][n]["master_weight"], entry["master_weight"]):
                    raise AssertionError("%s: %s's master_weight differs" % (what, names[n]))
        # An fp32 ZeRO given the bf16 run's dicts: the masters are its parameters.
        m32 = awkward()
        zero32 = ZeRO(m32, stage=stage, group=ctx.group, bucket_size=256, lr=1e-2)
        m32.load_state_dict(msd)
        zero32.load_state_dict(osd)
        got32 = m32.state_dict()
        for n, entry in osd["state"].items():
            if not torch.equal(got32[names[n]], entry["master_weight"]):
                raise AssertionError("stage %d: fp32 %s is not the bf16 run's master"
                                     % (stage, names[n]))
        zero32.close()
        stripped = copy.deepcopy(osd)
        for entry in stripped["state"].values():
            del entry["master_weight"]
        got = bf16_resumed(stage, ctx.group, msd, stripped, False)
        if all(torch.equal(got[1][k], v) for k, v in want[1].items()):
            raise AssertionError("stage %d: resumed without the masters, the same parameters: "
                                 "the test cannot tell" % stage)
        if stage == 3:
            n = names.index("emb.weight")
            before = zero.state_dict()["state"][n]["master_weight"].clone()
            with zero.gathered(m.emb.weight):
                with torch.no_grad():
                    m.emb.weight.view(-1)[0] = 0.75
            after = zero.state_dict()["state"][n]["master_weight"]
            before.view(-1)[0] = 0.75
            if not torch.equal(after, before):
                raise AssertionError("stage 3: after a change of one element inside gathered(), "
                                     "%d masters of emb.weight differ from before"
                                     % int((after != before).sum()))
        zero.close()


@case
def test_the_modules_own_state_dict_and_load_state_dict_reach_the_layer_at_every_stage(ctx):
    """A training loop's checkpoint code, unmodified: model.state_dict() gives
    every parameter whole (at stage 3 gathered, not the empty tensor a
    released parameter holds), the bits the parameters hold gathered, and a
    plain torch model loaded from it computes what the trained one does;
    model.load_state_dict() (and a submodule's) writes into the layer, and a
    wrong shape is reported with the model's real one. At stage 3 the calls
    are collective, and ranks calling them for different modules are told
    so."""
    for stage in STAGES:
        m = awkward()
        zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=256, lr=1e-2)
        zero_run(zero, m, 2)
        sd = m.state_dict()
        with zero.gathered(*m.parameters()):
            want = {k: v.detach().clone() for k, v in m.state_dict(keep_vars=True).items()}
        for k, v in want.items():
            if not torch.equal(sd[k], v):
                raise AssertionError("stage %d: model.state_dict()[%r] has shape %s, "
                                     "the gathered one %s" % (stage, k, tuple(sd[k].shape),
                                                                 tuple(v.shape)))
        saved = io.BytesIO()
        torch.save(sd, saved)
        saved.seek(0)
        plain = Awkward()
        plain.load_state_dict(torch.load(saved))
        x, _ = batch(5)
        with torch.no_grad():
            got, expect = m(x, zero), plain(x)
        if not torch.equal(got, expect):
            raise AssertionError("stage %d: a plain model loaded from model.state_dict() "
                                 "computes other values" % stage)
        new = {k: v * 0.5 if v.is_floating_point() else v for k, v in want.items()}
        m.load_state_dict(new)
        m.block[0].load_state_dict({"weight": new["block.0.weight"] + 1,
                                    "bias": new["block.0.bias"]})
        new["block.0.weight"] = new["block.0.weight"] + 1
        after = m.state_dict()
        for k, v in new.items():
            if not torch.equal(after[k], v):
                raise AssertionError("stage %d: model.load_state_dict() left %s at other values"
                                     % (stage, k))
        bad = dict(new)
        bad["norm.weight"] = torch.zeros(3)
        raises(lambda: m.load_state_dict(bad),
               "size mismatch for norm.weight: copying a param with shape torch.Size([3]) "
               "from checkpoint, the shape in current model is torch.Size([6])",
               "stage %d: a wrong shape" % stage)
        if stage == 3 and ctx.size > 1:
            # Collective there: ranks at different modules are told so, and
            # stay in step (each made the one agreement).
            raises(lambda: (m if ctx.rank == 0 else m.block).state_dict(),
                   "state_dict() at stage 3 is collective", "ranks at different modules")
            zero_run(zero, m, 1)
        zero.close()


@case
def test_a_bad_optimizer_state_dict_is_refused_by_name_and_changes_nothing(ctx):
    """load_optim_state_dict() checks all of a torch.optim state dict first:
    another number of groups or parameters, a state of another shape or
    rule, amsgrad, other betas, a gradient pending are refused, naming what,
    and the states stay as they were; a good one, with another rate, loads
    and training goes on."""
    m = awkward()
    zero = ZeRO(m, stage=3, group=ctx.group, bucket_size=256, lr=1e-2)
    zero_run(zero, m, 2)
    good = zero.optim_state_dict()
    first = next(iter(good["state"]))

    def changed(edit):
        d = copy.deepcopy(good)
        edit(d)
        return d

    bad = [
        ({"state": {}}, "has 'state' and 'param_groups'"),
        (changed(lambda d: d["param_groups"].append(dict(d["param_groups"][0]))),
         "2 parameter groups, this ZeRO 1"),
        (changed(lambda d: d["param_groups"][0]["params"].pop()), "parameters in the state dict"),
        (changed(lambda d: d["state"][first].update(exp_avg=torch.zeros(2))),
         "exp_avg of parameter %d is (2,)" % first),
        (changed(lambda d: d["state"][first].update(max_exp_avg_sq=torch.zeros(2))),
         "adamw here keeps"),
        (changed(lambda d: d["param_groups"][0].update(amsgrad=True)), "'amsgrad'"),
        (changed(lambda d: d["param_groups"][0].update(betas=(0.8, 0.9))), "'betas'"),
        (changed(lambda d: d["state"].update({99: good["state"][first]})),
         "parameter 99, which no group holds"),
    ]
    for d, text in bad:
        raises(lambda: zero.load_optim_state_dict(d), text, text)
    x, y = batch(0)
    zero.backward(F.cross_entropy(m(x, zero).view(-1, 11), y.view(-1)))
    raises(lambda: zero.load_optim_state_dict(good), "gradients were handed over",
           "a gradient pending")
    raises(lambda: zero.optim_state_dict(), "gradients were handed over", "a gradient pending")
    zero.zero_grad()
    after = zero.optim_state_dict()
    for n, entry in good["state"].items():
        for k, v in entry.items():
            if not torch.equal(after["state"][n][k], v):
                raise AssertionError("a refused load changed parameter %d's %s" % (n, k))
    zero.load_optim_state_dict(changed(lambda d: d["param_groups"][0].update(lr=5e-3)))
    if zero.param_groups[0]["lr"] != 5e-3:
        raise AssertionError("the loaded rate is %r" % zero.param_groups[0]["lr"])
    zero_run(zero, m, 1)
    zero.close()


@case
def test_load_state_dict_with_a_wrong_shape_changes_nothing(ctx):
    """The module's load_state_dict() checks every parameter below the module
    called before it writes any (torch's own would write the modules before
    the one at fault); ZeRO's load_state_dict() is the optimizer's, and a
    module's state dict given to it is refused, naming model.load_state_dict."""
    m = awkward()
    zero = ZeRO(m, stage=3, group=ctx.group)
    before = m.state_dict()
    bad = dict(before)
    bad["scale"] = torch.zeros(6)  # loaded first: torch's own load would write it
    bad["emb.weight"] = torch.zeros(11, 6)
    bad["norm.weight"] = torch.zeros(7)
    raises(lambda: m.load_state_dict(bad), "size mismatch for norm.weight", "a wrong shape")
    raises(lambda: zero.load_state_dict(bad), "not a module's (scale, emb.weight", "a module's dict")
    raises(lambda: m.load_state_dict({"emb.weight": before["emb.weight"]}), "Missing key(s)",
           "a partial state dict")
    after = m.state_dict()
    for k, v in before.items():
        near(after[k], v, 0, k)
    zero.close()


@case
def test_bf16_training_is_the_same_at_every_stage(ctx):
    # fp32 master weights and states everywhere: sharding must not change the arithmetic.
    runs = []
    for stage in STAGES:
        m = awkward(torch.bfloat16)
        zero = ZeRO(m, stage=stage, group=ctx.group, lr=1e-2, bucket_size=256)
        losses = []
        for step in range(4):
            x, y = batch(step)
            loss = F.cross_entropy(m(x, zero).float().view(-1, 11), y.view(-1))
            zero.backward(loss)
            zero.step()
            losses.append(loss.item())
        st = zero.stats()
        if st["state_bytes"] == 0:
            raise AssertionError("no master weights or states counted: %s" % st)
        zero.close()
        runs.append(losses)
    for stage, losses in zip(STAGES[1:], runs[1:]):
        near(torch.tensor(losses), torch.tensor(runs[0]), 1e-6, "bf16 stage %d vs 0" % stage)


class Bigram(nn.Module):
    """Embeddings and elementwise ops only: torch 1.13 has no fp16 matmul on CPU."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 11)
        self.gain = nn.Parameter(torch.ones(11))

    def forward(self, idx):
        return self.emb(idx) * self.gain


@case
def test_fp16_scales_the_loss_and_trains(ctx):
    torch.manual_seed(3)
    m = Bigram().half()
    zero = ZeRO(m, stage=2, group=ctx.group, lr=1e-2, bucket_size=64, loss_scale=1024.0)
    if zero.loss_scale != 1024.0:
        raise AssertionError("loss_scale is %s" % zero.loss_scale)
    applied = []
    for step in range(4):
        x, y = batch(step)
        loss = F.cross_entropy(m(x).float().view(-1, 11), y.view(-1))
        zero.backward(loss)
        applied.append(zero.step())
    if not all(applied) or zero.stats()["skipped_steps"] != 0:
        raise AssertionError("steps applied %s, stats %s" % (applied, zero.stats()))
    zero.close()


def fp16_steps(zero, m, steps, first):
    """Bigram steps from batch first on: (loss, applied, scale) each."""
    out = []
    for step in range(first, first + steps):
        x, y = batch(step)
        loss = F.cross_entropy(m(x).float().view(-1, 11), y.view(-1))
        scale = zero.loss_scale
        zero.backward(loss)
        out.append((loss.item(), zero.step(), scale))
        zero.zero_grad()
    return out


@case
def test_an_fp16_state_dict_carries_the_loss_scaler_and_resumes_the_same_skips(ctx):
    """Dynamic loss scaling from 2**20 with a window of 3 steps: steps
    overflow, are skipped and halve the scale, and clean ones double it.
    zero.state_dict() holds "loss_scaler" ({"scale", "clean_steps"}) beside
    the masters; a fresh module and ZeRO given both dicts skip the same
    steps at the same scales with the same losses and parameters, at every
    stage. Without it the resumed run starts at 2**20 again and does not. A
    scaler out of range is refused and changes nothing; an fp32 ZeRO's dict
    has none."""
    def make():
        torch.manual_seed(3)
        m = Bigram().half()
        return m, ZeRO(m, stage=stage, group=ctx.group, lr=1e-2, bucket_size=64,
                       loss_scale=2.0 ** 20, loss_scale_window=3)

    for stage in STAGES:
        m, zero = make()
        first = fp16_steps(zero, m, 5, 0)
        osd, msd = zero.state_dict(), copy.deepcopy(m.state_dict())
        want = (fp16_steps(zero, m, 6, 5), m.state_dict())
        seen = first + want[0]
        if all(a for _, a, _ in seen) or not any(a for _, a, _ in seen[5:]) or \
                len({s for _, _, s in seen}) < 3:
            raise AssertionError("stage %d: steps (loss, applied, scale) %s: the scale should "
                                 "have halved and doubled" % (stage, seen))
        if set(osd["loss_scaler"]) != {"scale", "clean_steps"}:
            raise AssertionError("stage %d: loss_scaler %r" % (stage, osd.get("loss_scaler")))
        for strip in (False, True):
            m2, zero2 = make()
            given = copy.deepcopy(osd)
            if strip:
                del given["loss_scaler"]
            m2.load_state_dict(msd)
            zero2.load_state_dict(given)
            got = (fp16_steps(zero2, m2, 6, 5), m2.state_dict())
            same = got[0] == want[0] and all(torch.equal(got[1][k], v)
                                             for k, v in want[1].items())
            if same == strip:
                raise AssertionError("stage %d, %s: steps %s, against %s" % (
                    stage, "the scaler left out" if strip else "resumed", got[0], want[0]))
            if not strip:
                for bad in ({"scale": -1.0, "clean_steps": 0}, {"scale": 8.0, "clean_steps": 3},
                            {"scale": 8.0}):
                    before = zero2.state_dict()
                    given["loss_scaler"] = bad
                    raises(lambda: zero2.load_state_dict(given), "loss_scaler" if len(bad) == 1
                           else "zsh_optim_set_loss_scaler", "stage %d: scaler %r" % (stage, bad))
                    if zero2.state_dict()["loss_scaler"] != before["loss_scaler"]:
                        raise AssertionError("stage %d: a refused scaler %r changed it" % (stage, bad))
            zero2.close()
        zero.close()
    plain = ZeRO(Bigram(), group=ctx.group)
    if "loss_scaler" in plain.state_dict():
        raise AssertionError("an fp32 ZeRO's state dict has a loss_scaler")
    plain.close()


# ---- refusals and the contract -------------------------------------------------------

@case
def test_a_second_backward_before_step_is_refused_naming_no_sync(ctx):
    m = awkward()
    zero = ZeRO(m, stage=1, group=ctx.group)
    x, y = batch(0)
    F.cross_entropy(m(x).view(-1, 11), y.view(-1)).backward()
    raises(lambda: F.cross_entropy(m(x).view(-1, 11), y.view(-1)).backward(),
           "accumulate micro-batches under `with zero.no_sync():`", "a second backward")
    zero.zero_grad()
    F.cross_entropy(m(x).view(-1, 11), y.view(-1)).backward()
    with zero.no_sync():  # the step's gradients are handed over already
        raises(lambda: F.cross_entropy(m(x).view(-1, 11), y.view(-1)).backward(),
               "second gradient before step()", "a backward under no_sync() after one outside")
    zero.zero_grad()
    F.cross_entropy(m(x).view(-1, 11), y.view(-1)).backward()
    zero.step()
    zero.close()


@case
def test_param_groups_are_checked_before_training_and_their_settings_fixed_after(ctx):
    """torch.optim's groups of the module's parameters: each group's own
    weight_decay reaches the layer; a parameter left out, in two groups or
    not the module's, a group with another layer setting, a schedule that
    gives the groups different rates, and a changed weight decay are refused,
    naming what."""
    torch.manual_seed(3)
    m = nn.Sequential(nn.Linear(4, 4), nn.LayerNorm(4), nn.Linear(4, 2))
    mats = [p for p in m.parameters() if p.dim() == 2]
    vecs = [p for p in m.parameters() if p.dim() == 1]
    bad = [
        ([{"params": mats}], "leave out 4 trainable parameters (0.bias, 1.weight, 1.bias, 2.bias)"),
        ([{"params": mats}, {"params": vecs + mats[:1]}], "is in param_groups[0] and [1]"),
        ([{"params": mats + vecs + [nn.Parameter(torch.zeros(2))]}],
         "holds a tensor of shape (2,), not a trainable parameter"),
        ([{"params": mats}, {"params": vecs, "lr": 0.5}], "param_groups[1]['lr'] is 0.5"),
        ([{"params": mats}, {"params": vecs, "weight_decay": -1.0}], "weight_decay=-1"),
        ({"params": mats}, "must be a list of dicts"),
    ]
    for groups, text in bad:
        raises(lambda: ZeRO(m, stage=3, group=ctx.group, param_groups=groups), text, text)
    zero = ZeRO(m, stage=3, group=ctx.group, lr=0.01, weight_decay=0.1,
                param_groups=[{"params": mats},
                              {"params": iter(vecs), "weight_decay": 0.0, "betas": [0.9, 0.999]}])
    try:
        assert [g["weight_decay"] for g in zero.param_groups] == [0.1, 0.0], zero.param_groups
        x = torch.randn(3, 4)
        zero.backward(m(x).sum())
        zero.param_groups[1]["lr"] = 0.02
        raises(zero.step, "the parameter groups' 'lr' differ (0.01, 0.02)", "two rates")
        zero.param_groups[1]["lr"] = 0.01
        zero.param_groups[1]["weight_decay"] = 0.1
        raises(zero.step, "param_groups[1]['weight_decay'] is 0.1, set to 0.0", "a new decay")
        zero.param_groups[1]["weight_decay"] = 0.0
        sched = torch.optim.lr_scheduler.LambdaLR(zero, lambda n: 0.5)
        assert zero.step() is True
        sched.step()
        assert zero.optimizer.lr == 0.005, zero.optimizer.lr
    finally:
        zero.close()


@case
def test_bad_modules_and_groups_are_refused_with_the_reason(ctx):
    mixed = nn.Linear(2, 2)
    mixed.bias.data = mixed.bias.data.double()
    raises(lambda: ZeRO(mixed, group=ctx.group), "must have one dtype", "mixed dtypes")
    frozen = nn.Linear(2, 2).requires_grad_(False)
    raises(lambda: ZeRO(frozen, group=ctx.group), "no trainable parameters", "a frozen module")
    raises(lambda: ZeRO(nn.Linear(2, 2).double(), group=ctx.group), "float32, bfloat16 or float16",
           "float64")
    raises(lambda: ZeRO(nn.Linear(2, 2), group=ctx.group, stage=4), "stage 4", "stage 4")
    raises(lambda: ZeRO(nn.Linear(2, 2), group=ctx.gloo), "zsh backend", "a gloo group")
    spread = nn.Sequential(nn.Linear(2, 2), nn.Linear(2, 2, device="meta"))
    raises(lambda: ZeRO(spread, group=ctx.group),
           "on 2 devices: 0.weight, 0.bias on cpu; 1.weight, 1.bias on meta", "two devices")
    raises(lambda: ZeRO(nn.Linear(2, 2, device="meta"), group=ctx.group),
           "dense CPU or CUDA parameters", "a module on meta")
    raises(lambda: ZeRO(nn.Linear(2, 2), group=ctx.group, find_unused_parameters="yes"),
           "find_unused_parameters must be True or False", "find_unused_parameters='yes'")


@case
def test_param_groups_lr_reaches_the_layer_and_other_changes_are_refused_by_name(ctx):
    torch.manual_seed(3)
    m = nn.Linear(4, 3)
    x = torch.randn(5, 4)
    zero = ZeRO(m, stage=3, group=ctx.group, lr=0.01, betas=(0.9, 0.95), weight_decay=0.1)
    tmp = [tempfile.mkdtemp(prefix="zsh-pytest-lr-", dir="/var/tmp") if ctx.rank == 0 else None]
    dist.broadcast_object_list(tmp, src=0, group=ctx.gloo)
    try:
        assert isinstance(zero, torch.optim.Optimizer)
        group, = zero.param_groups
        assert (group["lr"], group["betas"], group["weight_decay"]) == (0.01, (0.9, 0.95), 0.1), \
            group
        assert group["params"] == list(m.parameters())
        raises(lambda: zero.add_param_group({"params": [nn.Parameter(torch.zeros(1))]}),
               "made with it (param_groups=)", "a second group")
        raises(lambda: zero.step(lambda: 0.0), "takes no closure", "a closure")
        m(x).sum().backward()
        group["betas"] = (0.8, 0.95)
        raises(zero.step, "param_groups[0]['betas'] is (0.8, 0.95)", "changed betas")
        group["betas"] = (0.9, 0.95)
        group["lr"] = float("nan")
        raises(zero.step, "lr=nan", "a NaN rate")
        assert zero.optimizer.lr == 0.01, "a refused rate changed the layer's"
        group["lr"] = 0.002
        assert zero.step() is True  # the gradients waited through both refusals
        assert zero.optimizer.lr == 0.002
        zero.zero_grad()
        zero.save(tmp[0])
        torch.manual_seed(3)
        again = ZeRO(nn.Linear(4, 3), stage=1, group=ctx.group, lr=0.05, betas=(0.9, 0.95),
                     weight_decay=0.1)
        try:
            again.load(tmp[0])
            assert again.param_groups[0]["lr"] == 0.002 == again.optimizer.lr, \
                "a checkpoint carried no rate: %r" % again.param_groups[0]["lr"]
        finally:
            again.close()
    finally:
        zero.close()
        dist.barrier(group=ctx.gloo)
        if ctx.rank == 0:
            shutil.rmtree(tmp[0], ignore_errors=True)


@case
def test_stage_3_finds_a_parameter_read_outside_its_module_and_trains_as_plain_torch(ctx):
    # Awkward's forward reads block[0].bias outside block[0]'s forward; without
    # gathered() the first forwards find it and the root unit holds it after.
    opt = dict(lr=1e-2, weight_decay=0.05)
    _, ref_losses = reference_run(4, **opt)
    m = awkward()
    zero = ZeRO(m, stage=3, group=ctx.group, **opt)
    losses = []
    for step in range(4):
        x, y = batch(step)
        loss = F.cross_entropy(m(x).view(-1, 11), y.view(-1))
        zero.backward(loss)
        zero.step()
        zero.zero_grad()
        losses.append(loss.item())
    near(torch.tensor(losses), torch.tensor(ref_losses), 1e-5, "losses")
    if "block.0.bias" not in zero.units[""]:
        raise AssertionError("the root unit does not hold block.0.bias: %s" % zero.units)
    bias = m.block[0].bias
    if bias.numel() != 0:
        raise AssertionError("block.0.bias stayed gathered after the forward")
    with zero.gathered(bias):
        if bias.shape != (6,):
            raise AssertionError("gathered() gave shape %s" % (tuple(bias.shape),))
    if bias.numel() != 0:
        raise AssertionError("the parameter stayed gathered after the with block")
    zero.close()


# ---- stage 3 units: transformers of torch and torchvision, against stage 0 ------------

def fast_path_calls(fn):
    """fn() and how many times it ran the encoder layer's fast path, or None
    where this torch has no torch._transformer_encoder_layer_fwd."""
    real = getattr(torch, "_transformer_encoder_layer_fwd", None)
    if real is None:
        return fn(), None
    calls = [0]

    def counted(*args, **kwargs):
        calls[0] += 1
        return real(*args, **kwargs)

    torch._transformer_encoder_layer_fwd = counted
    try:
        return fn(), calls[0]
    finally:
        torch._transformer_encoder_layer_fwd = real


def square_error(out, step):
    target = torch.randn(out.shape, generator=torch.Generator().manual_seed(400 + step))
    return F.mse_loss(out, target)


def unit_run(ctx, make, inputs, stage, steps=3, **kw):
    """make()'s model trained @steps steps at @stage on every rank's same
    inputs(step) (a tuple of arguments), loss the mean square error of its
    output against random targets;
    then two forwards in eval under no_grad (at stage 3 the first runs
    detection, which turns torch's fast paths off, the second does not).
    Returns the losses (training and eval), the fast path's
    calls in the second eval forward, and zero.units."""
    torch.manual_seed(5)
    m = make()
    zero = ZeRO(m, stage=stage, group=ctx.group, lr=1e-2, weight_decay=0.01, **kw)
    try:
        losses = []
        for step in range(steps):
            loss = square_error(m(*inputs(step)), step)
            zero.backward(loss)
            zero.step()
            zero.zero_grad()
            losses.append(loss.item())
        m.eval()
        with torch.no_grad():
            first = square_error(m(*inputs(steps)), steps).item()
            second, calls = fast_path_calls(
                lambda: square_error(m(*inputs(steps)), steps).item())
        return losses + [first, second], calls, zero.units if stage == 3 else None
    finally:
        zero.close()


def as_stage_0(ctx, make, inputs, what, **kw):
    """make()'s model at stage 3 against stage 0: the same training and eval
    losses (fp32, 1e-5); returns stage 3's fast path calls and units."""
    want, want_calls, _ = unit_run(ctx, make, inputs, 0)
    got, calls, units = unit_run(ctx, make, inputs, 3, **kw)
    near(torch.tensor(got), torch.tensor(want), 1e-5, "%s: stage 3 against stage 0" % what)
    if calls != want_calls:
        raise AssertionError("%s: the encoder layer's fast path ran %s times at stage 3, %s at "
                             "stage 0" % (what, calls, want_calls))
    return calls, units


def sequences(step):
    g = torch.Generator().manual_seed(200 + step)
    return torch.randn(2, 5, 16, generator=g), torch.randn(2, 4, 16, generator=g)


def transformer():
    return nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                          dim_feedforward=32, dropout=0.0, batch_first=True)


@case
def test_stage_3_trains_nn_transformer_as_stage_0_with_the_encoder_fast_path_in_eval(ctx):
    calls, units = as_stage_0(ctx, transformer, sequences, "nn.Transformer")
    if calls is not None and calls != 2:
        raise AssertionError("the encoder layers' fast path ran %d times, not 2" % calls)
    # An encoder layer is one unit (its fast path reads its children's
    # parameters); the decoder layer's attentions are units of their own,
    # which hold the out_proj their forward reads without calling it.
    for unit, param in (("encoder.layers.0", "encoder.layers.0.self_attn.out_proj.weight"),
                        ("decoder.layers.0.self_attn",
                         "decoder.layers.0.self_attn.out_proj.weight")):
        if param not in units.get(unit, []):
            raise AssertionError("unit %s does not hold %s: %s" % (unit, param, dict(units)))


def forward_hooks(module):
    """How many forward and forward pre-hooks module's subtree holds: torch
    >= 2.1 refuses an encoder layer's fast path where this is not 0."""
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in module.modules())


@case
def test_stage_3_hooks_no_module_inside_an_encoder_layer_and_close_restores_every_forward(ctx):
    for units in (None, {nn.TransformerEncoderLayer}, nn.Transformer):
        torch.manual_seed(5)
        m = transformer()
        before = {name: dict(sub.__dict__).get("forward") for name, sub in m.named_modules()}
        zero = ZeRO(m, stage=3, group=ctx.group, units=units)
        try:
            layers = [x for x in m.modules() if isinstance(x, nn.TransformerEncoderLayer)]
            hooked = [forward_hooks(x) for x in layers]
            if any(hooked):
                raise AssertionError("units=%r: the encoder layers' subtrees hold %s forward "
                                     "hooks, which turn torch's fast path off" % (units, hooked))
            m.eval()
            with torch.no_grad():
                m(*sequences(0))
                _, calls = fast_path_calls(lambda: m(*sequences(0)))
            if calls is not None and calls != 2:
                raise AssertionError("units=%r: the fast path ran %d times" % (units, calls))
        finally:
            zero.close()
        after = {name: dict(sub.__dict__).get("forward") for name, sub in m.named_modules()}
        if after != before or forward_hooks(m):
            raise AssertionError("units=%r: close() left forwards or hooks behind" % (units,))


class Flaky(nn.Module):
    """A block that raises after reading its weight when told to."""

    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(8, 8) / 3)
        self.fail = False

    def forward(self, x):
        h = x @ self.w
        if self.fail:
            self.fail = False
            raise LookupError("told to fail")
        return torch.tanh(h)


class Retried(nn.Module):
    """Calls its Flaky block once to fail and catches that, as torch 2.x's
    non-reentrant checkpoint stops a recomputation by raising inside the
    forward it reruns; then once for real."""

    def __init__(self):
        super().__init__()
        self.flaky = Flaky()
        self.out = nn.Linear(8, 3)
        self.scale = nn.Parameter(torch.linspace(0.5, 1.5, 3))

    def forward(self, x):
        self.flaky.fail = True
        try:
            self.flaky(x)
        except LookupError:
            pass
        return self.out(self.flaky(x)) * self.scale


class _RerunsAndStops(torch.autograd.Function):
    """Identity whose backward reruns the Flaky block and stops it by
    raising, as torch 2.x's checkpoint does with what it recomputes."""

    @staticmethod
    def forward(ctx, x, flaky):
        ctx.flaky = flaky
        return x.clone()

    @staticmethod
    def backward(ctx, g):
        ctx.flaky.fail = True
        with torch.enable_grad():
            try:
                ctx.flaky(torch.zeros(1, 8))
            except LookupError:
                pass
        return g, None


class StoppedInBackward(Retried):
    def forward(self, x):
        return _RerunsAndStops.apply(super().forward(x), self.flaky)


def released_all(m, when):
    for name, p in m.named_parameters():
        if p.numel() != 0:
            raise AssertionError("%s stayed gathered %s (%d elements)" % (name, when, p.numel()))


@case
def test_stage_3_releases_what_a_forward_that_raised_holds_and_trains_as_stage_0(ctx):
    def inputs(step):
        return (torch.randn(4, 8, generator=torch.Generator().manual_seed(500 + step)),)
    as_stage_0(ctx, Retried, inputs, "Retried")
    as_stage_0(ctx, StoppedInBackward, inputs, "StoppedInBackward")
    torch.manual_seed(5)
    m = StoppedInBackward()
    zero = ZeRO(m, stage=3, group=ctx.group)
    try:
        loss = m(*inputs(0)).sum()
        released_all(m, "after a forward in which a unit raised")
        zero.backward(loss)
        released_all(m, "after a backward in which a unit's rerun raised")
        zero.step()
    finally:
        zero.close()


@case
def test_stage_3_units_by_class_size_and_callable_train_as_stage_0(ctx):
    layers = {nn.TransformerEncoderLayer, nn.TransformerDecoderLayer}
    for units, want in ((layers, ["", "encoder.layers.0", "encoder.layers.1", "decoder.layers.0"]),
                        (nn.TransformerDecoderLayer, ["", "decoder.layers.0"]),
                        (lambda m: isinstance(m, nn.LayerNorm), None),
                        (3000, None)):
        _, got = as_stage_0(ctx, transformer, sequences, "units=%r" % (units,), units=units)
        if want is not None and list(got) != want:
            raise AssertionError("units=%r made the units %s, not %s" % (units, list(got), want))
        if callable(units) and not isinstance(units, type):
            # Not those inside encoder layers, which are never split.
            norms = [n for n, m in transformer().named_modules()
                     if isinstance(m, nn.LayerNorm) and not n.startswith("encoder.layers.")]
            if sorted(got) != sorted([""] + norms):
                raise AssertionError("units=LayerNorm made %s" % list(got))
        if units == 3000:
            # An encoder layer holds 2224 parameters: the encoder (4480) and
            # the decoder layer (3344) are the smallest subtrees of 3000.
            if list(got) != ["", "encoder", "decoder.layers.0"]:
                raise AssertionError("units=3000 made %s" % list(got))
    for bad, kind in ((0, ValueError), ("block", TypeError), ({nn.Linear, int}, TypeError)):
        e = raises(lambda: ZeRO(nn.Linear(2, 2), group=ctx.group, units=bad), "units",
                   "units=%r" % (bad,))
        if not isinstance(e, kind):
            raise AssertionError("units=%r raised %r, not a %s" % (bad, e, kind.__name__))


def torchvision_models():
    try:
        import torchvision
    except ImportError as e:
        raise Skip("torchvision is not importable: %s" % e)
    return torchvision.models


def images(step):
    return (torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(300 + step)),)


@case
def test_stage_3_trains_torchvision_vit_and_swin_as_stage_0(ctx):
    models = torchvision_models()
    as_stage_0(ctx, lambda: models.VisionTransformer(
        image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32, mlp_dim=64,
        num_classes=10), images, "VisionTransformer")
    as_stage_0(ctx, lambda: models.SwinTransformer(
        patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=[2, 2],
        stochastic_depth_prob=0.0, num_classes=10), images, "SwinTransformer")


class Mixed(nn.Module):
    """Attention, a weight tied between input and output, a layer called
    twice, layers called in a loop, blocks under reentrant and non-reentrant
    checkpointing, a frozen layer and an unused one."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(11, 8)
        self.attn = nn.MultiheadAttention(8, 2, batch_first=True)
        self.loop = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.twice = nn.Linear(8, 8)
        self.reentrant = nn.Sequential(nn.Linear(8, 8), nn.GELU())
        self.nonreentrant = nn.Sequential(nn.LayerNorm(8), nn.Linear(8, 8))
        self.frozen = nn.Linear(8, 8).requires_grad_(False)
        self.unused = nn.Linear(3, 3)
        self.out = nn.Linear(8, 11, bias=False)
        self.out.weight = self.emb.weight

    def forward(self, idx):
        h = self.emb(idx)
        h = h + self.attn(h, h, h, need_weights=False)[0]
        for _ in range(2):
            for layer in self.loop:
                h = torch.tanh(layer(h))
        h = self.twice(self.twice(h))
        if torch.is_grad_enabled():
            h = checkpoint(self.reentrant, h, use_reentrant=True)
            h = checkpoint(self.nonreentrant, h, use_reentrant=False)
        else:
            h = self.nonreentrant(self.reentrant(h))
        return self.out(self.frozen(h))


@case
def test_stage_3_trains_tied_reused_looped_checkpointed_frozen_and_unused_as_stage_0(ctx):
    as_stage_0(ctx, Mixed, lambda step: batch(step)[:1], "Mixed")
    as_stage_0(ctx, Mixed, lambda step: batch(step)[:1], "Mixed, one unit", units=Mixed)


# ---- the calls a step makes into the layer ---------------------------------------------

@case
def test_changes_made_in_place_inside_gathered_are_kept_at_every_stage(ctx):
    """Weight clipping between steps (WGAN's) inside zero.gathered(): at
    stage 3 each rank writes its part of the shard back, so the next forward
    and the state dict see the clipped weights, as at stage 0, where the
    parameters are the layer's own buffers. In bf16 the masters take the
    clipped elements at every stage (at stages 0-2 when the next backward
    hands the first gradient over), so the step after a clip starts from
    it, and no weight passes 0.05 by more than a step's change."""
    for dtype in (torch.float32, torch.bfloat16):
        runs = {}
        for stage in range(4):
            torch.manual_seed(3)
            m = nn.Sequential(nn.Linear(16, 32), nn.Tanh(), nn.Linear(32, 4)).to(dtype)
            zero = ZeRO(m, stage=stage, group=ctx.group, bucket_size=1024)
            try:
                losses = []
                for s in range(3):
                    x = torch.randn(8, 16, generator=torch.Generator().manual_seed(
                        100 * ctx.rank + s)).to(dtype)
                    loss = m(x).float().square().mean()
                    zero.backward(loss)
                    zero.step()
                    zero.zero_grad()
                    with zero.gathered(*m.parameters()), torch.no_grad():
                        stepped = max(p.abs().max().item() for p in m.parameters())
                        if s > 0 and stepped > 0.06:
                            raise AssertionError("%s, stage %d: a weight of %.4g after the step "
                                                 "that followed a clip to 0.05: the clip was "
                                                 "lost" % (dtype, stage, stepped))
                        for p in m.parameters():
                            p.clamp_(-0.05, 0.05)
                    losses.append(loss.item())
                sd = {k: v.clone() for k, v in m.state_dict().items()}
            finally:
                zero.close()
            worst = max(v.float().abs().max().item() for v in sd.values())
            if worst > torch.tensor(0.05, dtype=dtype).item():
                raise AssertionError("%s, stage %d: a weight of %.4g after clipping to 0.05"
                                     % (dtype, stage, worst))
            runs[stage] = (losses, sd)
        for stage in (1, 2, 3):
            if runs[stage][0] != runs[0][0]:
                raise AssertionError("%s: stage %d losses %s, stage 0's %s"
                                     % (dtype, stage, runs[stage][0], runs[0][0]))
            for k, v in runs[0][1].items():
                if not torch.equal(runs[stage][1][k], v):
                    raise AssertionError("%s: stage %d: %s differs from stage 0's"
                                         % (dtype, stage, k))


@case
def test_stage_3_keeps_the_last_units_gathered_for_backward_within_keep_after_forward(ctx):
    """keep_after_forward: the units that ran last in a forward stay gathered
    until their backward, which gathers only the others; the oldest kept go
    first, so what stays is within the budget; the step releases them, and
    the losses are those of releasing every unit, bit for bit. A state dict
    loaded while they are kept reaches them."""
    def build():
        torch.manual_seed(31)
        return nn.Sequential(*[nn.Linear(16, 16) for _ in range(4)])

    unit_bytes = (16 * 16 + 16) * 4
    runs = {}
    for keep in (0, 2 * unit_bytes + 8):
        m = build()
        zero = ZeRO(m, stage=3, group=ctx.group, keep_after_forward=keep)
        gathers = []
        spy_gathers(zero, lambda params, gathers=gathers:
                    gathers.append(params[0].name.split(".")[0]))
        losses = []
        try:
            for step in range(4):
                x = torch.randn(4, 16, generator=torch.Generator().manual_seed(40 + step))
                loss = m(x).square().mean()
                live = [name for name, p in m.named_parameters() if p.numel()]
                del gathers[:]
                zero.backward(loss)
                zero.step()
                zero.zero_grad()
                losses.append(loss.item())
                released_all(m, "after a step (keep_after_forward=%d)" % keep)
                if step == 0:
                    continue  # the first forward finds reads outside units: it keeps none
                want_live = ["2.weight", "2.bias", "3.weight", "3.bias"] if keep else []
                want_gathers = ["1", "0"] if keep else ["3", "2", "1", "0"]
                if live != want_live or gathers != want_gathers:
                    raise AssertionError("keep_after_forward=%d, step %d: %s gathered after the "
                                         "forward, %s gathered in backward; want %s and %s"
                                         % (keep, step, live, gathers, want_live, want_gathers))
            # Kept after a forward, then loaded: the next forward reads the loaded values.
            other = build()
            with torch.no_grad():
                for p in other.parameters():
                    p.mul_(-0.5)
            x = torch.randn(4, 16, generator=torch.Generator().manual_seed(50))
            m(x)
            m.load_state_dict(other.state_dict())
            with torch.no_grad():
                got, want = m(x), other(x)
            if not torch.equal(got, want):
                raise AssertionError("keep_after_forward=%d: a forward after load_state_dict "
                                     "differs from the loaded model's by %.3g"
                                     % (keep, (got - want).abs().max().item()))
        finally:
            zero.close()
        runs[keep] = losses
    if len(set(map(tuple, runs.values()))) != 1:
        raise AssertionError("losses with and without keep_after_forward: %s" % runs)
    raises(lambda: ZeRO(build(), stage=3, group=ctx.group, keep_after_forward=-1),
           "keep_after_forward must be a number of bytes >= 0", "a negative keep_after_forward")


class _Probe(nn.Linear):
    """A Linear that records, at each forward, where its weight and bias are."""
    seen = []

    def forward(self, x):
        _Probe.seen.append((self.weight.data_ptr(), self.bias.data_ptr(), self.weight.numel()))
        return super().forward(x)


def _probe_run(ctx, lend, steps=3):
    """Three _Probes at stage 3, three steps: (losses, parameters after,
    whether every forward found its bias right after its weight in memory)."""
    storage = zeroshard.torch.storage
    real = storage.available
    if not lend:
        storage.available = lambda: False
    try:
        torch.manual_seed(41)
        m = nn.Sequential(_Probe(16, 16), nn.ReLU(), _Probe(16, 16), _Probe(16, 4))
        zero = ZeRO(m, stage=3, group=ctx.group, bucket_size=4096)
    finally:
        storage.available = real
    losses = []
    del _Probe.seen[:]
    try:
        for step in range(steps):
            x = torch.randn(4, 16, generator=torch.Generator().manual_seed(60 + step))
            loss = m(x).square().mean()
            losses.append(loss.item())
            zero.backward(loss)
            zero.step()
            zero.zero_grad()
        adjacent = [b == w + n * 4 for w, b, n in _Probe.seen]
        return losses, [t.clone() for t in m.state_dict().values()], adjacent, zero, m
    except BaseException:
        zero.close()
        raise


def _flat_run(ctx, stage, flat, steps=3):
    """A small conv net (its conv weight channels_last) at @stage, in buckets
    of 2 KiB, three SGD steps, its parameters moved into flat tensors per
    bucket or left where torch put them (@flat): (losses, parameters after,
    zero, m)."""
    real = ZeRO._flatten
    if not flat:
        ZeRO._flatten = lambda self: None
    try:
        torch.manual_seed(43)
        m = nn.Sequential(nn.Conv2d(3, 8, 3), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 6 * 6, 16),
                          nn.ReLU(), nn.Linear(16, 5))
        m[0].to(memory_format=torch.channels_last)
        zero = ZeRO(m, stage=stage, group=ctx.group, optimizer="sgd", lr=0.05, momentum=0.9,
                    bucket_size=2048)
    finally:
        ZeRO._flatten = real
    losses = []
    try:
        for step in range(steps):
            g = torch.Generator().manual_seed(70 + step * ctx.size + ctx.rank)
            x = torch.randn(2, 3, 8, 8, generator=g)
            loss = m(x).square().mean()
            losses.append(loss.item())
            zero.backward(loss)
            zero.step()
            zero.zero_grad()
        return losses, [t.clone() for t in m.state_dict().values()], zero, m
    except BaseException:
        zero.close()
        raise


@case
def test_stages_1_and_2_keep_each_buckets_parameters_in_one_flat_tensor(ctx):
    """At stages 1-2 on the host each bucket's parameters are views of one
    flat tensor in the bucket's layout (a channels_last weight keeping its
    strides), which the step all-gathers into in place; trained, they give
    the same bits as parameters left where torch put them, and stay torch's
    after close. A storage too small is refused by name."""
    for stage in (1, 2):
        kept = _flat_run(ctx, stage, flat=False)
        kept[2].close()
        losses, params, zero, m = _flat_run(ctx, stage, flat=True)
        try:
            opt = zero.optimizer
            named = [(n, p) for n, p in m.named_parameters()]
            places = {n: opt.place(z) for (n, _), z in zip(named, opt.params)}
            if len({b for b, _, _ in places.values()}) < 2:
                raise AssertionError("stage %d: one bucket only: %s" % (stage, places))
            base = {}
            for n, p in named:
                bucket, offset, numel = places[n]
                ptr = zeroshard.torch.storage.storage_of(p).data_ptr()
                if base.setdefault(bucket, ptr) != ptr:
                    raise AssertionError("stage %d: %s is not in its bucket's flat tensor" % (stage, n))
                if p.storage_offset() != offset or \
                        zeroshard.torch.storage.storage_of(p).nbytes() != numel * 4:
                    raise AssertionError("stage %d: %s at element %d of %d bytes, its place is "
                                         "%s" % (stage, n, p.storage_offset(),
                                                 zeroshard.torch.storage.storage_of(p).nbytes(),
                                                 places[n]))
            if not m[0].weight.is_contiguous(memory_format=torch.channels_last):
                raise AssertionError("stage %d: the conv weight lost its channels_last strides"
                                     % stage)
            if losses != kept[0]:
                raise AssertionError("stage %d: losses flat %s, where torch put them %s"
                                     % (stage, losses, kept[0]))
            for (n, _), a, b in zip(named, params, kept[1]):
                if not torch.equal(a, b):
                    raise AssertionError("stage %d: %s after 3 steps differs flat and not" % (stage, n))
            raises(lambda: opt.set_bucket_storage(0, torch.zeros(1)), "needs",
                   "a storage of one element")
        finally:
            zero.close()
        after = [t.clone() for t in m.state_dict().values()]
        if not all(torch.equal(a, b) for a, b in zip(after, params)):
            raise AssertionError("stage %d: the parameters changed at close" % stage)


def _lend_steps(ctx, stage, lend, wait=False, steps=3):
    """zeroshard.Optimizer over two tensors over the 2 KiB bucket size (a
    bucket each) and a small one, AdamW at @stage, three steps of fresh
    gradients (different per rank) handed over averaged, lent (and waited
    for, @wait) or as scaled copies (@lend), the caller dropping each at
    once: (parameters after, how many were alive after each step, and with
    @wait after each hand-over, the layer's stats)."""
    torch.manual_seed(47)
    params = [torch.randn(8192), torch.randn(4096), torch.randn(10)]
    opt = zeroshard.Optimizer(ctx.comm, stage=stage, kind="adamw", lr=0.01, bucket_size=2048)
    zp = [opt.register("p%d" % k, p) for k, p in enumerate(params)]
    opt.setup()
    handed, alive = [], []
    try:
        for step in range(steps):
            g = torch.Generator().manual_seed(90 + step * ctx.size + ctx.rank)
            for z, p in zip(reversed(zp), reversed(params)):
                grad = torch.randn(p.numel(), generator=g)
                handed.append(weakref.ref(grad))
                if lend:
                    opt.grad_lend(z, grad, 1.0 / ctx.size, wait=wait)
                else:
                    opt.grad_ready_scaled(z, grad, 1.0 / ctx.size)
                del grad
                if wait:
                    alive.append(sum(r() is not None for r in handed))
            opt.step()
            alive.append(sum(r() is not None for r in handed))
        return opt.gather_many(zp, [torch.empty(p.numel()) for p in params]), alive, opt.stats()
    finally:
        opt.close()


@case
def test_gradients_lent_to_the_optimizer_train_as_scaled_copies_and_the_step_lets_them_go(ctx):
    """Optimizer.grad_lend(): at stages 2-3 a tensor over the bucket size
    has a bucket of its own, and its gradient is reduced where it lies,
    with no copy into a staging buffer of the layer's; the layer holds the
    tensor until then, so by the end of each step none is alive though the
    caller dropped each at once, and with wait=True none outlives its
    hand-over; close() lets go of any still lent. Trained, the bits are the
    scaled copies' (over a power-of-two number of ranks the average divides
    after the sum). At stage 2 the layer's buffers peak below one such
    gradient's bytes where it lent them."""
    pow2 = ctx.size & (ctx.size - 1) == 0
    for stage, wait in ((2, False), (3, False), (2, True), (3, True)):
        copied = _lend_steps(ctx, stage, lend=False)
        params, alive, stats = _lend_steps(ctx, stage, lend=True, wait=wait)
        for k, (a, b) in enumerate(zip(params, copied[0])):
            if not torch.equal(a, b):
                raise AssertionError("stage %d: tensor %d after 3 steps differs lent and copied"
                                     % (stage, k))
        if any(alive):
            raise AssertionError("stage %d%s: gradients still alive after each %s: %s"
                                 % (stage, ", waited for" if wait else "",
                                    "hand-over" if wait else "step", alive))
        big = 4096 * 4  # the smaller of the two, in bytes
        if stage == 2 and pow2 and 4096 % ctx.size == 0 and not (
                stats["buffer_peak_bytes"] < big <= copied[2]["buffer_peak_bytes"]):
            raise AssertionError("stage 2: buffers peaked at %d bytes lent, %d copied; the "
                                 "smaller tensor is %d" % (stats["buffer_peak_bytes"],
                                                           copied[2]["buffer_peak_bytes"], big))
    # Lent and not waited for, a gradient is let go by close() too.
    opt = zeroshard.Optimizer(ctx.comm, stage=3, kind="adamw", lr=0.01, bucket_size=2048)
    z = opt.register("p", torch.randn(8192))
    opt.setup()
    grad = torch.ones(8192)
    ref = weakref.ref(grad)
    opt.grad_lend(z, grad, 1.0 / ctx.size)
    del grad
    opt.close()
    if ref() is not None:
        raise AssertionError("close() kept a lent gradient alive")


@case
def test_stage_3_lends_the_gathered_bucket_to_the_parameters_without_a_copy(ctx):
    """In host memory a unit's parameters are its gathered bucket itself (a
    weight and its bias side by side, which no two allocations of torch's
    are), and train bit for bit as when each gather is copied into memory
    of torch's; a step, a state dict and a load while a parameter is held
    gathered give it memory of its own first."""
    if not zeroshard.torch.storage.available():
        raise Skip(zeroshard.torch.storage.why_not)
    copied = _probe_run(ctx, lend=False)
    copied[3].close()
    losses, params, adjacent, zero, m = _probe_run(ctx, lend=True)
    try:
        if any(copied[2]):
            raise AssertionError("a copied gather put a bias right after its weight: the "
                                 "check below would not tell lent from copied")
        if not adjacent or not all(adjacent):
            raise AssertionError("forwards that found the bias after its weight: %s" % adjacent)
        if losses != copied[0]:
            raise AssertionError("losses lent %s, copied %s" % (losses, copied[0]))
        for k, (a, b) in enumerate(zip(params, copied[1])):
            if not torch.equal(a, b):
                raise AssertionError("parameter %d after 3 steps differs lent and copied" % k)
        w = m[0].weight
        with zero.gathered(w):
            held = w.detach().clone()
            state = m.state_dict()
            if not torch.equal(state["0.weight"], held):
                raise AssertionError("the state dict inside gathered() differs from the held weight")
            new = {k: v + 1 for k, v in state.items()}
            m.load_state_dict(new)
            if not torch.equal(w.detach(), held + 1):
                raise AssertionError("a load inside gathered() did not reach the held weight")
            zero.step()  # no gradients: zeros; the weight held stays readable
            if w.numel() != 256:
                raise AssertionError("the held weight has %d elements after a step" % w.numel())
        if w.numel() != 0:
            raise AssertionError("the weight is still gathered after gathered() ended")
        x = torch.randn(4, 16, generator=torch.Generator().manual_seed(99))
        zero.backward(m(x).square().mean())
        zero.step()
    finally:
        zero.close()


@case
def test_stage_3_lending_budgets_its_largest_unit_beside_the_layers_room(ctx):
    """Where neither the caller nor ZSH_MAX_LIVE_BYTES sets max_live_bytes, a
    stage 3 that lends its buckets gives the layer its largest unit's bytes
    beside the room it had (a unit in use stays fetched in the layer);
    anything set is kept, and stages 0-2 and copies change nothing."""
    import zeroshard.torch.zero as zmod
    storage = zeroshard.torch.storage
    if not storage.available():
        raise Skip(storage.why_not)
    torch.manual_seed(5)
    m = nn.Sequential(nn.Linear(16, 16), nn.ReLU(), nn.Linear(16, 32))
    largest = (16 * 32 + 32) * 4

    def budget(**kw):
        zero = ZeRO(m, group=ctx.group, **kw)
        try:
            return zero.optimizer.config["max_live_bytes"]
        finally:
            zero.close()

    real_room, real_available = zmod._LIVE_ROOM, storage.available
    zmod._LIVE_ROOM = 4096
    try:
        got = {"stage 3": budget(stage=3), "given": budget(stage=3, max_live_bytes=12345),
               "stage 2": budget(stage=2)}
        os.environ["ZSH_MAX_LIVE_BYTES"] = "64k"
        try:
            got["ZSH_MAX_LIVE_BYTES"] = budget(stage=3)
        finally:
            del os.environ["ZSH_MAX_LIVE_BYTES"]
        storage.available = lambda: False
        got["copies"] = budget(stage=3)
    finally:
        zmod._LIVE_ROOM, storage.available = real_room, real_available
    want = {"stage 3": 4096 + largest, "given": 12345, "stage 2": 0, "ZSH_MAX_LIVE_BYTES": 0,
            "copies": 0}
    if got != want:
        raise AssertionError("max_live_bytes passed to the layer: %s; want %s" % (got, want))


@case
def test_a_storage_is_lent_only_empty_and_only_under_the_torch_it_was_built_for(ctx):
    """zeroshard.torch.storage.lend refuses a storage that holds bytes and
    changes nothing; a module built for another torch version is not used,
    and says so."""
    import importlib
    storage = zeroshard.torch.storage
    if not storage.available():
        raise Skip(storage.why_not)
    del ctx
    full = torch.arange(4, dtype=torch.float32)
    empty = torch.zeros(4)
    s_empty = storage.storage_of(empty)
    s_empty.resize_(0)
    raises(lambda: storage.lend([s_empty, storage.storage_of(full)], [full.data_ptr()] * 2,
                                [16, 16]),
           "item 1: the storage holds 16 bytes; attach empties only", "a storage holding bytes")
    if s_empty.nbytes() != 0 or not torch.equal(full, torch.arange(4, dtype=torch.float32)):
        raise AssertionError("a refused lend changed a storage")
    storage.lend([s_empty], [full.data_ptr()], [16])
    if not torch.equal(empty, full) or empty.data_ptr() != full.data_ptr():
        raise AssertionError("the lent storage does not read the lender's memory")
    s_empty.resize_(0)
    module = storage._zt
    real = module.torch_version
    try:
        module.torch_version = "0.0.1"
        importlib.reload(storage)
        if storage.available() or "built for torch 0.0.1" not in storage.why_not:
            raise AssertionError("a module built for torch 0.0.1 is used: %s" % storage.why_not)
    finally:
        module.torch_version = real
        importlib.reload(storage)
    if not storage.available():
        raise AssertionError("not available again after the version is restored")


@case
def test_stage_3_gathers_a_unit_in_one_call_in_the_same_order_each_step_and_prefetches(ctx):
    """Forward gathers the units in module order and backward in reverse, a
    unit's parameters in one call into the layer; every fp32 gradient goes
    over in one call (zsh_optim_grad_lend, its reduction waited for), averaged
    by the layer (the bits of Tensor.mul) and left as it was; from the second
    step the layer
    prefetches in the order the first recorded."""
    torch.manual_seed(3)
    m = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 16), nn.LayerNorm(16),
                      nn.Linear(16, 4))
    zero = ZeRO(m, stage=3, group=ctx.group, bucket_size=256, prefetch=2)
    gathers, grads = [], []
    real_gather, real_grad = zero.optimizer.gather_storages, zero.optimizer.grad_lend
    spy_gathers(zero, lambda params: gathers.append([p.name for p in params]))

    def grad_lend(param, grad, mul, wait=False):
        before = grad.clone()
        real_grad(param, grad, mul, wait)
        grads.append((param.name, torch.equal(grad, before) and wait, mul))

    zero.optimizer.grad_lend = grad_lend
    try:
        units = zero.units
        order = [units[u] for u in ("0", "2", "3", "4")]
        want = order + order[::-1]
        names = sorted(n for n, _ in m.named_parameters())
        hits = []
        for step in range(3):
            del gathers[:], grads[:]
            x = torch.randn(4, 8, generator=torch.Generator().manual_seed(step))
            zero.backward(m(x).square().mean())
            zero.step()
            zero.zero_grad()
            if gathers != want:
                raise AssertionError("step %d gathered %s, not unit by unit %s"
                                     % (step, gathers, want))
            if sorted(g[0] for g in grads) != names or \
                    not all(same and mul == 1.0 / ctx.size for _, same, mul in grads):
                raise AssertionError("step %d handed over %s (name, left as it was and waited for, factor); "
                                     "want each of %s once, scaled by 1/%d and only read"
                                     % (step, grads, names, ctx.size))
            st = zero.stats()
            hits.append(st["prefetch_hits"])
            if st["order_rebuilds"]:
                raise AssertionError("the fetch order changed at step %d" % step)
        if not 0 == hits[0] < hits[1] < hits[2]:
            raise AssertionError("prefetch hits after each step: %s" % hits)
        first = zero.optimizer.params[0]
        raises(lambda: real_grad(first, torch.zeros(first.numel, dtype=torch.float64), 1.0),
               "contiguous float32 CPU torch tensor", "a float64 gradient")
        raises(lambda: real_grad(first, torch.zeros(first.numel + 1), 1.0),
               "grad has %d elements; parameter %r has %d" % (first.numel + 1, first.name,
                                                              first.numel),
               "a gradient of the wrong size")
        raises(lambda: real_grad(first, torch.zeros(first.numel), float("inf")),
               "the factor inf is not finite", "an infinite factor")
        typed = torch.empty(first.numel).storage()  # resize_ counts its elements
        raises(lambda: real_gather([first], [typed]), "pass an UntypedStorage",
               "a gather into a TypedStorage")
    finally:
        zero.close()



if __name__ == "__main__":
    from harness import torch_main
    sys.exit(torch_main(sys.argv))
