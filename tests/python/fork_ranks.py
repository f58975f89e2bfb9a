"""Start the ranks of a Python test script as children of one interpreter.

    python fork_ranks.py N TAG LOGDIR LIMIT SCRIPT [ARGS...]

tests/system/python/ranks.sh starts a job's ranks through this: it imports
torch and numpy once, then forks N children, each of which sets RANK and
WORLD_SIZE, sends its output to LOGDIR/out.TAG.RANK and runs SCRIPT as its
__main__, exiting as the interpreter does after a script (atexit handlers
and all). Importing torch was most of a small job's CPU, paid by every
rank; a forked child shares the parent's copy. Nothing else is loaded
before the fork, and the parent starts no threads of its own.

The parent waits for every child, ends those still running after LIMIT
seconds with SIGTERM (exit status 124, as timeout(1) reports; SIGKILL 10 s
later if one stays), and writes each child's exit status to
LOGDIR/rc.TAG.RANK.
"""

import os
import runpy
import signal
import sys
import time


def run_rank(rank, size, out, script, args):
    """In the child: this rank's environment, output and script."""
    os.environ["RANK"] = str(rank)
    os.environ["WORLD_SIZE"] = str(size)
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    os.close(fd)
    sys.argv = [script] + args
    sys.path.insert(0, os.path.dirname(os.path.abspath(script)))
    runpy.run_path(script, run_name="__main__")
    sys.exit(0)


def main():
    size, tag, logdir, limit = int(sys.argv[1]), sys.argv[2], sys.argv[3], float(sys.argv[4])
    script, args = sys.argv[5], sys.argv[6:]
    try:
        import numpy  # noqa: F401
        import torch  # noqa: F401
    except ImportError:
        pass
    sys.stdout.flush()
    sys.stderr.flush()
    ranks = {}
    for rank in range(size):
        pid = os.fork()
        if pid == 0:
            run_rank(rank, size, "%s/out.%s.%d" % (logdir, tag, rank), script, args)
        ranks[pid] = rank
    codes = {}
    deadline, sig = time.monotonic() + limit, signal.SIGTERM
    while ranks:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if pid == 0:
            # SIGTERM at the limit; SIGKILL 10 s later to one that stays.
            if time.monotonic() > deadline:
                for late in ranks:
                    codes[ranks[late]] = 124
                    os.kill(late, sig)
                deadline, sig = time.monotonic() + 10, signal.SIGKILL
            time.sleep(0.02)
            continue
        rank = ranks.pop(pid)
        code = os.waitstatus_to_exitcode(status)
        codes.setdefault(rank, code if code >= 0 else 128 - code)
    for rank, code in codes.items():
        with open("%s/rc.%s.%d" % (logdir, tag, rank), "w") as f:
            f.write("%d\n" % code)


if __name__ == "__main__":
    main()
