"""The cyclic collector's policy during a consolidation pass: raised thresholds, restored after.

A pass over a large store allocates many objects that outlive the young
generations (features per record, candidate indexes, new record versions), so
the collector runs its young collections thousands of times and its full ones
over the whole live heap: at 100,000 benchmark records about 1,900 collections
and 1.5 to 1.9 s of the pass, against 0.35 s with the thresholds below. Reference
counting still frees everything acyclic at once; only cyclic garbage waits for a
later collection, and the pass makes little of it (peak RSS at 100,000 records
was 659 MB with and without the policy).

The policy is scoped: :func:`pass_collector` raises each threshold to at least
:data:`PASS_THRESHOLDS` (never lowering one the caller raised further, and leaving
automatic collection off where the caller switched it off with a threshold of 0) and gives
the caller's thresholds back when the outermost pass in the process ends, however
it ends. Passes may overlap in threads, so entries are counted under a lock and
the thresholds seen by the first entry are the ones restored by the last exit.
"""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["PASS_THRESHOLDS", "pass_collector"]

#: Collector thresholds (generation 0, 1, 2) during a pass. Why these: the pass at
#: 100,000 records then collects about 10 times instead of about 1,900.
PASS_THRESHOLDS: tuple[int, int, int] = (100_000, 50, 1_000)

_lock = threading.Lock()
_depth = 0
_saved: tuple[int, int, int] | None = None


def _enter() -> None:
    global _depth, _saved
    with _lock:
        if _depth == 0:
            current = gc.get_threshold()
            _saved = current
            # Why: a generation-0 threshold of 0 is the caller switching automatic
            # collection off; raising it would switch it back on.
            if current[0] != 0:
                gc.set_threshold(*(max(mine, theirs) for mine, theirs
                                   in zip(PASS_THRESHOLDS, current, strict=True)))
        _depth += 1


def _exit() -> None:
    global _depth, _saved
    with _lock:
        _depth -= 1
        if _depth == 0 and _saved is not None:
            gc.set_threshold(*_saved)
            _saved = None


@contextmanager
def pass_collector() -> Iterator[None]:
    """Run the body under :data:`PASS_THRESHOLDS`; the caller's thresholds come back after,
    also when the body raises."""
    _enter()
    try:
        yield
    finally:
        _exit()
