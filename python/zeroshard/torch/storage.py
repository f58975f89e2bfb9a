"""Lending the layer's memory to torch storages (stage 3 in host memory).

A stage 3 gather hands torch the gathered bucket itself: each parameter's
storage is pointed at its values inside the bucket, which the layer holds
fetched until the storage is emptied again. Without this, every gather
copies into a storage that torch's CPU allocator has just given fresh
pages, which the kernel zeroes on first touch, at every forward and
backward (docs/DECISIONS.md, "Stage 3 lends its gathered buckets to torch").

Pointing a storage elsewhere needs torch's C++ StorageImpl, whose layout is
the torch version's own: the extension zeroshard._zeroshard_torch is built
against the headers of the torch found at configure time, and used only
under that same version. Anywhere else (another torch, a build without it)
`why_not` says so and stage 3 copies, as before.
"""

import torch

try:
    from .. import _zeroshard_torch as _zt
except ImportError as e:  # built without torch's headers, or not built at all
    _zt = None
    why_not = "zeroshard._zeroshard_torch is not available (%s)" % e
else:
    if _zt.torch_version != torch.__version__:
        why_not = ("zeroshard._zeroshard_torch was built for torch %s, this is torch %s"
                   % (_zt.torch_version, torch.__version__))
        _zt = None
    else:
        why_not = None

_untyped = torch.Tensor.untyped_storage if hasattr(torch.Tensor, "untyped_storage") \
    else torch.Tensor._storage


def storage_of(t):
    """t's storage as an UntypedStorage, sized in bytes (resize_(nbytes)
    gives it nbytes). torch 1.13 names it _storage() (its storage() is a
    TypedStorage, sized in elements, built anew at each call)."""
    return _untyped(t)


def available():
    return _zt is not None


def lend(storages, ptrs, nbytes):
    """Point each empty CPU storage at nbytes[k] bytes at ptrs[k], memory it
    does not own: every tensor on it (views autograd saved included) reads
    them. resize_(0) takes them back; resize_(n) gives the storage a copy of
    its own. Checks every storage before changing any (ValueError)."""
    _zt.attach([(s._cdata, p, n) for s, p, n in zip(storages, ptrs, nbytes)])
