"""The optimizer's settings: the fields of zsh_optim_config_t, as
zeroshard.Optimizer and zeroshard.torch.ZeRO take them.

The list is the module's (python/src/optim_settings.h: one row per field,
with how Python takes it, its policy, the ZSH_* variable its unset value
takes, and a line of help); this module builds the keywords, the policies
and the help from it. Each setting is a keyword of the same name as its
field, and those about one concern can come grouped in a policy instead, as
FSDP2 groups them:

    Optimizer(comm, stage=3, lr=3e-4,
              mp_policy=MixedPrecisionPolicy(precision="bf16"),
              offload_policy=OffloadPolicy(offload_optimizer="nvme", nvme_dir="/var/tmp"),
              sharding_policy=ShardingPolicy(bucket_size=64 << 20, hpz="auto"))

is Optimizer(comm, stage=3, lr=3e-4, precision="bf16", offload_optimizer="nvme",
nvme_dir="/var/tmp", bucket_size=64 << 20, hpz="auto"). A setting comes from
its keyword or from its policy, not both: a policy passed with a keyword of
one of its fields is refused. None, anywhere, leaves a setting to
zsh_optim_config_init() (and so, where the field has one, to its ZSH_*
variable).

doc_table() is the manual's table of them (docs/zero.md), which
tests/python/test_settings.py holds the page to: paste it there after changing
a row.
"""

import collections
import dataclasses
import operator
import os
import textwrap

from . import _zeroshard as _z
from .buffers import BFLOAT16, FLOAT16, FLOAT32

KINDS = {"sgd": 0, "adam": 1, "adamw": 2}
PRECISIONS = {"fp32": FLOAT32, "float32": FLOAT32, "bf16": BFLOAT16, "bfloat16": BFLOAT16,
              "fp16": FLOAT16, "float16": FLOAT16}
PRECISION_NAMES = {FLOAT32: "fp32", BFLOAT16: "bf16", FLOAT16: "fp16"}
# zsh_offload_t; ZSH_OFFLOAD_DEFAULT (-1) is None: the ZSH_OFFLOAD_* variable decides.
TIERS = {"none": 0, "cpu": 1, "nvme": 2}
# zsh_optim_config_t::hpz; 0 (None) takes ZSH_HPZ.
HPZ = {"off": 1, "auto": -1}
# zsh_optim_config_t::quantize_weights (ZSH_QUANTIZE_*); 0 (None) takes the variable.
QUANTIZE = {"off": 1, "on": 2, "auto": -1}

Setting = collections.namedtuple("Setting", "name kind policy variable doc default")


def _integer(name, value):
    if isinstance(value, bool):
        raise TypeError("%s must be an integer, not %r" % (name, value))
    if isinstance(value, float):
        if not value.is_integer():
            raise TypeError("%s must be an integer, not %r" % (name, value))
        return int(value)
    try:
        return operator.index(value)
    except TypeError:
        raise TypeError("%s must be an integer, not %r" % (name, value)) from None


def _size(name, value):
    value = _integer(name, value)
    if value < 0:
        raise ValueError("%s must be >= 0, not %d" % (name, value))
    return value


def _float(name, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError("%s must be a number, not %r" % (name, value)) from None


def _flag(name, value):
    if isinstance(value, bool) or value in (0, 1):
        return int(bool(value))
    raise TypeError("%s must be True or False, not %r" % (name, value))


def _named(names, what):
    def convert(name, value):
        if isinstance(value, str):
            if value.lower() not in names:
                raise ValueError("%s %r is not one of %s" % (name, value, ", ".join(names)))
            return names[value.lower()]
        code = None if isinstance(value, bool) else _integer(name, value)
        if code not in names.values():
            raise ValueError("%s %r is not one of %s" % (name, value, what))
        return code
    return convert


def _hpz(name, value):
    if isinstance(value, str):
        if value.lower() not in HPZ:
            raise ValueError("%s %r is not off, auto or a group size" % (name, value))
        return HPZ[value.lower()]
    size = _integer(name, value)
    if size < 1:
        raise ValueError("%s %r is not off, auto or a group size" % (name, value))
    return size


def _quantize(name, value):
    if isinstance(value, bool):
        return QUANTIZE["on" if value else "off"]
    if isinstance(value, str) and value.lower() in QUANTIZE:
        return QUANTIZE[value.lower()]
    raise ValueError("%s %r is not off, on, auto, True or False" % (name, value))


def _path(name, value):
    value = os.fspath(value)
    if isinstance(value, bytes):
        value = os.fsdecode(value)
    if "\0" in value:
        raise ValueError("%s %r has a NUL character" % (name, value))
    return value


def _stream(name, value):
    """A cudaStream_t: its address, or an object that has one (torch.cuda.Stream)."""
    if hasattr(value, "cuda_stream"):
        value = value.cuda_stream
    return _size(name, value)


_CONVERT = {
    "int": _integer, "size": _size, "float": _float, "flag": _flag,
    "kind": _named(KINDS, "sgd, adam, adamw"),
    "precision": _named(PRECISIONS, "fp32, bf16, fp16"),
    "tier": _named(TIERS, "none, cpu, nvme"),
    "hpz": _hpz, "path": _path, "stream": _stream, "quantize": _quantize,
}


def _python_value(kind, code):
    """A field's C value as Python takes it back (names for the enums, None for unset)."""
    if kind == "kind":
        return {v: k for k, v in KINDS.items()}[code]
    if kind == "precision":
        return PRECISION_NAMES[code]
    if kind == "tier":
        return None if code == -1 else {v: k for k, v in TIERS.items()}[code]
    if kind == "hpz":
        return {0: None, 1: "off", -1: "auto"}.get(code, code)
    if kind == "quantize":
        return {0: None, 1: "off", 2: "on", -1: "auto"}[code]
    if kind == "flag":
        return None if code == -1 else bool(code)
    if kind == "path":
        return code or None
    return code


def _read_settings():
    defaults = _z.optim_config_defaults()
    out = []
    for name, kind, policy, variable, doc in _z.optim_settings():
        if kind not in _CONVERT:
            raise ImportError("zeroshard._zeroshard lists setting %s of kind %r, which "
                              "zeroshard.settings does not know" % (name, kind))
        out.append(Setting(name, kind, policy, variable, doc,
                           _python_value(kind, defaults[name])))
    return tuple(out)


SETTINGS = _read_settings()
BY_NAME = {s.name: s for s in SETTINGS}


def to_c(name, value):
    """One setting (not None) as the module's dict takes it; raises TypeError
    or ValueError naming it."""
    _known(name)
    return _CONVERT[BY_NAME[name].kind](name, value)


def _known(name):
    if name not in BY_NAME:
        raise TypeError("unknown setting %r; zsh_optim_config_t has %s"
                        % (name, ", ".join(BY_NAME)))


class _Policy:
    """What the policies share: every field checked as its setting is, and
    None leaves it unset."""

    def __post_init__(self):
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                to_c(f.name, value)

    def settings(self):
        """The fields that are set, as keywords."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) is not None}


@dataclasses.dataclass(frozen=True)
class MixedPrecisionPolicy(_Policy):
    """The dtype of parameters and gradients (fp32 master weights and states
    under bf16 and fp16) and the loss scaling."""
    precision: object = None
    loss_scale: object = None
    dynamic_loss_scale: object = None
    loss_scale_window: object = None
    min_loss_scale: object = None


@dataclasses.dataclass(frozen=True)
class OffloadPolicy(_Policy):
    """Where the state lives (ZeRO-Offload, ZeRO-Infinity): the tiers of the
    optimizer states and of the parameter shards, and the nvme tier's files
    and host buffers."""
    offload_optimizer: object = None
    offload_params: object = None
    nvme_dir: object = None
    host_mem_limit: object = None
    sub_group_size: object = None


@dataclasses.dataclass(frozen=True)
class ShardingPolicy(_Policy):
    """How parameters are bucketed and gathered: bucket bytes, the bound on
    live buffers, stage 3's prefetch, hpZ's node-local copy and qwZ's
    quantized gathers."""
    bucket_size: object = None
    max_live_bytes: object = None
    prefetch: object = None
    hpz: object = None
    quantize_weights: object = None
    quantize_block: object = None
    quantize_grads: object = None
    quantize_grad_bits: object = None
    quantize_weight_bits: object = None


# The keyword each policy is passed as.
POLICIES = {"mp_policy": MixedPrecisionPolicy, "offload_policy": OffloadPolicy,
            "sharding_policy": ShardingPolicy}


def merge(settings, mp_policy=None, offload_policy=None, sharding_policy=None):
    """The settings the keywords and policies give, by name, those left None
    dropped; a name no field has, a policy of the wrong class, or a setting
    given both ways is refused naming it."""
    for key in settings:
        _known(key)
    out = {}
    given = {"mp_policy": mp_policy, "offload_policy": offload_policy,
             "sharding_policy": sharding_policy}
    for arg, cls in POLICIES.items():
        policy = given[arg]
        if policy is None:
            continue
        if not isinstance(policy, cls):
            raise TypeError("%s must be a zeroshard.%s, not %s"
                            % (arg, cls.__name__, type(policy).__name__))
        for f in dataclasses.fields(policy):
            if f.name in settings:
                raise TypeError("%s is given twice, as a keyword and in %s=%r: give it once"
                                % (f.name, arg, policy))
        out.update(policy.settings())
    out.update((k, v) for k, v in settings.items() if v is not None)
    return out


def to_config(settings):
    """The dict the module's optim_create takes, from merge()'s settings."""
    return {k: to_c(k, v) for k, v in settings.items()}


def describe(indent="    "):
    """The settings, one paragraph each, for docstrings."""
    lines = []
    for s in SETTINGS:
        where = ("%s; " % s.policy) if s.policy else ""
        unset = ("; None takes %s" % s.variable) if s.variable else ""
        lines.append(textwrap.fill("%s (%s%s, default %r%s): %s"
                                   % (s.name, where, s.kind, s.default, unset, s.doc),
                                   79, initial_indent=indent,
                                   subsequent_indent=indent + "    "))
    return "\n".join(lines)


DOC_MARKER = "<!-- zeroshard.settings.doc_table() -->"


def doc_table():
    """The manual's table of the settings (docs/zero.md), its marker line first."""
    rows = [DOC_MARKER,
            "| setting (`zsh_optim_config_t`, keyword) | policy | default | unset takes | "
            "what it sets |",
            "|---|---|---|---|---|"]
    for s in SETTINGS:
        default = "%.7g" % s.default if isinstance(s.default, float) else str(s.default)
        rows.append("| `%s` | %s | `%s` | %s | %s |"
                    % (s.name, "`%s`" % s.policy if s.policy else "-", default,
                       "`%s`" % s.variable if s.variable else "-", s.doc))
    return "\n".join(rows)
