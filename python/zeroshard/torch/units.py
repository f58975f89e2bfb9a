"""Stage 3's units and what ZeRO hooks into torch around them: which of
torch's modules read their children's parameters (never split, paused
under detection, wrapped instead of hooked), the units= policy, a unit,
pre and post around a module's forward, the identity autograd function on
a unit's outputs whose backward gathers before the unit's backward runs,
tensors found in nested outputs, and the TorchFunctionMode that detection
runs under (zero.py: ZeRO, which uses them)."""
import torch


class _PreBackward(torch.autograd.Function):
    """Identity in forward; in backward, runs a callback before the gradient
    flows on into the module whose outputs went through it. The outputs are
    detached aliases, not views, so later in-place ops on them are allowed."""

    @staticmethod
    def forward(ctx, callback, *tensors):
        ctx.callback = callback
        ctx.set_materialize_grads(False)
        return tuple(t.detach() for t in tensors)

    @staticmethod
    def backward(ctx, *grads):
        ctx.callback()
        return (None,) + grads


def _through(obj, callback):
    """obj with the tensors that need a gradient (in tensors, tuples, lists and
    dicts) passed through one _PreBackward; None when there are none, or when
    the structure cannot be rebuilt (then every such tensor gets a hook)."""
    if isinstance(obj, torch.Tensor):  # most modules' output: one tensor
        return _PreBackward.apply(callback, obj)[0] if obj.requires_grad else None
    found = []

    def collect(o):
        if isinstance(o, torch.Tensor):
            if o.requires_grad:
                found.append(o)
        elif isinstance(o, (tuple, list)):
            for x in o:
                collect(x)
        elif isinstance(o, dict):
            for x in o.values():
                collect(x)

    collect(obj)
    if not found:
        return None
    out = iter(_PreBackward.apply(callback, *found))

    def rebuild(o):
        if isinstance(o, torch.Tensor):
            return next(out) if o.requires_grad else o
        if isinstance(o, tuple) and type(o) is not tuple:  # a namedtuple
            return type(o)(*[rebuild(x) for x in o])
        if isinstance(o, (tuple, list)):
            return type(o)(rebuild(x) for x in o)
        if isinstance(o, dict):
            return type(o)((k, rebuild(v)) for k, v in o.items())
        return o

    return rebuild(obj)


# torch's modules whose code reads their children's parameters without
# calling the children, also on fast paths that run only when no
# __torch_function__ is active, so detection never sees them: never split
# into several units, and units of their own by default.
_WHOLE = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer)

# torch's modules whose forward takes a fast path only when no
# __torch_function__ is active (has_torch_function() is true under any mode):
# detection pauses inside them, so the forward that detects computes what
# every later one does. Their code reads parameters of their own subtree
# alone, which a unit around them or within them holds already.
_FAST = (torch.nn.MultiheadAttention, torch.nn.TransformerEncoderLayer,
         torch.nn.TransformerEncoder)

# torch's modules whose fast path is refused where any module of their
# subtree has forward hooks (torch >= 2.1): around those modules' forwards
# ZeRO wraps the forward itself instead of hooking the module.
_UNHOOKED = (torch.nn.TransformerEncoderLayer,)

# Containers without a forward of their own: their hooks would never run.
_NO_FORWARD = (torch.nn.ModuleList, torch.nn.ModuleDict)


def _map_tensors(obj, fn):
    """obj with fn(t) in place of each tensor t in it (in tensors, tuples,
    lists and dicts); obj itself where fn changes none."""
    if isinstance(obj, torch.Tensor):
        return fn(obj)
    if isinstance(obj, (tuple, list)):
        items = [_map_tensors(x, fn) for x in obj]
        if all(a is b for a, b in zip(items, obj)):
            return obj
        if isinstance(obj, tuple) and type(obj) is not tuple:  # a namedtuple
            return type(obj)(*items)
        return type(obj)(items)
    if isinstance(obj, dict):
        items = [(k, _map_tensors(v, fn)) for k, v in obj.items()]
        if all(v is obj[k] for k, v in items):
            return obj
        return type(obj)(items)
    return obj


def _unit_policy(units):
    """units= as a function (module, parameters its unit would hold, whether
    it holds parameters itself) -> whether the module is a unit."""
    if units is None:
        return lambda m, numel, own: own or isinstance(m, _WHOLE)
    if isinstance(units, int) and not isinstance(units, bool):
        if units < 1:
            raise ValueError("units=%d: a parameter count must be at least 1" % units)
        return lambda m, numel, own: numel >= units and not isinstance(m, _NO_FORWARD)
    classes = (units,) if isinstance(units, type) else units
    if isinstance(classes, (set, frozenset, tuple, list)):
        classes = tuple(classes)
        bad = [c for c in classes if not (isinstance(c, type) and issubclass(c, torch.nn.Module))]
        if bad or not classes:
            raise TypeError("units: %r is not a torch.nn.Module subclass"
                            % (bad[0] if bad else classes,))
        return lambda m, numel, own: isinstance(m, classes)
    if callable(units):
        return lambda m, numel, own: bool(units(m))
    raise TypeError("units must be None, a module class or a set of them, a parameter count "
                    "or a callable(module) -> bool, not %s" % type(units).__name__)


class _Wrapped:
    """pre(module, args) and post(module, args, output) around module's forward
    as an instance attribute, so that the module holds no hooks; remove()
    puts back what was there (wrappers of one module come off newest first)."""

    def __init__(self, module, pre, post):
        self._module = module
        self._had = module.__dict__.get("forward")
        inner = module.forward

        def forward(*args, **kwargs):
            pre(module, args)
            out = inner(*args, **kwargs)
            res = post(module, args, out)
            return out if res is None else res
        module.forward = forward

    def remove(self):
        if self._had is None:
            del self._module.forward
        else:
            self._module.forward = self._had


class _Hooked:
    """pre and post as the module's forward pre-hook and forward hook."""

    def __init__(self, module, pre, post):
        self._handles = (module.register_forward_pre_hook(pre), module.register_forward_hook(post))

    def remove(self):
        for h in reversed(self._handles):
            h.remove()


def _around_forward(module, wrap, pre, post):
    """pre and post around module's forward: a _Wrapped where @wrap, else
    _Hooked. Either has remove()."""
    return (_Wrapped if wrap else _Hooked)(module, pre, post)


class _Unit:
    """A module subtree whose parameters are gathered together around its
    forward. params (positions in ZeRO's registration order) grows when
    detection finds the unit's code reading a parameter it does not hold."""

    __slots__ = ("module", "params", "known")

    def __init__(self, module, params):
        self.module = module
        self.params = params
        self.known = set(params)


class _FindReleased(torch.overrides.TorchFunctionMode):
    """Hands every Parameter among a torch call's arguments to ZeRO._claim
    before the call runs (calls made inside the handler are not seen again)."""

    def __init__(self, zero):
        super().__init__()
        self._zero = zero

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        self._zero._claim(args)
        if kwargs:
            self._zero._claim(kwargs.values())
        return func(*args, **kwargs)


def plan_units(root, policy, index, numel):
    """The units of root's tree, children before parents; root is the last.
    index maps id(parameter) to its position, numel(position) its elements;
    a module is a unit where policy(module, the elements its unit would
    hold, whether it holds parameters itself) says so."""
    units = []
    seen = set()

    def visit(m, inside_whole):
        # The positions of the parameters m's subtree holds outside units.
        seen.add(m)
        own = [index[id(p)] for p in m.parameters(recurse=False) if id(p) in index]
        free = list(own)
        for c in m.children():
            if c not in seen:
                free += visit(c, inside_whole or isinstance(m, _WHOLE))
        free = list(dict.fromkeys(free))
        if m is root or (free and not inside_whole and
                         policy(m, sum(numel(i) for i in free), bool(own))):
            units.append(_Unit(m, free))
            return []
        return free

    visit(root, False)
    return units
