"""Buffers: numpy arrays and CPU torch tensors (and, for the optimizer, CUDA
torch tensors), checked and reduced to (data pointer, element count, dtype
code, device) before anything is posted."""

import enum
import sys

import numpy as np


class Op(enum.IntEnum):
    """Reduction operations, as zsh_op_t."""
    SUM = 0
    PROD = 1
    MIN = 2
    MAX = 3
    AVG = 4


# zsh_dtype_t codes.
INT8, UINT8, INT32, UINT32, INT64, UINT64, FLOAT16, BFLOAT16, FLOAT32, FLOAT64 = range(10)
FLOAT_CODES = (FLOAT16, BFLOAT16, FLOAT32, FLOAT64)

_NUMPY_CODES = {
    np.dtype(np.int8): INT8, np.dtype(np.uint8): UINT8,
    np.dtype(np.int32): INT32, np.dtype(np.uint32): UINT32,
    np.dtype(np.int64): INT64, np.dtype(np.uint64): UINT64,
    np.dtype(np.float16): FLOAT16, np.dtype(np.float32): FLOAT32,
    np.dtype(np.float64): FLOAT64,
}
_TORCH_NAMES = {
    "int8": INT8, "uint8": UINT8, "int32": INT32, "int64": INT64,
    "float16": FLOAT16, "bfloat16": BFLOAT16, "float32": FLOAT32, "float64": FLOAT64,
}
SUPPORTED = ("int8 uint8 int32 uint32 int64 uint64 float16 bfloat16 (torch only) "
             "float32 float64")


def op_code(op):
    """An Op, its int value or its name ("sum", "prod", "min", "max", "avg")."""
    if isinstance(op, str):
        try:
            return Op[op.upper()]
        except KeyError:
            raise ValueError("op %r is not one of sum, prod, min, max, avg" % op) from None
    if isinstance(op, int) and not isinstance(op, bool):
        try:
            return Op(op)
        except ValueError:
            raise ValueError("op %d is not a zeroshard.Op" % op) from None
    raise TypeError("op must be a string or a zeroshard.Op, not %s" % type(op).__name__)


def _is_torch_tensor(obj):
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.Tensor)


class Buffer:
    """One checked buffer: .ptr, .count, .dtype (code), .device ("cpu" or a
    CUDA tensor's "cuda:N"), .name (for messages) and .obj, the array or
    tensor, kept alive while a collective uses it. CUDA tensors only where
    the caller passes cuda=True (the optimizer and Comm's *_stream calls,
    on device memory)."""

    __slots__ = ("obj", "ptr", "count", "dtype", "dtype_name", "name", "device")

    def __init__(self, obj, name, writable, cuda=False):
        self.obj = obj
        self.name = name
        self.device = "cpu"
        if isinstance(obj, np.ndarray):
            self._numpy(obj, writable)
        elif _is_torch_tensor(obj):
            self._torch(obj, writable, cuda)
        else:
            raise TypeError("%s must be a numpy array or a %s torch tensor, not %s"
                            % (name, "CPU or CUDA" if cuda else "CPU", type(obj).__name__))

    def _numpy(self, a, writable):
        code = _NUMPY_CODES.get(a.dtype) if a.dtype.isnative else None
        if code is None:
            raise TypeError("%s has dtype %s; zeroshard supports %s" % (self.name, a.dtype, SUPPORTED))
        if not a.flags.c_contiguous:
            raise ValueError("%s is not C-contiguous (strides %s); pass np.ascontiguousarray(...)"
                             % (self.name, a.strides))
        if writable and not a.flags.writeable:
            raise ValueError("%s is read-only but receives the result" % self.name)
        self.ptr = a.__array_interface__["data"][0]
        self.count = a.size
        self.dtype = code
        self.dtype_name = str(a.dtype)

    def _torch(self, t, writable, cuda):
        name = str(t.dtype).replace("torch.", "")
        code = _TORCH_NAMES.get(name)
        if code is None:
            raise TypeError("%s has dtype %s; zeroshard supports %s" % (self.name, t.dtype, SUPPORTED))
        if t.device.type == "cuda" and cuda:
            self.device = str(t.device)
        elif t.device.type != "cpu":
            raise ValueError("%s is on %s; %s" % (self.name, t.device,
                                                  "this call takes CPU or CUDA tensors"
                                                  if cuda else "zeroshard.Comm takes CPU tensors"))
        if t.is_sparse or not t.is_contiguous():
            raise ValueError("%s is not a contiguous dense tensor (strides %s); pass .contiguous()"
                             % (self.name, tuple(t.stride()) if not t.is_sparse else "sparse"))
        del writable  # a tensor has no read-only flag to check
        self.ptr = t.data_ptr()
        self.count = t.numel()
        self.dtype = code
        self.dtype_name = name


def same_dtype(a, b):
    if a.dtype != b.dtype:
        raise TypeError("%s is %s but %s is %s; both sides must have the same dtype"
                        % (a.name, a.dtype_name, b.name, b.dtype_name))


def reduction(op, buf):
    """The op code for reducing buf; avg only for floating types."""
    code = op_code(op)
    if code == Op.AVG and buf.dtype not in FLOAT_CODES:
        raise ValueError("op avg is for floating types only; %s is %s" % (buf.name, buf.dtype_name))
    return int(code)
