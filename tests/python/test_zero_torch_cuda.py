#!/usr/bin/env python3
"""zeroshard.torch.ZeRO on a CUDA module, run once per rank under the "zsh"
process group (tests/system/python/run_zero_cuda.sh starts the ranks; one
rank on a one-GPU machine, since NCCL refuses two ranks on one GPU).

examples/torch/train_gpt.py's GPT at stages 0-3, and at stage 3 with the
optimizer states in host memory, against the same model trained by plain
torch on the device with torch.optim.AdamW (losses within 1e-5 relative over
20 steps, the bound run_zero.sh holds stage 0 to against DDP + AdamW); a
small ViT (torchvision's, else one of nn.TransformerEncoder, said in the
output) the same way at stages 0-3; the parameters, gradients and states on
the device; state_dict and load_state_dict there, the checkpoints refused by
name; a module on two devices refused naming its parameters and devices.

Every case skips, with the reason, where torch sees no CUDA device or the
library cannot run on it. fp32 runs in fp32 (no TF32), and attention and
convolutions take deterministic kernels, so both sides differ only in the
update's rounding.
"""

import os
import sys
import tempfile

import torch
import torch.nn as nn

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples", "torch"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "perf"))
from harness import Skip, case, raises  # noqa: E402

import torch_gpu  # noqa: E402  the models, batches and fp32 settings of the measurement
import zeroshard  # noqa: E402
from zeroshard.torch import ZeRO  # noqa: E402

STAGES = (0, 1, 2, 3)
GPT_ARGS = ["--layers", "2", "--dim", "32", "--heads", "2", "--seq", "16", "--batch", "2"]
GPT_STEPS = 20
RTOL = 1e-5
LR, WD = 3e-3, 0.1


def need_cuda():
    """The CUDA device this rank trains on (LOCAL_RANK's, else RANK's: the
    runner's ranks share one host), or Skip with the reason."""
    if not torch.cuda.is_available():
        raise Skip("torch %s sees no CUDA device (torch.cuda.is_available() is False)"
                   % torch.__version__)
    available, why = zeroshard.device_available()
    if not available:
        raise Skip("libzeroshard cannot run on the device: %s" % why)
    local = int(os.environ.get("LOCAL_RANK", os.environ.get("RANK", "0")))
    dev = torch.device("cuda", local % torch.cuda.device_count())
    torch.cuda.set_device(dev)
    torch_gpu.fp32_exact()
    return dev


def near_losses(got, want, what):
    rel = max(abs(a - b) / abs(b) for a, b in zip(got, want))
    if len(got) != len(want) or not rel <= RTOL:
        raise AssertionError("%s: losses differ by %.3g relative (bound %g):\n  ZeRO  %s\n"
                             "  torch %s" % (what, rel, RTOL, got, want))
    if not got[-1] < got[0]:
        raise AssertionError("%s: the loss did not fall: %s" % (what, got))


def train(make, batches, steps, dev, ctx=None, stage=None, **kw):
    """make()'s model on dev, @steps steps on batches(step) -> (inputs, target,
    loss function): by ZeRO at @stage, or by torch.optim.AdamW where stage is
    None. The losses, ZeRO's stats (None for torch) and where the parameters
    and their gradients were after the last step."""
    model = make().to(dev)
    zero = opt = None
    if stage is None:
        opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WD)
    else:
        zero = ZeRO(model, stage=stage, group=ctx.group, lr=LR, weight_decay=WD, **kw)
    try:
        losses = []
        for step in range(steps):
            inputs, target, loss_fn = batches(step)
            loss = loss_fn(model(*[x.to(dev) for x in inputs]), target.to(dev))
            if zero is None:
                opt.zero_grad()
                loss.backward()
                opt.step()
            else:
                zero.backward(loss)
                zero.step()
                zero.zero_grad()
            losses.append(loss.item())
        where = {"%s %s" % (n, p.device) for n, p in model.named_parameters()
                 if p.device != dev}
        where |= {"%s's gradient %s" % (n, p.grad.device) for n, p in model.named_parameters()
                  if p.grad is not None and p.grad.device != dev}
        return losses, (zero.stats() if zero is not None else None), where
    finally:
        if zero is not None:
            zero.close()


def on_device(stats, where, dev, what):
    """The layer ran on the device and every parameter stayed there."""
    if not stats["device"] or not stats["device_bytes"] > 0:
        raise AssertionError("%s: the layer keeps no device memory (device %s, %d bytes)"
                             % (what, stats["device"], stats["device_bytes"]))
    if where:
        raise AssertionError("%s: not on %s after training: %s" % (what, dev, sorted(where)))


# ---- train_gpt.py's GPT against torch.optim.AdamW on the device --------------------------

GPT = {}


def gpt(ctx, dev, key, **kw):
    """The GPT trained by torch (key None) or ZeRO (key: (stage, offload)), once per job."""
    if key not in GPT:
        make, batch, _ = torch_gpu.gpt_problem(GPT_ARGS)
        stage = None if key is None else key[0]
        if stage is not None:
            kw["bucket_size"] = 16384  # several buckets
        GPT[key] = train(make, batch, GPT_STEPS, dev, ctx, stage, **kw)
    return GPT[key]


def _gpt_case(stage):
    def fn(ctx):
        dev = need_cuda()
        want = gpt(ctx, dev, None)[0]
        losses, stats, where = gpt(ctx, dev, (stage, "none"))
        what = "GPT at stage %d on %s" % (stage, dev)
        near_losses(losses, want, what)
        on_device(stats, where, dev, what)
    fn.__name__ = "test_train_gpt_stage_%d_on_cuda_matches_torch_adamw_on_the_device" % stage
    return case(fn)


for _s in STAGES:
    _gpt_case(_s)


@case
def test_train_gpt_stage_3_with_the_optimizer_in_host_memory_matches_torch_adamw(ctx):
    dev = need_cuda()
    want = gpt(ctx, dev, None)[0]
    losses, stats, where = gpt(ctx, dev, (3, "cpu"), offload_optimizer="cpu")
    what = "GPT at stage 3 on %s, offload_optimizer cpu" % dev
    near_losses(losses, want, what)
    on_device(stats, where, dev, what)
    in_memory = gpt(ctx, dev, (3, "none"))[1]
    if not (stats["host_bytes"] > 0 and stats["copy_bytes"] > 0 and
            stats["device_bytes"] < in_memory["device_bytes"]):
        raise AssertionError("%s: host %d B, copied %d B, device %d B (in device memory: %d B)"
                             % (what, stats["host_bytes"], stats["copy_bytes"],
                                stats["device_bytes"], in_memory["device_bytes"]))


# ---- a small ViT ----------------------------------------------------------------------------

@case
def test_vit_at_stages_0_to_3_on_cuda_matches_torch_adamw_on_the_device(ctx):
    dev = need_cuda()
    make, name = torch_gpu.vit_maker()
    want = train(make, torch_gpu.vit_batch, 6, dev)[0]
    for stage in STAGES:
        losses, stats, where = train(make, torch_gpu.vit_batch, 6, dev, ctx, stage,
                                     bucket_size=16384)
        what = "%s at stage %d on %s" % (name, stage, dev)
        near_losses(losses, want, what)
        on_device(stats, where, dev, what)


# ---- state, checkpoints and refusals --------------------------------------------------------

@case
def test_state_dict_round_trips_on_cuda_and_checkpoints_are_refused_by_name(ctx):
    dev = need_cuda()
    for stage in (0, 3):
        torch.manual_seed(3)
        model = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4)).to(dev)
        torch.manual_seed(4)
        other = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 4))  # on the CPU
        zero = ZeRO(model, stage=stage, group=ctx.group, lr=1e-2)
        try:
            loss = model(torch.randn(2, 8, device=dev)).square().mean()
            zero.backward(loss)
            zero.step()
            zero.zero_grad()
            model.load_state_dict(other.state_dict())
            got = model.state_dict()
            for k, v in other.state_dict().items():
                if got[k].device != dev or not torch.equal(got[k].cpu(), v):
                    raise AssertionError("stage %d: %s is %s on %s after load_state_dict, not the "
                                         "values loaded" % (stage, k, got[k], got[k].device))
            x = torch.randn(3, 8)
            with torch.no_grad():
                out = model(x.to(dev)).cpu()
            if not torch.allclose(out, other(x).detach(), rtol=1e-5, atol=1e-6):
                raise AssertionError("stage %d: the module does not compute with the loaded "
                                     "values" % stage)
            with tempfile.TemporaryDirectory(prefix="zsh-pytest-", dir="/var/tmp") as tmp:
                raises(lambda: zero.save(tmp), zeroshard.ZshError, "ZeRO.save", str(dev),
                       "not supported")
                raises(lambda: zero.load(tmp), zeroshard.ZshError, "ZeRO.load", str(dev),
                       "not supported")
        finally:
            zero.close()
        if any(p.device != dev or p.numel() == 0 for p in model.parameters()):
            raise AssertionError("stage %d: close() left %s" % (stage, [
                (tuple(p.shape), str(p.device)) for p in model.parameters()]))


class TwoPlaces(nn.Module):
    def __init__(self, first, second):
        super().__init__()
        self.first = nn.Linear(4, 4).to(first)
        self.second = nn.Linear(4, 4).to(second)

    def forward(self, x):
        return self.second(self.first(x).to(self.second.weight.device))


@case
def test_a_module_on_two_devices_is_refused_naming_its_parameters_and_devices(ctx):
    dev = need_cuda()
    raises(lambda: ZeRO(TwoPlaces(dev, "cpu"), group=ctx.group), ValueError,
           "on 2 devices", "first.weight, first.bias on %s" % dev,
           "second.weight, second.bias on cpu")
    if torch.cuda.device_count() > 1:
        other = torch.device("cuda", (dev.index + 1) % torch.cuda.device_count())
        raises(lambda: ZeRO(TwoPlaces(dev, other), group=ctx.group), ValueError,
               "on 2 devices", "on %s" % dev, "on %s" % other)
        raises(lambda: ZeRO(nn.Linear(2, 2).to(other), group=ctx.group), ValueError,
               "current CUDA device is %s" % dev)


if __name__ == "__main__":
    from harness import torch_main
    sys.exit(torch_main(sys.argv))
