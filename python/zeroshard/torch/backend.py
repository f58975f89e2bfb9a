"""The torch.distributed backend "zsh": a ProcessGroup over a ZeroShard communicator.

Each process group owns one communicator, created through the store torch
hands the backend (``zeroshard.Comm.from_store``, ZeroShard's OOB seam).

A collective runs in the thread that calls it, with the GIL released while it
waits, and returns a completed Work whose future holds the result, so
``async_op=True``, ``get_future()`` and DDP's communication hooks work as
torch expects. A failure raises at the call, in Python and in torch's C++
callers (DDP) alike: torch 1.13's future-wrapping Work swallows an error set
on its future at ``wait()``, so an error that arrived later would be lost.
The cost is that DDP's bucket all-reduces do not overlap with backward.

What is not a collective ZeroShard has (point to point, all-to-all) raises
``RuntimeError("... is not supported by the zsh backend ...")`` at the call.
"""
import inspect
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup, _create_work_from_future
from torch.futures import Future

import zeroshard

BACKEND_NAME = "zsh"

# torch.distributed's reduce ops that ZeroShard has, by name.
_OPS = {"SUM": "sum", "PRODUCT": "prod", "MIN": "min", "MAX": "max", "AVG": "avg"}

# dtypes ZeroShard reduces; every other dtype is only moved, as bytes.
_REDUCIBLE = {torch.int8, torch.uint8, torch.int32, torch.int64, torch.float16,
              torch.bfloat16, torch.float32, torch.float64}


def _unsupported(what, instead=""):
    raise RuntimeError("%s is not supported by the zsh backend%s" % (what, instead))


def _op_name(op):
    for name, zsh_op in _OPS.items():
        if op == getattr(dist.ReduceOp, name):
            return zsh_op
    _unsupported("ReduceOp %s" % (op,), " (it has SUM, PRODUCT, MIN, MAX and AVG)")


def _check_cpu(tensors, what):
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError("zsh %s: expected tensors, got %s" % (what, type(t).__name__))
        if t.device.type != "cpu":
            raise ValueError("zsh %s: tensor on %s; the zsh backend takes CPU tensors"
                             % (what, t.device))
        if t.is_sparse:
            raise ValueError("zsh %s: sparse tensors are not supported" % what)


def _check_reducible(t, what):
    if t.dtype not in _REDUCIBLE:
        raise TypeError("zsh %s: dtype %s cannot be reduced by the zsh backend (it reduces "
                        "int8, uint8, int32, int64, float16, bfloat16, float32 and float64)"
                        % (what, t.dtype))


def _bytes(t):
    """A contiguous tensor's storage seen as uint8, for collectives that only move data."""
    return t.reshape(-1).view(torch.uint8) if t.numel() > 0 else t.new_empty(0, dtype=torch.uint8)


def _flat(t):
    """A contiguous 1-D view of @t, or a contiguous copy when it has none."""
    return t.reshape(-1) if t.is_contiguous() else t.contiguous().reshape(-1)


def _write_back(dst, flat):
    """Copy @flat into @dst unless it already is @dst's storage."""
    if not (dst.is_contiguous() and flat.data_ptr() == dst.data_ptr()):
        dst.copy_(flat.view(dst.shape))


def _done(result):
    """A Work that is already complete, with @result as its future's value."""
    fut = Future()
    fut.set_result(result)
    return _create_work_from_future(fut)


def _close(comm):
    try:
        comm.close()
    except zeroshard.ZshError:
        pass  # a group whose peer failed: its communicator is torn down anyway


class ProcessGroupZsh(ProcessGroup):
    """A torch ProcessGroup whose collectives run on a ZeroShard communicator."""

    def __init__(self, comm, rank, size):
        super().__init__(rank, size)
        self._comm = comm
        self._rank = rank
        self._size = size
        self._finalizer = weakref.finalize(self, _close, comm)

    @property
    def comm(self):
        """The group's :class:`zeroshard.Comm`."""
        return self._comm

    def getBackendName(self):
        return BACKEND_NAME

    def name(self):
        return BACKEND_NAME

    # torch 2.x keeps a group's name and description in the backends it
    # registers on a ProcessGroup; a Python ProcessGroup has none, so it
    # keeps them itself (torch 1.13 never asks).
    def setGroupName(self, name):
        self._group_name = name

    def getGroupName(self):
        return getattr(self, "_group_name", "")

    def setGroupDesc(self, desc):
        self._group_desc = desc

    def getGroupDesc(self):
        return getattr(self, "_group_desc", "")

    # ---- collectives ------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        _check_cpu(tensors, "all_reduce")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for t in tensors:
            _check_reducible(t, "all_reduce")
        if (op == "avg") and any(not t.is_floating_point() for t in tensors):
            raise TypeError("zsh all_reduce: ReduceOp.AVG takes floating tensors only")
        comm = self._comm
        for t in tensors:
            flat = _flat(t)
            comm.all_reduce(flat, op=op)
            _write_back(t, flat)
        return _done(tensors)

    def allreduce_coalesced(self, tensors, opts=None):
        _check_cpu(tensors, "all_reduce_coalesced")
        if len({t.dtype for t in tensors}) > 1:
            raise TypeError("zsh all_reduce_coalesced: tensors of more than one dtype")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for t in tensors:
            _check_reducible(t, "all_reduce_coalesced")
        comm = self._comm
        flat = torch.cat([t.reshape(-1) for t in tensors])
        comm.all_reduce(flat, op=op)
        offset = 0
        for t in tensors:
            t.copy_(flat[offset:offset + t.numel()].view(t.shape))
            offset += t.numel()
        return _done(tensors)

    def broadcast(self, tensors, opts=None):
        _check_cpu(tensors, "broadcast")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "broadcast")
        comm = self._comm
        for t in tensors:
            flat = _flat(t)
            comm.broadcast(_bytes(flat), root)
            _write_back(t, flat)
        return _done(tensors)

    def _allgather_base(self, output, input, opts=None):
        _check_cpu([output, input], "all_gather_into_tensor")
        if output.dtype != input.dtype:
            raise TypeError("zsh all_gather_into_tensor: output is %s, input is %s"
                            % (output.dtype, input.dtype))
        if output.numel() != self._size * input.numel():
            raise ValueError("zsh all_gather_into_tensor: output has %d elements; expected "
                             "%d (world size %d x input's %d)" % (
                                 output.numel(), self._size * input.numel(), self._size,
                                 input.numel()))
        comm = self._comm
        src = _flat(input)
        dst = _flat(output)
        comm.all_gather(_bytes(src), _bytes(dst))
        _write_back(output, dst)
        return _done([output])

    def allgather(self, output_lists, inputs, opts=None):
        _check_cpu(inputs, "all_gather")
        for outs, inp in zip(output_lists, inputs):
            _check_cpu(outs, "all_gather")
            if len(outs) != self._size:
                raise ValueError("zsh all_gather: %d output tensors for a group of %d"
                                 % (len(outs), self._size))
            for o in outs:
                if (o.dtype != inp.dtype) or (o.numel() != inp.numel()):
                    raise ValueError("zsh all_gather: output tensors must match the input "
                                     "(%s, %d elements); got %s, %d" % (
                                         inp.dtype, inp.numel(), o.dtype, o.numel()))
        comm = self._comm
        for outs, inp in zip(output_lists, inputs):
            src = _flat(inp)
            gathered = torch.empty(self._size * src.numel(), dtype=src.dtype)
            comm.all_gather(_bytes(src), _bytes(gathered))
            for r, o in enumerate(outs):
                o.copy_(gathered[r * src.numel():(r + 1) * src.numel()].view(o.shape))
        return _done(output_lists)

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        """output_lists[r][i] = rank r's inputs[i], in one all-gather of the
        inputs' bytes packed end to end (any dtypes; the same shapes on every
        rank, as gloo requires)."""
        _check_cpu(inputs, "all_gather_coalesced")
        if len(output_lists) != self._size:
            raise ValueError("zsh all_gather_coalesced: %d output lists for a group of %d"
                             % (len(output_lists), self._size))
        for outs in output_lists:
            _check_cpu(outs, "all_gather_coalesced")
            if len(outs) != len(inputs):
                raise ValueError("zsh all_gather_coalesced: an output list of %d tensors for "
                                 "%d inputs" % (len(outs), len(inputs)))
            for o, i in zip(outs, inputs):
                if (o.dtype != i.dtype) or (o.numel() != i.numel()):
                    raise ValueError("zsh all_gather_coalesced: output tensors must match the "
                                     "inputs (%s, %d elements); got %s, %d" % (
                                         i.dtype, i.numel(), o.dtype, o.numel()))
        packed = [_bytes(_flat(i)) for i in inputs]
        mine = torch.cat(packed) if packed else torch.empty(0, dtype=torch.uint8)
        gathered = torch.empty(self._size * mine.numel(), dtype=torch.uint8)
        self._comm.all_gather(mine, gathered)
        for r, outs in enumerate(output_lists):
            offset = r * mine.numel()
            for o, b in zip(outs, packed):
                piece = gathered[offset:offset + b.numel()]
                o.copy_(piece.view(o.dtype).view(o.shape) if b.numel() else o)
                offset += b.numel()
        return _done(output_lists)

    def _reduce_scatter_base(self, output, input, opts=None):
        _check_cpu([output, input], "reduce_scatter_tensor")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        _check_reducible(input, "reduce_scatter_tensor")
        if output.dtype != input.dtype:
            raise TypeError("zsh reduce_scatter_tensor: output is %s, input is %s"
                            % (output.dtype, input.dtype))
        if input.numel() != self._size * output.numel():
            raise ValueError("zsh reduce_scatter_tensor: input has %d elements; expected %d "
                             "(world size %d x output's %d)" % (
                                 input.numel(), self._size * output.numel(), self._size,
                                 output.numel()))
        comm = self._comm
        dst = _flat(output)
        comm.reduce_scatter(_flat(input), dst, op=op)
        _write_back(output, dst)
        return _done([output])

    def reduce_scatter(self, outputs, input_lists, opts=None):
        _check_cpu(outputs, "reduce_scatter")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for out, ins in zip(outputs, input_lists):
            _check_cpu(ins, "reduce_scatter")
            _check_reducible(out, "reduce_scatter")
            if len(ins) != self._size:
                raise ValueError("zsh reduce_scatter: %d input tensors for a group of %d"
                                 % (len(ins), self._size))
            for i in ins:
                if (i.dtype != out.dtype) or (i.numel() != out.numel()):
                    raise ValueError("zsh reduce_scatter: input tensors must match the output "
                                     "(%s, %d elements); got %s, %d" % (
                                         out.dtype, out.numel(), i.dtype, i.numel()))
        comm = self._comm
        for out, ins in zip(outputs, input_lists):
            src = torch.cat([i.reshape(-1) for i in ins])
            dst = _flat(out)
            comm.reduce_scatter(src, dst, op=op)
            _write_back(out, dst)
        return _done(outputs)

    def barrier(self, opts=None):
        comm = self._comm
        comm.barrier()
        return _done([])

    # ---- rooted collectives, built on the ones above ----------------------------------

    def reduce(self, tensors, opts=None):
        _check_cpu(tensors, "reduce")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "reduce")
        for t in tensors:
            _check_reducible(t, "reduce")
        comm, me = self._comm, self._rank
        for t in tensors:
            flat = t.reshape(-1).clone()
            comm.all_reduce(flat, op=op)
            if me == root:
                t.copy_(flat.view(t.shape))
        return _done(tensors)

    def gather(self, output_lists, inputs, opts=None):
        _check_cpu(inputs, "gather")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "gather")
        if self._rank == root:
            for outs in output_lists:
                if len(outs) != self._size:
                    raise ValueError("zsh gather: %d output tensors on the root for a group of %d"
                                     % (len(outs), self._size))
        comm, me = self._comm, self._rank
        for k, inp in enumerate(inputs):
            src = _flat(inp)
            gathered = torch.empty(self._size * src.numel(), dtype=src.dtype)
            comm.all_gather(_bytes(src), _bytes(gathered))
            if me == root:
                for r, o in enumerate(output_lists[k]):
                    o.copy_(gathered[r * src.numel():(r + 1) * src.numel()].view(o.shape))
        return _done(output_lists)

    def scatter(self, outputs, input_lists, opts=None):
        _check_cpu(outputs, "scatter")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "scatter")
        if self._rank == root:
            for ins in input_lists:
                if len(ins) != self._size:
                    raise ValueError("zsh scatter: %d input tensors on the root for a group of %d"
                                     % (len(ins), self._size))
        comm, me = self._comm, self._rank
        for k, out in enumerate(outputs):
            n = out.numel()
            if me == root:
                whole = torch.cat([i.reshape(-1) for i in input_lists[k]])
            else:
                whole = torch.empty(self._size * n, dtype=out.dtype)
            comm.broadcast(_bytes(whole), root)
            out.copy_(whole[me * n:(me + 1) * n].view(out.shape))
        return _done(outputs)

    # ---- what ZeroShard does not have -------------------------------------------------

    def send(self, tensors, dst, tag=0):
        _unsupported("send", " (ZeroShard has collectives only)")

    def recv(self, tensors, src, tag=0):
        _unsupported("recv", " (ZeroShard has collectives only)")

    def recv_anysource(self, tensors, tag=0):
        _unsupported("recv", " (ZeroShard has collectives only)")

    def alltoall(self, outputs, inputs, opts=None):
        _unsupported("all_to_all")

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        _unsupported("all_to_all_single")

    def _check_root(self, root, what):
        if not 0 <= root < self._size:
            raise ValueError("zsh %s: root %d is not a rank of this group of %d"
                             % (what, root, self._size))


def _bootstrap_number(store, size):
    """Which bootstrap of a group on @store this is, the same on every member.

    A process's own count of its bootstraps would not do: torch calls the
    creator only on a group's members, so after new_group(ranks=[0, 1]) rank 2
    would count one fewer than ranks 0 and 1 and wait for keys they never set.
    The store is the group's own (torch prefixes it per group), and every
    member adds one to a counter on it; no member can finish bootstrap k, let
    alone start k + 1, before every member has added for k."""
    return (store.add("zsh/comm/bootstraps", 1) - 1) // size


def create_process_group(store, rank, size, timeout):
    """The backend's creator, as torch.distributed.Backend.register_backend calls it."""
    comm = zeroshard.Comm.from_store(store, rank, size, prefix="zsh/comm",
                                     call=_bootstrap_number(store, size))
    try:
        comm.timeout = timeout.total_seconds()
    except (zeroshard.ZshError, ValueError):
        comm.close()
        raise
    return ProcessGroupZsh(comm, rank, size)


def register():
    """Register the "zsh" backend with torch.distributed (once)."""
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        # torch >= 2.1 asks which devices a backend serves; 1.13 has no such
        # argument. The backend takes CPU tensors.
        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            dist.Backend.register_backend(BACKEND_NAME, create_process_group, devices=["cpu"])
        else:
            dist.Backend.register_backend(BACKEND_NAME, create_process_group)

