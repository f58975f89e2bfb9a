#!/usr/bin/env python3
"""The smoke case of the Python package: whether a copy of zeroshard works at
all, run once per rank (tests/system/python/run_pip.sh runs it against the
package pip installed into a fresh venv). An all-reduce and an all-gather
on numpy arrays and a CPU torch tensor, the torch backend importable, the
version and zeroshard.info of the library the package loaded."""

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import case, main  # noqa: E402


@case
def test_all_reduce_and_all_gather_of_numpy_arrays(ctx):
    x = np.full(1000, ctx.rank + 1, np.float32)
    ctx.comm.all_reduce(x)
    want = ctx.size * (ctx.size + 1) / 2
    assert (x == want).all(), (x[:4], want)
    mine = np.arange(5, dtype=np.int64) + 10 * ctx.rank
    out = np.empty(5 * ctx.size, np.int64)
    ctx.comm.all_gather(mine, out)
    assert (out == np.concatenate([np.arange(5) + 10 * r for r in range(ctx.size)])).all(), out


@case
def test_all_reduce_of_a_torch_tensor_and_the_backend_imports(ctx):
    ctx.need_torch()
    import zeroshard.torch  # noqa: F401  registers the backend "zsh"
    t = ctx.torch.full((64,), float(ctx.rank), dtype=ctx.torch.float64)
    ctx.comm.all_reduce(t)
    assert (t == ctx.size * (ctx.size - 1) / 2).all(), t[:4]
    # register_backend adds it as an attribute, upper case, in every torch.
    assert hasattr(ctx.torch.distributed.Backend, "ZSH"), "torch.distributed.Backend has no ZSH"


@case
def test_info_describes_the_loaded_library_and_refuses_no_section(ctx):
    import zeroshard.info
    text = zeroshard.info.text(ctx.zsh._zeroshard.INFO_VERSION)
    want = "# ZeroShard version: headers %s, library %s\n" % (ctx.zsh.__version__, ctx.zsh.__version__)
    assert text == want, (text, want)
    try:
        zeroshard.info.text(0)
    except ctx.zsh.ZshError as e:
        assert "sections 0x0" in str(e), str(e)
    else:
        raise AssertionError("zeroshard.info.text(0) did not raise")


if __name__ == "__main__":
    sys.exit(main(sys.argv))
