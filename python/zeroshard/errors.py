"""Exceptions: every failed ZeroShard call raises a ZshError carrying the
status (a zsh_status_t) and zsh_last_error()'s text."""

from . import _zeroshard

OK = 0
INPROGRESS = 1
ERR_INVALID_ARG = -1
ERR_NO_MEMORY = -2
ERR_UNSUPPORTED = -3
ERR_TRANSPORT = -4
ERR_TIMEOUT = -5
ERR_PEER_FAILED = -6
ERR_MISMATCH = -7
ERR_IO = -8
ERR_ABORTED = -9
ERR_INTERNAL = -10


class ZshError(RuntimeError):
    """A ZeroShard call failed: .status, .status_name and .message.

    A RuntimeError, as torch's own backends raise, so that code written for
    gloo or NCCL catches it."""

    def __init__(self, status, message):
        self.status = int(status)
        self.status_name = _zeroshard.status_string(self.status)
        self.message = message
        super().__init__("%s: %s" % (self.status_name, message))

    def __str__(self):
        return "%s: %s" % (self.status_name, self.message)


class ZshTimeoutError(ZshError):
    """A deadline passed (ZSH_ERR_TIMEOUT)."""


class ZshPeerFailedError(ZshError):
    """A peer process failed or disconnected (ZSH_ERR_PEER_FAILED)."""


class ZshMismatchError(ZshError):
    """Ranks called different collectives (ZSH_ERR_MISMATCH)."""


class ZshAbortedError(ZshError):
    """The communicator was aborted (ZSH_ERR_ABORTED)."""


_CLASSES = {
    ERR_TIMEOUT: ZshTimeoutError,
    ERR_PEER_FAILED: ZshPeerFailedError,
    ERR_MISMATCH: ZshMismatchError,
    ERR_ABORTED: ZshAbortedError,
}


def error(status, message=None):
    """The exception for status; message defaults to zsh_last_error(), which
    is per thread, so call this on the thread that made the failed call."""
    if message is None:
        message = _zeroshard.last_error()
    return _CLASSES.get(status, ZshError)(status, message)


def check(status):
    """Raise the exception for a failed status."""
    if status != OK:
        raise error(status)
