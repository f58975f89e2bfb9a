#!/usr/bin/env python3
"""zeroshard.Optimizer's device side where it can run without a GPU (run by
tests/system/python/run_optim_device.sh): the GPU machine's driver
(tests/system/gpu/zero_torch.py) in its host mode, and its skip without a
device; a tensor on neither the CPU nor a CUDA device, or on another device
than the parameters, refused by name; the stream setting from a torch stream.
The device runs themselves are the GPU machine's (tests/system/gpu/run.sh).
"""

import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Skip, case, main, raises  # noqa: E402

TOP = os.environ.get("abs_top_srcdir") or os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                       "..", "..")
DRIVER = os.path.join(TOP, "tests", "system", "gpu", "zero_torch.py")


def run_driver(ctx, *args):
    """The driver on the library of the package's build tree: (status, output)."""
    pkg = os.path.dirname(os.path.dirname(os.path.abspath(ctx.zsh.__file__)))
    lib = os.path.join(os.path.dirname(pkg), ".libs", "libzeroshard.so")
    p = subprocess.run([sys.executable, DRIVER, lib] + list(args), stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True, timeout=300)
    return p.returncode, p.stdout


def host_line_ok(out):
    lines = [l for l in out.splitlines() if l.startswith("host vs torch AdamW")]
    return len(lines) == 1 and lines[0].endswith(" ok")


@case
def test_gpu_driver_host_mode_matches_torch_adamw(ctx):
    ctx.need_torch()
    if ctx.rank != 0:
        return
    rc, out = run_driver(ctx, "--host-only")
    if rc != 0 or not host_line_ok(out) or "PASSED" not in out:
        raise AssertionError("zero_torch.py --host-only exited %d:\n%s" % (rc, out[-3000:]))


@case
def test_gpu_driver_without_a_device_skips_after_the_host_run(ctx):
    ctx.need_torch()
    if ctx.torch.cuda.is_available() and ctx.zsh.device_available()[0]:
        raise Skip("a CUDA device is usable: tests/system/gpu/run.sh runs the driver")
    if ctx.rank != 0:
        return
    rc, out = run_driver(ctx)
    if rc != 77 or not host_line_ok(out) or "SKIP: " not in out:
        raise AssertionError("zero_torch.py exited %d, not 77 after the host run:\n%s"
                             % (rc, out[-3000:]))


@case
def test_a_tensor_on_neither_cpu_nor_cuda_is_refused_by_name(ctx):
    ctx.need_torch()
    with ctx.zsh.Optimizer(ctx.comm) as opt:
        raises(lambda: opt.register("w", ctx.torch.empty(4, device="meta")), ValueError,
               "parameter 'w'", "meta", "CPU or CUDA")
        if opt.params or opt.device is not None:
            raise AssertionError("a refused parameter was registered: %s, %s"
                                 % (opt.params, opt.device))
    # The collectives still take CPU tensors only.
    raises(lambda: ctx.comm.all_reduce(ctx.torch.empty(4, device="meta")), ValueError,
           "meta", "CPU tensors")


@case
def test_buffers_on_another_device_than_the_parameters_are_refused(ctx):
    ctx.need_torch()
    torch = ctx.torch
    with ctx.zsh.Optimizer(ctx.comm) as opt:
        if torch.cuda.is_available() and ctx.zsh.device_available()[0]:
            w = opt.register("w", torch.ones(5, device="cuda"))
            other, where = torch.ones(5), "cpu"
        else:
            # No device here: a CPU parameter, and the optimizer told its
            # parameters are on cuda:0, stands in for one.
            w = opt.register("w", np.ones(5, np.float32))
            if opt.device != "cpu":
                raise AssertionError("a numpy parameter put the optimizer on %s" % opt.device)
            opt._device = "cuda:0"
            other, where = torch.ones(5), "cpu"
        for call in (lambda: opt.grad_ready(w, other), lambda: opt.set_param(w, other),
                     lambda: opt.register("v", other)):
            raises(call, ValueError, "is on %s" % where, "parameters are on cuda:0")


class FakeStream:
    """What Optimizer takes of a torch.cuda.Stream: its cudaStream_t."""
    cuda_stream = 0x7f00


@case
def test_the_stream_setting_takes_a_torch_stream_or_its_address(ctx):
    for value, want in ((FakeStream(), 0x7f00), (0x1234, 0x1234), (None, None), (0, None)):
        with ctx.zsh.Optimizer(ctx.comm, stream=value) as opt:
            if opt.config["stream"] != want:
                raise AssertionError("stream=%r gave %r, not %r" % (value, opt.config["stream"],
                                                                     want))
    raises(lambda: ctx.zsh.Optimizer(ctx.comm, stream=-1), ValueError, "stream", ">= 0")
    raises(lambda: ctx.zsh.Optimizer(ctx.comm, stream="s"), TypeError, "stream", "integer")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
