"""ZeroShard for PyTorch.

Importing this module registers the torch.distributed backend ``"zsh"``::

    import torch.distributed as dist
    import zeroshard.torch
    dist.init_process_group("zsh")          # under zshrun, or any env:// launcher

The backend bootstraps through the store torch hands it and runs every
collective through a ZeroShard communicator (see :mod:`zeroshard.torch.backend`);
:func:`monitored_barrier` is torch's, for zsh groups too.
:class:`ZeRO` trains any module with ZeRO stages 0-3 (see :mod:`zeroshard.torch.zero`);
:func:`load_consolidated` reads a checkpoint consolidated by ``zsh_ckpt`` into a
state_dict (see :mod:`zeroshard.checkpoint`).
"""
from ..checkpoint import load_consolidated
from .backend import ProcessGroupZsh, create_process_group, monitored_barrier, register
from .zero import ZeRO

register()

__all__ = ["ProcessGroupZsh", "ZeRO", "create_process_group", "load_consolidated",
           "monitored_barrier", "register"]
