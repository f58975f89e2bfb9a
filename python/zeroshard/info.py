"""What the libzeroshard this process loaded is and what it sees.

    python -m zeroshard.info [-v] [-f] [-d] [-t] [-c] [-s]

prints the sections of zsh_info, the same options selecting them (every one
without an option), as the library itself writes them (zsh_info_print() of
<zeroshard/info.h>): a package built against another copy than the zsh_info
on PATH says so here. zsh_info -e, about an installed zsh_info's
directories, has no counterpart.
"""

import argparse
import sys

from . import _zeroshard
from .errors import error

# zsh_info's options and the section each selects, in its order.
SECTIONS = [
    ("-v", "--version", "INFO_VERSION", "version only"),
    ("-f", "--features", "INFO_FEATURES", "build features only"),
    ("-d", "--devices", "INFO_DEVICES", "UCX transports and devices only"),
    ("-t", "--topology", "INFO_TOPOLOGY", "node topology and the job's rank map only"),
    ("-c", "--config", "INFO_CONFIG", "ZSH_* configuration variables only"),
    ("-s", "--select", "INFO_SELECT", "the collectives' algorithms and how auto picks one only"),
]


def _bits(names):
    bits = 0
    for name in names:
        bits |= getattr(_zeroshard, name)
    return bits


ALL = _bits(bit for _, _, bit, _ in SECTIONS)


def text(sections=ALL):
    """The text of the sections, an OR of _zeroshard.INFO_* bits. Raises
    ZshError if a section failed; its reason went to stderr as the library
    printed it."""
    status, out = _zeroshard.info(sections)
    if status != 0:
        raise error(status)
    return out


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog="python -m zeroshard.info",
        description="Print the ZeroShard version, build, transports, topology and configuration "
                    "of the library this package loaded. With no option, print everything; "
                    "options may be combined.")
    for short, long, bit, help in SECTIONS:
        parser.add_argument(short, long, dest=bit, action="store_true", help=help)
    args = parser.parse_args(argv)
    sections = _bits(bit for _, _, bit, _ in SECTIONS if getattr(args, bit))
    # As zsh_info: a failing section does not stop the others, and the exit
    # status says one failed.
    status, out = _zeroshard.info(sections or ALL)
    sys.stdout.write(out)
    sys.stdout.flush()
    return 0 if status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
