"""Comm.from_store: the out-of-band allgather of zsh_comm_init_oob() over a
key-value store (torch.distributed.Store, or any object with set(key, bytes)
and get(key) -> bytes).

Each from_store call takes keys of its own, "<prefix>/<n>/...", where n is the
caller's call number or else counts the calls with that prefix in this process
(then every rank must make the same calls in the same order). Once every rank has read every block, each rank deletes its
own keys when the store has delete_key.
"""

import itertools
import threading
import time

_counters = {}
_counters_lock = threading.Lock()
# A store whose get() does not wait for a key (a dict-backed one) is polled this long.
POLL_SECONDS = 300.0


def _next_call(prefix):
    with _counters_lock:
        counter = _counters.setdefault(prefix, itertools.count())
        return next(counter)


def _get(store, key):
    if hasattr(store, "wait"):
        store.wait([key])
        return bytes(store.get(key))
    deadline = time.monotonic() + POLL_SECONDS
    while True:
        try:
            return bytes(store.get(key))
        except (KeyError, LookupError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.001)


def store_allgather(comm_cls, store, rank, size, prefix, call=None):
    base = "%s/%d" % (prefix, _next_call(prefix) if call is None else int(call))
    rounds = itertools.count()
    mine = []

    def allgather(data):
        n = next(rounds)
        key = "%s/%d/%d" % (base, n, rank)
        store.set(key, data)
        mine.append(key)
        return [_get(store, "%s/%d/%d" % (base, n, r)) for r in range(size)]

    comm = comm_cls.from_allgather(rank, size, allgather)
    if hasattr(store, "delete_key"):
        # Every rank has read every block once all have set their "done" key;
        # those stay behind (no rank knows when the last one was read).
        store.set("%s/done/%d" % (base, rank), b"1")
        for r in range(size):
            _get(store, "%s/done/%d" % (base, r))
        for key in mine:
            store.delete_key(key)
    return comm
