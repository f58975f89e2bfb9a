#!/usr/bin/env python3
"""torch.optim's bits in fp32, run once per rank under the "zsh" process
group (tests/system/python/run_bits.sh starts the ranks, at 1 and 2).

- The update rules (zero/optim/rule/) against torch.optim.AdamW, Adam and
  SGD (momentum, Nesterov, weight decay), for-loop and foreach alike, on
  one rank's own communicator: parameters of odd lengths (ATen's vector
  body and its scalar tail), gradients down to 1e-12 and exact zeros (where
  Adam turns a last-bit difference into a visible one), 25 steps, every
  parameter the same bits as torch's after every step.
- zeroshard.torch.ZeRO at stages 0-3 training models against
  DistributedDataParallel over gloo with the same torch.optim rule (AdamW,
  Adam, SGD with momentum): the same losses, bit for bit, every step, the
  same parameters and buffers at the end and, for transformers, the same
  outputs in eval mode, where torch's fast paths run. The models: a small
  ResNet-style network with BatchNorm; torchvision's own ResNet-18, ViT,
  Swin, ConvNeXt, DenseNet, MobileNetV3-Small and SqueezeNet (small where
  they take sizes); nn.Transformer with masks, batch first and not; LSTM and
  GRU; torch.nn's weight and spectral norms, an orthogonal parametrization
  and other modules (TorchNnMix); torch.nn's adaptive softmax with a cluster
  left out of a step; an embedding with max_norm; a tied embedding, a layer called twice and
  in a loop; torch.utils.checkpoint in both modes; frozen and unused
  parameters; micro-batches accumulated under each side's no_sync(). Dropout
  and stochastic depth draw the same masks on both sides. Every rank trains
  on its own batch, so at 2 ranks the averaged gradient is a real average:
  (a + b) / 2 is exact in any order, so both sides see the same gradient
  bits.
"""

import contextlib
import copy
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


# ---- models: ZeRO against DDP + torch.optim --------------------------------------------------

def images(side=12, n=4, memory_format=torch.contiguous_format):
    """A batch function: this rank's images and labels for a step."""
    def batch(rank, step):
        g = torch.Generator().manual_seed(1000 * rank + step)
        x = torch.randn(n, 3, side, side, generator=g)
        return ((x.contiguous(memory_format=memory_format),),
                torch.randint(0, 10, (n,), generator=g))
    return batch


def sequences(*shapes):
    """A batch function: float inputs of the given shapes and a target of the
    last one's shape (regression)."""
    def batch(rank, step):
        g = torch.Generator().manual_seed(1000 * rank + step)
        xs = tuple(torch.randn(*s, generator=g) for s in shapes)
        return xs, torch.randn(*shapes[-1], generator=g)
    return batch


def tokens(rank, step):
    g = torch.Generator().manual_seed(1000 * rank + step)
    return (torch.randint(0, 20, (2, 5), generator=g),), torch.randint(0, 20, (10,), generator=g)


def cross_entropy(out, y):
    if isinstance(out, tuple):  # a model's auxiliary heads count too
        return sum(F.cross_entropy(o, y) for o in out if o is not None)
    return F.cross_entropy(out, y)


def train(model, side, batch, loss_fn, rank, steps, micro=1, start=0):
    """side: (backward(loss), step(), no_sync()). Each step runs micro
    micro-batches, all but the last under no_sync(), each loss divided by
    micro; a step's loss is the sum of its micro-batches' own. start: the
    first step's number (its batches)."""
    backward, step, no_sync = side
    losses = []
    for s in range(start, start + steps):
        total = 0.0
        for m in range(micro):
            k = s * micro + m
            x, y = batch(rank, k)
            # Dropout and stochastic depth draw the same masks on both sides.
            torch.manual_seed(7 + 1000 * rank + k)
            with no_sync() if m < micro - 1 else contextlib.nullcontext():
                loss = loss_fn(model(*x), y)
                backward(loss / micro if micro > 1 else loss)
            total += loss.item()
        step()
        losses.append(total)
    return losses


def evaluate(model, batch, rank):
    """The outputs in eval mode without gradients, where torch's transformer
    modules take their fast paths."""
    model.eval()
    with torch.no_grad():
        out = model(*batch(rank, 99)[0])
    model.train()
    return out[0] if isinstance(out, tuple) else out


def same_optim_state(got, want, what):
    """got, ZeRO's, like torch.optim's want: the same entries, every
    tensor's bits, the groups' numbering and entries."""
    if sorted(got["state"]) != sorted(want["state"]):
        raise AssertionError("%s: state for parameters %s, torch.optim's for %s"
                             % (what, sorted(got["state"]), sorted(want["state"])))
    for n, entry in want["state"].items():
        if sorted(got["state"][n]) != sorted(entry):
            raise AssertionError("%s: parameter %d's state has %s, torch.optim's %s"
                                 % (what, n, sorted(got["state"][n]), sorted(entry)))
        for k, v in entry.items():
            g = got["state"][n][k]
            diff = ("" if g is None else "None, not a tensor") if v is None else \
                first_difference(g, v) if g.shape == v.shape else "shape %s" % (tuple(g.shape),)
            if diff:
                raise AssertionError("%s: parameter %d's %s: %s" % (what, n, k, diff))
    # torch.optim's groups carry its other options too (amsgrad, foreach...).
    if len(got["param_groups"]) != len(want["param_groups"]) or any(
            any(k not in w or w[k] != v for k, v in g.items())
            for g, w in zip(got["param_groups"], want["param_groups"])):
        raise AssertionError("%s: groups %s, torch.optim's %s"
                             % (what, got["param_groups"], want["param_groups"]))


def model_case(what, make, rule, steps=3, batch=images(), loss_fn=cross_entropy, evaluated=False,
               bucket_size=4096, ddp_kw=None, schedule=None, micro=1, groups=None, resume=0,
               zero_kw=None):
    """make()'s model trained by ZeRO at stages 0-3 against DDP over gloo with
    the same torch.optim rule: the same losses bit for bit every step, the
    same parameters and buffers at the end and, when evaluated, the same
    outputs in eval mode. Buffers are each rank's own on both sides
    (broadcast_buffers=False): ZeRO leaves each rank its own running
    statistics. schedule(optimizer) makes a learning-rate schedule (its
    step() called after each update) on both sides. micro > 1 accumulates
    that many micro-batches a step under each side's no_sync(). groups(model)
    makes torch.optim's parameter groups of a model, given to both sides.
    resume > 0: zero.optim_state_dict() is torch.optim's state_dict() after
    the steps, bit for bit, and a new ZeRO at the next stage, given the
    module's state and torch.optim's state dict, trains resume more steps to
    DDP's losses. zero_kw: ZeRO's own other arguments."""
    name, cls, kw, settings = rule

    def fn(ctx):
        need_torch_1_13()
        torch.manual_seed(11)
        ref = DDP(make(), process_group=ctx.gloo, broadcast_buffers=False, **(ddp_kw or {}))
        opt = cls(groups(ref.module) if groups else
                  [p for p in ref.parameters() if p.requires_grad], **kw)
        ref_sched = schedule(opt) if schedule else None

        def ddp_step():
            opt.step()
            opt.zero_grad()
            if ref_sched:
                ref_sched.step()

        want = train(ref, (lambda loss: loss.backward(), ddp_step, ref.no_sync), batch,
                     loss_fn, ctx.rank, steps, micro)
        if resume:
            want_state = copy.deepcopy(opt.state_dict())
            want_module = copy.deepcopy(ref.module.state_dict())
            want_more = train(ref, (lambda loss: loss.backward(), ddp_step, ref.no_sync), batch,
                              loss_fn, ctx.rank, resume, micro, start=steps)
        want_out = evaluate(ref.module, batch, ctx.rank) if evaluated else None
        for stage in STAGES:
            torch.manual_seed(11)
            model = make()
            zero = ZeRO(model, stage=stage, group=ctx.group, bucket_size=bucket_size,
                        param_groups=groups(model) if groups else None, **settings,
                        **(zero_kw or {}))
            sched = schedule(zero) if schedule else None
            try:
                def zero_step():
                    zero.step()
                    zero.zero_grad()
                    if sched:
                        sched.step()

                got = train(model, (zero.backward, zero_step, zero.no_sync), batch, loss_fn,
                            ctx.rank, steps, micro)
                if got != want:
                    raise AssertionError("%s stage %d: losses %s, DDP's %s"
                                         % (name, stage, [float.hex(v) for v in got],
                                            [float.hex(v) for v in want]))
                if resume:
                    same_optim_state(zero.optim_state_dict(), want_state,
                                     "%s stage %d" % (name, stage))
                    zero.close()
                    model = make()
                    model.load_state_dict(want_module)
                    zero = ZeRO(model, stage=(stage + 1) % 4, group=ctx.group,
                                bucket_size=bucket_size,
                                param_groups=groups(model) if groups else None, **settings,
                                **(zero_kw or {}))
                    zero.load_optim_state_dict(want_state)
                    got = train(model, (zero.backward, zero_step, zero.no_sync), batch, loss_fn,
                                ctx.rank, resume, micro, start=steps)
                    if got != want_more:
                        raise AssertionError("%s stage %d, resumed at stage %d from torch.optim's "
                                             "state dict: losses %s, DDP's %s"
                                             % (name, stage, (stage + 1) % 4,
                                                [float.hex(v) for v in got],
                                                [float.hex(v) for v in want_more]))
                if evaluated:
                    diff = first_difference(evaluate(model, batch, ctx.rank), want_out)
                    if diff:
                        raise AssertionError("%s stage %d, eval outputs: %s" % (name, stage, diff))
                sd = model.state_dict()
            finally:
                zero.close()
            for k, v in ref.module.state_dict().items():
                diff = first_difference(sd[k].detach(), v.detach()) \
                    if v.is_floating_point() else ("" if torch.equal(sd[k], v) else "differs")
                if diff:
                    raise AssertionError("%s stage %d %s: %s" % (name, stage, k, diff))
    fn.__name__ = "test_%s_at_stages_0_to_3_trains_to_ddp_%s_%s_bit_for_bit" % (
        what, name, "losses_and_eval_outputs" if evaluated else "losses")
    return case(fn)


def torchvision_models():
    try:
        import torchvision
    except ImportError as e:
        raise Skip("torchvision is not importable (%s)" % e)
    return torchvision.models


# ---- a ResNet-style network with BatchNorm ---------------------------------------------------

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


for _rule in (RULES[0], RULES[3], RULES[7]):
    model_case("resnet_with_batchnorm", SmallResNet, _rule, steps=6)


class WrittenSchedule:
    """A schedule as code written for torch keeps one: param_groups' "lr"
    written before each step (warmup, then halving)."""

    def __init__(self, opt, base):
        self.opt, self.base, self.n = opt, base, 0
        self.step()

    def step(self):
        self.n += 1
        for group in self.opt.param_groups:
            group["lr"] = self.base * min(self.n / 3, 1.0) * 0.5 ** max(self.n - 3, 0)


# torch.optim.lr_scheduler's schedules and written ones drive ZeRO's rate:
# each step at the schedule's rate, torch.optim's bits.
model_case("resnet_with_batchnorm_under_warmup_and_cosine", SmallResNet, RULES[0], steps=6,
           schedule=lambda opt: torch.optim.lr_scheduler.SequentialLR(opt, [
               torch.optim.lr_scheduler.LinearLR(opt, start_factor=0.25, total_iters=2),
               torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=4)], milestones=[2]))
model_case("resnet_with_batchnorm_under_step_lr", SmallResNet, RULES[6], steps=6,
           schedule=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.3))
model_case("resnet_with_batchnorm_under_a_written_schedule", SmallResNet, RULES[3], steps=6,
           schedule=lambda opt: WrittenSchedule(opt, RULES[3][2]["lr"]))
# torchvision's ViT under OneCycleLR (which cycles betas too unless told not to).
model_case("torchvision_vit_under_one_cycle", lambda: torchvision_models().vision_transformer
           .VisionTransformer(image_size=16, patch_size=8, num_layers=2, num_heads=2,
                              hidden_dim=16, mlp_dim=32, num_classes=10), RULES[0], steps=6,
           batch=images(side=16),
           schedule=lambda opt: torch.optim.lr_scheduler.OneCycleLR(
               opt, max_lr=4e-3, total_steps=6, cycle_momentum=False))


def no_decay_groups(model):
    """nanoGPT's and Hugging Face's groups: weight decay for the matrices and
    convolutions, none for biases, norms' weights and other vectors."""
    params = [p for p in model.parameters() if p.requires_grad]
    return [{"params": [p for p in params if p.dim() >= 2]},
            {"params": [p for p in params if p.dim() < 2], "weight_decay": 0.0}]


# Parameter groups with their own weight decay: decoupled (AdamW, under a
# schedule that sets both groups' rate) and L2 (Adam, SGD).
model_case("torchvision_vit_with_no_decay_groups_under_warmup", lambda: torchvision_models()
           .vision_transformer.VisionTransformer(image_size=16, patch_size=8, num_layers=2,
                                                 num_heads=2, hidden_dim=16, mlp_dim=32,
                                                 num_classes=10),
           RULES[1], steps=4, batch=images(side=16), groups=no_decay_groups,
           schedule=lambda opt: torch.optim.lr_scheduler.LambdaLR(opt, lambda n: (n + 1) / 4))
model_case("resnet_with_batchnorm_and_no_decay_groups", SmallResNet, RULES[3], steps=4,
           groups=no_decay_groups)
model_case("resnet_with_batchnorm_and_no_decay_groups", SmallResNet, RULES[7], steps=4,
           groups=no_decay_groups)


# Gradient accumulation: micro-batches under no_sync(), then one reduction
# of the sums, as DDP's no_sync() (at stage 3 the full gradients wait in
# p.grad between micro-batches, the parameters released around them).
model_case("resnet_with_batchnorm_over_3_micro_batches", SmallResNet, RULES[0], steps=4,
           micro=3)
model_case("torchvision_vit_over_2_micro_batches", lambda: torchvision_models()
           .vision_transformer.VisionTransformer(image_size=16, patch_size=8, num_layers=2,
                                                 num_heads=2, hidden_dim=16, mlp_dim=32,
                                                 dropout=0.1, num_classes=10),
           RULES[6], steps=3, batch=images(side=16), micro=2)


def channels_last_net():
    """Convolutions on a 1 x 1 image, whose layout the weights' decide:
    made contiguous, a 3 x 3 one over 32 channels gives other bits."""
    torch.manual_seed(11)
    net = nn.Sequential(nn.Conv2d(3, 32, 3, 2, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                        nn.Conv2d(32, 32, 3, 1, 1, bias=False), nn.BatchNorm2d(32), nn.ReLU(),
                        nn.Flatten(), nn.Linear(32, 10))
    return net.to(memory_format=torch.channels_last)


model_case("channels_last_network", channels_last_net, RULES[0],
           batch=images(side=2, memory_format=torch.channels_last))
# Models nobody here wrote: torchvision's own, small where they take sizes.
model_case("torchvision_resnet18", lambda: torchvision_models().resnet18(num_classes=10),
           RULES[0], batch=images(side=32), bucket_size=1 << 22)
# Its encoder blocks' nn.MultiheadAttention takes the fast path in eval.
model_case("torchvision_vit", lambda: torchvision_models().vision_transformer.VisionTransformer(
    image_size=16, patch_size=8, num_layers=2, num_heads=2, hidden_dim=16, mlp_dim=32,
    dropout=0.1, num_classes=10), RULES[0], batch=images(side=16), evaluated=True)
# Shifted windows with their own attention, and stochastic depth.
model_case("torchvision_swin", lambda: torchvision_models().swin_transformer.SwinTransformer(
    patch_size=[2, 2], embed_dim=16, depths=[2, 2], num_heads=[2, 2], window_size=[4, 4],
    num_classes=10), RULES[0], batch=images(side=16), evaluated=True)
# LayerNorm over channels, layer scale, stochastic depth.
model_case("torchvision_convnext", lambda: torchvision_models().convnext.ConvNeXt(
    [torchvision_models().convnext.CNBlockConfig(16, 32, 1),
     torchvision_models().convnext.CNBlockConfig(32, None, 1)],
    stochastic_depth_prob=0.1, num_classes=10), RULES[2], batch=images(side=16))
# Concatenated features through BatchNorm.
model_case("torchvision_densenet", lambda: torchvision_models().densenet.DenseNet(
    8, (2, 2), 16, num_classes=10), RULES[6], batch=images(side=16))
# Squeeze-and-excitation, hardswish, BatchNorm, dropout.
model_case("torchvision_mobilenet_v3_small",
           lambda: torchvision_models().mobilenet_v3_small(num_classes=10), RULES[6],
           batch=images(side=32, n=2), bucket_size=1 << 20)
model_case("torchvision_squeezenet", lambda: torchvision_models().squeezenet1_1(num_classes=10),
           RULES[0], batch=images(side=32, n=2), bucket_size=1 << 20)



# ---- torch's own modules and the ways a model uses its parameters -----------------------------

class Seq2Seq(nn.Module):
    """nn.Transformer with a causal mask and padded sources: in eval, with
    batch_first, its encoder takes the nested-tensor fast path and its
    layers their fused one."""

    def __init__(self, batch_first):
        super().__init__()
        self.t = nn.Transformer(d_model=16, nhead=2, num_encoder_layers=2, num_decoder_layers=1,
                                dim_feedforward=32, dropout=0.1, batch_first=batch_first)

    def forward(self, src, tgt):
        first = self.t.batch_first
        pad = torch.zeros(src.shape[0 if first else 1], src.shape[1 if first else 0],
                          dtype=torch.bool)
        pad[1, 3:] = True  # the second sequence is 3 long
        mask = self.t.generate_square_subsequent_mask(tgt.shape[1 if first else 0])
        return self.t(src, tgt, tgt_mask=mask, src_key_padding_mask=pad,
                      memory_key_padding_mask=pad)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(16, 16, num_layers=2, batch_first=True)
        self.gru = nn.GRU(16, 16, batch_first=True)

    def forward(self, x):
        return self.gru(self.lstm(x)[0])[0]


class Shared(nn.Module):
    """An embedding tied to the output layer, a layer called twice and one
    called in a loop."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16)
        self.twice = nn.Linear(16, 16)
        self.loop = nn.Linear(16, 16)
        self.head = nn.Linear(16, 20, bias=False)
        self.head.weight = self.emb.weight

    def forward(self, x):
        x = torch.tanh(self.twice(torch.tanh(self.twice(self.emb(x)))))
        for _ in range(3):
            x = x + torch.tanh(self.loop(x))
        return self.head(x).flatten(0, 1)


class Checkpointed(nn.Module):
    """Two blocks under torch.utils.checkpoint, one with dropout (the
    recomputation must draw the same mask)."""

    def __init__(self, reentrant):
        super().__init__()
        self.reentrant = reentrant
        self.first = nn.Linear(16, 16)  # so that the checkpoints' input needs a gradient
        self.a = nn.Sequential(nn.Linear(16, 16), nn.Dropout(0.2), nn.Tanh())
        self.b = nn.Sequential(nn.Linear(16, 16), nn.Tanh())
        self.last = nn.Linear(16, 16)

    def forward(self, x):
        x = self.first(x)
        for block in (self.a, self.b):
            x = torch.utils.checkpoint.checkpoint(block, x, use_reentrant=self.reentrant)
        return self.last(x)


class FrozenAndUnused(nn.Module):
    def __init__(self, unused=True):
        super().__init__()
        self.frozen = nn.Linear(16, 16)
        self.frozen.requires_grad_(False)
        self.a = nn.Linear(16, 16)
        self.a.bias.requires_grad_(False)
        self.unused = nn.Linear(16, 16) if unused else None
        self.b = nn.Linear(16, 16)

    def forward(self, x):
        return self.b(torch.tanh(self.a(torch.tanh(self.frozen(x)))))


class AdaptiveSoftmax(nn.Module):
    """torch.nn's adaptive softmax: a tail cluster's projections take part
    only in a step whose targets fall in it."""

    def __init__(self):
        super().__init__()
        self.lin = nn.Linear(16, 16)
        self.asm = nn.AdaptiveLogSoftmaxWithLoss(16, 40, cutoffs=[10, 20], div_value=2.0)

    def forward(self, x, y):
        return self.asm(self.lin(x), y).loss


def cluster_targets(rank, step):
    """Every rank's targets reach the first tail cluster (10-19) in steps 0
    and 1, not in step 2: its parameters then have no gradient anywhere."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    y = torch.cat([torch.randint(0, 10, (3,), generator=g),
                   torch.randint(20, 40, (3,), generator=g),
                   torch.randint(10, 20, (2,), generator=g) if step < 2 else
                   torch.randint(0, 10, (2,), generator=g)])
    return (torch.randn(8, 16, generator=g), y), None


def cluster_targets_by_rank(rank, step):
    """The first tail cluster (10-19) reached by rank 0 only in step 0, by
    every rank in step 1, by rank 1 only in step 2, the second (20-39) by
    rank 1 only in step 3, and by rank 0 only in step 4."""
    g = torch.Generator().manual_seed(1000 * rank + step)
    first = (step == 0 and rank == 0) or step == 1 or (step == 2 and rank == 1)
    second = step < 3 or (step == 3 and rank == 1) or (step == 4 and rank == 0)
    y = torch.cat([torch.randint(0, 10, (4,), generator=g),
                   torch.randint(10, 20, (2,), generator=g) if first else
                   torch.randint(0, 10, (2,), generator=g),
                   torch.randint(20, 40, (2,), generator=g) if second else
                   torch.randint(0, 10, (2,), generator=g)])
    return (torch.randn(8, 16, generator=g), y), None


class RenormedEmbedding(nn.Module):
    """nn.Embedding(max_norm=...) renormalizes the rows it looks up in place,
    inside its forward."""

    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(20, 16, max_norm=1.0)
        self.out = nn.Linear(16, 20)

    def forward(self, idx):
        return self.out(self.emb(idx)).view(-1, 20)


def shared_tokens(rank, step):
    """tokens(), the inputs the same on every rank: each DDP replica then
    renormalizes the same rows (DDP keeps no replica's in-place change from
    the others)."""
    return tokens(0, step)[0], tokens(rank, step)[1]


class TorchNnMix(nn.Module):
    """torch.nn's own modules that reach their weights another way: weight
    normalization (a forward pre-hook), an orthogonal parametrization and
    spectral normalization (a power iteration in a buffer), a plain RNN, an
    LSTM with projections, a bilinear map, PReLU, a bag of embeddings,
    group and instance norms, attention with other key and value widths, and
    a transposed convolution."""

    def __init__(self):
        super().__init__()
        self.wn = nn.utils.weight_norm(nn.Linear(16, 16))
        self.orth = nn.utils.parametrizations.orthogonal(nn.Linear(16, 16))
        self.sn = nn.utils.spectral_norm(nn.Linear(16, 16))
        self.prelu = nn.PReLU()
        self.rnn = nn.RNN(16, 16, batch_first=True)
        self.lstm = nn.LSTM(16, 16, proj_size=8, batch_first=True)
        self.bilinear = nn.Bilinear(8, 8, 16)
        self.attn = nn.MultiheadAttention(16, 2, kdim=8, vdim=8, batch_first=True)
        self.bag = nn.EmbeddingBag(20, 16, mode="mean")
        self.conv = nn.Conv1d(4, 4, 3, padding=1)
        self.gn = nn.GroupNorm(2, 4)
        self.inorm = nn.InstanceNorm1d(4, affine=True)
        self.up = nn.ConvTranspose1d(4, 4, 3, padding=1)

    def forward(self, x):
        h = self.prelu(self.wn(x))
        h = torch.tanh(self.orth(h)) + self.sn(h)
        z = self.lstm(self.rnn(h)[0])[0]
        a = self.attn(self.bilinear(z, z), z, z)[0]
        idx = (x.abs().sum(-1) * 3).long() % 20
        q = self.conv(a.reshape(a.shape[0], 4, -1))
        q = self.up(self.inorm(self.gn(q))).reshape(a.shape)
        return q + self.bag(idx.view(-1, 5)).mean(0)


def mse(out, y):
    return F.mse_loss(out, y)


SEQ = (2, 5, 16)
model_case("transformer_batch_first_with_masks", lambda: Seq2Seq(True), RULES[2],
           batch=sequences(SEQ, (2, 4, 16)), loss_fn=mse, evaluated=True)
model_case("transformer_sequence_first_with_masks", lambda: Seq2Seq(False), RULES[6],
           batch=sequences((5, 2, 16), (4, 2, 16)), loss_fn=mse, evaluated=True)
model_case("lstm_and_gru", Recurrent, RULES[2], batch=sequences(SEQ), loss_fn=mse)
model_case("torch_nn_parametrizations_hooks_and_other_modules", TorchNnMix, RULES[0],
           batch=sequences(SEQ), loss_fn=mse)
model_case("tied_embedding_layer_called_twice_and_in_a_loop", Shared, RULES[0], batch=tokens)
model_case("reentrant_checkpoint", lambda: Checkpointed(True), RULES[0], batch=sequences(SEQ),
           loss_fn=mse)
model_case("non_reentrant_checkpoint", lambda: Checkpointed(False), RULES[6],
           batch=sequences(SEQ), loss_fn=mse)
# With weight decay: a parameter that never gets a gradient stays as it is
# under both (torch.optim skips it, and so does ZeRO).
model_case("frozen_and_unused_parameters", FrozenAndUnused, RULES[1], batch=sequences(SEQ),
           loss_fn=mse, ddp_kw=dict(find_unused_parameters=True))
model_case("frozen_parameters", lambda: FrozenAndUnused(unused=False), RULES[0],
           batch=sequences(SEQ), loss_fn=mse)
# A parameter changed in place in a forward: at stage 3 written back to the
# shard before the gathered copy goes.
model_case("embedding_renormalized_in_its_forward", RenormedEmbedding, RULES[0],
           batch=shared_tokens)
# A parameter with a gradient in earlier steps and none now: zero_grad()
# left torch.optim a zero gradient (torch 1.x's default), and torch.optim
# steps it (decay, moments); from torch 2.0 it left None, and it is skipped.
model_case("adaptive_softmax_cluster_left_out_of_a_step", AdaptiveSoftmax, RULES[0],
           batch=cluster_targets, loss_fn=lambda loss, _: loss,
           ddp_kw=dict(find_unused_parameters=True))
# Ranks taking different branches: a cluster's parameters with a gradient on
# one rank and not on the other, as DDP's find_unused_parameters allows.
model_case("adaptive_softmax_clusters_reached_by_some_ranks_with_find_unused_parameters",
           AdaptiveSoftmax, RULES[0], steps=5, batch=cluster_targets_by_rank,
           loss_fn=lambda loss, _: loss, ddp_kw=dict(find_unused_parameters=True),
           zero_kw=dict(find_unused_parameters=True))

# The optimizer's state in torch.optim's format, read at each stage and
# loaded from torch.optim's own dict into a ZeRO at another stage: across
# parameter groups (Adam L2), SGD's momentum buffers and its None without
# momentum, parameters never updated (no entry).
model_case("resnet_with_batchnorm_state_dict_in_groups_resumed_from_torch_optims", SmallResNet,
           RULES[3], groups=no_decay_groups, resume=2)
model_case("resnet_with_batchnorm_state_dict_resumed_from_torch_optims", SmallResNet, RULES[6],
           resume=2)
model_case("resnet_with_batchnorm_state_dict_without_momentum_resumed_from_torch_optims",
           SmallResNet, RULES[4], steps=2, resume=1)
model_case("torchvision_vit_state_dict_resumed_from_torch_optims", lambda: torchvision_models()
           .vision_transformer.VisionTransformer(image_size=16, patch_size=8, num_layers=2,
                                                 num_heads=2, hidden_dim=16, mlp_dim=32,
                                                 num_classes=10), RULES[0],
           batch=images(side=16), resume=2)
model_case("channels_last_network_state_dict_resumed_from_torch_optims", channels_last_net,
           RULES[0], batch=images(side=2, memory_format=torch.channels_last), resume=2)
model_case("frozen_and_unused_parameters_state_dict_resumed_from_torch_optims", FrozenAndUnused,
           RULES[0], batch=sequences(SEQ), loss_fn=mse, ddp_kw=dict(find_unused_parameters=True),
           resume=2)


if __name__ == "__main__":
    from harness import torch_main
    sys.exit(torch_main(sys.argv))
