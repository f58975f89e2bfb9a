#!/usr/bin/env python3
"""zeroshard.Optimizer against torch.optim, run once per rank
(tests/system/python/run_optim.sh starts the ranks): at every ZeRO stage the
layer and a plain torch reference take the same gradients step by step, and
the parameters must agree after every step.

- torch.optim.SGD (plain, weight decay, momentum, Nesterov), Adam (L2 weight
  decay) and AdamW (decoupled);
- clipping against torch.nn.utils.clip_grad_norm_ (active in some steps and
  not in others, and at its threshold), and stats()["last_grad_norm"]
  against the norm it returns;
- bf16 and fp16 parameters with fp32 master weights against a torch fp32
  master copy cast to the half type after each step;
- fp16 dynamic loss scaling against torch.cuda.amp.GradScaler's rules,
  written out below because GradScaler needs CUDA.

Each rank hands the layer its own gradients, a function of (rank, step,
parameter); the layer sums them over the ranks (ZSH_SUM), so the reference
gets that sum, computed here from the same function. The gradients are small
integers times a power of two, so every partial sum is exact in the
parameter's dtype whatever order a ring adds them in: the reference and the
layer see bit-identical gradients, and what is left to differ is the
optimizer arithmetic alone.
"""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import case, main  # noqa: E402

STAGES = (0, 1, 2, 3)
# Odd sizes, so no bucket and no shard boundary falls on a parameter's edge;
# 263 elements fill a small bucket alone.
SIZES = (37, 101, 5, 263, 64)
# A few hundred bytes: parameters spread over several buckets (fp32: at most
# 64 elements a bucket), and each bucket's shards split its parameters.
SMALL_BUCKET = 256

# fp32 results of the same math in another order differ by a few ulps (one ulp
# is 1.2e-7 relative) per operation; 1e-6 of the parameter's largest value
# leaves room for that over the steps while a wrong rule (a swapped beta, a
# missing Nesterov term, a wrong clipping factor) moves parameters by 1e-4 of
# that or more, since the cases pick learning rates whose updates are a tenth
# of the parameters' size or more.
FP32_RTOL = 1e-6
# Half-precision parameters are the fp32 master weights rounded to nearest
# even; masters a few fp32 ulps apart round to the same half value except
# next to a rounding boundary, where they land one half ulp apart.
HALF_SIGNIFICANT_BITS = {"bf16": 8, "fp16": 11}
HALF_MIN_EXPONENT = {"bf16": -125, "fp16": -13}  # frexp exponent of the smallest normal


def torch_dtype(torch, precision):
    return {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[precision]


def init_values(j, n, scale):
    """Parameter j's initial values: the same on every rank, exact in every dtype."""
    i = np.arange(n)
    return (((i * 37 + j * 11) % 19) - 9) * 2.0 ** -4 * scale


def grad_values(rank, step, j, n, precision, mag=1.0):
    """Rank's gradient of parameter j at a step: integers times 2^-shift,
    within +-1/4, so the sum over up to four ranks is exact in the dtype
    (fp32: 12 significant bits of 24; halves: 6 of bf16's 8 and fp16's 11).
    mag (a power of two) scales a whole step, keeping it exact."""
    levels, shift = (1023, 12) if precision == "fp32" else (15, 6)
    i = np.arange(n, dtype=np.int64)
    k = (i * 7919 + rank * 104729 + step * 15485863 + j * 32452843) % (2 * levels + 1) - levels
    return k.astype(np.float64) * 2.0 ** -shift * mag


def summed_grads(size, step, precision, mag=1.0):
    return [sum(grad_values(r, step, j, n, precision, mag) for r in range(size))
            for j, n in enumerate(SIZES)]


def half_ulp(x, precision):
    _, e = np.frexp(np.abs(x))
    e = np.where(x == 0, HALF_MIN_EXPONENT[precision], np.maximum(e, HALF_MIN_EXPONENT[precision]))
    return np.ldexp(1.0, e - HALF_SIGNIFICANT_BITS[precision])


def check_close(got, want, precision, what):
    """got (the layer's) against want (the reference's), as float64 arrays."""
    if precision == "fp32":
        scale = max(float(np.max(np.abs(want))), 1e-30)
        err = np.abs(got - want)
        bad = err > FP32_RTOL * scale
        limit = "%g of max |want| %.6g" % (FP32_RTOL, scale)
    else:
        err = np.abs(got - want)
        bad = err > half_ulp(want, precision)
        limit = "one %s ulp" % precision
    if bad.any():
        i = int(np.argmax(bad))
        raise AssertionError("%s: %d of %d elements differ by more than %s; element %d: "
                             "layer %.9g, torch %.9g (max |diff| %.3g)"
                             % (what, int(bad.sum()), got.size, limit, i, got[i], want[i],
                                float(err.max())))


class Run:
    """The layer and its torch reference on the same initial parameters."""

    def __init__(self, ctx, stage, precision, settings, torch_opt, param_scale=1.0):
        torch = ctx.torch
        self.ctx, self.torch, self.stage, self.precision = ctx, torch, stage, precision
        self.dtype = torch_dtype(torch, precision)
        init = [init_values(j, n, param_scale) for j, n in enumerate(SIZES)]
        # The reference's fp32 parameters are the master copy in mixed precision.
        self.master = [torch.nn.Parameter(torch.tensor(v, dtype=torch.float32)) for v in init]
        self.ref = torch_opt(torch, self.master)
        self.bufs = [torch.tensor(v, dtype=self.dtype) for v in init]
        self.opt = ctx.zsh.Optimizer(ctx.comm, stage=stage, precision=precision, **settings)
        self.params = [self.opt.register("p%d" % j, b) for j, b in enumerate(self.bufs)]
        self.opt.setup()

    def hand_over(self, grads):
        """The layer gets this rank's gradients, in the layer's dtype."""
        for p, g in zip(self.params, grads):
            t = g if self.torch.is_tensor(g) else self.torch.tensor(g, dtype=self.dtype)
            self.opt.grad_ready(p, t)

    def set_ref_grads(self, total):
        for m, g in zip(self.master, total):
            m.grad = self.torch.tensor(g, dtype=self.torch.float32)

    def layer_values(self):
        out = []
        for p, b in zip(self.params, self.bufs):
            t = self.torch.empty(p.numel, dtype=self.dtype)
            self.opt.gather(p, t)  # collective at stage 3: every rank, same order
            if self.stage < 3:
                # At stages 0-2 the registered buffer is the parameter.
                assert self.torch.equal(t, b), "%s: gather differs from the buffer" % p.name
            out.append(t.double().numpy())
        return out

    def compare(self, step):
        """The layer's parameters after @step against the reference's; returns the layer's."""
        values = self.layer_values()
        for j, got in enumerate(values):
            want = self.master[j].detach().to(self.dtype).double().numpy()
            check_close(got, want, self.precision,
                        "stage %d after step %d: parameter p%d" % (self.stage, step, j))
        return values

    def close(self):
        self.opt.close()


def check_norm(got, want, step):
    # The layer sums squares in double, torch in its fp32 norm kernels: the
    # norms agree to a few fp32 ulps.
    if abs(got - want) > 1e-6 * want:
        raise AssertionError("step %d: last_grad_norm %.9g, clip_grad_norm_ gave %.9g"
                             % (step, got, want))


def run_plain(ctx, stage, precision, settings, torch_opt, steps=6, mags=None,
              max_norm=None, param_scale=1.0):
    """steps steps of the same summed gradients on both sides; with max_norm,
    both clip to it (the layer through max_grad_norm)."""
    ctx.need_torch()
    torch = ctx.torch
    if max_norm is not None:
        settings = dict(settings, max_grad_norm=max_norm)
    run = Run(ctx, stage, precision, settings, torch_opt, param_scale)
    clipped = 0
    try:
        for step in range(1, steps + 1):
            # Read like a forward pass, before the gradients (stage 3 records
            # that order and prefetches by it): the previous step's result.
            run.compare(step - 1)
            mag = mags[step - 1] if mags else 1.0
            run.hand_over([grad_values(ctx.rank, step, j, n, precision, mag)
                           for j, n in enumerate(SIZES)])
            assert run.opt.step(), "step %d was skipped" % step
            run.set_ref_grads(summed_grads(ctx.size, step, precision, mag))
            if max_norm is not None:
                # The norm's fp32 value is what torch tests against max_norm.
                norm = float(torch.nn.utils.clip_grad_norm_(run.master, max_norm))
                clipped += max_norm / (norm + 1e-6) < 1
                check_norm(run.opt.stats()["last_grad_norm"], norm, step)
            run.ref.step()
        run.compare(steps)
        st = run.opt.stats()
        assert (st["steps"], st["skipped_steps"]) == (steps, 0), st
        if max_norm is not None:
            assert 0 < clipped < steps, "clipping acted in %d of %d steps" % (clipped, steps)
    finally:
        run.close()


def staged(name):
    """Register fn(ctx, stage) as one case per stage: name_stage0 .. name_stage3."""
    def wrap(fn):
        for stage in STAGES:
            def one(ctx, stage=stage):
                fn(ctx, stage)
            one.__name__ = "test_%s_stage%d" % (name, stage)
            case(one)
        return fn
    return wrap


def sgd(**kw):
    return lambda torch, params: torch.optim.SGD(params, dampening=0, **kw)


# ---- SGD --------------------------------------------------------------------------
@staged("sgd_plain")
def sgd_plain(ctx, stage):
    run_plain(ctx, stage, "fp32", dict(kind="sgd", lr=0.5), sgd(lr=0.5))


@staged("sgd_weight_decay")
def sgd_weight_decay(ctx, stage):
    run_plain(ctx, stage, "fp32", dict(kind="sgd", lr=0.5, weight_decay=0.1,
                                       bucket_size=SMALL_BUCKET),
              sgd(lr=0.5, weight_decay=0.1))


@staged("sgd_momentum")
def sgd_momentum(ctx, stage):
    run_plain(ctx, stage, "fp32", dict(kind="sgd", lr=0.25, momentum=0.9, weight_decay=0.05),
              sgd(lr=0.25, momentum=0.9, weight_decay=0.05))


@staged("sgd_nesterov")
def sgd_nesterov(ctx, stage):
    run_plain(ctx, stage, "fp32", dict(kind="sgd", lr=0.25, momentum=0.9, nesterov=1,
                                       weight_decay=0.05, bucket_size=SMALL_BUCKET),
              sgd(lr=0.25, momentum=0.9, nesterov=True, weight_decay=0.05))


# ---- Adam and AdamW -----------------------------------------------------------------
@staged("adam_l2")
def adam_l2(ctx, stage):
    run_plain(ctx, stage, "fp32", dict(kind="adam", lr=0.05, weight_decay=0.1,
                                       bucket_size=SMALL_BUCKET),
              lambda torch, ps: torch.optim.Adam(ps, lr=0.05, weight_decay=0.1))


@staged("adamw")
def adamw(ctx, stage):
    # update_threads: the setting reaches the layer (any count gives the same bits).
    run_plain(ctx, stage, "fp32", dict(kind="adamw", lr=0.05, beta1=0.8, beta2=0.99,
                                       eps=1e-6, weight_decay=0.1, update_threads=2),
              lambda torch, ps: torch.optim.AdamW(ps, lr=0.05, betas=(0.8, 0.99), eps=1e-6,
                                                  weight_decay=0.1))


# ---- clipping -------------------------------------------------------------------------
CLIP_MAGS = (1.0, 4.0, 0.25, 2.0, 0.5, 1.0)


def norm_between(size, precision, mags):
    """A max_norm between the smallest and largest of the steps' norms."""
    norms = [np.sqrt(sum(float(np.sum(g * g)) for g in summed_grads(size, s, precision, m)))
             for s, m in enumerate(mags, 1)]
    return float(np.float32(np.sqrt(min(norms) * max(norms))))


@staged("clip_sgd_momentum")
def clip_sgd_momentum(ctx, stage):
    max_norm = norm_between(ctx.size, "fp32", CLIP_MAGS)
    run_plain(ctx, stage, "fp32", dict(kind="sgd", lr=0.25, momentum=0.9,
                                       bucket_size=SMALL_BUCKET),
              sgd(lr=0.25, momentum=0.9), mags=CLIP_MAGS, max_norm=max_norm)


@staged("clip_adamw")
def clip_adamw(ctx, stage):
    max_norm = norm_between(ctx.size, "fp32", CLIP_MAGS)
    run_plain(ctx, stage, "fp32", dict(kind="adamw", lr=0.05, weight_decay=0.1),
              lambda torch, ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1),
              mags=CLIP_MAGS, max_norm=max_norm)


@staged("clip_at_threshold")
def clip_at_threshold(ctx, stage):
    # Step 1's norm lies just below max_norm, less than torch's 1e-6 guard
    # below: torch still multiplies, by max_norm / (norm + 1e-6), which at a
    # norm this small is 1e-4 below 1. The parameters are as small as the
    # gradients, so that factor shows in them.
    mags = tuple(m * 2.0 ** -9 for m in (1.0, 4.0, 0.25, 1.0, 2.0))
    total = summed_grads(ctx.size, 1, "fp32", mags[0])
    norm = np.sqrt(sum(float(np.sum(g * g)) for g in total))
    max_norm = float(np.nextafter(np.float32(norm), np.float32(1)))
    assert norm < max_norm < norm + 1e-6
    run_plain(ctx, stage, "fp32", dict(kind="sgd", lr=1.0, bucket_size=SMALL_BUCKET),
              sgd(lr=1.0), steps=5, mags=mags, max_norm=max_norm, param_scale=2.0 ** -9)


# ---- mixed precision: fp32 master weights -----------------------------------------------
@staged("bf16_adamw_master")
def bf16_adamw_master(ctx, stage):
    run_plain(ctx, stage, "bf16", dict(kind="adamw", lr=0.1, weight_decay=0.1,
                                       bucket_size=SMALL_BUCKET),
              lambda torch, ps: torch.optim.AdamW(ps, lr=0.1, weight_decay=0.1))


@staged("fp16_sgd_momentum_master")
def fp16_sgd_momentum_master(ctx, stage):
    # A static scale of 1: loss scaling has its own case below.
    run_plain(ctx, stage, "fp16", dict(kind="sgd", lr=0.25, momentum=0.9, nesterov=1,
                                       loss_scale=1, dynamic_loss_scale=0),
              sgd(lr=0.25, momentum=0.9, nesterov=True))


# ---- fp16 dynamic loss scaling ----------------------------------------------------------
class GradScalerRules:
    """torch.cuda.amp.GradScaler's update (_amp_update_scale_) on the CPU:
    an overflow multiplies the scale by backoff_factor and restarts the count;
    growth_interval overflow-free steps in a row multiply it by growth_factor."""

    def __init__(self, init_scale, growth_interval, growth_factor=2.0, backoff_factor=0.5):
        self.scale = init_scale
        self.interval = growth_interval
        self.growth, self.backoff = growth_factor, backoff_factor
        self.tracker = 0

    def update(self, found_inf):
        if found_inf:
            self.scale *= self.backoff
            self.tracker = 0
        elif self.tracker + 1 == self.interval:
            self.scale *= self.growth
            self.tracker = 0
        else:
            self.tracker += 1


# step -> (rank, value): one rank's gradient holds it at that step.
def bad_steps(size):
    return {3: (size - 1, np.inf), 6: (0, np.nan), 7: (1 % size, -np.inf)}


@staged("fp16_dynamic_loss_scale")
def fp16_dynamic_loss_scale(ctx, stage):
    # 2^8 keeps every scaled gradient and sum exact in fp16 (at most 6
    # significant bits, and below 65504 up to three doublings).
    ctx.need_torch()
    torch = ctx.torch
    window, steps = 2, 10
    mags = (1.0, 2.0, 0.5) * 4
    scaler = GradScalerRules(256.0, window)
    max_norm = norm_between(ctx.size, "fp16", mags[:steps])
    settings = dict(kind="adamw", lr=0.05, weight_decay=0.1, loss_scale=scaler.scale,
                    dynamic_loss_scale=1, loss_scale_window=window, max_grad_norm=max_norm,
                    bucket_size=SMALL_BUCKET)
    run = Run(ctx, stage, "fp16", settings,
              lambda torch, ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1))
    bad = bad_steps(ctx.size)
    skipped = clipped = 0
    skipped_last = False
    try:
        before = None
        for step in range(1, steps + 1):
            now = run.compare(step - 1)  # read as a forward pass would, before the gradients
            if skipped_last:
                for j, (a, b) in enumerate(zip(now, before)):
                    assert np.array_equal(a, b), "skipped step %d changed p%d" % (step - 1, j)
            before = now
            scale = run.opt.loss_scale
            assert scale == scaler.scale, "step %d: loss scale %g, GradScaler's %g" % (
                step, scale, scaler.scale)
            mine = [torch.tensor(grad_values(ctx.rank, step, j, n, "fp16", mags[step - 1]) * scale,
                                 dtype=torch.float16) for j, n in enumerate(SIZES)]
            total = [g * scale for g in summed_grads(ctx.size, step, "fp16", mags[step - 1])]
            if step in bad:
                rank, value = bad[step]
                if ctx.rank == rank:
                    mine[1][7] = value
                total[1][7] += value
            run.hand_over(mine)
            applied = run.opt.step()
            # GradScaler.unscale_: multiply by 1/scale and look for inf/nan.
            found_inf = not all(np.isfinite(g).all() for g in total)
            run.set_ref_grads([g / scale for g in total])
            if not found_inf:
                norm = float(torch.nn.utils.clip_grad_norm_(run.master, max_norm))
                clipped += max_norm / (norm + 1e-6) < 1
                check_norm(run.opt.stats()["last_grad_norm"], norm, step)
                run.ref.step()  # GradScaler.step skips the step on an overflow
            scaler.update(found_inf)
            skipped += found_inf
            assert applied == (not found_inf), "step %d: applied %s with found_inf %s" % (
                step, applied, found_inf)
            st = run.opt.stats()
            assert (st["steps"], st["skipped_steps"]) == (step, skipped), (step, st)
            assert st["loss_scale"] == scaler.scale, "after step %d: scale %g, GradScaler's %g" % (
                step, st["loss_scale"], scaler.scale)
            skipped_last = found_inf
        run.compare(steps)
        assert skipped == len(bad) and 0 < clipped < steps - skipped, (skipped, clipped)
    finally:
        run.close()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
