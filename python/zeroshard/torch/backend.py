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
the call. The rooted calls torch has and ZeroShard has not (reduce, gather,
scatter) are one all-reduce, all-gather or broadcast and a copy at the end.
all_to_all and all_to_all_single are zsh_ialltoall, in equal blocks.

What ZeroShard has not (point to point; all-to-all in unequal split sizes)
raises ``RuntimeError("... is not supported by the zsh backend ...")`` at
the call.
"""
import collections
import inspect
import threading
import time
import weakref

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import ProcessGroup, Work
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


def _write_back_all(dsts, flats):
    for dst, flat in zip(dsts, flats):
        _write_back(dst, flat)


def _unpack_all(output_lists, gathered):
    """Rank r's block of each gathered buffer into output_lists[k][r]."""
    for outs, whole in zip(output_lists, gathered):
        n = whole.numel() // max(len(outs), 1)
        for r, o in enumerate(outs):
            o.copy_(whole[r * n:(r + 1) * n].view(o.shape))


class _Work(Work):
    """One call of the group in flight: its requests, what runs once they
    succeed (copies into the caller's tensors), and the future's value.

    It completes once, in whichever thread sees its requests done first:
    wait() in the caller's, or the progress thread. The future is set before
    anyone learns that it completed, so get_future() of a completed Work holds
    its value.

    [Note: a Work handed to C++] torch 1.13 keeps only the C++ half of a
    Python Work that C++ code holds (DDP's reducer, broadcast_coalesced): once
    the Python object is collected, its wait() and get_future() fall back to
    the base class, which never completes. The progress thread therefore keeps
    every Work alive until it has completed and been claimed (wait(),
    get_future(), or is_completed() returning True), which every caller of a
    collective does; the group's close releases the rest. (torch 2.x holds the
    Python object itself.)
    """

    def __init__(self, progress, requests, finish, result):
        super().__init__()
        self._progress = progress
        self._requests = requests
        self._finish = finish
        self._result = result
        self._future = Future()
        self._lock = threading.RLock()  # a future callback may wait on its own Work
        self._done = False
        self._error = None
        self._claimed = False

    def _settle(self, block):
        """Complete if every request has (waiting for them when @block); whether it has.
        Without @block it gives way at once to a thread already settling it."""
        if not self._lock.acquire(blocking=block):
            return False
        try:
            if self._done:
                return True
            try:
                for req in self._requests:
                    if block:
                        req.wait()
                    elif not req.test():
                        return False
                if self._finish is not None:
                    self._finish()
            except Exception as e:  # the call's failure, raised at wait() and set on the future
                self._error = e
            self._done = True
            self._requests = self._finish = None
            if self._error is None:
                self._future.set_result(self._result)
            else:
                self._future.set_exception(self._error)
            return True
        finally:
            self._lock.release()

    def _claim(self):
        if not self._claimed:
            self._claimed = True
            self._progress.release(self)

    def wait(self, timeout=None):
        self._claim()
        seconds = timeout.total_seconds() if hasattr(timeout, "total_seconds") else timeout
        if seconds and not self._done:
            with self._lock:
                for req in self._requests or ():
                    try:
                        req.set_timeout(seconds)
                    except zeroshard.ZshError:
                        pass  # that request has completed already
        self._settle(block=True)
        if self._error is not None:
            raise self._error
        return True

    def is_completed(self):
        done = self._done or self._settle(block=False)
        if done:
            self._claim()
        return done

    def is_success(self):
        return self.is_completed() and self._error is None

    def result(self):
        self.wait()
        return self._result

    def get_future(self):
        self._claim()
        return self._future


class _Progress:
    """A group's progress thread: completes its calls in the background, so
    that their futures complete with nobody calling wait().

    It tests the oldest call until it completes, then the next: a test
    progresses every call of the job, and calls complete in order. Between
    tests it yields, then sleeps for longer and longer, up to a millisecond,
    so that an idle rank leaves its core to the computation (and to the peer
    it waits for). Every test takes the job's lock for one step of progress
    only (zeroshard.Comm serialises a job's calls across threads), so calls
    posted from other threads meanwhile wait at most that long. The thread
    starts with the group's first call and sleeps while none is in flight.
    """

    YIELDS = 64          # tests that only yield before the first sleep
    SLEEP_MIN = 20e-6    # seconds
    SLEEP_MAX = 1e-3

    def __init__(self):
        self._cv = threading.Condition()
        self._pending = collections.deque()  # in flight, in call order
        self._kept = set()                   # completed, not yet claimed
        self._thread = None
        self._stopping = False

    def add(self, work):
        with self._cv:
            if self._stopping:
                raise RuntimeError("zsh: the process group was destroyed")
            self._pending.append(work)
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, name="zsh-progress",
                                                daemon=True)
                self._thread.start()
            self._cv.notify()

    def release(self, work):
        """@work was claimed: keep it no longer once it has completed."""
        with self._cv:
            self._kept.discard(work)

    def stop(self):
        with self._cv:
            self._stopping = True
            self._cv.notify()
            thread = self._thread
        if thread is not None and thread is not threading.current_thread():
            thread.join()
        with self._cv:
            self._kept.clear()

    def _next(self):
        """The oldest call in flight, waiting for one; None once stopping."""
        with self._cv:
            while not self._pending and not self._stopping:
                self._cv.wait()
            return self._pending[0] if self._pending else None

    def _run(self):
        idle = 0
        while True:
            work = self._next()
            if work is None:
                return
            if work._settle(block=False):
                with self._cv:
                    self._pending.popleft()
                    if not work._claimed:
                        self._kept.add(work)
                idle = 0
                continue
            idle += 1
            if idle <= self.YIELDS:
                time.sleep(0)
            else:
                time.sleep(min(self.SLEEP_MAX, self.SLEEP_MIN * 2 ** min(idle - self.YIELDS, 10)))


def _close(progress, comm):
    progress.stop()
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
        self._finalizer = weakref.finalize(self, _close, self._progress, comm)

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

    def _work(self, requests, result, finish=None):
        """A Work for @requests in flight; @finish runs once they all succeed."""
        work = _Work(self._progress, requests, finish, result)
        self._progress.add(work)
        return work

    # ---- collectives ------------------------------------------------------------------

    def allreduce(self, tensors, opts=None):
        _check_cpu(tensors, "all_reduce")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for t in tensors:
            _check_reducible(t, "all_reduce")
        if (op == "avg") and any(not t.is_floating_point() for t in tensors):
            raise TypeError("zsh all_reduce: ReduceOp.AVG takes floating tensors only")
        flats = [_flat(t) for t in tensors]
        reqs = [self._comm.iall_reduce(flat, op=op) for flat in flats]
        return self._work(reqs, tensors, lambda: _write_back_all(tensors, flats))

    def allreduce_coalesced(self, tensors, opts=None):
        _check_cpu(tensors, "all_reduce_coalesced")
        if len({t.dtype for t in tensors}) > 1:
            raise TypeError("zsh all_reduce_coalesced: tensors of more than one dtype")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        for t in tensors:
            _check_reducible(t, "all_reduce_coalesced")
        flat = torch.cat([t.reshape(-1) for t in tensors])

        def unpack():
            offset = 0
            for t in tensors:
                t.copy_(flat[offset:offset + t.numel()].view(t.shape))
                offset += t.numel()
        return self._work([self._comm.iall_reduce(flat, op=op)], tensors, unpack)

    def broadcast(self, tensors, opts=None):
        _check_cpu(tensors, "broadcast")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "broadcast")
        flats = [_flat(t) for t in tensors]
        reqs = [self._comm.ibroadcast(_bytes(flat), root) for flat in flats]
        return self._work(reqs, tensors, lambda: _write_back_all(tensors, flats))

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
        src = _flat(input)
        dst = _flat(output)
        req = self._comm.iall_gather(_bytes(src), _bytes(dst))
        return self._work([req], [output], lambda: _write_back(output, dst))

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
        reqs, gathered = self._gather_posts(inputs)
        return self._work(reqs, output_lists, lambda: _unpack_all(output_lists, gathered))

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

        def unpack():
            for r, outs in enumerate(output_lists):
                offset = r * mine.numel()
                for o, b in zip(outs, packed):
                    piece = gathered[offset:offset + b.numel()]
                    o.copy_(piece.view(o.dtype).view(o.shape) if b.numel() else o)
                    offset += b.numel()
        return self._work([self._comm.iall_gather(mine, gathered)], output_lists, unpack)

    def _check_splits(self, splits, numel, which):
        """zsh_alltoall moves equal blocks: split sizes, where given, must be."""
        if not splits:
            if numel % self._size != 0:
                raise ValueError("zsh all_to_all_single: %s has %d elements, not a multiple of "
                                 "the group's %d ranks" % (which, numel, self._size))
            return
        sizes = [int(s) for s in splits]
        if len(sizes) != self._size:
            raise ValueError("zsh all_to_all_single: %d %s split sizes for a group of %d"
                             % (len(sizes), which, self._size))
        if sum(sizes) != numel:
            raise ValueError("zsh all_to_all_single: %s split sizes %s add up to %d, not the "
                             "%s's %d elements" % (which, sizes, sum(sizes), which, numel))
        if len(set(sizes)) != 1:
            _unsupported("all_to_all_single in unequal %s split sizes %s" % (which, sizes),
                         " (zsh_alltoall moves equal blocks: pad them to one size)")

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        """all_to_all_single: block j of input to rank j, block r of output from rank r,
        in equal blocks (split sizes, where given, all the same)."""
        _check_cpu([output, input], "all_to_all_single")
        if output.dtype != input.dtype:
            raise TypeError("zsh all_to_all_single: output is %s, input is %s"
                            % (output.dtype, input.dtype))
        if output.numel() != input.numel():
            raise ValueError("zsh all_to_all_single: output has %d elements but input has %d"
                             % (output.numel(), input.numel()))
        self._check_splits(input_split_sizes, input.numel(), "input")
        self._check_splits(output_split_sizes, output.numel(), "output")
        src = _flat(input)
        dst = _flat(output)
        if dst.data_ptr() == src.data_ptr():
            src = src.clone()  # torch never passes one tensor as both: keep zsh's in place out
        req = self._comm.iall_to_all(_bytes(src), _bytes(dst))
        return self._work([req], [output], lambda: _write_back(output, dst))

    def alltoall(self, output_tensors, input_tensors, opts=None):
        """all_to_all: input_tensors[j] to rank j, output_tensors[r] from rank r; every
        tensor of both lists of one dtype and one size (equal blocks)."""
        _check_cpu(input_tensors, "all_to_all")
        _check_cpu(output_tensors, "all_to_all")
        if (len(input_tensors) != self._size) or (len(output_tensors) != self._size):
            raise ValueError("zsh all_to_all: %d input and %d output tensors for a group of %d"
                             % (len(input_tensors), len(output_tensors), self._size))
        first = input_tensors[0]
        for t in list(input_tensors) + list(output_tensors):
            if t.dtype != first.dtype:
                raise TypeError("zsh all_to_all: tensors of %s and %s" % (first.dtype, t.dtype))
            if t.numel() != first.numel():
                _unsupported("all_to_all of tensors of %d and %d elements"
                             % (first.numel(), t.numel()),
                             " (zsh_alltoall moves equal blocks: pad them to one size)")
        packed = torch.cat([_flat(t) for t in input_tensors])
        received = torch.empty_like(packed)

        def unpack():
            for r, out in enumerate(output_tensors):
                block = received[r * first.numel():(r + 1) * first.numel()]
                out.copy_(block.view(out.shape))
        req = self._comm.iall_to_all(_bytes(packed), _bytes(received))
        return self._work([req], output_tensors, unpack)

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
        dst = _flat(output)
        req = self._comm.ireduce_scatter(_flat(input), dst, op=op)
        return self._work([req], [output], lambda: _write_back(output, dst))

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
        dsts = [_flat(out) for out in outputs]
        reqs = [self._comm.ireduce_scatter(torch.cat([i.reshape(-1) for i in ins]), dst, op=op)
                for ins, dst in zip(input_lists, dsts)]
        return self._work(reqs, outputs, lambda: _write_back_all(outputs, dsts))

    def barrier(self, opts=None):
        return self._work([self._comm.ibarrier()], [])

    # ---- rooted collectives, built on the ones above ----------------------------------

    def reduce(self, tensors, opts=None):
        _check_cpu(tensors, "reduce")
        op = _op_name(opts.reduceOp if opts is not None else dist.ReduceOp.SUM)
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "reduce")
        for t in tensors:
            _check_reducible(t, "reduce")
        flats = [t.reshape(-1).clone() for t in tensors]
        reqs = [self._comm.iall_reduce(flat, op=op) for flat in flats]
        if self._rank != root:
            return self._work(reqs, tensors)
        return self._work(reqs, tensors, lambda: _write_back_all(tensors, flats))

    def gather(self, output_lists, inputs, opts=None):
        _check_cpu(inputs, "gather")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "gather")
        if self._rank == root:
            for outs in output_lists:
                if len(outs) != self._size:
                    raise ValueError("zsh gather: %d output tensors on the root for a group of %d"
                                     % (len(outs), self._size))
        reqs, gathered = self._gather_posts(inputs)
        if self._rank != root:
            return self._work(reqs, output_lists)
        return self._work(reqs, output_lists, lambda: _unpack_all(output_lists, gathered))

    def scatter(self, outputs, input_lists, opts=None):
        _check_cpu(outputs, "scatter")
        root = opts.rootRank if opts is not None else 0
        self._check_root(root, "scatter")
        if self._rank == root:
            for ins in input_lists:
                if len(ins) != self._size:
                    raise ValueError("zsh scatter: %d input tensors on the root for a group of %d"
                                     % (len(ins), self._size))
        me, wholes = self._rank, []
        for k, out in enumerate(outputs):
            if me == root:
                wholes.append(torch.cat([i.reshape(-1) for i in input_lists[k]]))
            else:
                wholes.append(torch.empty(self._size * out.numel(), dtype=out.dtype))
        reqs = [self._comm.ibroadcast(_bytes(whole), root) for whole in wholes]

        def unpack():
            for out, whole in zip(outputs, wholes):
                n = out.numel()
                out.copy_(whole[me * n:(me + 1) * n].view(out.shape))
        return self._work(reqs, outputs, unpack)

    # ---- what ZeroShard does not have -------------------------------------------------

    def send(self, tensors, dst, tag=0):
        _unsupported("send", " (ZeroShard has collectives only)")

    def recv(self, tensors, src, tag=0):
        _unsupported("recv", " (ZeroShard has collectives only)")

    def recv_anysource(self, tensors, tag=0):
        _unsupported("recv", " (ZeroShard has collectives only)")

    def _gather_posts(self, inputs):
        """An all-gather of each input into a buffer of its own: (requests, buffers)."""
        reqs, gathered = [], []
        for inp in inputs:
            src = _flat(inp)
            gathered.append(torch.empty(self._size * src.numel(), dtype=src.dtype))
            reqs.append(self._comm.iall_gather(_bytes(src), _bytes(gathered[-1])))
        return reqs, gathered

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
        # argument. The backend takes CPU tensors.
        if "devices" in inspect.signature(dist.Backend.register_backend).parameters:
            dist.Backend.register_backend(BACKEND_NAME, create_process_group, devices=["cpu"])
        else:
            dist.Backend.register_backend(BACKEND_NAME, create_process_group)

