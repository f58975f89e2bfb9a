"""zeroshard.Optimizer: the ZeRO optimizer layer of include/zeroshard/optim.h
on numpy arrays and CPU torch tensors, or on CUDA torch tensors.

    opt = zeroshard.Optimizer(comm, stage=2, kind="adamw", lr=1e-3)
    w = opt.register("w", weights)          # same values on every rank
    ...
    opt.grad_ready(w, grad)                 # as soon as the gradient exists
    opt.step()                              # reduce, clip, update, publish

The keyword arguments are the fields of zsh_optim_config_t, with the same
names, meanings and defaults; kind, precision, the tiers and hpz also take
names ("sgd", "adam", "adamw"; "fp32", "bf16", "fp16"; "none", "cpu",
"nvme"; "off", "auto"), and None leaves a setting to its default (and to its
ZSH_* variable where it has one). The policies of zeroshard.settings
(mp_policy=MixedPrecisionPolicy(...), offload_policy=OffloadPolicy(...),
sharding_policy=ShardingPolicy(...)) group them instead, as FSDP2 does.
Offload, update threads and hpz change where state lives and how it moves,
never the bits. The settings (name, policy, how Python takes it, default,
the variable its unset value takes):

%s

Device memory: where the first registered parameter is a CUDA tensor (and
device_available() says this build and process can use the device), the
layer runs on the device, as include/zeroshard/optim.h describes: every
parameter, gradient and set_param() value is then a tensor of that device
(one elsewhere is refused, naming both), the stream setting names the
cudaStream_t (or torch.cuda.Stream) its work is enqueued on, and gather()
copies into a torch tensor. Produce gradients on that stream, or make it wait
for the one that does.

At stages 0-2 the registered buffer is the parameter: each step updates it
in place, so it is kept alive here. At stage 3 the layer owns the values
after setup(); gather() copies them out.

The layer is used by one thread at a time: every call holds the lock of the
communicator's job, like the collectives. close() (or comm.close(), which
closes the optimizers on it first) destroys it; garbage collection does not,
since a destroy waits for reductions that need the other ranks.
"""

import numbers
import os

from . import _zeroshard as _z
from . import settings as _settings
from .buffers import BFLOAT16, FLOAT16, FLOAT32, Buffer, _is_torch_tensor
from .errors import ERR_INVALID_ARG, OK, ZshError, error

__doc__ %= _settings.describe()

_PRECISION_NAMES = _settings.PRECISION_NAMES

# torch.optim's names of the states (zsh_optim_state_t).
_STATES = {"exp_avg": 1, "momentum_buffer": 1, "exp_avg_sq": 2, "master_weight": 3}


def config_defaults():
    """zsh_optim_config_init()'s settings, by field name: kind, precision,
    the tiers and hpz as names (one left to its ZSH_* variable is None)."""
    return {s.name: s.default for s in _settings.SETTINGS}


class Param:
    """A registered parameter: .name, .numel, .index (registration order)."""

    __slots__ = ("name", "numel", "index", "_handle", "_buffer")

    def __init__(self, name, numel, index, handle, buffer):
        self.name = name
        self.numel = numel
        self.index = index
        self._handle = handle
        self._buffer = buffer

    def __repr__(self):
        return "<zeroshard.Param %r numel=%d>" % (self.name, self.numel)


class Optimizer:
    """The ZeRO optimizer layer over a zeroshard.Comm; see the module's doc."""

    def __init__(self, comm, mp_policy=None, offload_policy=None, sharding_policy=None,
                 **settings):
        cfg = _settings.to_config(_settings.merge(settings, mp_policy, offload_policy,
                                                  sharding_policy))
        self._comm = comm
        self._lock = comm._job.lock
        with self._lock:
            status, handle = _z.optim_create(comm._live(), cfg)
            if status != OK:
                raise error(status)
        self._handle = handle
        self._params = []
        self._device = None  # the first parameter's: "cpu" or "cuda:N"
        self._ready = False
        self._storage = {}   # bucket -> the Buffer its parameters lie in (set_bucket_storage)
        self._places = {}    # Param.index -> place(), once asked
        merged = _z.optim_config_resolve(cfg)
        self._config = merged
        self._stage = merged["stage"]
        self._precision = merged["precision"]
        comm._dependents.add(self)

    # ---- state --------------------------------------------------------------------
    def _live(self):
        if self._handle is None:
            raise ZshError(ERR_INVALID_ARG, "the optimizer was closed")
        self._comm._live()
        return self._handle

    @property
    def stage(self):
        return self._stage

    @property
    def config(self):
        """The zsh_optim_config_t this optimizer was created with, by field
        name, read back from the struct (codes, not names; unset fields as
        zsh_optim_config_init() leaves them)."""
        return dict(self._config)

    @property
    def precision(self):
        """"fp32", "bf16" or "fp16"."""
        return _PRECISION_NAMES[self._precision]

    @property
    def params(self):
        return list(self._params)

    @property
    def device(self):
        """Where the parameters are: "cpu", a CUDA tensor's "cuda:N", or None
        before the first register()."""
        return self._device

    def _buffer(self, obj, name, param, writable):
        buf = Buffer(obj, name, writable, cuda=True)
        if buf.dtype != self._precision:
            raise TypeError("%s is %s but the optimizer's precision is %s"
                            % (name, buf.dtype_name, self.precision))
        if param is not None and buf.count != param.numel:
            raise ValueError("%s has %d elements; parameter %r has %d"
                             % (name, buf.count, param.name, param.numel))
        if self._device is not None and buf.device != self._device:
            raise ValueError("%s is on %s but the optimizer's parameters are on %s: parameters "
                             "and gradients are all host memory or all on one device"
                             % (name, buf.device, self._device))
        return buf

    def _param(self, param):
        if not isinstance(param, Param) or param.index >= len(self._params) or \
                self._params[param.index] is not param:
            raise ValueError("%r is not a parameter of this optimizer" % (param,))
        return param._handle

    # ---- setup --------------------------------------------------------------------
    def register(self, name, buf):
        """Register a parameter (before setup): the same name, size and initial
        values on every rank, in the same order. Returns its Param."""
        b = self._buffer(buf, "parameter %r" % name, None, True)
        if b.count == 0:
            raise ValueError("parameter %r has no elements" % name)
        if self._device is None and b.device != "cpu":
            available, why = device_available()
            if not available:
                raise ValueError("parameter %r is on %s but libzeroshard cannot run on the "
                                 "device: %s" % (name, b.device, why))
        with self._lock:
            status, handle = _z.optim_register(self._live(), str(name), b.count, b.dtype, b.ptr)
            if status != OK:
                raise error(status)
        p = Param(str(name), b.count, len(self._params), handle, b)
        self._params.append(p)
        self._device = b.device
        return p

    def setup(self):
        """Build the buckets, shards and states (collective). At stage 3 the
        registered buffers are read here and may be freed after."""
        with self._lock:
            status = _z.optim_setup(self._live())
            if status != OK:
                raise error(status)
        self._ready = True
        if self._stage == 3:
            for p in self._params:
                p._buffer = None

    def place(self, param):
        """Where param lies in the layout, as (bucket, offset, bucket_numel):
        its bucket's index, its first element in the bucket's flat layout, and
        the bucket's elements padded to equal blocks on every rank
        (zsh_optim_param_place; the layout is built first if it was not)."""
        h = self._param(param)
        if param.index in self._places:
            return self._places[param.index]
        with self._lock:
            status, bucket, offset, numel = _z.optim_param_place(self._live(), h)
            if status != OK:
                raise error(status)
        # The layout is fixed once built: asked again, the answer is kept.
        self._places[param.index] = (bucket, offset, numel)
        return bucket, offset, numel

    def set_bucket_storage(self, bucket, storage):
        """Move a bucket's parameters into storage, a CPU array or tensor of the
        optimizer's precision with at least the bucket's padded elements
        (place()), each at its offset (zsh_optim_set_bucket_storage): their
        values are copied in, and from then on the step updates them there
        and, at stages 1-2, all-gathers into it in place. Stages 0-2 on the
        host. The optimizer keeps storage alive; the buffers registered
        before are no longer used."""
        b = self._buffer(storage, "storage", None, True)
        if b.device != "cpu":
            raise ValueError("storage is on %s; bucket storage is host memory" % b.device)
        with self._lock:
            status = _z.optim_set_bucket_storage(self._live(), int(bucket), b.ptr,
                                                 b.count * _itemsize(b.dtype))
            if status != OK:
                raise error(status)
        self._storage[int(bucket)] = b
        # The registered buffers are no longer the layer's to keep.
        for p in self._params:
            if p._buffer is not None and self.place(p)[0] == bucket:
                p._buffer = None

    # ---- every step ---------------------------------------------------------------
    def gather(self, param, out):
        """Copy the parameter's full values into out (collective at stage 3:
        every rank gathers the same parameters in the same order): the exact
        values, with quantize_weights too (zsh_optim_get_param), outside the
        order the prefetch records; gather_many() is the step's gather. With
        parameters on a device, out is a torch tensor on that device or the
        CPU, copied by torch on its current stream, which is synchronised
        before the gathered buffer is released."""
        h = self._param(param)
        if self._device in (None, "cpu"):
            b = self._buffer(out, "out", param, True)
            with self._lock:
                status = _z.optim_get_param(self._live(), h, b.ptr)
                if status != OK:
                    raise error(status)
            return out
        b = Buffer(out, "out", True, cuda=True)
        if b.dtype != self._precision or b.count != param.numel or \
                b.device not in ("cpu", self._device):
            raise ValueError("out is %d %s elements on %s; parameter %r is %d %s elements on %s"
                             % (b.count, b.dtype_name, b.device, param.name, param.numel,
                                self.precision, self._device))
        with self._lock:
            status, ptr = _z.optim_fetch(self._live(), h)
            if status != OK:
                raise error(status)
            try:
                import torch
                view = torch.as_tensor(_CudaView(ptr, param.numel, self._precision),
                                       device=self._device)
                if self._precision == BFLOAT16:
                    view = view.view(torch.bfloat16)
                out.view(-1).copy_(view)
                torch.cuda.current_stream(self._device).synchronize()
            finally:
                status = _z.optim_release(self._handle, h)
            if status != OK:
                raise error(status)
        return out

    def grad_none(self, param):
        """Say that the parameter has no gradient this step on any rank, in
        place of grad_ready() (every rank calls it for the same parameters):
        the step leaves it, its states and its count of updates (Adam's bias
        correction) as they are, as torch.optim leaves a parameter whose
        gradient is None (zsh_optim_grad_none)."""
        h = self._param(param)
        with self._lock:
            status = _z.optim_grad_none(self._live(), h)
            if status != OK:
                raise error(status)

    def backward_begin(self):
        """Say that this step's backward begins (collective; optional): with
        qwZ at stage 3, the gathers from now on are full precision, not the
        forward's int8 copies still cached (zsh_optim_backward_begin).
        Without it the first grad_ready() marks the start. Idempotent
        within a step."""
        with self._lock:
            status = _z.optim_backward_begin(self._live())
            if status != OK:
                raise error(status)

    def grad_ready(self, param, grad):
        """Hand over the parameter's gradient for this step (copied before
        this returns); the reduction of its bucket starts once the bucket is
        complete."""
        h = self._param(param)
        b = self._buffer(grad, "grad", param, False)
        with self._lock:
            status = _z.optim_grad_ready(self._live(), h, b.ptr)
            if status != OK:
                raise error(status)

    def grad_ready_scaled(self, param, grad, mul):
        """grad_ready() of grad * mul for a contiguous CPU torch tensor of the
        optimizer's precision, in one call without the GIL and one pass over
        grad, which is only read (zsh_optim_grad_ready_scaled): each element
        times the fp32 factor, rounded once, the bits of grad.mul(mul) in
        float32 (torch 1.13 rounds a bf16 or fp16 tensor's factor to that
        type first: the same bits where mul is a power of two)."""
        h = self._cpu_grad(param, grad, "grad_ready_scaled")
        with self._lock:
            status = _z.optim_grad_ready_scaled(self._live(), h, grad.data_ptr(), float(mul))
            if status != OK:
                raise error(status)

    def grad_lend(self, param, grad, mul=1.0, wait=False):
        """grad_ready_scaled() that lets the layer reduce grad from where it
        lies instead of copying it first, where it can (zsh_optim_grad_lend:
        stages 2-3, fp32 or bf16, a bucket of this parameter alone whose
        size the ranks divide, mul 1 or 1/N for a power-of-two N; the same
        bits as grad_ready_scaled); elsewhere it is copied as
        grad_ready_scaled() copies it. Every rank hands a parameter's
        gradient over the same way. With wait, a lent gradient's reduction
        is done before this returns (zsh_optim_grad_wait: collective with
        its peers; a copied one's goes on), and grad is the caller's again;
        without, the layer keeps a reference to grad until its reduction is
        done with it (a later hand-over, step(), zero_grad() or close() lets
        it go), so the caller may drop its own at once, and grad must not be
        written until then."""
        h = self._cpu_grad(param, grad, "grad_lend")
        with self._lock:
            status = _z.optim_grad_lend(self._live(), h, grad, grad.data_ptr(), float(mul))
            if status == OK and wait:
                status = _z.optim_grad_wait(self._live(), h)
            if status != OK:
                raise error(status)

    def _cpu_grad(self, param, grad, fn):
        """param's handle, once grad is what grad_ready_scaled() and
        grad_lend() take: a contiguous CPU torch tensor of the optimizer's
        precision and the parameter's size."""
        h = self._param(param)
        if self._device != "cpu":
            raise ValueError("%s takes CPU gradients; the optimizer's "
                             "parameters are on %s" % (fn, self._device))
        want = _torch_dtype(self._precision)
        if not (_is_torch_tensor(grad) and grad.dtype == want and grad.device.type == "cpu" and
                grad.is_contiguous() and not grad.is_sparse):
            raise TypeError("grad must be a contiguous %s CPU torch tensor, not %r"
                            % (str(want).replace("torch.", ""),
                               grad if not _is_torch_tensor(grad) else
                               "%s on %s" % (grad.dtype, grad.device)))
        if grad.numel() != param.numel:
            raise ValueError("grad has %d elements; parameter %r has %d"
                             % (grad.numel(), param.name, param.numel))
        return h

    def gather_many(self, params, outs):
        """The step's gathers of several parameters, in order, as one call
        (with quantize_weights, the forward's come as int8: see
        zsh_optim_fetch), each out a contiguous tensor or array of the
        parameter's size and the optimizer's precision; with parameters on a
        device, gather() of each."""
        if self._device not in (None, "cpu"):
            return [self.gather(p, o) for p, o in zip(params, outs)]
        items = []
        for p, o in zip(params, outs):
            b = self._buffer(o, "out", p, True)
            items.append((self._param(p), b.ptr, b.count * _itemsize(b.dtype)))
        with self._lock:
            status, _ = _z.optim_fetch_into_many(self._live(), items)
            if status != OK:
                raise error(status)
        return outs

    def gather_storages(self, params, storages):
        """gather_many() into torch storages, for parameters in host memory:
        each storage (a torch.UntypedStorage on the CPU) is first resized in
        place to its parameter's bytes, so every tensor on it (views
        autograd saved included) sees the values; then one call into the
        extension copies them all. Stage 3's gather of a unit whose
        storages are freed between uses (zeroshard.torch.ZeRO). A storage
        off the host, or one whose resize_ counts elements (a
        TypedStorage), raises ValueError before any is filled."""
        if self._device != "cpu":
            raise ValueError("gather_storages takes parameters in host memory; the optimizer's "
                             "are on %s: use gather_many()" % self._device)
        isz = _itemsize(self._precision)
        items = []
        for k, (p, s) in enumerate(zip(params, storages)):
            h, nbytes = self._param(p), p.numel * isz
            if s.device.type != "cpu":
                raise ValueError("storage %d is on %s; the parameters are in host memory"
                                 % (k, s.device))
            s.resize_(nbytes)
            if s.nbytes() != nbytes:
                raise ValueError("storage %d holds %d bytes after resize_(%d): pass an "
                                 "UntypedStorage, which resize_ sizes in bytes"
                                 % (k, s.nbytes(), nbytes))
            items.append((h, s.data_ptr(), nbytes))
        with self._lock:
            status, _ = _z.optim_fetch_into_many(self._live(), items)
            if status != OK:
                raise error(status)

    def fetch_many(self, params):
        """Fetch parameters in host memory, in order, as one call (collective
        at stage 3, as zsh_optim_fetch): the address of each one's values,
        numel elements of the optimizer's precision, which stay valid and
        unchanged until release_many() of it. Stage 3 gathers each bucket
        once and holds it while any of its parameters is fetched; nothing is
        copied. Read only: the layer may serve the same values to a later
        fetch. A failure fetches none. Every fetch needs its release before
        the step, set_param(), load() and a read of that parameter."""
        if self._device != "cpu":
            raise ValueError("fetch_many takes parameters in host memory; the optimizer's "
                             "are on %s: use gather_many()" % self._device)
        handles = [self._param(p) for p in params]
        with self._lock:
            status, ptrs = _z.optim_fetch_many(self._live(), handles)
            if status != OK:
                raise error(status)
        return ptrs

    def release_many(self, params):
        """End the fetches of fetch_many(); their addresses become invalid.
        Every one is released; the first failure is raised after."""
        handles = [self._param(p) for p in params]
        with self._lock:
            status = _z.optim_release_many(self._live(), handles)
            if status != OK:
                raise error(status)

    def step(self):
        """Finish the reductions and update (collective). False if the step
        was skipped because the gradients overflowed."""
        with self._lock:
            status, applied = _z.optim_step(self._live())
            if status != OK:
                raise error(status)
        self._ready = True
        return bool(applied)

    def set_weight_decay(self, param, weight_decay):
        """Give param a weight decay of its own in place of the configured
        one, as a torch.optim parameter group does (0 for biases and norms,
        commonly), from the next step on; every rank the same. Not saved in
        a checkpoint. finite and >= 0, else ZshError (ZSH_ERR_INVALID_ARG)."""
        h = self._param(param)
        if isinstance(weight_decay, bool) or not isinstance(weight_decay, numbers.Real):
            raise TypeError("weight_decay must be a number, not %s" % type(weight_decay).__name__)
        with self._lock:
            status = _z.optim_set_weight_decay(self._live(), h, float(weight_decay))
            if status != OK:
                raise error(status)

    def clip_grad_norm(self, max_norm):
        """The global L2 norm of this step's gradients (reduced, unscaled),
        and clip them to max_norm at the coming step, as
        torch.nn.utils.clip_grad_norm_ (collective; every parameter's
        gradient handed over first). max_norm: finite and > 0, else ZshError
        (ZSH_ERR_INVALID_ARG) and nothing changes."""
        if isinstance(max_norm, bool) or not isinstance(max_norm, numbers.Real):
            raise TypeError("max_norm must be a number, not %s" % type(max_norm).__name__)
        with self._lock:
            status, norm = _z.optim_clip_grad_norm(self._live(), float(max_norm))
            if status != OK:
                raise error(status)
        return norm

    # ---- optimizer states ------------------------------------------------------------
    def _state_buffer(self, param, name, obj, writable):
        """param's handle, the state's number and obj as its fp32 host buffer."""
        h = self._param(param)
        kind = _STATES.get(name)
        if kind is None:
            raise ValueError("%r is not an optimizer state; the states are %s"
                             % (name, ", ".join(sorted(_STATES))))
        b = Buffer(obj, name, writable)
        if b.dtype != FLOAT32 or b.count != param.numel:
            raise ValueError("%s for parameter %r is %d elements of %s; it takes %d of fp32"
                             % (name, param.name, b.count, b.dtype_name, param.numel))
        return h, kind, b

    def get_state(self, param, name, out):
        """Copy the optimizer state name of param into out, whole, on every
        rank (collective: every rank reads the same states in the same
        order): "exp_avg" and "exp_avg_sq" under Adam and AdamW, "exp_avg"
        or "momentum_buffer" under SGD with momentum, in torch.optim's names,
        and "master_weight", the fp32 master weights, in mixed precision;
        out is numel fp32 values in host memory (a numpy array or a CPU
        tensor), given the exact bits. A state the rule does not keep is
        ZshError (ZSH_ERR_INVALID_ARG) on every rank."""
        h, kind, b = self._state_buffer(param, name, out, True)
        with self._lock:
            status = _z.optim_get_state(self._live(), h, kind, b.ptr)
            if status != OK:
                raise error(status)

    def set_state(self, param, name, values):
        """Replace the optimizer state name of param (not collective: every
        rank passes the same values and writes its own part), between
        steps; the next step continues from it. "master_weight" replaces
        the master weights alone; set_param() keeps a master that already
        rounds to the value it is given, so the two may come in either
        order."""
        h, kind, b = self._state_buffer(param, name, values, False)
        with self._lock:
            status = _z.optim_set_state(self._live(), h, kind, b.ptr)
            if status != OK:
                raise error(status)

    def updates(self, param):
        """The updates applied to param: Adam's t, torch.optim's "step"
        (behind the optimizer's steps where param had no gradient)."""
        h = self._param(param)
        with self._lock:
            status, n = _z.optim_get_updates(self._live(), h)
            if status != OK:
                raise error(status)
        return n

    def set_updates(self, param, n):
        """Set param's count of updates (every rank the same), as a loaded
        state dict gives it: its next update is the n + 1st."""
        h = self._param(param)
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 0:
            raise ValueError("the count of updates must be an integer >= 0, not %r" % (n,))
        with self._lock:
            status = _z.optim_set_updates(self._live(), h, int(n))
            if status != OK:
                raise error(status)

    def zero_grad(self):
        """Drop the gradients handed over this step."""
        with self._lock:
            status = _z.optim_zero_grad(self._live())
            if status != OK:
                raise error(status)

    def set_param(self, param, values):
        """Replace the parameter's values in every copy the layer keeps (the
        same values on every rank); optimizer states are kept, and so is a
        mixed-precision master weight that already rounds to its value."""
        h = self._param(param)
        b = self._buffer(values, "values", param, False)
        with self._lock:
            status = _z.optim_set_param(self._live(), h, b.ptr)
            if status != OK:
                raise error(status)

    # ---- checkpoints ----------------------------------------------------------------
    def save(self, dir):
        """Save the parameters (fp32 master weights in mixed precision), the
        optimizer states, the step counters, the loss scaler and the
        hyperparameters to the checkpoint directory dir (collective: every
        rank passes the same directory, seen as one by all of them): a new
        dir/step-<steps>/ that dir/latest then names. Between steps only (no
        gradient handed over). Returns the path of the checkpoint written."""
        path = _dir_arg(dir)
        with self._lock:
            status = _z.optim_save(self._live(), path)
            if status != OK:
                raise error(status)
            # zsh_optim_save names the checkpoint after the step counter.
            _, st = _z.optim_stats(self._handle)
        return os.path.join(path, "step-%08d" % st["steps"])

    def load(self, dir):
        """Restore what save() wrote (collective), at any world size and
        stage: dir is a checkpoint directory (its latest is loaded) or one
        checkpoint (dir/step-N). The model must be the same parameters, in the
        same order, of the same precision. Afterwards the parameters (the
        registered buffers at stages 0-2; at stage 3 the shards, which the next
        gather() reads), optimizer states, step counters, loss scaler and
        hyperparameters are the saved ones. Raises ZshError (ZSH_ERR_IO for a
        missing, truncated or corrupted file, ZSH_ERR_INVALID_ARG for another
        model) and then leaves everything as it was."""
        path = _dir_arg(dir)
        with self._lock:
            status = _z.optim_load(self._live(), path)
            if status != OK:
                raise error(status)
        self._ready = True

    def snapshot(self):
        """Snapshot the training state into node memory (collective): save()
        into the directory ZSH_SNAPSHOT_DIR names, in tmpfs, which zshrun gives
        each job. Call it every K steps; a job zshrun --max-restarts started
        again after a rank died calls restore() and loses at most K steps,
        without reading the disk. Only the newest complete snapshot is kept.
        On several nodes each rank's part is also copied to a rank of the next
        node, so a lost node's parts survive. Raises ZshError (ZSH_ERR_INVALID_ARG without
        ZSH_SNAPSHOT_DIR); the previous snapshot then stands."""
        with self._lock:
            status = _z.optim_snapshot(self._live())
            if status != OK:
                raise error(status)

    def restore(self):
        """Restore the newest complete snapshot() (collective), at any world
        size and stage, as load() does. Raises ZshError (ZSH_ERR_IO when there
        is none) and then leaves everything as it was."""
        with self._lock:
            status = _z.optim_restore(self._live())
            if status != OK:
                raise error(status)
        self._ready = True

    @property
    def loss_scale(self):
        """The factor to multiply the loss by (1 without loss scaling)."""
        with self._lock:
            return _z.optim_loss_scale(self._live())

    def loss_scaler(self):
        """The loss scaler's state, (scale, clean steps since the dynamic
        scale last changed): with the optimizer states, what a resumed fp16
        run needs to skip the steps the uninterrupted one skips."""
        with self._lock:
            status, scale, clean = _z.optim_get_loss_scaler(self._live())
        if status != OK:
            raise error(status)
        return scale, clean

    def set_loss_scaler(self, scale, clean):
        """Restore loss_scaler()'s (scale, clean) between steps, every rank the
        same; a value out of range is ZshError (ZSH_ERR_INVALID_ARG) and
        changes nothing."""
        with self._lock:
            status = _z.optim_set_loss_scaler(self._live(), float(scale), int(clean))
        if status != OK:
            raise error(status)

    @property
    def lr(self):
        """The learning rate the next step uses: the configured one, the last
        set, or a loaded checkpoint's."""
        with self._lock:
            status, lr = _z.optim_get_lr(self._live())
            if status != OK:
                raise error(status)
            return lr

    @lr.setter
    def lr(self, lr):
        """Set the rate of the steps that follow, as a schedule does between
        steps (every rank the same): finite and >= 0, else ZshError
        (ZSH_ERR_INVALID_ARG) and the rate is unchanged."""
        if isinstance(lr, bool) or not isinstance(lr, numbers.Real):
            raise TypeError("lr must be a number, not %s" % type(lr).__name__)
        with self._lock:
            status = _z.optim_set_lr(self._live(), float(lr))
            if status != OK:
                raise error(status)

    def stats(self):
        """zsh_optim_stats_t as a dict: bytes held and moved, step counters,
        and the offload tiers: compute_bytes, host_bytes, nvme_bytes (model
        state per tier), host_buffer_bytes, host_buffer_peak_bytes (the nvme
        tier's host buffers, never above host_mem_limit), io_read_bytes,
        io_write_bytes, io_wait_s, io_busy_s, io_overlap_s, and io_engine
        ("io_uring", "libaio", "threads", or None without an nvme tier)."""
        with self._lock:
            status, st = _z.optim_stats(self._live())
            if status != OK:
                raise error(status)
            return st

    # ---- lifetime -----------------------------------------------------------------
    def close(self):
        """Destroy the layer, waiting for reductions in flight. Idempotent."""
        with self._lock:
            if self._handle is None:
                return
            _z.optim_destroy(self._handle)
            self._handle = None
            self._params = []
            self._comm._dependents.discard(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self._handle is None:
            return "<zeroshard.Optimizer closed>"
        return "<zeroshard.Optimizer stage %d %s, %d parameters>" % (
            self._stage, self.precision, len(self._params))


def _dir_arg(dir):
    """A checkpoint directory argument as a str path."""
    path = os.fspath(dir)
    if isinstance(path, bytes):
        path = os.fsdecode(path)
    if not path:
        raise ValueError("the checkpoint directory is empty")
    if "\0" in path:
        raise ValueError("the checkpoint directory %r has a NUL character" % (path,))
    return path


_torch_dtypes = None


def _torch_dtype(code):
    # Looked up once: grad_ready_scaled runs for every gradient of every step.
    global _torch_dtypes
    if _torch_dtypes is None:
        import torch
        _torch_dtypes = {FLOAT32: torch.float32, BFLOAT16: torch.bfloat16,
                         FLOAT16: torch.float16}
    return _torch_dtypes[code]


def _itemsize(code):
    return 4 if code == FLOAT32 else 2


class _CudaView:
    """A fetched device buffer as __cuda_array_interface__, for torch.as_tensor
    (bf16 crosses as int16 and is viewed back)."""

    def __init__(self, ptr, numel, dtype):
        self.__cuda_array_interface__ = {
            "shape": (numel,), "typestr": "<f4" if dtype == FLOAT32 else
            ("<f2" if dtype == FLOAT16 else "<i2"),
            "data": (ptr, False), "strides": None, "version": 2}


def device_available():
    """Whether this build and process can run the optimizer on CUDA device
    memory: (True, "") or (False, the reason)."""
    if _z.device_available():
        return True, ""
    return False, _z.last_error()
