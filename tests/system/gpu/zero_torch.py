#!/usr/bin/env python3
"""ZeRO stage 3 of a torch model through libzeroshard's C API, on the host and
on a CUDA device, with the same losses.

    python3 tests/system/gpu/zero_torch.py [LIB]

LIB is libzeroshard.so (default: $ZSH_LIB, else build/.libs/libzeroshard.so
under the current directory). The library is driven through ctypes, so no
build of the Python package is needed, and the script runs on torch 1.13 and
2.x alike.

A small MLP (fixed seed, fixed synthetic batches) is trained for a few steps
with AdamW at stage 3 on a one-rank communicator (zsh_comm_init_oob with a
one-rank out-of-band exchange), three ways:
  (a) host:    the parameters, gradients and optimizer on the CPU;
  (b) device:  CUDA tensors: the layer keeps everything on the device;
  (c) offload: CUDA tensors with offload_optimizer cpu: optimizer states and
               master weights in pinned host memory;
  (d) nvme:    CUDA tensors with offload_optimizer nvme: gradient shards,
               optimizer states and master weights in files (a temporary
               directory), swapped in sub-groups a third of a bucket long;
  (e) infinity: (d) with offload_params nvme too: the parameter shards in a
               file as well, each gather reading this rank's and taking it up.
Each step fetches every parameter (the pointer wrapped as a tensor view),
runs forward and backward with torch, releases, hands each gradient over
with zsh_optim_grad_ready and calls zsh_optim_step.

Checks: (a) against torch.optim.AdamW on the same model and data, (b) to (e)
against (a), losses and final parameters within fp32 tolerance; (b) to (e)
report device memory, (c) to (e) peak lower on the device than (b) and copy
bytes between host and device (the overlap fraction is printed); (d) and (e)
read and write their files; (e) keeps less on the device than (d).

Exit status: 0 when every check passed; 1 on a mismatch; 2 when a library
call failed; 77 (after (a) passed) when torch has no CUDA or the library
cannot run on the device, with "SKIP: <reason>".
"""
import argparse
import ctypes
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

# ---------------------------------------------------------------- the C API
# Enum values of include/zeroshard.h and include/zeroshard/optim.h.
ZSH_OK = 0
ZSH_FLOAT32 = 8
ZSH_OPTIM_ADAMW = 2
ZSH_OFFLOAD_NONE, ZSH_OFFLOAD_CPU, ZSH_OFFLOAD_NVME = 0, 1, 2
ZSH_MEM_HOST, ZSH_MEM_CUDA = 1, 2

c_size_t, c_int, c_uint, c_float = ctypes.c_size_t, ctypes.c_int, ctypes.c_uint, ctypes.c_float
c_double, c_ulong, c_ulonglong = ctypes.c_double, ctypes.c_ulong, ctypes.c_ulonglong
c_void_p, c_char_p = ctypes.c_void_p, ctypes.c_char_p


class OptimConfig(ctypes.Structure):
    """zsh_optim_config_t, field by field (enums are int)."""
    _fields_ = [
        ("size", c_size_t),
        ("stage", c_int),
        ("kind", c_int),
        ("precision", c_int),
        ("lr", c_float),
        ("beta1", c_float),
        ("beta2", c_float),
        ("eps", c_float),
        ("weight_decay", c_float),
        ("momentum", c_float),
        ("nesterov", c_int),
        ("max_grad_norm", c_float),
        ("loss_scale", c_float),
        ("dynamic_loss_scale", c_int),
        ("loss_scale_window", c_uint),
        ("min_loss_scale", c_float),
        ("bucket_size", c_size_t),
        ("max_live_bytes", c_size_t),
        ("prefetch", c_int),
        ("offload_optimizer", c_int),
        ("offload_params", c_int),
        ("nvme_dir", c_char_p),
        ("host_mem_limit", c_size_t),
        ("sub_group_size", c_size_t),
        ("update_threads", c_int),
        ("hpz", c_int),
        ("stream", c_void_p),
    ]


class OptimStats(ctypes.Structure):
    """zsh_optim_stats_t, field by field."""
    _fields_ = [
        ("param_bytes", c_size_t),
        ("grad_bytes", c_size_t),
        ("state_bytes", c_size_t),
        ("buffer_bytes", c_size_t),
        ("buffer_peak_bytes", c_size_t),
        ("gathered_peak_bytes", c_size_t),
        ("comm_bytes_last_step", c_size_t),
        ("steps", c_ulong),
        ("skipped_steps", c_ulong),
        ("loss_scale", c_float),
        ("last_grad_norm", c_double),
        ("nbuckets", c_size_t),
        ("prefetch_hits", c_ulong),
        ("order_rebuilds", c_ulong),
        ("compute_bytes", c_size_t),
        ("host_bytes", c_size_t),
        ("nvme_bytes", c_size_t),
        ("host_buffer_bytes", c_size_t),
        ("host_buffer_peak_bytes", c_size_t),
        ("io_read_bytes", c_ulonglong),
        ("io_write_bytes", c_ulonglong),
        ("io_wait_s", c_double),
        ("io_busy_s", c_double),
        ("io_overlap_s", c_double),
        ("io_engine", c_char_p),
        ("comm_bytes_cross_node_last_step", c_size_t),
        ("comm_bytes_node_last_step", c_size_t),
        ("hpz", c_int),
        ("nnodes", c_int),
        ("hpz_bytes", c_size_t),
        ("hpz_gathers", c_ulong),
        ("device", c_int),
        ("device_bytes", c_size_t),
        ("device_peak_bytes", c_size_t),
        ("copy_bytes", c_ulonglong),
        ("copy_s", c_double),
        ("copy_wait_s", c_double),
    ]


OOB_ALLGATHER = ctypes.CFUNCTYPE(c_int, c_void_p, c_void_p, c_size_t, c_void_p,
                                 ctypes.POINTER(c_void_p))
OOB_TEST = ctypes.CFUNCTYPE(c_int, c_void_p)
OOB_FREE = ctypes.CFUNCTYPE(None, c_void_p)


class Oob(ctypes.Structure):
    """zsh_oob_t."""
    _fields_ = [("rank", c_int), ("size", c_int), ("ctx", c_void_p),
                ("allgather", OOB_ALLGATHER), ("test", OOB_TEST), ("free", OOB_FREE)]


class ZshError(Exception):
    pass


class Lib:
    """The few calls of libzeroshard this script needs, checked."""

    def __init__(self, path):
        try:
            self.c = c = ctypes.CDLL(path)
        except OSError as e:
            raise ZshError("cannot load %s: %s (pass the library or set ZSH_LIB)" % (path, e))
        sig = {
            "zsh_last_error": (c_char_p, []),
            "zsh_status_string": (c_char_p, [c_int]),
            "zsh_comm_init_oob": (c_int, [ctypes.POINTER(Oob), ctypes.POINTER(c_void_p)]),
            "zsh_comm_destroy": (c_int, [c_void_p]),
            "zsh_device_available": (c_int, []),
            "zsh_mem_type": (c_int, [c_void_p, ctypes.POINTER(c_int)]),
            "zsh_optim_config_init": (None, [ctypes.POINTER(OptimConfig)]),
            "zsh_optim_create": (c_int, [c_void_p, ctypes.POINTER(OptimConfig),
                                         ctypes.POINTER(c_void_p)]),
            "zsh_optim_destroy": (None, [c_void_p]),
            "zsh_optim_register": (c_int, [c_void_p, c_char_p, c_size_t, c_int, c_void_p,
                                           ctypes.POINTER(c_void_p)]),
            "zsh_optim_setup": (c_int, [c_void_p]),
            "zsh_optim_fetch": (c_int, [c_void_p, c_void_p, ctypes.POINTER(c_void_p)]),
            "zsh_optim_release": (c_int, [c_void_p, c_void_p]),
            "zsh_optim_grad_ready": (c_int, [c_void_p, c_void_p, c_void_p]),
            "zsh_optim_step": (c_int, [c_void_p, ctypes.POINTER(c_int)]),
            "zsh_optim_get_stats": (c_int, [c_void_p, ctypes.POINTER(OptimStats)]),
        }
        for name, (res, args) in sig.items():
            f = getattr(c, name)
            f.restype, f.argtypes = res, args

    def check(self, status, what):
        if status != ZSH_OK:
            raise ZshError("%s: %s (%s)" % (what, self.c.zsh_status_string(status).decode(),
                                            self.c.zsh_last_error().decode()))

    def comm_one_rank(self):
        """A one-rank communicator: the out-of-band allgather of one rank is a copy."""
        def allgather(send, recv, length, ctx, req_p):
            ctypes.memmove(recv, send, length)
            req_p[0] = None
            return ZSH_OK

        # Kept on self: the callbacks must outlive the call.
        self._oob_fns = (OOB_ALLGATHER(allgather), OOB_TEST(lambda req: ZSH_OK),
                         OOB_FREE(lambda req: None))
        oob = Oob(0, 1, None, *self._oob_fns)
        comm = c_void_p()
        self.check(self.c.zsh_comm_init_oob(ctypes.byref(oob), ctypes.byref(comm)),
                   "zsh_comm_init_oob")
        return comm

    def mem_type(self, ptr):
        t = c_int()
        self.check(self.c.zsh_mem_type(c_void_p(ptr), ctypes.byref(t)), "zsh_mem_type")
        return t.value


class CudaView:
    """A device pointer as __cuda_array_interface__, for torch.as_tensor."""

    def __init__(self, ptr, numel):
        self.__cuda_array_interface__ = {"shape": (numel,), "typestr": "<f4",
                                         "data": (ptr, False), "strides": None, "version": 2}


def view_of(ptr, numel, device):
    """A tensor over numel fp32 elements at ptr, without a copy."""
    if device.type == "cuda":
        return torch.as_tensor(CudaView(ptr, numel), device=device)
    return torch.frombuffer((ctypes.c_float * numel).from_address(ptr), dtype=torch.float32)


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


def train_zero(lib, comm, model, init, batches, device, offload, stream, nvme_dir=None,
               offload_params=ZSH_OFFLOAD_NONE):
    """ZeRO stage 3 through the C API: the losses, the final parameters, the stats."""
    cfg = OptimConfig()
    lib.c.zsh_optim_config_init(ctypes.byref(cfg))
    cfg.size = ctypes.sizeof(OptimConfig)
    cfg.stage = 3
    cfg.kind = ZSH_OPTIM_ADAMW
    cfg.precision = ZSH_FLOAT32
    cfg.lr, cfg.beta1, cfg.beta2, cfg.eps, cfg.weight_decay = LR, BETAS[0], BETAS[1], EPS, WD
    cfg.bucket_size = BUCKET_SIZE
    cfg.offload_optimizer = offload
    cfg.offload_params = offload_params
    cfg.stream = stream
    if nvme_dir is not None:
        cfg.nvme_dir = nvme_dir.encode()
        # Sub-groups cut the buckets, so a bucket goes up in several copies.
        cfg.sub_group_size = max(2048, BUCKET_SIZE // 4 // 3)
    opt = c_void_p()
    lib.check(lib.c.zsh_optim_create(comm, ctypes.byref(cfg), ctypes.byref(opt)),
              "zsh_optim_create")
    try:
        names = list(init)
        shapes = {n: init[n].shape for n in names}
        numels = {n: init[n].numel() for n in names}
        # Flat fp32 copies on the device under test, registered in module order.
        bufs = {n: init[n].reshape(-1).to(device=device, dtype=torch.float32).contiguous()
                for n in names}
        want_mem = ZSH_MEM_CUDA if device.type == "cuda" else ZSH_MEM_HOST
        handles = {}
        for n in names:
            if lib.mem_type(bufs[n].data_ptr()) != want_mem:
                raise ZshError("zsh_mem_type of %s's buffer is not %s memory" % (n, device.type))
            h = c_void_p()
            lib.check(lib.c.zsh_optim_register(opt, n.encode(), numels[n], ZSH_FLOAT32,
                                               c_void_p(bufs[n].data_ptr()), ctypes.byref(h)),
                      "zsh_optim_register " + n)
            handles[n] = h
        lib.check(lib.c.zsh_optim_setup(opt), "zsh_optim_setup")
        del bufs  # stage 3: read at setup, the layer owns the shards now

        def fetch_all():
            views = {}
            for n in names:
                ptr = c_void_p()
                lib.check(lib.c.zsh_optim_fetch(opt, handles[n], ctypes.byref(ptr)),
                          "zsh_optim_fetch " + n)
                if lib.mem_type(ptr.value) != want_mem:
                    raise ZshError("zsh_optim_fetch of %s gave no %s memory" % (n, device.type))
                views[n] = view_of(ptr.value, numels[n], device)
            return views

        def release_all():
            for n in names:
                lib.check(lib.c.zsh_optim_release(opt, handles[n]), "zsh_optim_release " + n)

        losses = []
        for x, y in batches:
            x, y = x.to(device), y.to(device)
            views = fetch_all()
            leaves = {n: views[n].detach().requires_grad_(True) for n in names}
            params = {n: leaves[n].view(shapes[n]) for n in names}
            loss = F.cross_entropy(functional_call(model, params, x), y)
            grads = torch.autograd.grad(loss, [leaves[n] for n in names])
            losses.append(loss.item())  # synchronises: the views are read
            del params, leaves, views
            release_all()
            # Gradients are computed on torch's current stream, the one the
            # optimizer enqueues on, and stay alive until the step is done.
            grads = [gr.contiguous() for gr in grads]
            for n, gr in zip(names, grads):
                lib.check(lib.c.zsh_optim_grad_ready(opt, handles[n], c_void_p(gr.data_ptr())),
                          "zsh_optim_grad_ready " + n)
            applied = c_int()
            lib.check(lib.c.zsh_optim_step(opt, ctypes.byref(applied)), "zsh_optim_step")
            if applied.value != 1:
                raise ZshError("zsh_optim_step skipped a step of fp32 gradients")
            del grads
        stats = OptimStats()
        lib.check(lib.c.zsh_optim_get_stats(opt, ctypes.byref(stats)), "zsh_optim_get_stats")
        views = fetch_all()
        final = {n: views[n].view(shapes[n]).to("cpu", copy=True) for n in names}
        del views
        release_all()
        return losses, final, stats
    finally:
        lib.c.zsh_optim_destroy(opt)


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


def print_stats(label, s):
    overlap = (1.0 - s.copy_wait_s / s.copy_s) if s.copy_s > 0 else float("nan")
    print("%-9s device=%d device_bytes=%d device_peak_bytes=%d copy_bytes=%d copy_s=%.6f "
          "copy_wait_s=%.6f overlap=%.3f param_bytes=%d grad_bytes=%d state_bytes=%d "
          "host_bytes=%d nvme_bytes=%d io_read_bytes=%d io_write_bytes=%d nbuckets=%d"
          % (label, s.device, s.device_bytes, s.device_peak_bytes, s.copy_bytes, s.copy_s,
             s.copy_wait_s, overlap, s.param_bytes, s.grad_bytes, s.state_bytes, s.host_bytes,
             s.nvme_bytes, s.io_read_bytes, s.io_write_bytes, s.nbuckets))


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
    ap.add_argument("--hidden", type=int, default=HIDDEN,
                    help="width of the hidden layers (default %(default)s); a wide one makes "
                         "the offloaded copies long enough to time their overlap")
    ap.add_argument("--bucket", type=int, default=BUCKET_SIZE,
                    help="bucket size in bytes (default %(default)s)")
    args = ap.parse_args()
    set_shape(args.hidden, args.bucket)
    print("torch %s, library %s" % (torch.__version__, args.lib))
    torch.set_num_threads(1)  # one summation order on the host, run after run
    no_tf32()

    lib = Lib(args.lib)
    model, init, batches = make_problem()
    print("model: %d parameters in %d tensors, %d steps of AdamW at stage 3, bucket %d bytes"
          % (sum(t.numel() for t in init.values()), len(init), STEPS, BUCKET_SIZE))
    ref = train_reference(model, init, batches)
    comm = lib.comm_one_rank()
    failures = []
    try:
        cpu = torch.device("cpu")
        host = train_zero(lib, comm, model, init, batches, cpu, ZSH_OFFLOAD_NONE, None)
        runs = {"torch": ref, "host": host}
        skip = None
        if not torch.cuda.is_available():
            skip = "torch %s has no CUDA device" % torch.__version__
        elif not lib.c.zsh_device_available():
            skip = "libzeroshard cannot run on the device: %s" % lib.c.zsh_last_error().decode()
        if skip is None:
            dev = torch.device("cuda", torch.cuda.current_device())
            torch.cuda.set_device(dev)
            stream = torch.cuda.current_stream(dev).cuda_stream or None
            runs["device"] = train_zero(lib, comm, model, init, batches, dev,
                                        ZSH_OFFLOAD_NONE, stream)
            runs["offload"] = train_zero(lib, comm, model, init, batches, dev,
                                         ZSH_OFFLOAD_CPU, stream)
            nvme_dir = tempfile.mkdtemp(prefix="zsh-zero-torch-", dir="/var/tmp")
            try:
                runs["nvme"] = train_zero(lib, comm, model, init, batches, dev,
                                          ZSH_OFFLOAD_NVME, stream, nvme_dir)
                runs["infinity"] = train_zero(lib, comm, model, init, batches, dev,
                                              ZSH_OFFLOAD_NVME, stream, nvme_dir,
                                              ZSH_OFFLOAD_NVME)
            finally:
                shutil.rmtree(nvme_dir, ignore_errors=True)

        print("\nstep " + "".join("%16s" % k for k in runs))
        for i in range(STEPS):
            print("%4d " % i + "".join("%16.9f" % runs[k][0][i] for k in runs))
        print()
        compare("host vs torch AdamW", host, ref, failures, params_rtol=PARAMS_RTOL)
        if skip is None:
            compare("device vs host", runs["device"], host, failures)
            compare("offload vs host", runs["offload"], host, failures)
            compare("nvme vs host", runs["nvme"], host, failures)
            compare("infinity vs host", runs["infinity"], host, failures)
            for k in ("offload", "nvme", "infinity"):
                same = runs["device"][0] == runs[k][0]
                print("%s vs device: losses %s" % (k, "bit for bit" if same else "differ"))
            print()
            dstats, nstats = runs["device"][2], runs["nvme"][2]
            print_stats("host", host[2])
            print_stats("device", dstats)
            print_stats("offload", runs["offload"][2])
            print_stats("nvme", nstats)
            istats = runs["infinity"][2]
            print_stats("infinity", istats)
            if host[2].device != 0 or any(runs[k][2].device != 1
                                          for k in ("device", "offload", "nvme", "infinity")):
                failures.append("stats.device is not 0 for host and 1 for the device runs")
            for k in ("offload", "nvme", "infinity"):
                s = runs[k][2]
                if not s.device_peak_bytes < dstats.device_peak_bytes:
                    failures.append("%s's device_peak_bytes %d is not below device's %d"
                                    % (k, s.device_peak_bytes, dstats.device_peak_bytes))
                if s.copy_bytes == 0:
                    failures.append("%s copied no bytes between host and device" % k)
            for k in ("nvme", "infinity"):
                s = runs[k][2]
                if s.nvme_bytes == 0 or s.io_read_bytes == 0 or s.io_write_bytes == 0:
                    failures.append("%s kept nothing in, or read or wrote nothing from, its "
                                    "files" % k)
            if not istats.device_bytes < nstats.device_bytes:
                failures.append("infinity keeps %d bytes on the device, not fewer than nvme's %d"
                                % (istats.device_bytes, nstats.device_bytes))
        else:
            print_stats("host", host[2])
    finally:
        lib.check(lib.c.zsh_comm_destroy(comm), "zsh_comm_destroy")

    if failures:
        print("FAILED: " + "; ".join(failures))
        return 1
    if skip is not None:
        print("SKIP: " + skip)
        return 77
    print("PASSED")
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ZshError as e:
        print("ERROR: %s" % e)
        sys.exit(2)
