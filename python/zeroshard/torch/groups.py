"""ZeRO as torch.optim sees an optimizer: one parameter group whose "lr" a
schedule sets between steps (zero.py's ZeRO has these methods through
_Groups).

torch.optim.lr_scheduler's classes take only a torch.optim.Optimizer, and
code written for torch writes group["lr"] itself; both work on a ZeRO. The
group holds every trainable parameter of the module, its other entries the
layer's settings, which are fixed when it is made: step() hands a changed
"lr" to the layer (zsh_optim_set_lr) and refuses a change to any other."""
import torch

from zeroshard import settings as _settings


class _Groups(torch.optim.Optimizer):
    """param_groups and the learning rate of a ZeRO (its attributes are zero.py's)."""

    def _init_groups(self):
        """torch.optim.Optimizer's own initialisation, with the layer's settings
        as the defaults of its one group."""
        cfg = self._opt.config
        if cfg["kind"] == _settings.KINDS["sgd"]:
            names = {"momentum": cfg["momentum"], "nesterov": bool(cfg["nesterov"])}
        else:
            names = {"betas": (cfg["beta1"], cfg["beta2"]), "eps": cfg["eps"]}
        defaults = dict(lr=self._opt.lr, weight_decay=cfg["weight_decay"], **names)
        torch.optim.Optimizer.__init__(self, list(self._tensors), defaults)

    def add_param_group(self, param_group):
        """The one group is made with the ZeRO; another is refused."""
        if self.param_groups:
            raise ValueError("ZeRO has one parameter group, every trainable parameter of its "
                             "module; a parameter it does not train needs another optimizer")
        torch.optim.Optimizer.add_param_group(self, param_group)

    def _sync_groups(self, what):
        """Before a step: a changed "lr" goes to the layer; any other change is
        refused, naming it, and nothing is changed."""
        if len(self.param_groups) != 1:
            raise ValueError("%s: ZeRO has one parameter group, not %d"
                             % (what, len(self.param_groups)))
        group = self.param_groups[0]
        for key, was in self.defaults.items():  # the layer's settings, as made
            now = group.get(key)
            if key != "lr" and now != was:
                raise ValueError("%s: param_groups[0][%r] is %r, set to %r when the ZeRO was "
                                 "made; only 'lr' changes between steps" % (what, key, now, was))
        if group.get("lr") != self._opt.lr:
            self._opt.lr = group["lr"]  # a bad rate raises, and nothing changes

    def _groups_from_layer(self):
        """After a load: the group's "lr" is the one the checkpoint carried."""
        self.param_groups[0]["lr"] = self._opt.lr
