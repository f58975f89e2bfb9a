"""ZeRO as torch.optim sees an optimizer: parameter groups whose "lr" a
schedule sets between steps (zero.py's ZeRO has these methods through
_Groups).

torch.optim.lr_scheduler's classes take only a torch.optim.Optimizer, and
code written for torch writes group["lr"] itself; both work on a ZeRO. The
groups hold every trainable parameter of the module (one group unless
param_groups= gives them), their other entries the layer's settings, which
are fixed when it is made, but for a group's own "weight_decay"
(zsh_optim_set_weight_decay on each of its parameters): step() hands a
changed "lr", the same in every group, to the layer (zsh_optim_set_lr) and
refuses a change to any other entry."""
import torch

from zeroshard import settings as _settings


def _same(v):
    """A group's entry as it compares: betas as a list or a tuple alike."""
    return tuple(v) if isinstance(v, list) else v


class _Groups(torch.optim.Optimizer):
    """param_groups and the learning rate of a ZeRO (its attributes are zero.py's)."""

    def _init_groups(self, param_groups=None):
        """torch.optim.Optimizer's own initialisation, with the layer's settings
        as the defaults; param_groups (torch's list of dicts) checked first,
        and each group's own weight decay given to the layer."""
        cfg = self._opt.config
        if cfg["kind"] == _settings.KINDS["sgd"]:
            names = {"momentum": cfg["momentum"], "nesterov": bool(cfg["nesterov"])}
        else:
            names = {"betas": (cfg["beta1"], cfg["beta2"]), "eps": cfg["eps"]}
        defaults = dict(lr=self._opt.lr, weight_decay=cfg["weight_decay"], **names)
        groups = self._checked_groups(param_groups, defaults)
        self._opening = True
        try:
            torch.optim.Optimizer.__init__(self, groups, defaults)
        finally:
            self._opening = False
        for g in self.param_groups:
            if g["weight_decay"] != defaults["weight_decay"]:
                for p in g["params"]:
                    self._opt.set_weight_decay(self._zparams[self._index[id(p)]],
                                               g["weight_decay"])
        # What each group's entries but "lr" are, fixed from now on.
        self._fixed = [{k: v for k, v in g.items() if k not in ("params", "lr")}
                       for g in self.param_groups]

    def _checked_groups(self, param_groups, defaults):
        """param_groups as torch.optim takes them, every trainable parameter of
        the module in exactly one, and no setting but weight_decay its own."""
        if param_groups is None:
            return [{"params": list(self._tensors)}]
        if isinstance(param_groups, dict) or not all(isinstance(g, dict)
                                                     for g in param_groups):
            raise TypeError("param_groups must be a list of dicts, each with 'params', as "
                            "torch.optim takes them")
        out, seen = [], {}
        for k, g in enumerate(param_groups):
            if "params" not in g:
                raise ValueError("param_groups[%d] has no 'params'" % k)
            params = g["params"]
            params = [params] if isinstance(params, torch.Tensor) else list(params)
            for p in params:
                i = self._index.get(id(p)) if isinstance(p, torch.Tensor) else None
                if i is None:
                    raise ValueError("param_groups[%d] holds %s, not a trainable parameter of "
                                     "the module" % (k, "a tensor of shape %s" % (tuple(p.shape),)
                                                     if isinstance(p, torch.Tensor)
                                                     else type(p).__name__))
                if i in seen:
                    raise ValueError("parameter %s is in param_groups[%d] and [%d]; each is "
                                     "in one group" % (self._zparams[i].name, seen[i], k))
                seen[i] = k
            for key, v in g.items():
                if key in ("params", "weight_decay"):
                    continue
                if key not in defaults or _same(v) != _same(defaults[key]):
                    raise ValueError("param_groups[%d][%r] is %r; ZeRO's layer has one %s for "
                                     "every parameter (%r), and a group's own weight_decay only"
                                     % (k, key, v, key, defaults.get(key)))
            out.append(dict(g, params=params))
        left = [self._zparams[i].name for i in range(len(self._tensors)) if i not in seen]
        if left:
            raise ValueError("param_groups leave out %d trainable parameter%s (%s): put %s in a "
                             "group, or freeze %s with requires_grad_(False)"
                             % (len(left), "" if len(left) == 1 else "s", ", ".join(left[:4]) +
                                (", ..." if len(left) > 4 else ""),
                                "it" if len(left) == 1 else "them",
                                "it" if len(left) == 1 else "them"))
        return out

    def add_param_group(self, param_group):
        """The groups are made with the ZeRO (param_groups=); another is refused."""
        if not getattr(self, "_opening", False):
            raise ValueError("ZeRO's parameter groups are made with it (param_groups=), "
                             "every trainable parameter of its module; a parameter it does "
                             "not train needs another optimizer")
        torch.optim.Optimizer.add_param_group(self, param_group)

    def _sync_groups(self, what):
        """Before a step: a changed "lr", the same in every group, goes to the
        layer; any other change is refused, naming it, and nothing is
        changed."""
        if len(self.param_groups) != len(self._fixed):
            raise ValueError("%s: ZeRO has %d parameter group%s, not %d"
                             % (what, len(self._fixed), "" if len(self._fixed) == 1 else "s",
                                len(self.param_groups)))
        for k, (group, fixed) in enumerate(zip(self.param_groups, self._fixed)):
            for key, was in fixed.items():
                now = group.get(key)
                if now != was:
                    raise ValueError("%s: param_groups[%d][%r] is %r, set to %r when the ZeRO "
                                     "was made; only 'lr' changes between steps"
                                     % (what, k, key, now, was))
        rates = [group.get("lr") for group in self.param_groups]
        if any(r is not rates[0] and r != rates[0] for r in rates):
            raise ValueError("%s: the parameter groups' 'lr' differ (%s); ZeRO's layer has one "
                             "learning rate for every parameter"
                             % (what, ", ".join(repr(r) for r in rates)))
        if rates[0] != self._opt.lr:
            self._opt.lr = rates[0]  # a bad rate raises, and nothing changes

    def _groups_from_layer(self):
        """After a load: every group's "lr" is the one the checkpoint carried."""
        for group in self.param_groups:
            group["lr"] = self._opt.lr
