"""A call of the zsh process group in flight (:class:`_Work`), one enqueued on
a CUDA stream (:class:`_StreamWork`), and the group's progress thread
(:class:`_Progress`), which completes them in the background so that their
futures complete with nobody calling wait() (see ``backend``'s docstring).
"""
import collections
import threading
import time

import torch
from torch._C._distributed_c10d import Work
from torch.futures import Future

import zeroshard

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

    def __init__(self, progress, requests, finish, result, ordered=True):
        super().__init__()
        self._ordered = ordered  # a collective: completes after the ones before it
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
            self._resolve_future()
            return True
        finally:
            self._lock.release()

    def _resolve_future(self):
        """The future gets the call's result, or its error."""
        if self._error is None:
            self._future.set_result(self._result)
        else:
            self._future.set_exception(self._error)

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

    def _source_rank(self):
        """The sender of a completed recv (who sent first, from any source)."""
        self.wait()
        source = getattr(self, "_source", None)
        if source is None:
            raise RuntimeError("zsh: _source_rank() of a Work that is not a recv")
        return source()


class _StreamWork(_Work):
    """A call on CUDA tensors, enqueued on @stream when the call returned: it
    completes with that stream work, which a CUDA event recorded after it marks.

    wait() does not block the host: it makes the caller's current stream of
    the device wait for the event, so what the caller enqueues next sees the
    result (ProcessGroupNCCL's wait). is_completed() asks the event. The
    group's progress thread completes get_future() once the event is done,
    with @stream current on its device, so that a callback's kernels follow
    the call's work. The call's buffers (@kept) are held until then, so the
    caching allocator cannot hand them out under the stream work. Work not done
    within @seconds (the group's timeout) fails, naming the call, and @abort
    stops the device communicator, so that no stream waits forever.
    """

    def __init__(self, progress, result, kept, stream, what, seconds, abort):
        super().__init__(progress, [], None, result, ordered=False)
        self._stream = stream
        self._event = torch.cuda.Event()
        self._event.record(stream)
        self._kept = kept
        self._what = what
        self._seconds = seconds
        self._deadline = time.monotonic() + seconds
        self._abort = abort

    def _settle(self, block):
        """Complete if the stream work is done or past its deadline; whether it has."""
        if not self._lock.acquire(blocking=block):
            return False
        try:
            if self._done:
                return True
            if not self._event.query():
                if time.monotonic() < self._deadline:
                    return False
                self._error = RuntimeError(
                    "zsh %s on %s: its stream work was not done %g s after it was enqueued "
                    "(the group's timeout); the group's device communicator is aborted, so "
                    "its later calls on CUDA tensors fail"
                    % (self._what, self._stream.device, self._seconds))
                try:
                    self._abort()
                except zeroshard.ZshError:
                    pass  # closed or aborted already: its stream work is stopped
            self._done = True
            self._kept = None
            with torch.cuda.device(self._stream.device), torch.cuda.stream(self._stream):
                self._resolve_future()
            return True
        finally:
            self._lock.release()

    def wait(self, timeout=None):
        """Order the caller's current stream after the call (@timeout: the host
        does not wait, so there is nothing to time); raise if it failed."""
        self._claim()
        if self._error is not None:
            raise self._error
        torch.cuda.current_stream(self._stream.device).wait_event(self._event)
        return True


class _Progress:
    """A group's progress thread: completes its calls in the background, so
    that their futures complete with nobody calling wait().

    Each round it tests the calls in call order and completes those done, up
    to the first collective still in flight: a test progresses every call of
    the job, and collectives complete in order. Messages need not (a receive
    may wait for what its sender does after later calls), so one still in
    flight is passed over rather than waited for. Between
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
        """The calls in flight, waiting for one; None once stopping."""
        with self._cv:
            while not self._pending and not self._stopping:
                self._cv.wait()
            return list(self._pending) if self._pending else None

    def _run(self):
        idle = 0
        while True:
            works = self._next()
            if works is None:
                return
            done = []
            for work in works:
                if work._settle(block=False):
                    done.append(work)
                elif work._ordered:
                    break
            if done:
                with self._cv:
                    for work in done:
                        self._pending.remove(work)
                        if not work._claimed:
                            self._kept.add(work)
                idle = 0
                continue
            idle += 1
            if idle <= self.YIELDS:
                time.sleep(0)
            else:
                time.sleep(min(self.SLEEP_MAX, self.SLEEP_MIN * 2 ** min(idle - self.YIELDS, 10)))
