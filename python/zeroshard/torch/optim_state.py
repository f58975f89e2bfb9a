"""ZeRO's optimizer state in torch.optim's format (zero.py's ZeRO has these
methods through _OptimState): what torch.optim.AdamW's, Adam's or SGD's
state_dict() holds for the same training, so a loop or a framework that
keeps the optimizer's state as torch's dict keeps the moments, and such a
dict, from torch.optim or from a ZeRO at any stage or number of ranks,
continues training where it left off. The states are read whole from the
ranks' parts (zsh_optim_get_state: collective) and written back into each
rank's own (zsh_optim_set_state). In mixed precision each entry also
carries the parameter's fp32 master weights ("master_weight"), which the
module's bf16 or fp16 state dict rounds: a loop that keeps the two dicts
resumes with the masters' low bits, in whichever order it loads them.
save() and load() are the sharded checkpoint."""
import copy

import torch

import zeroshard
from zeroshard import settings as _settings
from zeroshard.errors import ERR_INVALID_ARG
from .groups import _same

_RULES = {v: k for k, v in _settings.KINDS.items()}
# torch.optim's options of rules the layer does not have, refused when set.
_OTHER_RULES = ("amsgrad", "maximize", "dampening", "differentiable")


class _OptimState:
    """state_dict() and load_state_dict() as torch.optim's, also named
    optim_state_dict() and load_optim_state_dict() as FSDP's (attributes:
    zero.py's)."""

    def _state_names(self):
        """The per-element states torch.optim keeps under this rule, and
        whether it keeps "step"."""
        cfg = self._opt.config
        if cfg["kind"] == _settings.KINDS["sgd"]:
            return (["momentum_buffer"] if cfg["momentum"] != 0.0 else []), False
        return ["exp_avg", "exp_avg_sq"], True

    def _mixed(self):
        """Whether the layer keeps fp32 master weights (bf16 or fp16
        parameters)."""
        return self._opt.precision != "fp32"

    def _scaled(self):
        """Whether the layer scales the loss (fp16's dynamic scaling, or a
        static scale other than 1): its state then goes in the dict."""
        dynamic = self._opt.config["dynamic_loss_scale"]
        if dynamic < 0:  # the layer's default: dynamic in fp16
            dynamic = self._opt.precision == "fp16"
        return bool(dynamic) or self._opt.loss_scale != 1.0

    def _fp32_like(self, i):
        """An fp32 host tensor laid out as parameter i (a channels_last
        weight's states are too, as torch.optim's zeros_like makes them): the
        layer's flat order is its memory order."""
        return torch.empty_strided(self._shapes[i], self._strides[i], dtype=torch.float32)

    def _group_positions(self):
        """torch.optim's numbering: the groups' parameters in order, as
        positions in the layer."""
        return [self._index[id(p)] for g in self.param_groups for p in g["params"]]

    def _states_at_rest(self, what):
        opt = self._live_opt(what)
        if any(self._ready):
            raise zeroshard.ZshError(ERR_INVALID_ARG, what + ": gradients were handed over "
                                     "since the last step; call step() or zero_grad() first")
        return opt

    def optim_state_dict(self):
        """The optimizer's state as torch.optim's state_dict() gives it
        (collective: every rank calls it, and gets all of it): {"state":
        {n: {"step": tensor, "exp_avg": tensor, "exp_avg_sq": tensor}},
        "param_groups": [...]} for Adam and AdamW, {"momentum_buffer":
        tensor} (None without momentum) for SGD, numbered as torch numbers
        the groups' parameters; a parameter never updated has no entry. The
        states are fp32 tensors of the parameter's shape, with the exact
        bits, at any stage. In mixed precision each entry also holds
        "master_weight", the parameter's fp32 master weights (the module's
        state dict has them rounded); torch.optim's load takes the entry
        too, and its rules ignore it. With loss scaling the dict also holds
        "loss_scaler": {"scale", "clean_steps"}, as DeepSpeed's fp16
        optimizer's does, so a resumed run skips the steps this one would.
        Between steps."""
        opt = self._states_at_rest("ZeRO.optim_state_dict")
        names, has_step = self._state_names()
        state = {}
        for n, i in enumerate(self._group_positions()):
            zp = self._zparams[i]
            updates = opt.updates(zp)
            if updates == 0:
                continue
            entry = {}
            if has_step:
                entry["step"] = torch.tensor(float(updates))
            for name in names:
                t = self._fp32_like(i)
                opt.get_state(zp, name, self._flat(i, t))
                entry[name] = t
            if not names and not has_step:
                entry["momentum_buffer"] = None
            if self._mixed():
                t = self._fp32_like(i)
                opt.get_state(zp, "master_weight", self._flat(i, t))
                entry["master_weight"] = t
            state[n] = entry
        groups, n = [], 0
        for g in self.param_groups:
            out = {k: copy.deepcopy(v) for k, v in g.items() if k != "params"}
            out["params"] = list(range(n, n + len(g["params"])))
            n += len(g["params"])
            groups.append(out)
        out = {"state": state, "param_groups": groups}
        if self._scaled():
            scale, clean = opt.loss_scaler()
            out["loss_scaler"] = {"scale": scale, "clean_steps": clean}
        return out

    def state_dict(self):
        """torch.optim's state_dict(): optim_state_dict(). The module's
        parameters are model.state_dict()'s."""
        return self.optim_state_dict()

    def load_state_dict(self, state_dict):
        """torch.optim's load_state_dict(): load_optim_state_dict(). A
        module's state dict is refused, naming model.load_state_dict()."""
        if isinstance(state_dict, dict) and "state" not in state_dict and \
                "param_groups" not in state_dict:
            raise ValueError("ZeRO.load_state_dict takes the optimizer's state dict, as "
                             "torch.optim's ({'state', 'param_groups'}), not a module's (%s); "
                             "the module's goes to model.load_state_dict(), which reaches "
                             "the layer" % ", ".join(list(state_dict)[:3]))
        self.load_optim_state_dict(state_dict)

    def _checked_optim_state(self, state_dict, what):
        """What load_optim_state_dict() writes, per position: (updates,
        {name: the state flat in the layer's order}), after checking all of
        state_dict, its groups too."""
        if not isinstance(state_dict, dict) or \
                set(state_dict) - {"loss_scaler"} != {"state", "param_groups"}:
            raise ValueError("%s: a torch.optim state dict has 'state' and 'param_groups' (and "
                             "ZeRO's, with loss scaling, 'loss_scaler')" % what)
        scaler = state_dict.get("loss_scaler")
        if scaler is not None and (not isinstance(scaler, dict) or
                                   set(scaler) != {"scale", "clean_steps"}):
            raise ValueError("%s: 'loss_scaler' is %r; it has 'scale' and 'clean_steps'"
                             % (what, scaler))
        saved = state_dict["param_groups"]
        if len(saved) != len(self.param_groups):
            raise ValueError("%s: the state dict has %d parameter groups, this ZeRO %d"
                             % (what, len(saved), len(self.param_groups)))
        numbers = []
        for k, (g, s) in enumerate(zip(self.param_groups, saved)):
            if len(s.get("params", ())) != len(g["params"]):
                raise ValueError("%s: param_groups[%d] has %d parameters in the state dict, "
                                 "%d here" % (what, k, len(s.get("params", ())),
                                              len(g["params"])))
            numbers += list(s["params"])
            for key in _OTHER_RULES:
                if s.get(key):
                    raise ValueError("%s: param_groups[%d][%r] is %r in the state dict; ZeRO's "
                                     "rules have no %s" % (what, k, key, s[key], key))
            for key, v in g.items():
                if key not in ("params", "lr") and key in s and _same(s[key]) != _same(v):
                    raise ValueError("%s: param_groups[%d][%r] is %r in the state dict and %r "
                                     "here; only 'lr' is loaded" % (what, k, key, s[key], v))
        rates = {g.get("lr") for g in saved}
        if len(rates) != 1:
            raise ValueError("%s: the state dict's groups have different rates %s; ZeRO's layer "
                             "has one" % (what, sorted(rates)))
        positions = dict(zip(numbers, self._group_positions()))
        names, has_step = self._state_names()
        plan = {}
        for n, entry in state_dict["state"].items():
            if n not in positions:
                raise ValueError("%s: the state dict has state for parameter %r, which no "
                                 "group holds" % (what, n))
            i = positions[n]
            want = names + (["step"] if has_step else [])
            got = [k for k in entry if entry[k] is not None and k != "master_weight"]
            if sorted(got) != sorted(want):
                raise ValueError("%s: the state of parameter %r has %s; %s here keeps %s"
                                 % (what, n, sorted(got), _RULES[self._opt.config["kind"]],
                                    sorted(want) or "none"))
            values = {}
            for name in names + (["master_weight"] if entry.get("master_weight") is not None
                                 else []):
                t = entry[name]
                if not isinstance(t, torch.Tensor) or tuple(t.shape) != tuple(self._shapes[i]):
                    raise ValueError("%s: the state dict's %s of parameter %r is %s; the "
                                     "parameter has shape %s" % (what, name, n, tuple(t.shape)
                                                                 if isinstance(t, torch.Tensor)
                                                                 else type(t).__name__,
                                                                 tuple(self._shapes[i])))
                values[name] = self._flat(i, self._fp32_like(i).copy_(t.detach()))
            step = int(float(entry["step"])) if has_step else 1
            if step < 0:
                raise ValueError("%s: parameter %r's step is %r" % (what, n, entry["step"]))
            plan[i] = (step, values)
        return plan

    def load_optim_state_dict(self, state_dict):
        """Load a state dict in torch.optim's format (optim_state_dict()'s,
        or torch.optim.AdamW's, Adam's or SGD's of the same module's
        parameters in the same groups): every rank the same dict. Each
        parameter's states and count of updates are replaced (one without an
        entry starts afresh, as torch's load leaves it), and the groups'
        "lr" (one for every group) and entries other than the layer's
        settings are taken; a group's betas, eps, momentum or weight decay
        must be this ZeRO's. A "loss_scaler" becomes this ZeRO's scaler
        state where it scales the loss. An entry's "master_weight" (a
        mixed-precision ZeRO's) becomes the master weights in mixed
        precision (the parameters keep their values, which
        model.load_state_dict() sets before or after without losing the
        masters), and the parameter's values in fp32, where the parameter
        is its own master. Everything is checked before anything changes.
        Between steps."""
        what = "ZeRO.load_optim_state_dict"
        opt = self._states_at_rest(what)
        plan = self._checked_optim_state(state_dict, what)
        scaler = state_dict.get("loss_scaler")
        if scaler is not None and self._scaled():
            # First: the one check left to the layer (the range) changes nothing.
            opt.set_loss_scaler(scaler["scale"], scaler["clean_steps"])
        saved = state_dict["param_groups"]
        names, _ = self._state_names()
        for i in range(len(self._tensors)):
            step, values = plan.get(i, (0, None))
            for name in names:
                v = values[name] if values is not None else torch.zeros(self._zparams[i].numel)
                opt.set_state(self._zparams[i], name, v)
            opt.set_updates(self._zparams[i], step)
            master = values.get("master_weight") if values is not None else None
            if master is not None and self._mixed():
                opt.set_state(self._zparams[i], "master_weight", master)
            elif master is not None:
                t = self._fp32_like(i)
                self._flat(i, t).copy_(master)
                self._load_param(i, t)
        for g, s in zip(self.param_groups, saved):
            for key, v in s.items():
                if key != "params" and key not in g:
                    g[key] = copy.deepcopy(v)  # a schedule's initial_lr
            g["lr"] = s["lr"]
