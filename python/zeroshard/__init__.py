"""ZeroShard from Python: collectives on numpy arrays and CPU torch tensors.

    import numpy as np, zeroshard
    with zeroshard.Comm() as comm:          # RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT
        x = np.full(4, comm.rank, np.float32)
        comm.all_reduce(x)                  # in place: the sum over ranks

See zeroshard.comm for threads, buffers and requests, zeroshard.optim for the
optimizer layer and its checkpoints (Optimizer.save / load),
zeroshard.settings for its settings and their policies, and
zeroshard.checkpoint for reading a consolidated checkpoint.
"""

from . import _zeroshard, checkpoint
from .buffers import Op
from .comm import ANY_SOURCE, TAG_MAX, Comm, Request
from .optim import Optimizer, Param, device_available
from .settings import MixedPrecisionPolicy, OffloadPolicy, ShardingPolicy
from .errors import (ZshAbortedError, ZshError, ZshMismatchError, ZshPeerFailedError,
                     ZshTimeoutError)

__all__ = ["ANY_SOURCE", "TAG_MAX", "Comm", "Request", "Op", "Optimizer", "Param", "MixedPrecisionPolicy", "OffloadPolicy",
           "ShardingPolicy", "ZshError", "ZshTimeoutError", "ZshPeerFailedError",
           "ZshMismatchError", "ZshAbortedError", "checkpoint", "device_available", "version"]


def version():
    """The library's version at run time: (major, minor, patch)."""
    return tuple(_zeroshard.version())


__version__ = "%d.%d.%d" % version()
