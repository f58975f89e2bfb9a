#!/usr/bin/env python3
"""torch.optim's bits in fp32, run once per rank under the "zsh" process
group (tests/system/python/run_bits.sh starts the ranks, at 1 and 2).

- The update rules (zero/optim/rule/) against torch.optim.AdamW, Adam and
  SGD (momentum, Nesterov, weight decay), for-loop and foreach alike, on
  one rank's own communicator: parameters of odd lengths (ATen's vector
  body and its scalar tail), gradients down to 1e-12 and exact zeros (where
  Adam turns a last-bit difference into a visible one), 25 steps, every
  parameter the same bits as torch's after every step.
- zeroshard.torch.ZeRO at stages 0-3 training a small ResNet-style
  network with BatchNorm against DistributedDataParallel over gloo with
  the same torch.optim rule: the same losses, bit for bit, every step, and
  the same parameters at the end. Every rank trains on its own batch, so at
  2 ranks the averaged gradient is a real average: (a + b) / 2 is exact in
  any order, so both sides see the same gradient bits.
"""

import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.parallel import DistributedDataParallel as DDP

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from harness import Skip, case  # noqa: E402

import zeroshard  # noqa: E402
from zeroshard.torch import ZeRO  # noqa: E402

STAGES = (0, 1, 2, 3)
# The order the rules follow is torch 1.13's; torch 2 moved Adam's first
# moment to lerp_ and other ops, so its bits are another question.
TORCH_1_13 = torch.__version__.startswith("1.13")


def need_torch_1_13():
    if not TORCH_1_13:
        raise Skip("the rules follow torch 1.13's operation order; this is torch %s"
                   % torch.__version__)

# Around AVX2's 8 and AVX-512's 16 floats and ATen's two vectors a loop
# iteration, plus lengths with long bodies and odd tails.
LENGTHS = (1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 65, 1000, 4099)

# (name, torch.optim class, its keywords, the layer's settings)
RULES = (
    ("adamw", torch.optim.AdamW, dict(lr=1e-3, weight_decay=1e-2),
     dict(kind="adamw", lr=1e-3, weight_decay=1e-2)),
    ("adamw_betas_eps", torch.optim.AdamW,
     dict(lr=3e-3, betas=(0.8, 0.99), eps=1e-6, weight_decay=0.1),
     dict(kind="adamw", lr=3e-3, beta1=0.8, beta2=0.99, eps=1e-6, weight_decay=0.1)),
    ("adam", torch.optim.Adam, dict(lr=1e-3), dict(kind="adam", lr=1e-3)),
    ("adam_l2", torch.optim.Adam, dict(lr=1e-2, weight_decay=1e-2),
     dict(kind="adam", lr=1e-2, weight_decay=1e-2)),
    ("sgd", torch.optim.SGD, dict(lr=0.1), dict(kind="sgd", lr=0.1)),
    ("sgd_l2", torch.optim.SGD, dict(lr=0.05, weight_decay=1e-3),
     dict(kind="sgd", lr=0.05, weight_decay=1e-3)),
    ("sgd_momentum", torch.optim.SGD, dict(lr=0.1, momentum=0.9),
     dict(kind="sgd", lr=0.1, momentum=0.9)),
    ("sgd_nesterov_l2", torch.optim.SGD,
     dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=1e-4),
     dict(kind="sgd", lr=0.1, momentum=0.9, nesterov=1, weight_decay=1e-4)),
)


def first_difference(got, want):
    """'' when got and want are the same bits, else where and by how much."""
    got, want = got.flatten(), want.flatten()
    if torch.equal(got.view(torch.int32), want.view(torch.int32)):
        return ""
    bad = (got.view(torch.int32) != want.view(torch.int32)).nonzero().flatten()
    i = int(bad[0])
    return ("%d of %d elements differ; element %d: %.9g, torch %.9g"
            % (bad.numel(), got.numel(), i, float(got[i]), float(want[i])))


def rule_grads(gen, step):
    """Gradients of every length: normal values scaled by 10^-u, u uniform
    in [0, 12], some exact zeros; a different draw each step."""
    out = []
    for n in LENGTHS:
        g = torch.randn(n, generator=gen, dtype=torch.float64)
        g *= 10.0 ** -(12 * torch.rand(n, generator=gen, dtype=torch.float64))
        g[torch.rand(n, generator=gen) < 0.05] = 0.0
        out.append(g.float())
    return out


def rule_case(name, cls, kw, settings, steps=25):
    def fn(ctx):
        need_torch_1_13()
        gen = torch.Generator().manual_seed(1234)
        init = [torch.randn(n, generator=gen) for n in LENGTHS]
        refs = {}
        for foreach in (False, True):
            params = [nn.Parameter(v.clone()) for v in init]
            refs[foreach] = (params, cls(params, foreach=foreach, **kw))
        comm = ctx.comm.split(ctx.rank)  # this rank alone: the rule, not the sums
        bufs = [v.clone() for v in init]
        opt = zeroshard.Optimizer(comm, stage=0, **settings)
        try:
            handles = [opt.register("p%d" % j, b) for j, b in enumerate(bufs)]
            opt.setup()
            for step in range(1, steps + 1):
                grads = rule_grads(gen, step)
                for params, ref in refs.values():
                    for p, g in zip(params, grads):
                        p.grad = g.clone()
                    ref.step()
                for h, g in zip(handles, grads):
                    opt.grad_ready(h, g.clone())
                assert opt.step(), "step %d was skipped" % step
                for j, n in enumerate(LENGTHS):
                    loop, each = refs[False][0][j].detach(), refs[True][0][j].detach()
                    if first_difference(each, loop):
                        raise AssertionError("torch's own foreach and for-loop differ: %s"
                                             % first_difference(each, loop))
                    diff = first_difference(bufs[j], loop)
                    if diff:
                        raise AssertionError("%s step %d, length %d: %s" % (name, step, n, diff))
        finally:
            opt.close()
            comm.close()
    fn.__name__ = "test_%s_gives_torch_optim_bits_on_odd_lengths_and_tiny_gradients" % name
    return case(fn)


for _rule in RULES:
    rule_case(*_rule)


# ---- a ResNet-style network with BatchNorm: ZeRO against DDP + torch.optim ------------------

class Block(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.skip = None
        if stride != 1 or cin != cout:
            self.skip = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                      nn.BatchNorm2d(cout))

    def forward(self, x):
        y = F.relu(self.bn1(self.conv1(x)))
        y = self.bn2(self.conv2(y))
        return F.relu(y + (x if self.skip is None else self.skip(x)))


class SmallResNet(nn.Module):
    def __init__(self, classes=10):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 1, 1, bias=False), nn.BatchNorm2d(8),
                                  nn.ReLU())
        self.layer1 = Block(8, 8, 1)
        self.layer2 = Block(8, 16, 2)
        self.fc = nn.Linear(16, classes)

    def forward(self, x):
        x = self.layer2(self.layer1(self.stem(x)))
        return self.fc(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def resnet():
    torch.manual_seed(11)
    return SmallResNet()


def torchvision_resnet18():
    """torchvision's own ResNet-18 (its BatchNorm, its residual blocks)."""
    try:
        import torchvision
    except ImportError as e:
        raise Skip("torchvision is not importable (%s)" % e)
    torch.manual_seed(11)
    return torchvision.models.resnet18(num_classes=10)


def images(rank, step, side=12):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return torch.randn(4, 3, side, side, generator=g), torch.randint(0, 10, (4,), generator=g)


def ddp_run(ctx, cls, kw, steps, make=resnet, side=12):
    model = DDP(make(), process_group=ctx.gloo)
    opt = cls(model.parameters(), **kw)
    losses = []
    for step in range(steps):
        x, y = images(ctx.rank, step, side)
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return model.module, losses


def resnet_case(name, cls, kw, settings, steps=6, make=resnet, side=12, bucket_size=4096,
                what="resnet_with_batchnorm"):
    def fn(ctx):
        need_torch_1_13()
        ref, want = ddp_run(ctx, cls, kw, steps, make, side)
        for stage in STAGES:
            model = make()
            zero = ZeRO(model, stage=stage, group=ctx.group, bucket_size=bucket_size, **settings)
            got = []
            for step in range(steps):
                x, y = images(ctx.rank, step, side)
                loss = F.cross_entropy(model(x), y)
                zero.backward(loss)
                zero.step()
                zero.zero_grad()
                got.append(loss.item())
            if got != want:
                zero.close()
                raise AssertionError("%s stage %d: losses %s, DDP's %s"
                                     % (name, stage, [float.hex(v) for v in got],
                                        [float.hex(v) for v in want]))
            sd = zero.state_dict()
            zero.close()
            # Parameters only: DDP broadcasts rank 0's BatchNorm buffers
            # each forward, ZeRO leaves each rank its own running statistics.
            for k, v in ref.named_parameters():
                diff = first_difference(sd[k].detach(), v.detach())
                if diff:
                    raise AssertionError("%s stage %d %s: %s" % (name, stage, k, diff))
    fn.__name__ = ("test_%s_at_stages_0_to_3_trains_to_ddp_%s_losses_bit_for_bit"
                   % (what, name))
    return case(fn)


for _name, _cls, _kw, _settings in (RULES[0], RULES[3], RULES[7]):
    resnet_case(_name, _cls, _kw, _settings)
# A model nobody here wrote: torchvision's ResNet-18 with AdamW, 3 steps.
resnet_case(RULES[0][0], RULES[0][1], RULES[0][2], RULES[0][3], steps=3,
            make=torchvision_resnet18, side=32, bucket_size=1 << 22,
            what="torchvision_resnet18")



if __name__ == "__main__":
    from harness import torch_main
    sys.exit(torch_main(sys.argv))
