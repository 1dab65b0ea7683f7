"""Verify a large memory file's records across processes.

The Ed25519 check does not release the GIL (two threads measure no faster
than one), so a file of many signed records is verified by forked processes:
each child checks a contiguous slice of the records by verify_file's fast path
(memspec._verify_fast: each record's walk, field rules, content address and
signature) while the parent makes the file-level checks (header, duplicate
ids, the file signature) and a smaller slice of its own. Children inherit the
records by the fork and send back two booleans, nothing else.

The verdict and the error are the serial path's by construction: the parallel
run only answers "everything passed". When any part fails (or a child dies),
the serial :func:`memspec._file.verify_file` runs again with ``jobs=1`` and
raises its first error, exactly as a serial call would have.

Forking is used only where it is safe and available: a ``fork`` start method,
and no other thread running in this process (a forked child of a threaded
process can inherit a held lock). Anywhere else the serial path runs.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from multiprocessing.connection import Connection
from typing import Any

from memspec import _verify_fast

__all__ = ["PARALLEL_MIN_RECORDS", "available_cpus", "plan_jobs", "verify_parallel"]

#: Below this many records a file is verified serially unless ``jobs`` asks otherwise:
#: forking costs a few milliseconds, a record's check ~0.1 ms.
PARALLEL_MIN_RECORDS = 2000
#: The parent's file-level checks (the header, duplicate ids, the file's canonical bytes
#: and signature) as a share of one record's check, per record: measured ~4 us against
#: ~140 us at 10k records. The parent takes them on top of its slice, so its slice is
#: smaller by what evens out the finish (:func:`_bounds`).
_PARENT_OVERHEAD = 0.03
#: The records the children read: set just before forking, so each child inherits it.
_WORK: list[Any] | None = None


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask where the OS has one)."""
    try:
        return len(os.sched_getaffinity(0)) or 1
    except (AttributeError, OSError):  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def _can_fork() -> bool:
    return ("fork" in multiprocessing.get_all_start_methods()
            and threading.active_count() == 1)


def plan_jobs(memory_file: object, jobs: int | None) -> int:
    """How many processes verifying ``memory_file`` should use (1: the serial path).

    ``jobs`` None means automatic: every available CPU for a file of at least
    :data:`PARALLEL_MIN_RECORDS` records, else one. An explicit ``jobs`` is used
    as given (at most one process per record). Either way, one where forking is
    not available or not safe.
    """
    records = memory_file.get("records") if isinstance(memory_file, dict) else None
    if not isinstance(records, list) or len(records) < 2:
        return 1
    if jobs is None:
        wanted = available_cpus() if len(records) >= PARALLEL_MIN_RECORDS else 1
    else:
        wanted = min(jobs, len(records))
    if wanted <= 1 or not _can_fork():
        return 1
    return wanted


def _child(low: int, high: int, answer: Connection) -> None:
    assert _WORK is not None
    # Why no collector: a full collection would touch (and so copy) every inherited page;
    # the child lives for one slice, and sends back two booleans, never records.
    gc.disable()
    try:
        answer.send(_verify_fast.records_pass(_WORK, low, high))
    finally:
        answer.close()


def _bounds(count: int, jobs: int) -> list[tuple[int, int]]:
    """Contiguous slices: ``jobs - 1`` equal ones for the children, a smaller last one for
    the parent.

    The work is ``count`` record checks plus the parent's file-level checks
    (``count * _PARENT_OVERHEAD`` records' worth); each process gets an even share of
    it, so the parent's slice is that share less its overhead.
    """
    share = count * (1 + _PARENT_OVERHEAD) / jobs
    parent = max(0, min(count, int(share - count * _PARENT_OVERHEAD)))
    rest = count - parent
    cuts = [rest * i // (jobs - 1) for i in range(jobs)]
    return [(cuts[i], cuts[i + 1]) for i in range(jobs - 1)] + [(rest, count)]


def verify_parallel(memory_file: dict[str, Any], *, require_signature: bool,
                    expected_agent: object, jobs: int) -> None:
    """:func:`memspec._file.verify_file` with the records checked by ``jobs`` processes.

    Same verdict and, on failure, the same first error as the serial path.
    """
    global _WORK
    from memspec import _file

    records = memory_file["records"]
    slices = _bounds(len(records), jobs)
    context = multiprocessing.get_context("fork")
    children: list[tuple[Any, Connection]] = []
    _WORK = records
    try:
        for low, high in slices[:-1]:
            receive, send = context.Pipe(duplex=False)
            child = context.Process(target=_child, args=(low, high, send), daemon=True)
            child.start()
            send.close()
            children.append((child, receive))
        # While the children work: the file-level checks, and the file signature over the
        # bytes the records have when their strings are NFC (they nearly always are).
        passed = _verify_fast.header_passes(memory_file, require_signature=require_signature,
                                            expected_agent=expected_agent)
        signature_passed = passed and _verify_fast.file_signature_passes(memory_file, True)
        passed, nfc = _verify_fast.records_pass(records, *slices[-1]) if passed else (False,
                                                                                     False)
        for child, receive in children:
            try:
                child_passed, child_nfc = receive.recv()
                passed, nfc = passed and child_passed, nfc and child_nfc
            except (EOFError, OSError, ValueError, TypeError):  # the child died
                passed = False
            finally:
                receive.close()
                child.join()
    finally:
        _WORK = None
    if passed and not nfc:
        signature_passed = _verify_fast.file_signature_passes(memory_file, False)
    if not (passed and signature_passed):
        _file.verify_file(memory_file, require_signature=require_signature,
                          expected_agent=expected_agent, jobs=1)
