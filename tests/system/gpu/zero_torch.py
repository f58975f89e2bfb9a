#!/usr/bin/env python3
"""ZeRO stage 3 of a torch model through the zeroshard package, on the host and
on a CUDA device, with the same losses.

    python3 tests/system/gpu/zero_torch.py [LIB] [--host-only] [--hidden H] [--bucket B]

LIB is the build's libzeroshard.so (default: $ZSH_LIB, else
build/.libs/libzeroshard.so under the current directory): the package
zeroshard is imported from that build tree's python/ folder (LIB/../../python)
where it was built, else from the interpreter's path. The script runs on torch
1.13 and 2.x alike.

A small MLP (fixed seed, fixed synthetic batches) is trained for a few steps
with AdamW at stage 3 on a one-rank zeroshard.Comm (a one-rank out-of-band
exchange), through zeroshard.Optimizer, five ways:
  (a) host:    the parameters, gradients and optimizer on the CPU;
  (b) device:  CUDA tensors: the layer keeps everything on the device;
  (c) offload: CUDA tensors with offload_optimizer cpu: optimizer states and
               master weights in pinned host memory;
  (d) nvme:    CUDA tensors with offload_optimizer nvme: gradient shards,
               optimizer states and master weights in files (a temporary
               directory), swapped in sub-groups a third of a bucket long;
  (e) infinity: (d) with offload_params nvme too: the parameter shards in a
               file as well, each gather reading this rank's and taking it up.
Each step gathers every parameter into a tensor on the device under test
(Optimizer.gather), runs forward and backward with torch, hands each gradient
over (Optimizer.grad_ready) and steps. The settings go in as policies
(ShardingPolicy, OffloadPolicy), the device runs' stream as torch's current
stream.

Checks: (a) against torch.optim.AdamW on the same model and data, (b) to (e)
against (a), losses and final parameters within fp32 tolerance; (b) to (e)
report device memory, (c) to (e) peak lower on the device than (b) and copy
bytes between host and device (the overlap fraction is printed); (d) and (e)
read and write their files; (e) keeps less on the device than (d).

Exit status: 0 when every check passed (with --host-only, (a) alone); 1 on a
mismatch; 2 when a library call failed; 77 (after (a) passed) when torch has
no CUDA or the library cannot run on the device, with "SKIP: <reason>".
"""
import argparse
import math
import os
import shutil
import sys
import tempfile

import torch
import torch.nn.functional as F

STEPS = 10
RTOL = 1e-5
# The final parameters against torch's AdamW: its formula rounds differently,
# and where a gradient element is near zero the update's sign can follow the
# rounding, moving that weight by up to 2 lr; a wrong rule is off by far more.
PARAMS_RTOL = 1e-4
SEED = 1234
BATCH, D_IN, HIDDEN, D_OUT = 64, 64, 256, 16
LR, BETAS, EPS, WD = 3e-3, (0.9, 0.999), 1e-8, 0.1
BUCKET_SIZE = 64 << 10  # several buckets, so offloaded copies can overlap updates


class DriverError(Exception):
    """A library call failed, or the package is missing (exit status 2)."""


def import_zeroshard(lib):
    """The package, from the build tree of lib where it was built there."""
    pkg = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(lib))), "python")
    if os.path.isfile(os.path.join(pkg, "zeroshard", "__init__.py")):
        sys.path.insert(0, pkg)
    try:
        import zeroshard
    except ImportError as e:
        raise DriverError("cannot import zeroshard (%s) from %s or the path: build the package "
                          "(configure's Python line) for %s" % (e, pkg, sys.executable))
    return zeroshard


# ---------------------------------------------------------------- the model
class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(D_IN, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, HIDDEN)
        self.fc3 = torch.nn.Linear(HIDDEN, D_OUT)

    def forward(self, x):
        return self.fc3(torch.tanh(self.fc2(torch.tanh(self.fc1(x)))))


def functional_call(module, params, x):
    if hasattr(torch, "func") and hasattr(torch.func, "functional_call"):
        return torch.func.functional_call(module, params, (x,))
    from torch.nn.utils import stateless  # torch 1.13
    return stateless.functional_call(module, params, (x,))


def make_problem():
    torch.manual_seed(SEED)
    model = MLP()
    init = {n: p.detach().clone() for n, p in model.named_parameters()}
    g = torch.Generator().manual_seed(SEED + 1)
    teacher = torch.randn(D_IN, D_OUT, generator=g)  # labels a model can learn
    batches = []
    for _ in range(STEPS):
        x = torch.randn(BATCH, D_IN, generator=g)
        batches.append((x, (x @ teacher).argmax(dim=1)))
    return model, init, batches


def train_reference(model, init, batches):
    """torch.optim.AdamW on the CPU: the losses and the final parameters."""
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(init[n])
    opt = torch.optim.AdamW(model.parameters(), lr=LR, betas=BETAS, eps=EPS, weight_decay=WD)
    losses = []
    for x, y in batches:
        opt.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
        losses.append(loss.item())
    return losses, {n: p.detach().clone() for n, p in model.named_parameters()}


def train_zero(zsh, comm, model, init, batches, device, stream=None, **offload):
    """ZeRO stage 3 through zeroshard.Optimizer: the losses, the final parameters,
    the stats."""
    opt = zsh.Optimizer(comm, stage=3, kind="adamw", precision="fp32", lr=LR, beta1=BETAS[0],
                        beta2=BETAS[1], eps=EPS, weight_decay=WD, stream=stream,
                        sharding_policy=zsh.ShardingPolicy(bucket_size=BUCKET_SIZE),
                        offload_policy=zsh.OffloadPolicy(**offload))
    try:
        names = list(init)
        shapes = {n: init[n].shape for n in names}
        # Flat fp32 copies on the device under test, registered in module order.
        bufs = {n: init[n].reshape(-1).to(device=device, dtype=torch.float32).contiguous()
                for n in names}
        params = {n: opt.register(n, bufs[n]) for n in names}
        if opt.device != str(device):
            raise DriverError("the optimizer's parameters are on %s, not %s" % (opt.device, device))
        opt.setup()
        del bufs  # stage 3: read at setup, the layer owns the shards now

        def gather_all(where):
            return {n: opt.gather(params[n], torch.empty(params[n].numel, device=where))
                    for n in names}

        losses = []
        for x, y in batches:
            x, y = x.to(device), y.to(device)
            leaves = {n: t.requires_grad_(True) for n, t in gather_all(device).items()}
            views = {n: leaves[n].view(shapes[n]) for n in names}
            loss = F.cross_entropy(functional_call(model, views, x), y)
            grads = torch.autograd.grad(loss, [leaves[n] for n in names])
            losses.append(loss.item())
            del views, leaves
            # Gradients are computed on torch's current stream, the one the
            # optimizer enqueues on, and stay alive until the step is done.
            grads = [g.contiguous() for g in grads]
            for n, g in zip(names, grads):
                opt.grad_ready(params[n], g)
            if not opt.step():
                raise DriverError("the step of fp32 gradients was skipped")
            del grads
        stats = opt.stats()
        final = {n: t.view(shapes[n]) for n, t in gather_all("cpu").items()}
        return losses, final, stats
    finally:
        opt.close()


# ---------------------------------------------------------------- checks
def diff(a, b):
    """(max abs difference, max relative difference) of two lists of floats, or of
    two dicts of tensors (relative to each tensor's largest magnitude)."""
    if isinstance(a, dict):
        pairs = [(a[n].double(), b[n].double()) for n in a]
        mabs = max(float((x - y).abs().max()) for x, y in pairs)
        mrel = max(float((x - y).abs().max() / y.abs().max()) for x, y in pairs)
        return mabs, mrel
    mabs = max(abs(x - y) for x, y in zip(a, b))
    mrel = max(abs(x - y) / max(abs(y), 1e-30) for x, y in zip(a, b))
    return mabs, mrel


def compare(label, got, want, failures, params_rtol=None):
    """Losses within RTOL, and the final parameters within params_rtol when given.
    Parameters are not held to a bound across devices: where a gradient element
    is near zero, rounding can flip its sign and Adam then moves that element
    by up to 2 lr the other way, which the loss hardly sees."""
    lab, lrel = diff(got[0], want[0])
    pab, prel = diff(got[1], want[1])
    ok = lrel <= RTOL and all(map(math.isfinite, got[0]))
    if params_rtol is not None:
        ok = ok and prel <= params_rtol
    print("%-22s losses max abs %.3g rel %.3g; params max abs %.3g rel %.3g  %s"
          % (label, lab, lrel, pab, prel, "ok" if ok else "MISMATCH"))
    if not ok:
        failures.append(label)


STAT_KEYS = ("device", "device_bytes", "device_peak_bytes", "copy_bytes", "copy_s", "copy_wait_s",
             "param_bytes", "grad_bytes", "state_bytes", "host_bytes", "nvme_bytes",
             "io_read_bytes", "io_write_bytes", "nbuckets")


def print_stats(label, s):
    overlap = (1.0 - s["copy_wait_s"] / s["copy_s"]) if s["copy_s"] > 0 else float("nan")
    print("%-9s %s overlap=%.3f" % (label, " ".join(
        ("%s=%.6f" if isinstance(s[k], float) else "%s=%d") % (k, s[k]) for k in STAT_KEYS),
        overlap))


def no_tf32():
    """fp32 matmuls in fp32 on the device (the default; said, in case the
    environment changed it). torch 2.9 and later refuse a mix of the legacy
    allow_tf32 flags and the fp32_precision ones, so one of the two is set."""
    matmul = torch.backends.cuda.matmul
    try:
        matmul.fp32_precision = "ieee"
        return
    except Exception:  # torch before 2.9: no such setting
        pass
    matmul.allow_tf32 = False


def set_shape(hidden, bucket):
    global HIDDEN, BUCKET_SIZE
    HIDDEN, BUCKET_SIZE = hidden, bucket


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("lib", nargs="?",
                    default=os.environ.get("ZSH_LIB", os.path.join("build", ".libs",
                                                                   "libzeroshard.so")))
    ap.add_argument("--host-only", action="store_true",
                    help="train (a) alone and check it against torch: the part that runs "
                         "without a device")
    ap.add_argument("--hidden", type=int, default=HIDDEN,
                    help="width of the hidden layers (default %(default)s); a wide one makes "
                         "the offloaded copies long enough to time their overlap")
    ap.add_argument("--bucket", type=int, default=BUCKET_SIZE,
                    help="bucket size in bytes (default %(default)s)")
    args = ap.parse_args()
    set_shape(args.hidden, args.bucket)
    zsh = import_zeroshard(args.lib)
    print("torch %s, zeroshard %s from %s" % (torch.__version__, zsh.__version__,
                                               os.path.dirname(zsh.__file__)))
    torch.set_num_threads(1)  # one summation order on the host, run after run
    no_tf32()

    model, init, batches = make_problem()
    print("model: %d parameters in %d tensors, %d steps of AdamW at stage 3, bucket %d bytes"
          % (sum(t.numel() for t in init.values()), len(init), STEPS, BUCKET_SIZE))
    ref = train_reference(model, init, batches)
    failures = []
    with zsh.Comm.from_allgather(0, 1, lambda data: [data]) as comm:
        host = train_zero(zsh, comm, model, init, batches, torch.device("cpu"))
        runs = {"torch": ref, "host": host}
        skip = None
        available, why = zsh.device_available()
        if args.host_only:
            pass
        elif not torch.cuda.is_available():
            skip = "torch %s has no CUDA device" % torch.__version__
        elif not available:
            skip = "libzeroshard cannot run on the device: %s" % why
        if skip is None and not args.host_only:
            dev = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(dev)
            stream = torch.cuda.current_stream(dev)
            runs["device"] = train_zero(zsh, comm, model, init, batches, dev, stream,
                                        offload_optimizer="none")
            runs["offload"] = train_zero(zsh, comm, model, init, batches, dev, stream,
                                         offload_optimizer="cpu")
            nvme_dir = tempfile.mkdtemp(prefix="zsh-zero-torch-", dir="/var/tmp")
            # Sub-groups cut the buckets, so a bucket goes up in several copies.
            nvme = dict(offload_optimizer="nvme", nvme_dir=nvme_dir,
                        sub_group_size=max(2048, BUCKET_SIZE // 4 // 3))
            try:
                runs["nvme"] = train_zero(zsh, comm, model, init, batches, dev, stream, **nvme)
                runs["infinity"] = train_zero(zsh, comm, model, init, batches, dev, stream,
                                              offload_params="nvme", **nvme)
            finally:
                shutil.rmtree(nvme_dir, ignore_errors=True)

        print("\nstep " + "".join("%16s" % k for k in runs))
        for i in range(STEPS):
            print("%4d " % i + "".join("%16.9f" % runs[k][0][i] for k in runs))
        print()
        compare("host vs torch AdamW", host, ref, failures, params_rtol=PARAMS_RTOL)
        if "device" in runs:
            check_device_runs(runs, failures)
        else:
            print_stats("host", host[2])

    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    if skip is not None:
        print("SKIP: " + skip)
        return 77
    print("PASSED")
    return 0


def check_device_runs(runs, failures):
    host = runs["host"]
    compare("device vs host", runs["device"], host, failures)
    compare("offload vs host", runs["offload"], host, failures)
    compare("nvme vs host", runs["nvme"], host, failures)
    compare("infinity vs host", runs["infinity"], host, failures)
    for k in ("offload", "nvme", "infinity"):
        same = runs["device"][0] == runs[k][0]
        print("%s vs device: losses %s" % (k, "bit for bit" if same else "differ"))
    print()
    dstats, nstats, istats = runs["device"][2], runs["nvme"][2], runs["infinity"][2]
    for k in ("host", "device", "offload", "nvme", "infinity"):
        print_stats(k, runs[k][2])
    if host[2]["device"] != 0 or any(runs[k][2]["device"] != 1
                                     for k in ("device", "offload", "nvme", "infinity")):
        failures.append("stats' device is not 0 for host and 1 for the device runs")
    for k in ("offload", "nvme", "infinity"):
        s = runs[k][2]
        if not s["device_peak_bytes"] < dstats["device_peak_bytes"]:
            failures.append("%s's device_peak_bytes %d is not below device's %d"
                            % (k, s["device_peak_bytes"], dstats["device_peak_bytes"]))
        if s["copy_bytes"] == 0:
            failures.append("%s copied no bytes between host and device" % k)
    for k in ("nvme", "infinity"):
        s = runs[k][2]
        if s["nvme_bytes"] == 0 or s["io_read_bytes"] == 0 or s["io_write_bytes"] == 0:
            failures.append("%s kept nothing in, or read or wrote nothing from, its files" % k)
    if not istats["device_bytes"] < nstats["device_bytes"]:
        failures.append("infinity keeps %d bytes on the device, not fewer than nvme's %d"
                        % (istats["device_bytes"], nstats["device_bytes"]))


if __name__ == "__main__":
    try:
        sys.exit(main())
    except DriverError as e:
        print("ERROR: %s" % e)
        sys.exit(2)
    except RuntimeError as e:  # zeroshard.ZshError: a failed call, with the library's message
        zeroshard = sys.modules.get("zeroshard")
        if zeroshard is None or not isinstance(e, zeroshard.ZshError):
            raise
        print("ERROR: %s" % e)
        sys.exit(2)
