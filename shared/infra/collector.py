"""The garbage collector's settings for a long-running service process."""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import functools
import gc
from collections.abc import Callable

YOUNG_THRESHOLD = 10_000
"""Allocations between collections of the youngest objects (Python's default is 700)."""
MIDDLE_THRESHOLD = 10
OLD_THRESHOLD = 100
"""Middle collections before the oldest objects are looked at (Python's default is 10)."""


_tuned = False


def tune_collector() -> None:
    """Collect young garbage in larger batches and old garbage rarely, and leave what startup
    built (modules, the app) out of every collection.

    Memory is freed by reference counting; the collector only finds cycles, and a full pass
    walks every tracked object. A match process holding 10,000 live feeds tracks about 1.2
    million objects: with Python's default thresholds it ran such a pass every few moves, each
    stopping the process for 0.3-1.3 s, which alone put a move's delivery p99 above a second.

    Done once per process, at the first service's startup (its modules are loaded by then).
    """
    global _tuned
    if _tuned:
        return
    _tuned = True
    gc.collect()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, MIDDLE_THRESHOLD, OLD_THRESHOLD)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    with contextlib.suppress(OSError, AttributeError):
        return ctypes.CDLL(None).malloc_trim  # type: ignore[no-any-return]
    return None  # not glibc


def return_free_memory() -> None:
    """Give the C allocator's free pages back to the system, as glibc keeps them otherwise
    (Python's small-object arenas go back by themselves once empty); nothing elsewhere.

    After 10,000 live feeds closed, this gave back a third to a half of what they had used;
    the rest stays in Python's arenas, pinned by a few long-lived objects, for the next feeds.
    """
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


class MemoryReturn:
    """Gives free memory back once ``after`` things (live feeds) have closed and no more for
    ``quiet_s``: by then what they held is gone, and a burst of closes costs one trim."""

    def __init__(self, *, after: int, quiet_s: float) -> None:
        self.after = after
        self.quiet_s = quiet_s
        self._closed = 0
        self._trim: asyncio.TimerHandle | None = None

    def count(self) -> None:
        """One more closed (in the running event loop)."""
        self._closed += 1
        if self._closed < self.after:
            return
        if self._trim is not None:
            self._trim.cancel()
        self._trim = asyncio.get_running_loop().call_later(self.quiet_s, self._return)

    def _return(self) -> None:
        self._trim, self._closed = None, 0
        return_free_memory()
