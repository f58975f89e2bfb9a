"""ZeroShard for PyTorch.

Importing this module registers the torch.distributed backend ``"zsh"``::

    import torch.distributed as dist
    import zeroshard.torch
    dist.init_process_group("zsh")          # under zshrun, or any env:// launcher

The backend bootstraps through the store torch hands it and runs every
collective through a ZeroShard communicator (see :mod:`zeroshard.torch.backend`).
"""
from .backend import ProcessGroupZsh, create_process_group, register

register()

__all__ = ["ProcessGroupZsh", "create_process_group", "register"]
