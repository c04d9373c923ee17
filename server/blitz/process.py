"""What the serving process sets about itself once: its heap, and its `/proc` entries.

Both are called by `blitz.server.serve` only, for the long-lived server process (tests
that run a server inside their own process leave their process as it is). Linux-specific
calls are no-ops elsewhere.
"""

from __future__ import annotations

import ctypes
import gc

import structlog

__all__ = ["settle_heap", "undumpable"]

log = structlog.get_logger(__name__)

# The collector's first threshold (see settle_heap).
_YOUNG = 10_000
_PR_SET_DUMPABLE = 4


def settle_heap() -> None:
    """Tune the garbage collector for a long-lived server, once it is up.

    What starting made (modules, schemas, the core) lives as long as the process: frozen,
    the collector no longer walks it on every full collection. And a young generation of
    `_YOUNG` objects instead of Python's 700 collects less often: the server allocates in
    bursts (a thousand turns at once), whose objects mostly die young anyway. Together
    they took the collector from 7% of the server's CPU in a burst of turns to 1% (perf;
    docs/benchmarks.md).
    """
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(_YOUNG, older, oldest)


def undumpable() -> None:
    """Keep this process's `/proc` entries (its environment and command line, with their
    keys) from other processes of the same user: the commands the agent runs.

    Linux only; a no-op elsewhere. Root's processes can still read them: there, commands
    run in a namespace of their own (blitz.agent.sandbox).
    """
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
    except (OSError, AttributeError):
        log.warning("cannot make the server's /proc entries private", exc_info=True)
