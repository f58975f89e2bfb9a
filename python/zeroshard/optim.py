"""zeroshard.Optimizer: the ZeRO optimizer layer of include/zeroshard/optim.h
on numpy arrays and CPU torch tensors.

    opt = zeroshard.Optimizer(comm, stage=2, kind="adamw", lr=1e-3)
    w = opt.register("w", weights)          # same values on every rank
    ...
    opt.grad_ready(w, grad)                 # as soon as the gradient exists
    opt.step()                              # reduce, clip, update, publish

The keyword arguments are the fields of zsh_optim_config_t, with the same
names, meanings and defaults; kind and precision also take names ("sgd",
"adam", "adamw"; "fp32", "bf16", "fp16"). The offload tiers:

- offload_optimizer: "none" (compute memory), "cpu" (host memory) or "nvme"
  (files under nvme_dir) for the optimizer states and fp32 master weights,
  and at stages 2-3 the reduced gradient shards; None (the default) takes
  ZSH_OFFLOAD_OPTIMIZER.
- offload_params: the same names for the parameter shards, stage 3 only;
  None takes ZSH_OFFLOAD_PARAMS.
- nvme_dir: the directory of the nvme tier's files (a subdirectory per job
  and rank, removed at close()); None or "" takes ZSH_NVME_DIR.
- host_mem_limit: bytes of host buffers the nvme tier may hold at once;
  0 takes ZSH_HOST_MEM_LIMIT.
- sub_group_size: elements of the rank's state the step updates at a time;
  0 takes ZSH_SUB_GROUP_SIZE.
- update_threads: threads that apply the update rule in a step, the
  caller's included (any count gives the same bits); 0 takes
  ZSH_OPTIM_THREADS.
- hpz: stage 3, ZeRO++'s secondary partition of the parameters within each
  node, so the backward all-gather stays in the node: "off", "auto" (every
  rank of a node; off on one node) or the group size, which divides the
  ranks per node; None takes ZSH_HPZ. The losses are the same bit for bit;
  stats() counts comm_bytes_cross_node_last_step apart.

At stages 0-2 the registered buffer is the parameter: each step updates it
in place, so it is kept alive here. At stage 3 the layer owns the values
after setup(); gather() copies them out.

The layer is used by one thread at a time: every call holds the lock of the
communicator's job, like the collectives. close() (or comm.close(), which
closes the optimizers on it first) destroys it; garbage collection does not,
since a destroy waits for reductions that need the other ranks.
"""

import operator
import os

from . import _zeroshard as _z
from .buffers import BFLOAT16, FLOAT16, FLOAT32, Buffer
from .errors import ERR_INVALID_ARG, OK, ZshError, error

KINDS = {"sgd": 0, "adam": 1, "adamw": 2}
PRECISIONS = {"fp32": FLOAT32, "float32": FLOAT32, "bf16": BFLOAT16, "bfloat16": BFLOAT16,
              "fp16": FLOAT16, "float16": FLOAT16}
_PRECISION_NAMES = {FLOAT32: "fp32", BFLOAT16: "bf16", FLOAT16: "fp16"}
# zsh_offload_t; None is ZSH_OFFLOAD_DEFAULT: the ZSH_OFFLOAD_* variable decides.
TIERS = {"none": 0, "cpu": 1, "nvme": 2}
_TIER_DEFAULT = -1
# zsh_optim_config_t::hpz; None (0) takes ZSH_HPZ.
HPZ = {"off": 1, "auto": -1}

_FLOATS = ("lr", "beta1", "beta2", "eps", "weight_decay", "momentum", "max_grad_norm",
           "loss_scale", "min_loss_scale")
_INTS = ("stage", "nesterov", "dynamic_loss_scale", "loss_scale_window", "bucket_size",
         "max_live_bytes", "prefetch", "host_mem_limit", "sub_group_size", "update_threads")
_TIER_KEYS = ("offload_optimizer", "offload_params")
_SIZES = ("bucket_size", "max_live_bytes", "loss_scale_window", "host_mem_limit",
          "sub_group_size")


def config_defaults():
    """zsh_optim_config_init()'s settings, by field name: kind, precision and
    the tiers as names (a tier left to its ZSH_OFFLOAD_* variable is None)."""
    cfg = _z.optim_config_defaults()
    cfg["kind"] = {v: k for k, v in KINDS.items()}[cfg["kind"]]
    cfg["precision"] = _PRECISION_NAMES[cfg["precision"]]
    for key in _TIER_KEYS:
        cfg[key] = _tier_name(cfg[key])
    cfg["hpz"] = {0: None, 1: "off", -1: "auto"}.get(cfg["hpz"], cfg["hpz"])
    return cfg


def _tier_name(code):
    if code == _TIER_DEFAULT:
        return None
    return {v: k for k, v in TIERS.items()}[code]


def _tier(key, value):
    """A tier setting as zsh_offload_t: a name of TIERS, or None for the default."""
    if value is None:
        return _TIER_DEFAULT
    if isinstance(value, str):
        if value.lower() not in TIERS:
            raise ValueError("%s %r is not one of %s" % (key, value, ", ".join(TIERS)))
        return TIERS[value.lower()]
    try:
        code = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        code = None
    if code not in tuple(TIERS.values()) + (_TIER_DEFAULT,):
        raise ValueError("%s %r is not one of %s (or None: ZSH_%s)"
                         % (key, value, ", ".join(TIERS), key.upper()))
    return code


def _hpz(value):
    """The hpz setting as zsh_optim_config_t::hpz: "off", "auto", a group size or None."""
    if value is None:
        return 0
    if isinstance(value, str):
        if value.lower() not in HPZ:
            raise ValueError("hpz %r is not off, auto or a group size" % value)
        return HPZ[value.lower()]
    try:
        size = None if isinstance(value, bool) else operator.index(value)
    except TypeError:
        size = None
    if size is None or size < 1:
        raise ValueError("hpz %r is not off, auto or a group size (None: ZSH_HPZ)" % (value,))
    return size


def _config(settings):
    """The dict optim_create takes: names checked, types converted."""
    out = {}
    for key, value in settings.items():
        if key == "kind":
            if isinstance(value, str):
                if value.lower() not in KINDS:
                    raise ValueError("kind %r is not one of %s" % (value, ", ".join(KINDS)))
                value = KINDS[value.lower()]
            out[key] = int(value)
        elif key == "precision":
            if isinstance(value, str):
                if value.lower() not in PRECISIONS:
                    raise ValueError("precision %r is not one of fp32, bf16, fp16" % value)
                value = PRECISIONS[value.lower()]
            out[key] = int(value)
        elif key in _TIER_KEYS:
            out[key] = _tier(key, value)
        elif key == "hpz":
            out[key] = _hpz(value)
        elif key == "nvme_dir":
            if value is not None:
                value = os.fspath(value)
                if not isinstance(value, str):
                    raise TypeError("nvme_dir must be a path, not %r" % (value,))
            out[key] = value
        elif key in _FLOATS:
            out[key] = float(value)
        elif key in _INTS:
            if isinstance(value, float) and not value.is_integer():
                raise TypeError("%s must be an integer, not %r" % (key, value))
            out[key] = int(value)
        else:
            raise TypeError("unknown setting %r; zsh_optim_config_t has %s"
                            % (key, ", ".join(("kind", "precision") + _TIER_KEYS +
                                              ("nvme_dir", "hpz") + _FLOATS + _INTS)))
        if key in _SIZES and out[key] < 0:
            raise ValueError("%s must be >= 0, not %d" % (key, out[key]))
    return out


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

    def __init__(self, comm, **settings):
        cfg = _config(settings)
        self._comm = comm
        self._lock = comm._job.lock
        with self._lock:
            status, handle = _z.optim_create(comm._live(), cfg)
            if status != OK:
                raise error(status)
        self._handle = handle
        self._params = []
        self._ready = False
        merged = dict(_z.optim_config_defaults())
        merged.update(cfg)
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
    def precision(self):
        """"fp32", "bf16" or "fp16"."""
        return _PRECISION_NAMES[self._precision]

    @property
    def params(self):
        return list(self._params)

    def _buffer(self, obj, name, param, writable):
        buf = Buffer(obj, name, writable)
        if buf.dtype != self._precision:
            raise TypeError("%s is %s but the optimizer's precision is %s"
                            % (name, buf.dtype_name, self.precision))
        if param is not None and buf.count != param.numel:
            raise ValueError("%s has %d elements; parameter %r has %d"
                             % (name, buf.count, param.name, param.numel))
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
        with self._lock:
            status, handle = _z.optim_register(self._live(), str(name), b.count, b.dtype, b.ptr)
            if status != OK:
                raise error(status)
        p = Param(str(name), b.count, len(self._params), handle, b)
        self._params.append(p)
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

    # ---- every step ---------------------------------------------------------------
    def gather(self, param, out):
        """Copy the parameter's full values into out (collective at stage 3:
        every rank gathers the same parameters in the same order)."""
        h = self._param(param)
        b = self._buffer(out, "out", param, True)
        with self._lock:
            status = _z.optim_fetch_into(self._live(), h, b.ptr, b.count * _itemsize(b.dtype))
            if status != OK:
                raise error(status)
        return out

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

    def step(self):
        """Finish the reductions and update (collective). False if the step
        was skipped because the gradients overflowed."""
        with self._lock:
            status, applied = _z.optim_step(self._live())
            if status != OK:
                raise error(status)
        self._ready = True
        return bool(applied)

    def zero_grad(self):
        """Drop the gradients handed over this step."""
        with self._lock:
            status = _z.optim_zero_grad(self._live())
            if status != OK:
                raise error(status)

    def set_param(self, param, values):
        """Replace the parameter's values in every copy the layer keeps (the
        same values on every rank); optimizer states are kept."""
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

    @property
    def loss_scale(self):
        """The factor to multiply the loss by (1 without loss scaling)."""
        with self._lock:
            return _z.optim_loss_scale(self._live())

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


def _itemsize(code):
    return 4 if code == FLOAT32 else 2
