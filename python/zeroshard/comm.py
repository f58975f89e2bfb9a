"""zeroshard.Comm and zeroshard.Request: the collectives of include/zeroshard.h
on numpy arrays and CPU torch tensors, zero-copy; and those of
include/zeroshard/device.h on CUDA torch tensors, enqueued on a CUDA stream
(the ``*_stream`` methods, with set_stream()).

Threads. The communicators of one job (one Comm() or from_allgather() and the
communicators split from it) share one lock, because the C library wants a job
used by one thread at a time: calls from several Python threads are
serialised. abort() takes no part in that lock, so another thread can abort a
communicator while a call on it waits. The GIL is released while a collective
runs or waits.

Buffers. A collective that fails may still have transfers in flight that read
or write its buffers (see zeroshard.h), so the buffers of a failed call are
kept alive by the job until its last communicator is closed. A Request keeps
its buffers until it completes. A Request collected while still in flight is
waited for first (up to its deadline), then freed: buffers are never released
under a running collective. close() does the same for the requests still out.

Lifetime. A Comm is destroyed by close() (or leaving a with block), never by
garbage collection: destroying a job's last communicator is collective, and a
collector running on one rank only would hang it.
"""

import threading
import weakref

from . import _zeroshard as _z
from .buffers import Buffer, reduction, same_dtype
from .errors import ERR_INVALID_ARG, INPROGRESS, OK, ZshError, error
from .settings import _stream as _stream_handle

ANY_SOURCE = _z.ANY_SOURCE  # irecv's src=None
TAG_MAX = _z.TAG_MAX        # the largest point-to-point tag


class _Job:
    """What the communicators of one job share."""

    def __init__(self):
        # Reentrant: a Request collected (and so waited for) in the middle of
        # a call on the same thread takes it again.
        self.lock = threading.RLock()
        self.open_comms = 0
        self.kept = []

    def keep(self, buffers):
        self.kept.append(buffers)


class Request:
    """A nonblocking collective: wait(), test(), set_timeout()."""

    def __init__(self, comm, handle, buffers, is_recv=False):
        self._comm = comm
        self._handle = handle
        self._buffers = buffers
        self._error = None
        self._is_recv = is_recv
        self._source = None
        comm._requests.add(self)

    def _finish(self, status):
        # Called with the job's lock held, once the request is no longer in progress.
        if status != OK:
            self._error = error(status)
            self._comm._job.keep(self._buffers)
        elif self._is_recv:
            status, self._source = _z.request_source(self._handle)
            if status != OK:
                self._error = error(status)
        _z.request_free(self._handle)
        self._handle = None
        self._buffers = None
        self._comm._requests.discard(self)

    def test(self):
        """True once the collective is done (raises ZshError if it failed), False before."""
        with self._comm._job.lock:
            if self._handle is not None:
                status = _z.request_test(self._handle)
                if status == INPROGRESS:
                    return False
                self._finish(status)
        if self._error is not None:
            raise self._error
        return True

    def wait(self):
        """Return once the collective is done; raise ZshError if it failed."""
        with self._comm._job.lock:
            if self._handle is not None:
                self._finish(_z.request_wait(self._handle))
        if self._error is not None:
            raise self._error

    @property
    def source(self):
        """The rank that sent what a completed irecv() got (who sent first, for
        ANY_SOURCE); None before it completes, and for other requests."""
        return self._source

    def set_timeout(self, seconds):
        """Give this collective its own deadline, seconds after it was posted."""
        with self._comm._job.lock:
            if self._handle is None:
                raise ZshError(ERR_INVALID_ARG, "set_timeout: the request has already completed")
            status = _z.request_set_timeout(self._handle, float(seconds))
            if status != OK:
                raise error(status)

    def _settle(self):
        """Wait without raising: close() and garbage collection."""
        with self._comm._job.lock:
            if self._handle is not None:
                self._finish(_z.request_wait(self._handle))

    def __del__(self):
        try:
            self._settle()
        except Exception:  # interpreter shutdown: the module may be gone
            pass


class Comm:
    """A communicator. Comm() bootstraps from the environment (RANK,
    WORLD_SIZE, MASTER_ADDR, MASTER_PORT, or a PMIx launcher)."""

    def __init__(self):
        status, handle = _z.comm_init()
        if status != OK:
            raise error(status)
        self._adopt(handle, _Job())

    def _adopt(self, handle, job):
        self._handle = handle
        self._job = job
        self._state = threading.Lock()  # abort() against close()
        self._requests = weakref.WeakSet()
        self._dependents = weakref.WeakSet()  # optimizers on it, closed first
        self._rank = _z.comm_rank(handle)
        self._size = _z.comm_size(handle)
        job.open_comms += 1

    @classmethod
    def _wrap(cls, handle, job):
        comm = cls.__new__(cls)
        comm._adopt(handle, job)
        return comm

    @classmethod
    def from_allgather(cls, rank, size, allgather):
        """Bootstrap through allgather(bytes) -> list of `size` bytes objects
        in rank order; it is called with the GIL held, synchronously."""
        rank, size = int(rank), int(size)
        if not 0 <= rank < size:
            raise ValueError("rank %d is not in [0, size=%d)" % (rank, size))
        failure = []

        def one_round(data):
            if failure:
                return None
            try:
                blocks = [bytes(b) for b in allgather(data)]
                if len(blocks) != size:
                    raise ValueError("allgather returned %d blocks for %d ranks" % (len(blocks), size))
                for r, b in enumerate(blocks):
                    if len(b) != len(data):
                        raise ValueError("allgather returned %d bytes from rank %d, %d expected"
                                         % (len(b), r, len(data)))
                return blocks
            except BaseException as e:  # re-raised below, as the cause
                failure.append(e)
                return None

        status, handle = _z.comm_init_oob(rank, size, one_round)
        if status != OK:
            err = error(status)
            if failure:
                err = ZshError(status, "%s (the allgather raised %r)" % (err.message, failure[0]))
                raise err from failure[0]
            raise err
        return cls._wrap(handle, _Job())

    @classmethod
    def from_store(cls, store, rank, size, prefix="zsh", call=None):
        """Bootstrap through a store with set(key, bytes) and get(key) -> bytes
        (torch.distributed.Store, or any object like it). call numbers this
        bootstrap among those with this prefix on this store; by default, the
        count of this process's from_store calls with the prefix, which is
        right only when every rank makes the same calls in the same order."""
        from .store import store_allgather
        return store_allgather(cls, store, int(rank), int(size), prefix, call)

    # ---- state ------------------------------------------------------------------
    def _live(self):
        if self._handle is None:
            raise ZshError(ERR_INVALID_ARG, "the communicator was closed")
        return self._handle

    @property
    def rank(self):
        self._live()
        return self._rank

    @property
    def size(self):
        self._live()
        return self._size

    @property
    def timeout(self):
        """Seconds each later collective may take (zsh_comm_get/set_timeout)."""
        with self._job.lock:
            value = _z.comm_get_timeout(self._live())
            if value < 0:
                raise error(ERR_INVALID_ARG)
            return value

    @timeout.setter
    def timeout(self, seconds):
        with self._job.lock:
            status = _z.comm_set_timeout(self._live(), float(seconds))
            if status != OK:
                raise error(status)

    @property
    def deterministic(self):
        """Whether reduce-scatter and all-reduce give zeroshard.h's rank-order bits
        (zsh_comm_get/set_deterministic; every rank must set it alike)."""
        with self._job.lock:
            value = _z.comm_get_deterministic(self._live())
            if value < 0:
                raise error(ERR_INVALID_ARG)
            return bool(value)

    @deterministic.setter
    def deterministic(self, on):
        with self._job.lock:
            status = _z.comm_set_deterministic(self._live(), 1 if on else 0)
            if status != OK:
                raise error(status)

    def split(self, color, key=0):
        """A new communicator of the ranks with the same color, or None for a negative color."""
        with self._job.lock:
            status, handle = _z.comm_split(self._live(), int(color), int(key))
            if status != OK:
                raise error(status)
            return Comm._wrap(handle, self._job) if handle else None

    def abort(self):
        """Fail pending and later collectives on this communicator, on every rank."""
        with self._state:
            status = _z.comm_abort(self._live())
        if status != OK:
            raise error(status)

    def close(self):
        """Destroy the communicator (collective when it is the job's last). Idempotent."""
        with self._job.lock:
            if self._handle is None:
                return
            for dep in list(self._dependents):
                dep.close()
            for req in list(self._requests):
                req._settle()
            with self._state:
                status = _z.comm_destroy(self._handle)
                if status != OK:
                    raise error(status)
                self._handle = None
            self._job.open_comms -= 1
            if self._job.open_comms == 0:
                self._job.kept.clear()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self._handle is None:
            return "<zeroshard.Comm closed>"
        return "<zeroshard.Comm rank %d of %d>" % (self._rank, self._size)

    # ---- collectives -------------------------------------------------------------
    def _run(self, fn, buffers, *args):
        with self._job.lock:
            status = fn(self._live(), *args)
            if status != OK:
                err = error(status)
                self._job.keep(buffers)
                raise err

    def _post(self, fn, buffers, *args, is_recv=False):
        with self._job.lock:
            status, handle = fn(self._live(), *args)
            if status != OK:
                err = error(status)
                self._job.keep(buffers)
                raise err
            return Request(self, handle, buffers, is_recv)

    def _gather_args(self, send, recv, cuda=False):
        s, r = Buffer(send, "send", False, cuda), Buffer(recv, "recv", True, cuda)
        same_dtype(s, r)
        if r.count != self.size * s.count:
            raise ValueError("all_gather: recv has %d elements; size * len(send) = %d * %d = %d"
                             % (r.count, self.size, s.count, self.size * s.count))
        return (s, r), (s.ptr, r.ptr, s.count, s.dtype)

    def _scatter_args(self, send, recv, op, cuda=False):
        s, r = Buffer(send, "send", False, cuda), Buffer(recv, "recv", True, cuda)
        same_dtype(s, r)
        if s.count != self.size * r.count:
            raise ValueError("reduce_scatter: send has %d elements; size * len(recv) = %d * %d = %d"
                             % (s.count, self.size, r.count, self.size * r.count))
        return (s, r), (s.ptr, r.ptr, r.count, r.dtype, reduction(op, r))

    def _reduce_args(self, send, recv, op, cuda=False):
        s = Buffer(send, "send", recv is None, cuda)
        r = s if recv is None else Buffer(recv, "recv", True, cuda)
        same_dtype(s, r)
        if r.count != s.count:
            raise ValueError("all_reduce: send has %d elements but recv has %d" % (s.count, r.count))
        return (s, r), (s.ptr, r.ptr, s.count, s.dtype, reduction(op, s))

    def _alltoall_args(self, send, recv, cuda=False):
        s = Buffer(send, "send", recv is None, cuda)
        r = s if recv is None else Buffer(recv, "recv", True, cuda)
        same_dtype(s, r)
        if r.count != s.count:
            raise ValueError("all_to_all: send has %d elements but recv has %d" % (s.count, r.count))
        if s.count % self.size != 0:
            raise ValueError("all_to_all: send has %d elements, not a multiple of size=%d: "
                             "each rank gets an equal block" % (s.count, self.size))
        return (s, r), (s.ptr, r.ptr, s.count // self.size, s.dtype)

    def all_gather(self, send, recv):
        """recv (size * len(send) elements) gets every rank's send, in rank order."""
        bufs, args = self._gather_args(send, recv)
        self._run(_z.allgather, bufs, *args)
        return recv

    def reduce_scatter(self, send, recv, op="sum"):
        """recv gets block `rank` of the reduction of every rank's send (size * len(recv))."""
        bufs, args = self._scatter_args(send, recv, op)
        self._run(_z.reduce_scatter, bufs, *args)
        return recv

    def all_reduce(self, send, recv=None, op="sum"):
        """recv (or send itself when recv is None) gets the reduction of every rank's send."""
        bufs, args = self._reduce_args(send, recv, op)
        self._run(_z.allreduce, bufs, *args)
        return send if recv is None else recv

    def _bcast_args(self, buf, root, cuda=False):
        b = Buffer(buf, "buf", True, cuda)
        root = int(root)
        if not 0 <= root < self.size:
            raise ValueError("broadcast: root %d is not in [0, size=%d)" % (root, self.size))
        return (b,), (b.ptr, b.count, b.dtype, root)

    def broadcast(self, buf, root):
        """buf on every rank gets buf of rank root."""
        bufs, args = self._bcast_args(buf, root)
        self._run(_z.broadcast, bufs, *args)
        return buf

    def all_to_all(self, send, recv=None):
        """Block j of send (size equal blocks) goes to rank j, which keeps it as block
        `rank` of recv; in place in send when recv is None."""
        bufs, args = self._alltoall_args(send, recv)
        self._run(_z.alltoall, bufs, *args)
        return send if recv is None else recv

    def barrier(self):
        """Return once every rank has entered the barrier."""
        self._run(_z.barrier, ())

    def iall_gather(self, send, recv):
        bufs, args = self._gather_args(send, recv)
        return self._post(_z.iallgather, bufs, *args)

    def ireduce_scatter(self, send, recv, op="sum"):
        bufs, args = self._scatter_args(send, recv, op)
        return self._post(_z.ireduce_scatter, bufs, *args)

    def iall_reduce(self, send, recv=None, op="sum"):
        bufs, args = self._reduce_args(send, recv, op)
        return self._post(_z.iallreduce, bufs, *args)

    def ibroadcast(self, buf, root):
        bufs, args = self._bcast_args(buf, root)
        return self._post(_z.ibroadcast, bufs, *args)

    def iall_to_all(self, send, recv=None):
        bufs, args = self._alltoall_args(send, recv)
        return self._post(_z.ialltoall, bufs, *args)

    def ibarrier(self):
        return self._post(_z.ibarrier, ())

    # ---- on a CUDA stream ----------------------------------------------------------
    def set_stream(self, stream=None, enqueue=False):
        """Where this communicator's later calls on CUDA tensors are enqueued
        (zsh_comm_set_stream): stream is a torch.cuda.Stream or a cudaStream_t's
        address, None the default stream. A blocking call on CUDA tensors returns
        once its stream work is done, or with enqueue once it is enqueued: then
        work enqueued on that stream after it sees its result, and the host
        synchronises the stream before reading it."""
        handle = _stream_arg(stream)
        with self._job.lock:
            status = _z.comm_set_stream(self._live(), handle, _z.STREAM_ENQUEUE if enqueue else 0)
            if status != OK:
                raise error(status)

    # Each *_stream call takes CUDA tensors of one device and enqueues its work
    # on stream (a torch.cuda.Stream or a cudaStream_t's address; None: the
    # default stream), after the work enqueued on it before; it returns as
    # set_stream() says (once done, unless enqueue was set).

    def all_gather_stream(self, send, recv, stream=None):
        bufs, args = self._gather_args(send, recv, cuda=True)
        self._run(_z.allgather_stream, bufs, *args, _stream_arg(stream))
        return recv

    def reduce_scatter_stream(self, send, recv, op="sum", stream=None):
        bufs, args = self._scatter_args(send, recv, op, cuda=True)
        self._run(_z.reduce_scatter_stream, bufs, *args, _stream_arg(stream))
        return recv

    def all_reduce_stream(self, send, recv=None, op="sum", stream=None):
        bufs, args = self._reduce_args(send, recv, op, cuda=True)
        self._run(_z.allreduce_stream, bufs, *args, _stream_arg(stream))
        return send if recv is None else recv

    def broadcast_stream(self, buf, root, stream=None):
        bufs, args = self._bcast_args(buf, root, cuda=True)
        self._run(_z.broadcast_stream, bufs, *args, _stream_arg(stream))
        return buf

    def all_to_all_stream(self, send, recv, stream=None):
        """Not in place: NCCL's grouped sends and receives would overwrite blocks
        before they are sent."""
        bufs, args = self._alltoall_args(send, recv, cuda=True)
        self._run(_z.alltoall_stream, bufs, *args, _stream_arg(stream))
        return recv

    # ---- point to point ----------------------------------------------------------
    def isend(self, buf, dst, tag=0):
        """Start sending buf to rank dst with tag (0 .. TAG_MAX); the receive
        must ask for as many bytes. buf is read until the request completes."""
        b = Buffer(buf, "buf", False)
        return self._post(_z.isend, (b,), b.ptr, b.count, b.dtype, int(dst), int(tag))

    def irecv(self, buf, src=None, tag=0):
        """Start receiving into buf from rank src, or from whichever rank sends
        first with tag when src is None; the request's .source names the
        sender once it completes."""
        b = Buffer(buf, "buf", True)
        peer = ANY_SOURCE if src is None else int(src)
        return self._post(_z.irecv, (b,), b.ptr, b.count, b.dtype, peer, int(tag), is_recv=True)


def _stream_arg(stream):
    return _stream_handle("stream", 0 if stream is None else stream)
