"""The torch.distributed backend "zsh": a ProcessGroup over a ZeroShard communicator.

Each process group owns one communicator, created through the store torch
hands the backend (``zeroshard.Comm.from_store``, ZeroShard's OOB seam).

A collective is posted through the nonblocking C call (``zsh_iallreduce``,
``zsh_ibroadcast``, ...) and returns at once with a Work in flight:
``wait()`` waits for it and raises ZeroShard's error if it failed,
``is_completed()`` tests it, and ``get_future()`` is a torch Future that
completes with the outputs, or with the error, without anyone waiting: the
group's progress thread (:class:`_Progress`) tests its calls in call order.
So ``async_op=True`` and DDP's communication hooks overlap with backward.
Arguments are checked before anything is posted, and a bad one raises at
the call. send, recv and recv from any source (``src=None``; the Work's
``_source_rank()`` names the sender) are ``zsh_isend`` and ``zsh_irecv``.
reduce is an all-reduce whose result the root keeps; gather and scatter
are messages to and from the root; all_to_all and all_to_all_single are
``zsh_ialltoall`` in equal blocks, and a message per pair in unequal ones.
monitored_barrier has every rank report to rank 0 and wait for its word,
naming the ranks that did not come in time (all of them with
``wait_all_ranks``); torch.distributed's own refuses any backend but gloo,
so it is reached through the group's method or
:func:`zeroshard.torch.monitored_barrier`.

Tags. torch's tags are 0 .. USER_TAG_MAX; the tags above, up to
``zeroshard.TAG_MAX``, are the group's own. monitored_barrier has two of its
own, one for the ranks' arrival and one for rank 0's word: it is the call a
rank may skip, so a count of calls would differ between ranks, and a rank
that comes after rank 0 gave up counts as come at the next one. The other
calls made of messages (gather, scatter, all-to-all in unequal blocks), which
every member makes, take the next tag of the rest, in call order, so that a
message of one call never matches another's receive.

A ReduceOp ZeroShard has not raises
``RuntimeError("... is not supported by the zsh backend ...")`` at the call.

CUDA tensors. A call whose tensors are all on one CUDA device takes the
library's device path (NCCL, include/zeroshard/device.h) on torch's current
stream of that device: the call returns once its work is enqueued there, so
what the caller enqueues after it on that stream sees the result, and its
Work completes with that stream work (:class:`_StreamWork`: wait() makes the
caller's current stream wait for it without blocking the host, as
ProcessGroupNCCL's does). The device calls run on a communicator split from
the group's at its first call on CUDA tensors (collective, as every call is),
so the group's own communicator keeps its stream and blocking semantics for
whoever else uses it (``group.comm``). Rank r's tensors are on the GPU
``LOCAL_RANK`` names: ``torch.cuda.set_device(local_rank)`` before the first
call is the caller's part, as with NCCL, which refuses two ranks on one GPU.
Tensors of two devices in one call (the CPU and a GPU, or two GPUs) are
refused naming both. The device path has the collectives only: send, recv,
gather, scatter and all-to-all in unequal blocks on CUDA tensors are refused
by name; barrier and monitored_barrier run on the host path and do not wait
for any stream.
"""
import functools
import inspect
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup

import zeroshard

from .work import _Progress, _StreamWork, _Work

BACKEND_NAME = "zsh"

# torch's point-to-point tags; the rest of zeroshard.TAG_MAX's range is the group's own.
USER_TAG_MAX = zeroshard.TAG_MAX >> 1
_TAG_ARRIVED = USER_TAG_MAX + 1  # monitored_barrier: a rank to rank 0
_TAG_GO_ON = USER_TAG_MAX + 2    # monitored_barrier: rank 0's word to the others
_TAG_CALLS = USER_TAG_MAX + 3    # the first of the tags taken a call at a time

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


def _place(tensors, what):
    """Where call @what runs: None on the host path (every tensor on the CPU,
    or none), else the one CUDA device of every tensor (the device path).
    Refuses anything else before anything is posted."""
    devices = []
    for t in tensors:
        if not isinstance(t, torch.Tensor):
            raise TypeError("zsh %s: expected tensors, got %s" % (what, type(t).__name__))
        if t.device.type not in ("cpu", "cuda"):
            raise ValueError("zsh %s: tensor on %s; the zsh backend takes CPU and CUDA tensors"
                             % (what, t.device))
        if t.is_sparse:
            raise ValueError("zsh %s: sparse tensors are not supported" % what)
        if t.device not in devices:
            devices.append(t.device)
    if len(devices) > 1:
        raise ValueError("zsh %s: tensors on %s and on %s; a call takes tensors of one device "
                         "(all on the CPU, or all on one CUDA device)"
                         % (what, devices[0], devices[1]))
    return devices[0] if devices and devices[0].type == "cuda" else None


def _host_only(place, what, instead):
    """Refuse call @what on CUDA tensors (@place): the device path has collectives only."""
    if place is not None:
        _unsupported("%s on CUDA tensors (%s)" % (what, place),
                     "; its device path has collectives only: %s" % instead)


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


def _write_back_all(dsts, flats):
    for dst, flat in zip(dsts, flats):
        _write_back(dst, flat)


def _set_deadline(req, seconds):
    """Give @req its own timeout, unless it has completed already."""
    try:
        req.set_timeout(seconds)
    except zeroshard.ZshError:
        pass  # it completed: nothing to time


def _starts(sizes):
    """Where each of consecutive blocks of @sizes starts."""
    out, at = [], 0
    for n in sizes:
        out.append(at)
        at += n
    return out


def _unpack_all(output_lists, gathered):
    """Rank r's block of each gathered buffer into output_lists[k][r]."""
    for outs, whole in zip(output_lists, gathered):
        n = whole.numel() // max(len(outs), 1)
        for r, o in enumerate(outs):
            o.copy_(whole[r * n:(r + 1) * n].view(o.shape))


class _OnStream:
    """The posts of one call on CUDA tensors, each enqueued on @stream through
    @comm's blocking calls (which return once enqueued: ZSH_STREAM_ENQUEUE), in
    the shape of zeroshard.Comm's nonblocking ones. They return no request:
    the stream orders what follows. .kept lists the buffers they were given."""

    def __init__(self, comm, stream, what):
        self._comm = comm
        self.stream = stream
        self.what = what
        self.kept = []

    def iall_reduce(self, send, recv=None, op="sum"):
        self.kept.append((send, recv))
        self._comm.all_reduce_stream(send, recv, op=op, stream=self.stream)

    def iall_gather(self, send, recv):
        self.kept.append((send, recv))
        self._comm.all_gather_stream(send, recv, stream=self.stream)

    def ireduce_scatter(self, send, recv, op="sum"):
        self.kept.append((send, recv))
        self._comm.reduce_scatter_stream(send, recv, op=op, stream=self.stream)

    def ibroadcast(self, buf, root):
        self.kept.append(buf)
        self._comm.broadcast_stream(buf, root, stream=self.stream)

    def iall_to_all(self, send, recv):
        self.kept.append((send, recv))
        self._comm.all_to_all_stream(send, recv, stream=self.stream)


class _DevicePath:
    """A group's device communicator: split from the group's at its first call
    on CUDA tensors, closed before it."""

    def __init__(self):
        self.comm = None

    def close(self):
        comm, self.comm = self.comm, None
        if comm is not None:
            try:
                comm.close()
            except zeroshard.ZshError:
                pass  # aborted, or a peer failed: it is torn down anyway


# This process's open groups (_OpenGroup), in the order the groups were made.
# Closing a group fences
# its ranks, so ranks that close two groups in different orders wait in each
# other's fence until the timeout; and when a group dies is up to the garbage
# collector (destroy_process_group drops torch's references, but an
# exception's frames can keep a group alive on one rank only). Every rank
# makes its groups in one order (torch's new_group rule), so they close
# newest first, as interpreter exit does: a group that dies closes with
# every group made after it that torch.distributed no longer has (destroyed,
# whoever still holds it), the newest first. One made after it that
# torch.distributed still has is in use: the dead group waits for it, and
# closes when it does (before, it closed that one too, and a group made
# after destroy_process_group(old) died with old's last reference).
_open_groups = []


class _OpenGroup:
    """A group's entry: its teardown (which holds what it closes, not the
    group, so that the group can die), a weak reference to it, and whether it
    died (at exit a finalizer runs with the group still alive)."""
    __slots__ = ("teardown", "group", "dead")

    def __init__(self, teardown, group):
        self.teardown = teardown
        self.group = group
        self.dead = False


def _registered(pg):
    """Whether torch.distributed still has pg (not destroyed): its map of
    groups holds it, or (torch 2.x) a ProcessGroup of it as a backend."""
    if pg is None:
        return False
    try:
        c10d = dist.distributed_c10d
        world = getattr(c10d, "_world", None)
        groups = world.pg_map if world is not None else c10d._pg_map
        if pg in groups:
            return True
        cpu = torch.device("cpu")
        return any(getattr(g, "_get_backend", None) is not None and g._get_backend(cpu) is pg
                   for g in groups)
    except Exception:  # torch torn down at exit, or another layout: closed as before
        return False


def _close(entry):
    if entry not in _open_groups:
        return
    entry.dead = True
    cut, j = None, len(_open_groups) - 1
    while j >= 0 and (_open_groups[j].dead or not _registered(_open_groups[j].group())):
        if _open_groups[j].dead:
            cut = j
        j -= 1
    if cut is None:
        return
    closing = _open_groups[cut:]
    del _open_groups[cut:]
    for e in reversed(closing):
        e.teardown()


def _teardown(progress, device, comm):
    progress.stop()
    device.close()
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
        self._progress = _Progress()
        self._device = _DevicePath()
        entry = _OpenGroup(functools.partial(_teardown, self._progress, self._device, comm),
                           weakref.ref(self))
        _open_groups.append(entry)
        self._finalizer = weakref.finalize(self, _close, entry)

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

    def _work(self, requests, result, finish=None, ordered=True, post=None):
        """A Work for @requests in flight; @finish runs once they all succeed.
        Calls made of messages are not @ordered with the collectives. A call
        @post enqueued on a stream (an _OnStream) has no requests: @finish is
        enqueued after it at once, and its Work completes on the stream."""
        if isinstance(post, _OnStream):
            if finish is not None:
                finish()
            work = _StreamWork(self._progress, result, post.kept, post.stream, post.what,
                               self._comm.timeout, self._device.comm.abort)
        else:
            work = _Work(self._progress, requests, finish, result, ordered)
        self._progress.add(work)
        return work

    def _poster(self, place, what):
        """What posts call @what: the group's Comm on the host path (@place
        None), else an _OnStream on torch's current stream of device @place."""
        if place is None:
            return self._comm
        if self._device.comm is None:
            available, why = zeroshard.device_available()
            if not available:
                raise RuntimeError("zsh %s: tensors on %s, but this process cannot run "
                                   "collectives on device memory: %s" % (what, place, why))
            comm = self._comm.split(0, self._rank)
            try:
                comm.timeout = self._comm.timeout
                comm.set_stream(None, enqueue=True)
            except (zeroshard.ZshError, ValueError):
                comm.close()
                raise
            self._device.comm = comm
        return _OnStream(self._device.comm, torch.cuda.current_stream(place), what)

    # ---- collectives ------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        place = _place(tensors, "all_reduce")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for t in tensors:
            _check_reducible(t, "all_reduce")
        if (op == "avg") and any(not t.is_floating_point() for t in tensors):
            raise TypeError("zsh all_reduce: ReduceOp.AVG takes floating tensors only")
        post = self._poster(place, "all_reduce")
        flats = [_flat(t) for t in tensors]
        reqs = [post.iall_reduce(flat, op=op) for flat in flats]
        return self._work(reqs, tensors, lambda: _write_back_all(tensors, flats), post=post)

    def allreduce_coalesced(self, tensors, opts=None):
        place = _place(tensors, "all_reduce_coalesced")
        if len({t.dtype for t in tensors}) > 1:
            raise TypeError("zsh all_reduce_coalesced: tensors of more than one dtype")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for t in tensors:
            _check_reducible(t, "all_reduce_coalesced")
        post = self._poster(place, "all_reduce_coalesced")
        flat = torch.cat([t.reshape(-1) for t in tensors])

        def unpack():
            offset = 0
            for t in tensors:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()
        return self._work([post.iall_reduce(flat, op=op)], tensors, unpack, post=post)

    def broadcast(self, tensors, opts=None):
        place = _place(tensors, "broadcast")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "broadcast")
        post = self._poster(place, "broadcast")
        flats = [_flat(t) for t in tensors]
        reqs = [post.ibroadcast(_bytes(flat), root) for flat in flats]
        return self._work(reqs, tensors, lambda: _write_back_all(tensors, flats), post=post)

    def _allgather_base(self, output, input, opts=None):
        place = _place([output, input], "all_gather_into_tensor")
        if output.dtype != input.dtype:
            raise TypeError("zsh all_gather_into_tensor: output is %s, input is %s"
                            % (output.dtype, input.dtype))
        if output.numel() != self._size * input.numel():
            raise ValueError("zsh all_gather_into_tensor: output has %d elements; expected "
                             "%d (world size %d x input's %d)" % (
                                 output.numel(), self._size * input.numel(), self._size,
                                 input.numel()))
        post = self._poster(place, "all_gather_into_tensor")
        src = _flat(input)
        dst = _flat(output)
        req = post.iall_gather(_bytes(src), _bytes(dst))
        return self._work([req], [output], lambda: _write_back(output, dst), post=post)

    def allgather(self, output_lists, inputs, opts=None):
        place = _place(list(inputs) + [o for outs in output_lists for o in outs], "all_gather")
        for outs, inp in zip(output_lists, inputs):
            if len(outs) != self._size:
                raise ValueError("zsh all_gather: %d output tensors for a group of %d"
                                 % (len(outs), self._size))
            for o in outs:
                if (o.dtype != inp.dtype) or (o.numel() != inp.numel()):
                    raise ValueError("zsh all_gather: output tensors must match the input "
                                     "(%s, %d elements); got %s, %d" % (
                                         inp.dtype, inp.numel(), o.dtype, o.numel()))
        post = self._poster(place, "all_gather")
        reqs, gathered = self._gather_posts(post, inputs)
        return self._work(reqs, output_lists, lambda: _unpack_all(output_lists, gathered),
                          post=post)

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        """output_lists[r][i] = rank r's inputs[i], in one all-gather of the
        inputs' bytes packed end to end (any dtypes; the same shapes on every
        rank, as gloo requires)."""
        place = _place(list(inputs) + [o for outs in output_lists for o in outs],
                       "all_gather_coalesced")
        if len(output_lists) != self._size:
            raise ValueError("zsh all_gather_coalesced: %d output lists for a group of %d"
                             % (len(output_lists), self._size))
        for outs in output_lists:
            if len(outs) != len(inputs):
                raise ValueError("zsh all_gather_coalesced: an output list of %d tensors for "
                                 "%d inputs" % (len(outs), len(inputs)))
            for o, i in zip(outs, inputs):
                if (o.dtype != i.dtype) or (o.numel() != i.numel()):
                    raise ValueError("zsh all_gather_coalesced: output tensors must match the "
                                     "inputs (%s, %d elements); got %s, %d" % (
                                         i.dtype, i.numel(), o.dtype, o.numel()))
        post = self._poster(place, "all_gather_coalesced")
        packed = [_bytes(_flat(i)) for i in inputs]
        mine = torch.cat(packed) if packed else torch.empty(0, dtype=torch.uint8)
        gathered = torch.empty(self._size * mine.numel(), dtype=torch.uint8, device=mine.device)

        def unpack():
            for r, outs in enumerate(output_lists):
                offset = r * mine.numel()
                for o, b in zip(outs, packed):
                    piece = gathered[offset:offset + b.numel()]
                    o.copy_(piece.view(o.dtype).view(o.shape) if b.numel() else o)
                    offset += b.numel()
        return self._work([post.iall_gather(mine, gathered)], output_lists, unpack, post=post)

    def _splits(self, splits, t, which):
        """Rows of dim 0 (torch's unit) each rank's block of @t has: @splits, or
        equal blocks where none are given."""
        rows = t.shape[0] if t.dim() > 0 else t.numel()
        if not splits:
            if rows % self._size != 0:
                raise ValueError("zsh all_to_all_single: %s has %d rows (dim 0), not a multiple "
                                 "of the group's %d ranks" % (which, rows, self._size))
            return [rows // self._size] * self._size
        sizes = [int(s) for s in splits]
        if len(sizes) != self._size:
            raise ValueError("zsh all_to_all_single: %d %s split sizes for a group of %d"
                             % (len(sizes), which, self._size))
        if any(n < 0 for n in sizes) or (sum(sizes) != rows):
            raise ValueError("zsh all_to_all_single: %s split sizes %s do not split the %s's "
                             "%d rows (dim 0)" % (which, sizes, which, rows))
        return sizes

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        """all_to_all_single: rows block j of input to rank j, block r of output from
        rank r; one zsh_ialltoall in equal blocks, else a message per pair."""
        place = _place([output, input], "all_to_all_single")
        if output.dtype != input.dtype:
            raise TypeError("zsh all_to_all_single: output is %s, input is %s"
                            % (output.dtype, input.dtype))
        ins = self._splits(input_split_sizes, input, "input")
        outs = self._splits(output_split_sizes, output, "output")
        src = _flat(input)
        dst = _flat(output)
        row_in = src.numel() // max(sum(ins), 1)
        row_out = dst.numel() // max(sum(outs), 1)
        if (len(set(ins)) == 1) and (ins == outs) and (row_in == row_out):
            post = self._poster(place, "all_to_all_single")
            if dst.data_ptr() == src.data_ptr():
                src = src.clone()  # torch never passes one tensor as both: keep zsh's in place out
            req = post.iall_to_all(_bytes(src), _bytes(dst))
            return self._work([req], [output], lambda: _write_back(output, dst), post=post)
        _host_only(place, "all_to_all_single in unequal blocks",
                   "pass equal splits, or pass CPU tensors")
        send = [src[a * row_in:(a + n) * row_in] for a, n in zip(_starts(ins), ins)]
        recv = [dst[a * row_out:(a + n) * row_out] for a, n in zip(_starts(outs), outs)]
        return self._exchange(send, recv, [output], lambda: _write_back(output, dst))

    def alltoall(self, output_tensors, input_tensors, opts=None):
        """all_to_all: input_tensors[j] to rank j, output_tensors[r] from rank r; one
        zsh_ialltoall where every tensor has one size, else a message per pair."""
        place = _place(list(input_tensors) + list(output_tensors), "all_to_all")
        if (len(input_tensors) != self._size) or (len(output_tensors) != self._size):
            raise ValueError("zsh all_to_all: %d input and %d output tensors for a group of %d"
                             % (len(input_tensors), len(output_tensors), self._size))
        first = input_tensors[0]
        for t in list(input_tensors) + list(output_tensors):
            if t.dtype != first.dtype:
                raise TypeError("zsh all_to_all: tensors of %s and %s" % (first.dtype, t.dtype))
        if any(t.numel() != first.numel() for t in list(input_tensors) + list(output_tensors)):
            _host_only(place, "all_to_all of tensors of unequal sizes",
                       "pass tensors of one size, or pass CPU tensors")
            flats = [_flat(t) for t in output_tensors]
            return self._exchange([_flat(t) for t in input_tensors], flats, output_tensors,
                                  lambda: _write_back_all(output_tensors, flats))
        post = self._poster(place, "all_to_all")
        packed = torch.cat([_flat(t) for t in input_tensors])
        received = torch.empty_like(packed)

        def unpack():
            for r, out in enumerate(output_tensors):
                block = received[r * first.numel():(r + 1) * first.numel()]
                out.copy_(block.view(out.shape))
        req = post.iall_to_all(_bytes(packed), _bytes(received))
        return self._work([req], output_tensors, unpack, post=post)

    def _exchange(self, send, recv, result, finish):
        """send[j] to rank j and recv[r] from rank r, a message per pair under one
        tag of the group's own; this rank's own block copied."""
        tag = self._own_tag()
        me = self._rank
        if send[me].numel() != recv[me].numel():
            raise ValueError("zsh all_to_all: this rank's block to itself has %d elements but "
                             "its block from itself %d" % (send[me].numel(), recv[me].numel()))
        reqs = []
        for r in range(self._size):
            if r != me:
                reqs.append(self._comm.irecv(_bytes(recv[r]), r, tag))
        for r in range(self._size):
            if r != me:
                reqs.append(self._comm.isend(_bytes(send[r].contiguous()), r, tag))

        def done():
            recv[me].copy_(send[me])
            finish()
        return self._work(reqs, result, done, ordered=False)

    def _reduce_scatter_base(self, output, input, opts=None):
        place = _place([output, input], "reduce_scatter_tensor")
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
        post = self._poster(place, "reduce_scatter_tensor")
        dst = _flat(output)
        req = post.ireduce_scatter(_flat(input), dst, op=op)
        return self._work([req], [output], lambda: _write_back(output, dst), post=post)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        place = _place(list(outputs) + [i for ins in input_lists for i in ins], "reduce_scatter")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for out, ins in zip(outputs, input_lists):
            _check_reducible(out, "reduce_scatter")
            if len(ins) != self._size:
                raise ValueError("zsh reduce_scatter: %d input tensors for a group of %d"
                                 % (len(ins), self._size))
            for i in ins:
                if (i.dtype != out.dtype) or (i.numel() != out.numel()):
                    raise ValueError("zsh reduce_scatter: input tensors must match the output "
                                     "(%s, %d elements); got %s, %d" % (
                                         out.dtype, out.numel(), i.dtype, i.numel()))
        post = self._poster(place, "reduce_scatter")
        dsts = [_flat(out) for out in outputs]
        reqs = [post.ireduce_scatter(torch.cat([i.reshape(-1) for i in ins]), dst, op=op)
                for ins, dst in zip(input_lists, dsts)]
        return self._work(reqs, outputs, lambda: _write_back_all(outputs, dsts), post=post)

    def barrier(self, opts=None):
        return self._work([self._comm.ibarrier()], [])

    # ---- rooted collectives ------------------------------------------------------------

    def reduce(self, tensors, opts=None):
        """An all-reduce of a copy, which the root keeps: the same bits as every
        rank's all_reduce, and the other ranks' tensors left as they were."""
        place = _place(tensors, "reduce")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "reduce")
        for t in tensors:
            _check_reducible(t, "reduce")
        if (op == "avg") and any(not t.is_floating_point() for t in tensors):
            raise TypeError("zsh reduce: ReduceOp.AVG takes floating tensors only")
        post = self._poster(place, "reduce")
        flats = [t.reshape(-1).clone() for t in tensors]
        reqs = [post.iall_reduce(flat, op=op) for flat in flats]
        if self._rank != root:
            return self._work(reqs, tensors, post=post)
        return self._work(reqs, tensors, lambda: _write_back_all(tensors, flats), post=post)

    def gather(self, output_lists, inputs, opts=None):
        """Every rank's input to the root, a message each; the root's own copied."""
        place = _place(list(inputs) + [o for outs in output_lists for o in outs], "gather")
        _host_only(place, "gather", "use all_gather_into_tensor, or pass CPU tensors")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "gather")
        if len(inputs) != 1:
            raise ValueError("zsh gather: %d input tensors; it takes one" % len(inputs))
        inp = inputs[0]
        tag = self._own_tag()
        if self._rank != root:
            if output_lists and any(len(outs) for outs in output_lists):
                raise ValueError("zsh gather: output tensors on rank %d, which is not the root "
                                 "%d" % (self._rank, root))
            req = self._comm.isend(_bytes(_flat(inp)), root, tag)
            return self._work([req], output_lists, ordered=False)
        if (len(output_lists) != 1) or (len(output_lists[0]) != self._size):
            raise ValueError("zsh gather: the root takes one list of %d output tensors"
                             % self._size)
        outs = output_lists[0]
        for o in outs:
            if (o.dtype != inp.dtype) or (o.numel() != inp.numel()):
                raise ValueError("zsh gather: output tensors must match the input (%s, %d "
                                 "elements); got %s, %d" % (inp.dtype, inp.numel(), o.dtype,
                                                            o.numel()))
        flats = [_flat(o) for o in outs]
        reqs = [self._comm.irecv(_bytes(flats[r]), r, tag)
                for r in range(self._size) if r != root]

        def done():
            flats[root].copy_(_flat(inp))
            _write_back_all(outs, flats)
        return self._work(reqs, output_lists, done, ordered=False)

    def scatter(self, outputs, input_lists, opts=None):
        """The root's input_lists[0][r] to rank r, a message each; its own copied."""
        place = _place(list(outputs) + [i for ins in input_lists for i in ins], "scatter")
        _host_only(place, "scatter", "use broadcast, or pass CPU tensors")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "scatter")
        if len(outputs) != 1:
            raise ValueError("zsh scatter: %d output tensors; it takes one" % len(outputs))
        out = outputs[0]
        flat = _flat(out)
        tag = self._own_tag()
        if self._rank != root:
            if input_lists and any(len(ins) for ins in input_lists):
                raise ValueError("zsh scatter: input tensors on rank %d, which is not the root "
                                 "%d" % (self._rank, root))
            req = self._comm.irecv(_bytes(flat), root, tag)
            return self._work([req], outputs, lambda: _write_back(out, flat), ordered=False)
        if (len(input_lists) != 1) or (len(input_lists[0]) != self._size):
            raise ValueError("zsh scatter: the root takes one list of %d input tensors"
                             % self._size)
        ins = input_lists[0]
        for i in ins:
            if (i.dtype != out.dtype) or (i.numel() != out.numel()):
                raise ValueError("zsh scatter: input tensors must match the output (%s, %d "
                                 "elements); got %s, %d" % (out.dtype, out.numel(), i.dtype,
                                                            i.numel()))
        reqs = [self._comm.isend(_bytes(_flat(ins[r])), r, tag)
                for r in range(self._size) if r != root]

        def done():
            flat.copy_(_flat(ins[root]))
            _write_back(out, flat)
        return self._work(reqs, outputs, done, ordered=False)

    # ---- point to point ----------------------------------------------------------------

    def _p2p_tensor(self, tensors, peer, tag, what):
        _host_only(_place(tensors, what), what, "pass CPU tensors")
        if len(tensors) != 1:
            raise ValueError("zsh %s: %d tensors; it takes one" % (what, len(tensors)))
        if not 0 <= tag <= USER_TAG_MAX:
            raise ValueError("zsh %s: tag %d is out of range [0, %d]" % (what, tag, USER_TAG_MAX))
        if (peer is not None) and ((not 0 <= peer < self._size) or (peer == self._rank)):
            raise ValueError("zsh %s: rank %d is not another rank of this group of %d (this "
                             "is rank %d)" % (what, peer, self._size, self._rank))
        return tensors[0]

    def send(self, tensors, dstRank, tag=0):
        t = self._p2p_tensor(tensors, dstRank, tag, "send")
        req = self._comm.isend(_bytes(_flat(t)), dstRank, tag)
        return self._work([req], tensors, ordered=False)

    def _recv(self, tensors, src, tag):
        t = self._p2p_tensor(tensors, src, tag, "recv")
        flat = _flat(t)
        req = self._comm.irecv(_bytes(flat), src, tag)
        work = self._work([req], tensors, lambda: _write_back(t, flat), ordered=False)
        work._source = lambda: req.source
        return work

    def recv(self, tensors, srcRank, tag=0):
        return self._recv(tensors, srcRank, tag)

    def recv_anysource(self, tensors, tag=0):
        return self._recv(tensors, None, tag)

    # ---- monitored barrier -------------------------------------------------------------

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        """Return once every rank has come, or raise naming who did not.

        Every other rank tells rank 0 it has come and waits for rank 0's word
        to go on; rank 0 waits for them all for @timeout (the group's timeout
        when None) and raises naming the first rank, in rank order, that did
        not come in time, or every such rank with @wait_all_ranks; then it
        sends no word, so the others raise too, naming rank 0."""
        seconds = self._comm.timeout if timeout is None else (
            timeout.total_seconds() if hasattr(timeout, "total_seconds") else float(timeout))
        if self._size == 1:
            return
        if seconds <= 0:
            raise RuntimeError("Rank %d timed out in monitoredBarrier after %d ms"
                               % (self._rank, seconds * 1000))
        token = torch.zeros(1, dtype=torch.uint8)
        if self._rank != 0:
            self._comm.isend(token, 0, _TAG_ARRIVED).wait()
            word = self._comm.irecv(torch.empty(1, dtype=torch.uint8), 0, _TAG_GO_ON)
            _set_deadline(word, seconds)
            try:
                word.wait()
            except zeroshard.ZshError as e:
                raise RuntimeError("Rank %d successfully reached monitoredBarrier, but received "
                                   "errors while waiting for send/recv from rank 0: %s"
                                   % (self._rank, e)) from e
            return
        came = []
        for r in range(1, self._size):
            came.append(self._comm.irecv(torch.empty(1, dtype=torch.uint8), r, _TAG_ARRIVED))
            _set_deadline(came[-1], seconds)
        missing = []
        for r, req in enumerate(came, start=1):
            try:
                req.wait()
            except zeroshard.ZshError:
                missing.append(r)
        if missing and wait_all_ranks:
            raise RuntimeError("Ranks %s failed to pass monitoredBarrier in %d ms"
                               % (", ".join(str(r) for r in missing), seconds * 1000))
        if missing:
            raise RuntimeError("Rank %d failed to pass monitoredBarrier in %d ms"
                               % (missing[0], seconds * 1000))
        for req in [self._comm.isend(token, r, _TAG_GO_ON) for r in range(1, self._size)]:
            req.wait()

    def _own_tag(self):
        """The next of the group's own tags (see Tags above)."""
        self._own_tags = getattr(self, "_own_tags", -1) + 1
        return _TAG_CALLS + self._own_tags % (zeroshard.TAG_MAX + 1 - _TAG_CALLS)

    def _gather_posts(self, post, inputs):
        """An all-gather of each input into a buffer of its own, by @post:
        (requests, buffers)."""
        reqs, gathered = [], []
        for inp in inputs:
            src = _flat(inp)
            gathered.append(torch.empty(self._size * src.numel(), dtype=src.dtype,
                                        device=src.device))
            reqs.append(post.iall_gather(_bytes(src), _bytes(gathered[-1])))
        return reqs, gathered

    def _check_root(self, root, what):
        if not 0 <= root < self._size:
            raise ValueError("zsh %s: root %d is not a rank of this group of %d"
                             % (what, root, self._size))


def monitored_barrier(group=None, timeout=None, wait_all_ranks=False):
    """torch.distributed.monitored_barrier for groups of the zsh backend too
    (torch's own refuses every backend but gloo); other groups go to torch's."""
    c10d = dist.distributed_c10d
    if c10d._rank_not_in_group(group):
        return None
    if dist.get_backend(group) != BACKEND_NAME:
        return dist.monitored_barrier(group, timeout, wait_all_ranks)
    pg = c10d._get_default_group() if group is None else group
    if not isinstance(pg, ProcessGroupZsh):  # torch 2.x: the backend behind the group
        pg = pg._get_backend(torch.device("cpu"))
    return pg.monitored_barrier(timeout, wait_all_ranks=wait_all_ranks)


def _bootstrap_number(store, size):
    """Which bootstrap of a group on @store this is, the same on every member.

    A process's own count of its bootstraps would not do: torch calls the
    creator only on a group's members, so after new_group(ranks=[0, 1]) rank 2
    would count one fewer than ranks 0 and 1 and wait for keys they never set.
    The store is the group's own (torch prefixes it per group), and every
    member adds one to a counter on it; no member can finish bootstrap k, let
    alone start k + 1, before every member has added for k."""
    return (store.add("zsh/comm/bootstraps", 1) - 1) // size


# register(deterministic=True): the groups made after it reduce in rank order.
_deterministic = False


def create_process_group(store, rank, size, timeout):
    """The backend's creator, as torch.distributed.Backend.register_backend calls it."""
    comm = zeroshard.Comm.from_store(store, rank, size, prefix="zsh/comm",
                                     call=_bootstrap_number(store, size))
    try:
        comm.timeout = timeout.total_seconds()
        if _deterministic:
            comm.deterministic = True
    except (zeroshard.ZshError, ValueError):
        comm.close()
        raise
    return ProcessGroupZsh(comm, rank, size)


def register(deterministic=None):
    """Register the "zsh" backend with torch.distributed (once).

    deterministic: True makes every group created from then on reduce in
    zeroshard.h's fixed rank order (all_reduce and reduce_scatter give the
    same bits whatever the algorithm or layout); False stops it; None (the
    default) leaves the choice as it was (ZSH_DETERMINISTIC otherwise)."""
    global _deterministic
    if deterministic is not None:
        _deterministic = bool(deterministic)
    if BACKEND_NAME.upper() not in dist.Backend._plugins:
        # torch >= 2.1 asks which devices a backend serves; 1.13 has no such
        # argument. The backend takes CPU and CUDA tensors.
        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            dist.Backend.register_backend(BACKEND_NAME, create_process_group,
                                          devices=["cpu", "cuda"])
        else:
            dist.Backend.register_backend(BACKEND_NAME, create_process_group)

