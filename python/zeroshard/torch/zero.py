"""zeroshard.torch.ZeRO: ZeRO stages 0-3 for any torch.nn.Module, through the
C optimizer layer (include/zeroshard/optim.h).

    model = GPT(...)
    zero = ZeRO(model, stage=3, lr=3e-4, weight_decay=0.1)
    for x, y in batches:
        loss = F.cross_entropy(model(x), y)
        zero.backward(loss)                 # loss * loss_scale, then backward
        zero.step()
        zero.zero_grad()

The layer keeps the shards, buckets, reductions, update rules, mixed
precision, loss scaling and clipping; this module only wires it to torch:

- Registration. Every trainable parameter (a tied parameter once) is
  broadcast from rank 0, as DDP does, and registered in the module's order.
  One dense in another memory order (channels_last) keeps its layout, which
  can decide a convolution's bits: the layer holds its elements in memory
  order, and so do checkpoints.
- Gradients. A hook on each parameter's gradient accumulator hands the
  gradient to the layer as soon as autograd has summed it over every use in
  the backward pass; its bucket's reduction starts at once. The gradient is
  averaged over the ranks first (``average_grads``, like DDP; an fp32 one in
  place, in the same call into the extension that hands it over, with the
  bits of Tensor.mul) and ``p.grad`` is cleared: the layer has it.
- Stage 3. The parameters' storage is freed after setup and gathered by
  units, as FSDP has them: a unit is a module subtree, and its parameters
  (its subtree's, less those of units nested in it) are gathered before its
  forward (one call into the layer per unit; the layer gathers buckets
  ahead in the order the first step recorded), into each parameter's one
  storage (in host memory the storage is lent the values inside the
  layer's gathered bucket: see storage.py), and dropped after it (the
  storage emptied, so
  what autograd saved of a weight holds no memory until its backward
  gathers it again, in place; with keep_after_forward, the units that ran
  last stay gathered for their backward), so code that reads a
  submodule's weight (nn.MultiheadAttention reads out_proj.weight) finds
  it whole. ``units=``
  picks them: a module class or a set of them (a transformer block), a
  parameter count (FSDP's size-based policy: the smallest subtrees holding
  that many parameters not yet in a unit), or a callable(module) -> bool.
  By default every module holding parameters of its own is a unit. The
  root module is always one, and holds whatever no other unit does.
  nn.MultiheadAttention and nn.TransformerEncoderLayer are never split
  (their fast paths, in eval under no_grad, read their children's
  parameters without calling the children), and are units of their own by
  default. ``zero.units`` lists the units and what each holds.
  In backward, a hook on a unit's outputs gathers its parameters before its
  backward runs, and each one is dropped once its gradient is handed over.
  The first of these hooks to run (the root's: its outputs are always
  hooked) tells the layer that backward has begun, before any gather of
  the backward, so that with quantize_weights (qwZ) the units that ran last
  in the forward get their exact weights in backward too, not the
  forward's int8 copy still cached.
  A parameter used by several units (tied) or several times is gathered
  while any use needs them. The outputs pass through an identity autograd
  function whose backward does the gathering, so in-place ops on them
  (ReLU(inplace=True)) still work.
- Reads outside the owner's forward. While the root module's forward runs
  in a mode (train or eval, gradients on or off) that has not yet run
  without finding one, a TorchFunctionMode watches every torch call: a
  released parameter among its arguments is gathered on the spot and
  recorded for the innermost unit whose forward is running, which gathers
  it with its own from then on. Detection pauses inside torch's transformer
  modules (nn.MultiheadAttention, nn.TransformerEncoderLayer,
  nn.TransformerEncoder): any active mode turns their fast paths off, whose
  bits differ from the slow path's, and the forward that detects must
  compute what later ones do. Code that reads a parameter outside the
  root's forward, or only on some steps, holds it with
  ``with zero.gathered(p): ...``.

A module on a CUDA device (all its trainable parameters on the current
one; a module spread over several devices is refused, naming them) keeps
its parameters, gradients and optimizer states there, in the layer's
device memory; offload_optimizer and offload_params move them to host
memory or files from there, as zeroshard.Optimizer does. The layer's work
is enqueued on stream= (default: torch's current stream on the device when
ZeRO is made); a gradient or value handed over from another stream is
waited for there. What ZeRO makes (gathered parameters at stage 3, the
zero gradients of step()) is made on the device. The module's own
state_dict() and load_state_dict() work there; ZeRO's state_dict(), save(),
load(), snapshot() and restore() are refused with ZSH_ERR_UNSUPPORTED: the
layer does not checkpoint device parameters' optimizer states yet.

ZeRO is a torch.optim.Optimizer whose groups hold every trainable parameter
of the module (one group, or param_groups= with a weight decay of its own
each, zsh_optim_set_weight_decay): torch.optim.lr_scheduler's schedules
drive it, and so does code that writes ``zero.param_groups[0]["lr"]``;
step() hands the rate, the same in every group, to the layer
(zsh_optim_set_lr, bit for bit torch.optim's update at that rate). The
groups' other entries are the layer's settings, fixed when it is made:
step() refuses a change to one (OneCycleLR's cycle_momentum, say), naming
it. A checkpoint carries the rate in effect, and load() sets the groups'
"lr" to it.

One backward per step hands the gradients over: a parameter whose
gradient comes twice before step() is refused. Micro-batches accumulate as
with DDP: the backward passes inside ``with zero.no_sync():`` add up their
gradients in p.grad, and the first one outside hands over the sums (the
same bits as DDP's no_sync()). A parameter that got no gradient in a step
on any rank (a branch not taken, a module not called) is left as
torch.optim leaves one whose gradient is None: no weight decay, no change
to its optimizer states, and its own step count (Adam's bias correction)
stays; step() agrees on which these are with one all-reduce of a byte per
parameter.
One that some rank used gets zeros from the others, as DDP sums it.

state_dict() and load_state_dict() are torch.optim's: the optimizer's
states in torch.optim's format, torch.optim's own bits at 1 and 2 ranks in
fp32, and such a dict (torch.optim's own too) loads at any stage
(optim_state_dict() and load_optim_state_dict(), as FSDP names them). The
module's own state_dict() and load_state_dict() reach the layer through
hooks: at stage 3 they gather every parameter whole (collective, as FSDP's
full state dict), so a released parameter never reaches a checkpoint as an
empty tensor, and a load writes every copy the layer keeps (the fp32 master
weights of mixed precision at every stage). save(dir)
and load(dir) checkpoint the whole training state (parameters, optimizer
states, step counters, loss scaler, hyperparameters), each rank writing and
reading only its own part, and load at any number of ranks and any stage;
zeroshard.checkpoint.load_consolidated() reads the one file that
``zsh_ckpt consolidate`` makes of a checkpoint.
"""
import collections
import contextlib
import inspect
import math
import os

import torch
import torch.distributed as dist

import zeroshard
from zeroshard import settings as _settings

from . import storage as _storage
from .backend import ProcessGroupZsh
from .groups import _Groups
from .optim_state import _OptimState
from .state import _State
from .units import (_FAST, _UNHOOKED, _FindReleased, _around_forward, _map_tensors,
                    _through, _unit_policy, plan_units)

_PRECISIONS = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}
# torch.optim's zero_grad() zeroes p.grad in torch 1.x and drops it from 2.0.
_SET_TO_NONE = inspect.signature(torch.optim.Optimizer.zero_grad).parameters[
    "set_to_none"].default
# What a stage 3 that lends its buckets has for the layer's cache and
# prefetch beside the largest unit, where neither the caller nor
# ZSH_MAX_LIVE_BYTES sets max_live_bytes (_live_budget): the layer's own
# default, beside which the copies of a unit used to sit.
_LIVE_ROOM = 256 << 20
# ZeRO's keep_after_forward by default: off. On the 2-core build machine
# keeping the last units did not make a step faster (docs/python.md).
_KEEP_AFTER_FORWARD = 0


def _memory_order(t):
    """None for a contiguous t; the order of its dimensions from outer to
    inner in memory when it is dense in another (channels_last: the layer
    keeps its elements in that order, so the model's convolutions see the
    layout they were given); False when it has gaps or overlaps."""
    if t.is_contiguous():
        return None
    order = tuple(sorted(range(t.dim()), key=lambda d: (-t.stride(d), d)))
    return order if t.permute(order).is_contiguous() else False


# What weight_decay is with AdamW when not given: torch.optim.AdamW's default.
ADAMW_WEIGHT_DECAY = 0.01


def _zero_settings(stage, optimizer, betas, precision, settings):
    """The Optimizer's settings: merge()'s, with ZeRO's own names for some of
    them (optimizer, betas) and the precision the parameters have."""
    out = dict(settings, stage=stage)
    if optimizer is not None:
        if "kind" in out:
            raise TypeError("optimizer=%r and kind=%r name one setting: give one"
                            % (optimizer, out["kind"]))
        out["kind"] = optimizer
    if betas is not None:
        betas = tuple(betas)
        if len(betas) != 2:
            raise ValueError("betas must be a pair, not %r" % (betas,))
        if "beta1" in out or "beta2" in out:
            raise TypeError("betas= and beta1= / beta2= name the same settings: give one")
        out["beta1"], out["beta2"] = betas
    given = out.get("precision")
    if given is not None and _settings.to_c("precision", given) != \
            _settings.to_c("precision", precision):
        raise TypeError("precision %r does not match the parameters, which are %s"
                        % (given, precision))
    out["precision"] = precision
    # torch.optim.AdamW decays by 0.01 unless told otherwise; the layer's own
    # default is 0, which a model moved over from torch would not expect.
    kind = out.get("kind")
    if out.get("weight_decay") is None and \
            (kind is None or _settings.to_c("kind", kind) == _settings.to_c("kind", "adamw")):
        out["weight_decay"] = ADAMW_WEIGHT_DECAY
    return out


def _live_budget(module, named, policy, settings, on_host):
    """At stage 3 with lent storages (storage.py) a unit in use stays fetched
    in the layer, inside max_live_bytes with its cache and prefetch, where
    its copy used to be torch's memory. Where neither the caller nor
    ZSH_MAX_LIVE_BYTES sets the bound, it is the largest unit's bytes plus
    _LIVE_ROOM: the peak the copies had, and room to gather ahead while a
    unit is in use (docs/DECISIONS.md, "Stage 3 lends its gathered buckets
    to torch")."""
    if settings.get("stage") != 3 or not on_host or not _storage.available() or \
            settings.get("max_live_bytes") is not None or "ZSH_MAX_LIVE_BYTES" in os.environ:
        return
    index = {id(p): k for k, (_, p) in enumerate(named)}
    units = plan_units(module, policy, index, lambda i: named[i][1].numel())
    largest = max(sum(named[i][1].numel() * named[i][1].element_size() for i in u.params)
                  for u in units)
    settings["max_live_bytes"] = _LIVE_ROOM + largest


def _names(names, most=4):
    shown = ", ".join(names[:most])
    return shown + (", and %d more" % (len(names) - most) if len(names) > most else "")


def _one_device(named):
    """The device every trainable parameter is on; parameters on several
    devices are refused, naming them. The layer runs on the current CUDA
    device, so a CUDA module must be on it."""
    where = collections.OrderedDict()
    for name, p in named:
        where.setdefault(p.device, []).append(name)
    if len(where) > 1:
        raise ValueError("the trainable parameters are on %d devices: %s; ZeRO trains a module "
                         "on one device: move it there first (module.to(device))"
                         % (len(where), "; ".join("%s on %s" % (_names(n), d)
                                                  for d, n in where.items())))
    device = next(iter(where))
    if device.type == "cuda" and device.index is not None and \
            device.index != torch.cuda.current_device():
        raise ValueError("the parameters are on %s but the current CUDA device is cuda:%d, where "
                         "the layer runs: torch.cuda.set_device(%d) first"
                         % (device, torch.cuda.current_device(), device.index))
    return device


def _device_stream(device, settings):
    """CUDA parameters: the torch stream the layer enqueues its work on, put
    in settings: stream= as given (a torch.cuda.Stream, or a cudaStream_t's
    address), else torch's current stream on the device now. None on the
    CPU."""
    if device.type != "cuda":
        return None
    given = settings.get("stream")
    if given is None:
        stream = torch.cuda.current_stream(device)
    elif isinstance(given, torch.cuda.Stream):
        stream = given
    else:
        stream = torch.cuda.ExternalStream(int(getattr(given, "cuda_stream", given)),
                                           device=device)
    if stream.device != device:
        raise ValueError("stream= is a stream of %s but the parameters are on %s"
                         % (stream.device, device))
    settings["stream"] = stream
    return stream


def _resolve_comm(comm, group):
    """(communicator, whether ZeRO owns it)."""
    if comm is not None:
        return comm, False
    if group is None and dist.is_available() and dist.is_initialized():
        group = dist.distributed_c10d._get_default_group()
        if not isinstance(group, ProcessGroupZsh):
            raise ValueError("the default process group's backend is %s, not zsh: pass group= "
                             "a zsh group (dist.new_group(backend=\"zsh\")) or comm="
                             % dist.get_backend(group))
    if group is not None:
        if not isinstance(group, ProcessGroupZsh):
            raise TypeError("group must be a process group of the zsh backend, not %s"
                            % type(group).__name__)
        return group.comm, False
    return zeroshard.Comm(), True


class ZeRO(_State, _OptimState, _Groups):
    """ZeRO for a torch module; the settings are zsh_optim_config_t's.

    Args:
        module: the model; trainable parameters must be dense tensors of
            one dtype, fp32, bf16 or fp16 (the layer's precision; fp32 master
            weights are kept for the half types), all on the CPU or all on
            the current CUDA device.
        stage: 0-3.
        optimizer: "adamw" (the default), "adam" or "sgd": the setting kind.
        betas: (beta1, beta2), as torch.optim.AdamW / Adam.
        param_groups: torch.optim's groups of the module's trainable
            parameters, a list of dicts with "params" and, for a group of its
            own decay, "weight_decay" (nanoGPT's and Hugging Face's 0 for
            biases and norms): every trainable parameter in exactly one
            group. A group's other keys must be the layer's one setting
            (lr, betas, eps, momentum), else it is refused by name. None:
            one group of every trainable parameter.
        mp_policy, offload_policy, sharding_policy: the policies of
            zeroshard.settings, each grouping some of the settings below.
            The precision is the parameters' dtype; one given must match it.
        **settings: every other field of zsh_optim_config_t, as
            zeroshard.Optimizer takes it (None: its default). As torch.optim:
            lr, eps, weight_decay (AdamW / Adam; with AdamW 0.01 unless
            given, as torch.optim.AdamW, where the layer's own default is 0),
            momentum, nesterov (SGD, no dampening), max_grad_norm (clip_grad_norm_; 0: off; the norm is
            summed in double, so a step it clips is close to torch's, not
            the same bits). A parameter without a gradient on any rank in
            a step is left as torch.optim leaves it. Offloading
            changes where state lives, not the arithmetic: the losses are the
            same bit for bit as without it, and so are they at any
            update_threads and with hpz. The settings:

%s

        keep_after_forward: stage 3, bytes of the parameters of the units
            that ran last in a forward left gathered until their backward
            (FSDP's reshard_after_forward=False for them, DeepSpeed's
            max_reuse_distance): their backward then gathers nothing. The
            oldest kept are released first; a step, or a backward that is
            done with them, releases them. 0 (the default): every unit is
            released after its forward. Off with quantize_weights (the
            forward's weights are int8, the backward's exact).
        units: stage 3, which modules are units, gathered whole around their
            forward: a module class or a set of them, a parameter count
            (the smallest subtrees with at least that many parameters not
            in a nested unit), or a callable(module) -> bool; None: every
            module holding parameters of its own. The root is always a unit.
        comm / group: the ranks: a zeroshard.Comm, or a zsh process group;
            by default the default process group (it must be zsh), else a
            Comm from the environment that ZeRO owns.
        average_grads: divide gradients by the number of ranks, as DDP.
        find_unused_parameters: as DDP's, for a model whose ranks take
            different branches (a parameter with a gradient on some ranks
            and not on others in a step), at stages 0-2 and at stage 3
            where every rank runs the same units: after each training
            forward of the root the ranks agree (one all-reduce of 4 bytes
            a parameter) on which parameters the outputs reach on some
            ranks but not all; their gradients are handed over in step(),
            in one order on every rank, the others' as zeros. Without it
            such a step fails, the ranks' reductions out of step
            (ZshMismatchError, saying to pass it).
        broadcast_params: start every rank from rank 0's parameters.
    """
    __doc__ %= _settings.describe(" " * 12)

    def __init__(self, module, stage=0, optimizer=None, betas=None, units=None, comm=None,
                 group=None, average_grads=True, broadcast_params=True, mp_policy=None,
                 offload_policy=None, sharding_policy=None, keep_after_forward=None,
                 param_groups=None, find_unused_parameters=False, **settings):
        if not isinstance(module, torch.nn.Module):
            raise TypeError("module must be a torch.nn.Module, not %s" % type(module).__name__)
        named = [(n, p) for n, p in module.named_parameters() if p.requires_grad]
        if not named:
            raise ValueError("the module has no trainable parameters")
        dtype = named[0][1].dtype
        device = _one_device(named)
        for name, p in named:
            if p.device.type not in ("cpu", "cuda") or p.is_sparse:
                raise ValueError("parameter %s is %s on %s; ZeRO takes dense CPU or CUDA "
                                 "parameters" % (name, "sparse" if p.is_sparse else "dense",
                                                 p.device))
            if p.dtype != dtype:
                raise TypeError("parameter %s is %s but %s is %s; every trainable parameter "
                                "must have one dtype" % (name, p.dtype, named[0][0], dtype))
        if dtype not in _PRECISIONS:
            raise TypeError("parameters are %s; ZeRO trains float32, bfloat16 or float16" % dtype)
        settings = _zero_settings(stage, optimizer, betas, _PRECISIONS[dtype],
                                  _settings.merge(settings, mp_policy, offload_policy,
                                                  sharding_policy))
        stream = _device_stream(device, settings)
        policy = _unit_policy(units)
        _live_budget(module, named, policy, settings, stream is None)
        if keep_after_forward is None:
            keep_after_forward = _KEEP_AFTER_FORWARD
        if isinstance(keep_after_forward, bool) or not isinstance(keep_after_forward, int) \
                or keep_after_forward < 0:
            raise ValueError("keep_after_forward must be a number of bytes >= 0, not %r"
                             % (keep_after_forward,))

        if not isinstance(find_unused_parameters, bool):
            raise TypeError("find_unused_parameters must be True or False, not %r"
                            % (find_unused_parameters,))
        self._comm, self._own_comm = _resolve_comm(comm, group)
        self._module = module
        self._dtype = dtype
        self._device = device
        self._stream = stream   # CUDA parameters: the torch stream the layer enqueues on
        self._grad_mul = 1.0 / self._comm.size if average_grads else 1.0
        self._opt = zeroshard.Optimizer(self._comm, **settings)
        self._stage = self._opt.stage
        self._tensors = []      # the torch parameters, in registration order
        self._zparams = []      # their zeroshard.Param
        self._shapes = []
        self._strides = []      # each parameter's strides, kept (channels_last)
        self._orders = []       # the dims from outer to inner in memory; None: contiguous
        self._index = {}        # id(parameter) -> position
        self._ready = []        # gradient handed over this step
        self._zeroed = []       # p.grad would be zeros, not None, in torch (zero_grad)
        self._find_unused = find_unused_parameters
        self._deferred = set()  # reached on some ranks only: handed over in step()
        self._sync = True       # hand gradients over as they come (False: no_sync())
        self._finished = False  # every gradient handed over for this step (_finish_grads)
        self._fw_refs = []      # stage 3: forward uses holding the parameter
        self._bw_held = []      # stage 3: held for this backward
        self._live = []         # stage 3: gathered now
        self._units = []        # stage 3: the _Units, children before parents
        self._active = []       # stage 3: (unit, positions held) per forward running
        self._active_base = 0   # stage 3: len(_active) when this backward began
        self._in_root = 0       # stage 3: the root's forwards running (nested calls)
        self._learned = set()   # stage 3: (training, grad) modes detection is done with
        self._found_new = False
        self._detector = None   # stage 3: the _FindReleased of the detecting forward
        self._paused = 0        # stage 3: _FAST forwards running inside it
        self._forward = None    # stage 3: what the root's forward attribute was
        self._hooks = []
        self._accs = []         # the gradient accumulators, kept so their hooks live
        self._end_queued = False
        # Gradients on the host are averaged by the layer's call as it takes
        # them: fp32 ones, and bf16 and fp16 ones where the factor is a power
        # of two (1, 2, 4, ... ranks). torch 1.13 rounds a half type's
        # factor to that type before it multiplies, the layer's kernel
        # multiplies by the fp32 factor: the same bits only where the factor
        # is exact in both. The others, and those on a device, by torch.
        self._scale_on_hand_over = stream is None and (
            dtype == torch.float32 or math.frexp(self._grad_mul)[0] == 0.5)
        # What a released parameter holds: one empty tensor, shared.
        self._released = torch.empty(0, dtype=dtype, device=device)
        self._gathered = []     # stage 3: each position's full tensor, its storage freed
        self._storages = []     # stage 3: its storage (storage_of), resized in place
        self._lent = []         # stage 3: its storage holds the layer's fetched values
        self._versions = []     # stage 3: the parameter's _version when gathered;
        #                         stages 0-2 in mixed precision: when last handed to the layer
        self._handed = False    # a gradient handed over since the last step
        self._refresh_masters = False  # see _register
        self._nbytes = []       # stage 3: the bytes of each one's storage when gathered
        self._keep_budget = keep_after_forward
        self._kept = collections.OrderedDict()  # stage 3: position -> bytes, oldest first
        self._kept_bytes = 0
        try:
            self._register(named, broadcast_params, policy)
        except BaseException:
            self._opt.close()
            raise
        qwz = self._stage == 3 and self._opt.stats()["quantize_weights"]
        if qwz:
            self._keep_budget = 0
        # [Note: lent storages] At stage 3 in host memory a gather points each
        # storage at its values in the layer's gathered bucket, held fetched
        # until the storage is emptied: no copy, and no fresh pages from
        # torch's allocator at every gather. Not under qwZ, whose forward
        # buckets (int8 values) must be released before backward gathers
        # them exact. Anything that needs the parameters unfetched (the step,
        # reads and writes of the layer's values) first gives each lent
        # storage a copy of its own (_own_lent).
        self._lend = (self._stage == 3 and self._stream is None and not qwz and
                      _storage.available())
        try:
            self._init_groups(param_groups)
        except BaseException:
            self.close()
            raise

    # ---- setup ----------------------------------------------------------------------
    def _register(self, named, broadcast_params, policy):
        with torch.no_grad():
            for name, p in named:
                order = _memory_order(p.data)
                if order is False:
                    p.data = p.data.contiguous()
                    order = None
                self._index[id(p)] = len(self._tensors)
                self._tensors.append(p)
                self._shapes.append(tuple(p.shape))
                self._strides.append(p.stride())
                self._orders.append(order)
                flat = self._flat(len(self._tensors) - 1, p.data)
                if broadcast_params and self._comm.size > 1:
                    self._broadcast(flat)
                self._zparams.append(self._opt.register(name, flat))
        n = len(self._tensors)
        # Stages 0-2 with bf16 or fp16 parameters on the host: the module's
        # tensors are the layer's buffers, but a step computes from the fp32
        # masters, so a change made in place between steps would be lost.
        self._refresh_masters = (self._stage < 3 and self._dtype != torch.float32 and
                                 self._stream is None)
        self._ready = [False] * n
        self._zeroed = [False] * n
        self._fw_refs = [0] * n
        self._bw_held = [False] * n
        self._live = [False] * n
        self._opt.setup()
        if self._stage in (1, 2) and self._stream is None:
            self._flatten()
        if self._refresh_masters:
            self._versions = [p._version for p in self._tensors]
        with torch.enable_grad():
            for i, p in enumerate(self._tensors):
                acc = p.expand_as(p).grad_fn.next_functions[0][0]
                self._hooks.append(acc.register_hook(self._grad_hook(i)))
                self._accs.append(acc)
        self._hooks += self._hook_module_state()
        if self._find_unused and self._comm.size > 1:
            self._hooks.append(self._module.register_forward_hook(self._find_unused_hook))
        if self._stage == 3:
            for i, p in enumerate(self._tensors):
                full = self._empty(i)
                storage = _storage.storage_of(full)
                self._nbytes.append(storage.nbytes())
                storage.resize_(0)
                self._gathered.append(full)
                self._storages.append(storage)
                self._lent.append(False)
                self._versions.append(0)
                p.data = self._released
            self._units = self._plan_units(policy)
            unhooked = {id(d) for m in self._module.modules() if isinstance(m, _UNHOOKED)
                        for d in m.modules()}
            for u in self._units:
                self._hooks.append(_around_forward(u.module, id(u.module) in unhooked,
                                                   self._pre_forward(u), self._post_forward(u)))
            for m in self._module.modules():
                if isinstance(m, _FAST):
                    self._hooks.append(_around_forward(m, id(m) in unhooked,
                                                       self._pause_detection,
                                                       self._resume_detection))
            root = self._module
            self._forward = root.__dict__.get("forward")
            root.forward = self._detecting(root.forward)

    def _flatten(self):
        """Stages 1-2 on the host: each bucket's parameters moved into one flat
        tensor laid out as the bucket (FSDP's flat parameters), each parameter
        a view of it. The step's all-gather then writes the updated
        parameters in place, where it would copy this rank's block into a
        buffer of the layer's and the peers' blocks back out
        (zsh_optim_set_bucket_storage; docs/DECISIONS.md, "Flat parameters at
        stages 1-2"). The memory is torch's, so the module keeps its
        parameters whatever becomes of the layer."""
        buckets = collections.OrderedDict()
        for i, z in enumerate(self._zparams):
            bucket, offset, numel = self._opt.place(z)
            buckets.setdefault(bucket, (numel, []))[1].append((i, offset))
        # A bucket at a time, so the tensors it replaces go before the next
        # bucket's are made: at most one bucket more than the model at once.
        with torch.no_grad():
            for bucket, (numel, members) in buckets.items():
                flat = torch.zeros(numel, dtype=self._dtype)
                self._opt.set_bucket_storage(bucket, flat)
                for i, offset in members:
                    self._tensors[i].data = flat.as_strided(self._shapes[i], self._strides[i],
                                                            offset)

    def _plan_units(self, policy):
        """The units, children before parents; the root is the last."""
        return plan_units(self._module, policy, self._index, lambda i: self._zparams[i].numel)

    def _broadcast(self, flat):
        """Rank 0's values into flat; zeroshard.Comm moves host memory, so a
        device tensor goes through a host copy."""
        if self._stream is None:
            self._comm.broadcast(flat, 0)
            return
        host = flat.cpu()
        self._comm.broadcast(host, 0)
        flat.copy_(host)

    def _empty(self, i):
        """A tensor for parameter i's values, laid out as the parameter is, on
        the parameters' device."""
        return torch.empty_strided(self._shapes[i], self._strides[i], dtype=self._dtype,
                                   device=self._device)

    def _to_layer(self, t):
        """Before a call that hands t to the layer: on a device, the layer's
        stream waits for torch's current one, which made t, and the caching
        allocator keeps t's memory until the layer's stream has read it (the
        layer reads it there, after the call returns)."""
        if self._stream is None:
            return t
        current = torch.cuda.current_stream(self._device)
        if current != self._stream:
            self._stream.wait_stream(current)
        t.record_stream(self._stream)
        return t

    def _flat(self, i, t):
        """t, laid out as parameter i, as the layer sees it: its elements in
        memory order, one dimension."""
        order = self._orders[i]
        return (t if order is None else t.permute(order)).view(-1)

    @property
    def units(self):
        """Stage 3: {module name: names of the parameters its forward gathers},
        one entry per unit in module order, "" the root; parameters that
        detection found a unit reading are among its own. {} at stages 0-2."""
        by_module = {id(u.module): u for u in self._units}
        out = collections.OrderedDict()
        for name, m in self._module.named_modules():
            u = by_module.get(id(m))
            if u is not None:
                out[name] = [self._zparams[i].name for i in u.params]
        return out

    # ---- gradients ------------------------------------------------------------------
    def _grad_hook(self, i):
        # What the hook reads of position i, looked up once: it runs for
        # every parameter in every backward.
        p, zp = self._tensors[i], self._zparams[i]

        def hook(*_):
            if p.grad is None:
                return
            if self._ready[i]:
                raise RuntimeError("ZeRO: parameter %s got a second gradient before step(); "
                                   "each parameter's gradient is handed over once per step: "
                                   "accumulate micro-batches under `with zero.no_sync():`, "
                                   "as with DDP" % zp.name)
            if self._sync and i not in self._deferred:
                try:
                    self._hand_over(i)
                except zeroshard.ZshMismatchError as e:
                    raise self._branch_hint(e) from e
            if self._bw_held[i]:
                self._bw_held[i] = False
                self._drop(i)
        return hook

    def _first_hand_over(self):
        """Before the first gradient of a step reaches the layer: at stages 0-2
        in mixed precision, a parameter changed in place since the layer last
        had it (weights clipped after a step, nn.Embedding(max_norm=...)
        renormalizing rows in its forward) is handed to the layer, whose
        masters then take the changed elements (zsh_optim_set_param keeps
        the others' low bits), as a torch.optim step would see the change;
        else the step would compute from the old masters and undo it. torch
        counts changes made through the parameter (_version)."""
        self._handed = True
        if not self._refresh_masters:
            return
        tensors, versions = self._tensors, self._versions
        for i, p in enumerate(tensors):
            if p._version != versions[i]:
                self._opt.set_param(self._zparams[i], self._flat(i, p.data))
                versions[i] = p._version

    def _hand_over(self, i):
        """Give the layer p.grad of position i (averaged over the ranks) and
        clear it: the layer has it."""
        if not self._handed:
            self._first_hand_over()
        p, g = self._tensors[i], self._tensors[i].grad
        order = self._orders[i]
        laid_out = g.stride() == self._strides[i] or (order is None and g.is_contiguous())
        if self._scale_on_hand_over:
            # Scaled as the layer copies it into its bucket: one call, one
            # pass over the gradient, which is only read (a contiguous one
            # as it is: its elements are in order). Lent: where its bucket
            # holds it alone, the reduction reads it where it lies, with no
            # copy at all, and is waited for here, so that torch frees the
            # gradient as soon as with a copy (held longer, it made torch's
            # next allocations fault fresh pages in: docs/DECISIONS.md,
            # "Gradients reduced where autograd left them"). Every hand-over
            # goes this way, so that every rank reduces a bucket alike (a
            # lent bucket averages, a copied one sums the scaled copies).
            if not laid_out:
                g = self._empty(i).copy_(g)
            self._opt.grad_lend(self._zparams[i], g if order is None else self._flat(i, g),
                                self._grad_mul, wait=True)
        else:
            if self._grad_mul != 1.0:
                g = g.mul(self._grad_mul)
            if not laid_out:
                g = self._empty(i).copy_(g)
            self._opt.grad_ready(self._zparams[i], self._to_layer(self._flat(i, g)))
        self._ready[i] = True
        p.grad = None

    @contextlib.contextmanager
    def no_sync(self):
        """Accumulate gradients without handing them to the layer, as DDP's
        and FSDP's no_sync(): inside, each backward's gradients add up in
        p.grad (at stage 3 the full gradients, as FSDP's no_sync holds them);
        the first backward outside hands over the sums, reduced as they come,
        and step() hands over any left (a parameter that the last backward
        did not reach). Not collective: the ranks need not agree on it."""
        before, self._sync = self._sync, False
        try:
            yield
        finally:
            self._sync = before

    # ---- stage 3: gathering around each use -----------------------------------------
    # [Note: one storage per parameter] Each position has one full tensor
    # (_gathered) for the whole run. A release frees its storage (resized to
    # 0 bytes) and points the parameter at _released; a gather gives the
    # storage its bytes back (its own, filled by the layer, or the layer's
    # bucket lent: [Note: lent storages]) and points the parameter at it
    # again. What autograd saved of a
    # parameter in a forward (F.linear saves weight.t(), a view) shares that
    # storage: between the forward and the backward it holds no memory, so
    # stage 3 holds one unit's weights at a time, not the whole model's; and
    # the backward reads what the backward's gather wrote (with qwZ, the
    # exact weights, not the forward's int8 ones). A unit's backward gathers
    # before any of its nodes runs (_pre_backward), checkpointing's
    # recomputation included.
    def _hold(self, positions):
        """Gather the released parameters among positions (distinct), in that
        order, in one call into the layer, each into its own storage: lent
        the layer's fetched values, or resized and filled (in host memory in
        that call too)."""
        live = self._live
        todo = [i for i in positions if not live[i]]
        if not todo:
            return
        if self._lend:
            zparams = [self._zparams[i] for i in todo]
            ptrs = self._opt.fetch_many(zparams)
            try:
                _storage.lend([self._storages[i] for i in todo], ptrs,
                              [self._nbytes[i] for i in todo])
            except BaseException:
                self._opt.release_many(zparams)
                raise
            for i in todo:
                self._lent[i] = True
        elif self._stream is None:
            self._opt.gather_storages([self._zparams[i] for i in todo],
                                      [self._storages[i] for i in todo])
        else:
            for i in todo:
                self._storages[i].resize_(self._nbytes[i])
            self._opt.gather_many([self._zparams[i] for i in todo],
                                  [self._flat(i, self._gathered[i]) for i in todo])
        tensors, gathered = self._tensors, self._gathered
        versions = self._versions
        for i in todo:
            # Live first: detection sees the assignment below and must let it be.
            live[i] = True
            tensors[i].data = gathered[i]
            versions[i] = tensors[i]._version

    def _drop(self, i):
        if self._fw_refs[i] == 0 and not self._bw_held[i]:
            if i in self._kept:
                self._kept_bytes -= self._kept.pop(i)
            self._tensors[i].data = self._released
            self._storages[i].resize_(0)
            self._live[i] = False
            if self._lent[i]:
                self._lent[i] = False
                self._opt.release_many([self._zparams[i]])

    def _own_lent(self):
        """Give every lent storage a copy of its values in memory of its own
        (resize_ to its size copies them) and release its fetch in the layer,
        so that the layer may update, read or replace the parameters while
        they stay gathered ([Note: lent storages])."""
        lent = [i for i, on in enumerate(self._lent) if on]
        if not lent:
            return
        for i in lent:
            self._storages[i].resize_(self._nbytes[i])
            self._lent[i] = False
        self._opt.release_many([self._zparams[i] for i in lent])

    def _keep(self, i):
        """After a forward: leave position i gathered for its backward, within
        the budget, releasing the oldest kept first; or drop it."""
        nbytes = self._nbytes[i]
        if self._fw_refs[i] or self._bw_held[i] or not self._live[i]:
            return
        if nbytes > self._keep_budget:
            self._drop(i)
            return
        if i in self._kept:
            self._kept.move_to_end(i)
        else:
            self._kept[i] = nbytes
            self._kept_bytes += nbytes
        while self._kept_bytes > self._keep_budget:
            self._release_oldest_kept()

    def _release_oldest_kept(self):
        j, b = self._kept.popitem(last=False)
        self._kept_bytes -= b
        self._drop(j)  # one in use again stays, and goes when that use ends

    def _drop_kept(self):
        """Release every kept position: their values are about to change."""
        while self._kept:
            self._release_oldest_kept()

    def _pre_forward(self, unit):
        def hook(module, inputs):
            if module is self._module and not self._in_root:
                self._close_aborted(0)  # forwards that raised before this one
            held = list(unit.params)
            self._hold(held)
            for i in held:
                self._fw_refs[i] += 1
            self._active.append((unit, held))
        return hook

    def _post_forward(self, unit):
        def hook(module, inputs, output):
            # Above this unit's entry: forwards inside it that raised.
            active = self._active
            if active and active[-1][0] is unit:  # none raised
                top = len(active) - 1
            else:
                top = max((k for k, (u, _) in enumerate(active) if u is unit), default=None)
            if top is None:  # closed already: its backward or the root's next forward
                return None
            held = self._active[top][1]
            out = self._unalias(output, top)
            # Kept for backward only once detection is done (a parameter kept
            # gathered would hide a read outside its unit from it), and not
            # for a recomputation inside backward, which holds them anyway.
            self._close_aborted(top, keep=self._keep_budget > 0 and self._detector is None
                                and not self._end_queued)
            # The root's outputs always: their hook runs first in backward.
            if (held or module is self._module) and torch.is_grad_enabled():
                through = _through(out, self._pre_backward(held))
                if through is not None:
                    return through
            return None if out is output else out
        return hook

    def _unalias(self, output, base):
        """output with a copy in place of each tensor in it that shares the
        storage of a parameter that the forwards above @base of _active hold
        (a module that returns its weight, or a view of it): closing them
        frees that storage ([Note: one storage per parameter])."""
        storages = self._storages
        ptrs = {storages[i].data_ptr() for _, held in self._active[base:] for i in held}
        ptrs.discard(0)
        if not ptrs:
            return output
        return _map_tensors(output, lambda t: t.clone()
                            if _storage.storage_of(t).data_ptr() in ptrs else t)

    # ---- stage 3: finding parameters read outside their unit's forward ------------
    def _detecting(self, forward):
        """The root's forward, run under _FindReleased until a forward in the
        same mode (training, gradients on) finds nothing new."""
        def detecting_forward(*args, **kwargs):
            self._in_root += 1
            try:
                return detect(*args, **kwargs)
            finally:
                self._in_root -= 1

        def detect(*args, **kwargs):
            key = (self._module.training, torch.is_grad_enabled())
            if key in self._learned:
                return forward(*args, **kwargs)
            self._found_new = False
            # Parameters kept gathered would hide reads outside their units.
            self._drop_kept()
            mode = _FindReleased(self)
            mode.__enter__()
            self._detector, self._paused = mode, 0
            try:
                out = forward(*args, **kwargs)
            finally:
                # A _FAST forward that raised left the mode popped.
                if not self._paused:
                    mode.__exit__(None, None, None)
                self._detector, self._paused = None, 0
            if not self._found_new:
                self._learned.add(key)
            return out
        return detecting_forward

    def _pause_detection(self, module, inputs):
        if self._detector is not None:
            if not self._paused:
                self._detector.__exit__(None, None, None)
            self._paused += 1

    def _resume_detection(self, module, inputs, output):
        if self._detector is not None and self._paused:
            self._paused -= 1
            if not self._paused:
                self._detector.__enter__()

    def _claim(self, objs):
        """Gather each released parameter among objs (torch call arguments) for
        the innermost unit whose forward is running, and record it there."""
        for o in objs:
            if isinstance(o, torch.nn.Parameter):
                i = self._index.get(id(o))
                if i is not None and not self._live[i] and self._active:
                    unit, held = self._active[-1]
                    self._hold((i,))
                    self._fw_refs[i] += 1
                    held.append(i)
                    if i not in unit.known:
                        unit.known.add(i)
                        unit.params.append(i)
                    self._found_new = True
            elif isinstance(o, (tuple, list)):
                self._claim(o)

    def _pre_backward(self, own):
        def hook():
            if not self._end_queued:
                self._end_queued = True
                self._active_base = len(self._active)
                torch.autograd.Variable._execution_engine.queue_callback(self._end_backward)
                self._opt.backward_begin()
            todo = [i for i in own if not self._bw_held[i] and not self._ready[i]]
            self._hold(todo)
            for i in todo:
                self._bw_held[i] = True
        return hook

    def _close_aborted(self, base, keep=False):
        """Release what the unit forwards above the first @base of _active
        hold: the one ending, and those that raised, so that their
        post-forward never ran (torch 2.x's non-reentrant checkpoint stops
        its recomputation in backward by raising once it has what backward
        needs; a caller may catch a forward's error). Left held, those
        parameters would keep their values of before the next step."""
        while len(self._active) > base:
            _, held = self._active.pop()
            self._write_back(held)
            for i in held:
                self._fw_refs[i] -= 1
                if keep:
                    self._keep(i)
                else:
                    self._drop(i)

    def _end_backward(self):
        self._end_queued = False
        self._close_aborted(self._active_base)
        for i, held in enumerate(self._bw_held):
            if held:
                self._bw_held[i] = False
                self._drop(i)

    @contextlib.contextmanager
    def gathered(self, *params):
        """Hold parameters gathered (stage 3) for code that uses them outside
        their module's forward; a no-op at stages 0-2. Collective. What the
        code changes in place is kept (FSDP's summon_full_params with
        writeback): each rank writes its part of the shard from its own
        values, so every rank makes the same change."""
        idx = []
        for p in params:
            if id(p) not in self._index:
                raise ValueError("a parameter of shape %s is not trained by this ZeRO"
                                 % (tuple(p.shape),))
            idx.append(self._index[id(p)])
        if self._stage == 3:
            self._hold(list(dict.fromkeys(idx)))
            for i in idx:
                self._fw_refs[i] += 1
        try:
            yield
        finally:
            if self._stage == 3:
                self._write_back(idx)
                for i in idx:
                    self._fw_refs[i] -= 1
                    self._drop(i)

    def _write_back(self, positions):
        """Stage 3: a gathered parameter changed in place while held (a
        forward's nn.Embedding(max_norm=...) renormalizing rows, code inside
        gathered() clamping weights) has its values written to this rank's
        part of the shard, as FSDP's summon_full_params(writeback=True):
        released unwritten, the change would be lost, where DDP keeps it.
        torch counts in-place changes on the parameter itself (_version),
        not the layer's writes into the storage."""
        tensors, versions, live = self._tensors, self._versions, self._live
        for i in positions:
            if live[i] and tensors[i]._version != versions[i]:
                self._load_param(i, tensors[i].detach())
                versions[i] = tensors[i]._version

    # ---- the step -------------------------------------------------------------------
    @property
    def loss_scale(self):
        """The factor the loss is multiplied by before backward (1 unless loss scaling is on)."""
        return self._opt.loss_scale

    def backward(self, loss):
        """loss * loss_scale, then backward."""
        scale = self._opt.loss_scale
        (loss * scale if scale != 1.0 else loss).backward()

    def step(self, closure=None):
        """Reduce the gradients, clip, update the parameters (collective), at
        param_groups[0]["lr"]. False if the step was skipped because the
        gradients overflowed."""
        if closure is not None:
            raise TypeError("ZeRO.step() takes no closure: call backward() before step()")
        self._sync_groups("ZeRO.step")
        try:
            if not self._finished:  # clip_grad_norm_() may have
                self._finish_grads()
            self._finished = False
            self._ready = [False] * len(self._ready)
            self._handed = False
            self._drop_kept()
            self._own_lent()
            return self._opt.step()
        except zeroshard.ZshMismatchError as e:
            raise self._branch_hint(e) from e

    def _branch_hint(self, e):
        """A mismatch in the step's reductions, with the likeliest cause where
        find_unused_parameters is off: ranks whose outputs reached different
        parameters start their buckets' reductions in different orders."""
        if self._find_unused or self._comm.size == 1 or "find_unused_parameters" in e.message:
            return e
        return type(e)(e.status, "%s; if the ranks' outputs reached different parameters in "
                       "this step (a branch taken on some ranks only), pass "
                       "find_unused_parameters=True to ZeRO, as to DDP" % e.message)

    def clip_grad_norm_(self, max_norm, norm_type=2.0):
        """Between backward and step(), as FSDP's clip_grad_norm_: the global
        L2 norm of the step's gradients (averaged over the ranks, the loss
        scale taken out) as a float32 tensor, and the step clips them to
        max_norm with torch.nn.utils.clip_grad_norm_'s factor
        max_norm / (norm + 1e-6) (collective: finishes the reductions).
        torch.nn.utils.clip_grad_norm_ on the module's parameters would see
        no gradient: the layer holds them, not p.grad. The layer sums the
        squares exactly (in double, or in fixed point in the deterministic
        mode), so the norm is within rounding of torch's, which depends on
        how ATen adds up each parameter's squares."""
        if float(norm_type) != 2.0:
            raise ValueError("ZeRO.clip_grad_norm_: norm_type=%r; the layer clips to the L2 "
                             "norm (2.0)" % (norm_type,))
        if isinstance(max_norm, torch.Tensor):
            max_norm = max_norm.item()
        try:
            self._finish_grads()
        except zeroshard.ZshMismatchError as e:
            raise self._branch_hint(e) from e
        return torch.tensor(self._opt.clip_grad_norm(max_norm), dtype=torch.float32)

    def _finish_grads(self):
        """Hand every parameter's gradient over for the step: those that
        no_sync() left in p.grad, zeros where another rank has one, none
        where no rank does (collective above one rank)."""
        # Left for now: gradients accumulated under no_sync() that no
        # backward outside it handed over (the last one did not reach their
        # parameter), those find_unused_parameters deferred, and none. The
        # ranks agree on the last before any is handed over, then hand them
        # over in one order, so their buckets' reductions start in one order
        # on every rank.
        if not self._handed:
            self._first_hand_over()
        pending = [i for i, ready in enumerate(self._ready) if not ready]
        unused = self._unused_everywhere([i for i in pending if self._tensors[i].grad is None])
        for i in pending:
            if self._tensors[i].grad is not None:
                self._hand_over(i)
                continue
            # zero_grad(set_to_none=False) leaves torch a zero gradient, and
            # torch.optim steps a parameter that has one (decay, moments);
            # _zeroed is the same on every rank, set from the agreed outcome.
            if i in unused and not self._zeroed[i]:
                self._opt.grad_none(self._zparams[i])
            else:
                zeros = torch.zeros(self._zparams[i].numel, dtype=self._dtype,
                                    device=self._device)
                if self._scale_on_hand_over:  # as a peer's gradient goes: _hand_over()
                    self._opt.grad_lend(self._zparams[i], zeros, self._grad_mul, wait=True)
                else:
                    self._opt.grad_ready(self._zparams[i], self._to_layer(zeros))
            self._ready[i] = True
        self._finished = True
        self._deferred = set()
        self._zeroed = [z or i not in unused for i, z in enumerate(self._zeroed)]

    def _find_unused_hook(self, module, inputs, output):
        """find_unused_parameters: after a training forward of the root, the
        parameters its outputs reach on some ranks but not on all, deferred to
        step() (collective: an all-reduce of a byte per parameter)."""
        del module, inputs
        if not (self._module.training and torch.is_grad_enabled()):
            return
        index = self._index
        reached = torch.zeros(len(self._tensors), dtype=torch.int32)
        seen, todo = set(), []

        def root(t):
            if t.requires_grad:
                if t.grad_fn is not None:
                    todo.append(t.grad_fn)
                elif id(t) in index:
                    reached[index[id(t)]] = 1
            return t
        _map_tensors(output, root)
        while todo:
            fn = todo.pop()
            if fn in seen:
                continue
            seen.add(fn)
            var = getattr(fn, "variable", None)  # AccumulateGrad
            if var is not None and id(var) in index:
                reached[index[id(var)]] = 1
            todo.extend(f for f, _ in fn.next_functions if f is not None)
        self._comm.all_reduce(reached, op="sum")
        size = self._comm.size
        self._deferred.update(i for i, n in enumerate(reached.tolist()) if 0 < n < size)

    def _unused_everywhere(self, missing):
        """Of the positions in missing (no gradient here this step), those that
        no rank has a gradient for (collective, above one rank: a byte per
        parameter, all-reduced by max). DDP leaves their p.grad None, and
        torch.optim skips them; one that some rank used gets zeros from the
        others, as DDP sums it."""
        if self._comm.size == 1:
            return set(missing)
        used = torch.ones(len(self._ready), dtype=torch.uint8)
        used[missing] = 0
        self._comm.all_reduce(used, op="max")
        return {i for i in missing if not used[i]}

    def zero_grad(self, set_to_none=None):
        """Drop the gradients handed over since the last step; p.grad is cleared
        (the gradients live in the layer). set_to_none takes torch.optim's
        default when None (False in torch 1.x, True from 2.0): with False a
        parameter that had a gradient and gets none in a later step is still
        updated, with a zero gradient, as torch.optim updates one whose p.grad
        was zeroed; with True it is left as it is until it has one again."""
        if set_to_none is None:
            set_to_none = _SET_TO_NONE
        if set_to_none:
            self._zeroed = [False] * len(self._zeroed)
        self._opt.zero_grad()
        self._ready = [False] * len(self._ready)
        self._handed = False
        self._finished = False
        for p in self._tensors:
            p.grad = None

    def stats(self):
        """The layer's memory and traffic counters (zsh_optim_stats_t) as a
        dict, the bytes per tier and the nvme tier's I/O included (see
        zeroshard.Optimizer.stats)."""
        return self._opt.stats()

    @property
    def stage(self):
        return self._stage

    @property
    def optimizer(self):
        """The underlying zeroshard.Optimizer."""
        return self._opt

    # ---- lifetime -------------------------------------------------------------------
    def close(self):
        """Give the module back whole (stage 3 gathers every parameter: collective),
        remove the hooks and destroy the layer. Idempotent."""
        if self._opt is None:
            return
        try:
            if self._stage == 3:
                self._own_lent()
                for i, p in enumerate(self._tensors):
                    p.data = self._full(i)
                    self._live[i] = True
                    self._storages[i].resize_(0)
        finally:
            if self._stage == 3:
                if self._forward is None:
                    del self._module.forward
                else:
                    self._module.forward = self._forward
            for h in reversed(self._hooks):
                h.remove()
            self._hooks = []
            self._accs = []
            self._opt.close()
            self._opt = None
            if self._own_comm:
                self._comm.close()

    def __repr__(self):
        return "<zeroshard.torch.ZeRO stage %d, %d parameters>" % (self._stage, len(self._tensors))
