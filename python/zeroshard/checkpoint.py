"""zeroshard.checkpoint: read the one file ``zsh_ckpt consolidate DIR OUT``
makes of a checkpoint, without the safetensors package.

    model = GPT(...)                        # a fresh instance, not wrapped by ZeRO
    sd = zeroshard.checkpoint.load_consolidated("model.safetensors", model)
    model.load_state_dict(sd, strict=False)

The file is safetensors: an 8-byte little-endian header length N, N bytes of
JSON ({"<name>": {"dtype": "F32", "shape": [...], "data_offsets": [begin,
end]}, ..., "__metadata__": {...}}, offsets counted from the end of the
header), then the tensors' bytes, little-endian. The names are those
registered with the optimizer: zeroshard.torch.ZeRO registers the module's
trainable parameters under their named_parameters() names; a parameter
registered in tiles (zsh_optim_register_tiled) appears as "name[0]",
"name[1]", ..., which are put back together here. Any safetensors file of
these dtypes reads the same way.

Each tensor is read from the file into its own storage, one at a time; the
file is never copied whole. torch is imported on the first call.

The file may come from elsewhere, so nothing in it is trusted: it must be a
regular file (a FIFO or a device is refused, not read), every size in its
header is bounded by the file's length, and a tile's index by the number of
tensors in the file, before anything is allocated.
"""

import json
import os
import re
import stat
import struct
import sys

__all__ = ["load_consolidated", "read_header"]

# safetensors dtype -> (torch dtype name, element size)
_DTYPES = {
    "F64": ("float64", 8), "F32": ("float32", 4), "F16": ("float16", 2),
    "BF16": ("bfloat16", 2), "I64": ("int64", 8), "I32": ("int32", 4),
    "I16": ("int16", 2), "I8": ("int8", 1), "U8": ("uint8", 1), "BOOL": ("bool", 1),
}
# The bounds the safetensors format itself sets on the header.
_HEADER_MAX = 100 * 1024 * 1024
# A tile's index: a decimal of at most 18 digits (it is below the number of
# tensors in the file anyway); a name with a longer one is a plain name.
_TILE = re.compile(r"^(.*)\[(0|[1-9][0-9]{0,17})\]$")


def _fail(path, why):
    return ValueError("%s: %s" % (path, why))


def _open_regular(path):
    """@path opened for reading as a regular file: O_NONBLOCK so that a FIFO
    cannot block the open, and refused by name unless fstat says regular."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = "a FIFO" if stat.S_ISFIFO(mode) else "a directory" if stat.S_ISDIR(mode) \
                else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode) \
                else "a socket" if stat.S_ISSOCK(mode) else "not a regular file"
            raise _fail(path, "it is %s, not a regular file" % kind)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_header(path):
    """The file's header: (tensors, metadata, data_start), where tensors maps
    each name to {"dtype", "shape", "data_offsets"} (checked against each other
    and the file's size), metadata is the "__metadata__" dict ({} without one)
    and data_start is the file offset of the first tensor byte."""
    path = os.fspath(path)
    with _open_regular(path) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(8)
        if len(head) != 8:
            raise _fail(path, "%d bytes, too short for a safetensors header" % size)
        (n,) = struct.unpack("<Q", head)
        if n > _HEADER_MAX or n > size - 8:
            raise _fail(path, "the header claims %d bytes; the file has %d after the length"
                        % (n, size - 8))
        raw = f.read(n)
    try:
        header = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise _fail(path, "the header is not JSON: %s" % e) from None
    if not isinstance(header, dict):
        raise _fail(path, "the header is a JSON %s, not an object" % type(header).__name__)
    metadata = header.pop("__metadata__", None) or {}
    if not isinstance(metadata, dict):
        raise _fail(path, "__metadata__ is not an object")
    data_start = 8 + n
    data_len = size - data_start
    tensors = {}
    for name, info in header.items():
        where = "tensor %r" % name
        if not isinstance(info, dict):
            raise _fail(path, "%s: its entry is not an object" % where)
        dtype, shape, offs = info.get("dtype"), info.get("shape"), info.get("data_offsets")
        if dtype not in _DTYPES:
            raise _fail(path, "%s: dtype %r is not one of %s" % (where, dtype, ", ".join(_DTYPES)))
        # Each dimension is bounded by the file's length, so a tensor of no
        # elements cannot ask torch for an absurd shape either.
        if not isinstance(shape, list) or not all(_is_count(d) and d <= size for d in shape):
            raise _fail(path, "%s: shape %r is not a list of sizes up to the file's %d bytes"
                        % (where, shape, size))
        if not isinstance(offs, list) or len(offs) != 2 or not all(_is_count(o) for o in offs) \
                or offs[0] > offs[1] or offs[1] > data_len:
            raise _fail(path, "%s: data_offsets %r are not a range within the %d data bytes"
                        % (where, offs, data_len))
        numel = 1
        for d in shape:
            numel *= d
        if offs[1] - offs[0] != numel * _DTYPES[dtype][1]:
            raise _fail(path, "%s: %d bytes for shape %s of %s (%d expected)"
                        % (where, offs[1] - offs[0], shape, dtype, numel * _DTYPES[dtype][1]))
        tensors[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": list(offs)}
    return tensors, metadata, data_start


def _is_count(v):
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def _read(torch, f, path, name, info, data_start):
    """One tensor, read straight into its own storage."""
    tdtype = getattr(torch, _DTYPES[info["dtype"]][0])
    begin, end = info["data_offsets"]
    out = torch.empty(info["shape"], dtype=tdtype)
    if end > begin:
        # A byte view of the tensor's storage that readinto fills.
        mv = memoryview(out.view(-1).view(torch.uint8).numpy())
        f.seek(data_start + begin)
        got = 0
        while got < end - begin:
            k = f.readinto(mv[got:])
            if not k:
                raise _fail(path, "tensor %r: the file ended %d bytes into its %d"
                            % (name, got, end - begin))
            got += k
        if sys.byteorder == "big" and _DTYPES[info["dtype"]][1] > 1:
            isz = _DTYPES[info["dtype"]][1]
            ints = {2: torch.int16, 4: torch.int32, 8: torch.int64}[isz]
            v = out.view(-1).view(ints).numpy()
            v.byteswap(inplace=True)
    return out


def _untile(path, names):
    """{result name: [file names in order]}: "w[0]", "w[1]", ... become "w"."""
    groups = {}
    order = []
    for name in names:
        m = _TILE.match(name)
        key, k = (m.group(1), int(m.group(2))) if m else (name, None)
        if key not in groups:
            groups[key] = {}
            order.append(key)
        if k in groups[key]:
            raise _fail(path, "tensor %r appears twice" % name)
        groups[key][k] = name
    out = {}
    for key in order:
        g = groups[key]
        if None in g:
            if len(g) > 1:
                raise _fail(path, "%r is both a tensor and tiled (%s)"
                            % (key, ", ".join(sorted(n for k, n in g.items() if k is not None))))
            out[key] = [g[None]]
            continue
        ks = sorted(g)
        if ks[-1] != len(ks) - 1:
            # Sorted and distinct, so the first gap is the first k out of
            # place, and the count of the missing comes from the last index
            # alone: nothing is built to the size of an index in the file.
            first = next(i for i, k in enumerate(ks) if k != i)
            more = ks[-1] + 1 - len(ks) - 1
            raise _fail(path, "the tiles of %r are not 0..%d: %s[%d] missing%s"
                        % (key, ks[-1], key, first, " (and %d more)" % more if more else ""))
        out[key] = [g[k] for k in ks]
    return out


def load_consolidated(path, module=None):
    """The tensors of a consolidated checkpoint (a safetensors file) as a
    state_dict {name: torch.Tensor}, tiles "name[k]" concatenated (flat) into
    "name".

    With module (a torch.nn.Module), every name must be one of its parameters
    (named_parameters()'s names) and every trainable parameter must be in the
    file: each tensor is reshaped to its parameter's shape and cast to its
    dtype, ready for module.load_state_dict(sd, strict=False) (buffers and
    frozen parameters are not in a checkpoint). A mismatch raises ValueError
    naming the parameters. Pass a module that holds its parameters: one
    trained by ZeRO at stage 3 holds none outside a forward, so use a fresh
    instance (or the module's state_dict() while its ZeRO is open).
    """
    import torch

    path = os.fspath(path)
    tensors, _, data_start = read_header(path)
    plan = _untile(path, list(tensors))
    params = None
    if module is not None:
        if not isinstance(module, torch.nn.Module):
            raise TypeError("module must be a torch.nn.Module, not %s" % type(module).__name__)
        params = dict(module.named_parameters())
        unknown = [n for n in plan if n not in params]
        missing = [n for n, p in params.items() if p.requires_grad and n not in plan]
        if unknown or missing:
            raise ValueError("%s does not fit the module: %s%s%s" % (
                path,
                "not parameters of the module: %s" % ", ".join(unknown) if unknown else "",
                "; " if unknown and missing else "",
                "the module's parameters missing from the file: %s" % ", ".join(missing)
                if missing else ""))
        # Sizes first, so a mismatch is reported before anything is read.
        for name, parts in plan.items():
            numel = 0
            for part in parts:
                n = 1
                for d in tensors[part]["shape"]:
                    n *= d
                numel += n
            p = params[name]
            if numel != p.numel():
                hint = ""
                if p.numel() == 0:
                    hint = " (a module trained by ZeRO at stage 3 holds no values outside a " \
                           "forward: pass a fresh instance)"
                raise ValueError("%s: %s has %d elements; the module's parameter has %d, shape %s%s"
                                 % (path, name, numel, p.numel(), tuple(p.shape), hint))
    out = {}
    with _open_regular(path) as f:
        for name, parts in plan.items():
            if len(parts) == 1 and parts[0] == name:
                t = _read(torch, f, path, name, tensors[name], data_start)
            else:
                dtypes = {tensors[part]["dtype"] for part in parts}
                if len(dtypes) != 1:
                    raise _fail(path, "the tiles of %r have dtypes %s"
                                % (name, ", ".join(sorted(dtypes))))
                t = torch.cat([_read(torch, f, path, part, tensors[part], data_start).view(-1)
                               for part in parts])
            if params is not None:
                p = params[name]
                t = t.reshape(p.shape).to(dtype=p.dtype)
            out[name] = t
    return out
