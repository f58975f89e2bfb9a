"""The extension zeroshard._zeroshard, built against the libzeroshard that
pkg-config finds (zeroshard.pc: set PKG_CONFIG_PATH=<prefix>/lib/pkgconfig
for a copy outside the default paths). The package metadata is in
pyproject.toml; setup.py exists because the extension's flags and the
version come from pkg-config."""

import os
import shlex
import subprocess

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup


def pkg_config(*args):
    try:
        out = subprocess.run(["pkg-config", *args, "zeroshard"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        raise SystemExit("zeroshard: pkg-config not found: install it (Debian: pkg-config)")
    except subprocess.CalledProcessError as e:
        raise SystemExit(
            "zeroshard: pkg-config %s zeroshard failed: %s\n"
            "Install libzeroshard (configure --prefix=PREFIX && make install) and set "
            "PKG_CONFIG_PATH=PREFIX/lib/pkgconfig" % (" ".join(args), e.stderr.strip()))
    return out.strip()


def flags(option, prefix):
    """The values of -I/-L/-l style flags in pkg-config's output for option."""
    return [f[len(prefix):] for f in shlex.split(pkg_config(option)) if f.startswith(prefix)]


libdirs = flags("--libs-only-L", "-L")
# The module finds the library it was built against without LD_LIBRARY_PATH,
# as make install's copy does (libtool -R).
libdir = pkg_config("--variable=libdir")
ext = Pybind11Extension(
    "zeroshard._zeroshard",
    sources=["src/module.cc", "src/optim.cc"],
    depends=["src/handles.h", "src/optim.h"],
    include_dirs=flags("--cflags-only-I", "-I"),
    library_dirs=libdirs,
    libraries=flags("--libs-only-l", "-l"),
    runtime_library_dirs=[libdir] if libdir else [],
    cxx_std=17,
)



def torch_ext():
    """zeroshard._zeroshard_torch where the build sees torch (pip's
    --no-build-isolation, or torch in the build environment): stage 3 lends
    its gathered buckets to torch storages. It is built against that
    torch's headers, C++ ABI and libc10, and used under that version only
    (zeroshard/torch/storage.py); without it stage 3 copies each gather."""
    try:
        import torch
    except ImportError:
        return []
    root = torch.__path__[0]
    inc, lib = os.path.join(root, "include"), os.path.join(root, "lib")
    if not os.path.isfile(os.path.join(inc, "c10", "core", "StorageImpl.h")):
        return []
    return [Pybind11Extension(
        "zeroshard._zeroshard_torch",
        sources=["src/torch_storage.cc"],
        extra_compile_args=["-isystem", inc],
        define_macros=[("_GLIBCXX_USE_CXX11_ABI", str(int(torch._C._GLIBCXX_USE_CXX11_ABI))),
                       ("ZSH_TORCH_VERSION", '"%s"' % torch.__version__)],
        library_dirs=[lib],
        libraries=["c10"],
        runtime_library_dirs=[lib],
        cxx_std=17,
        optional=True,  # another torch's c10 may not build it: stage 3 then copies
    )]


setup(version=pkg_config("--modversion"), ext_modules=[ext] + torch_ext())
