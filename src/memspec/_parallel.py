"""Verify a large memory file's records across processes.

The Ed25519 check does not release the GIL (two threads measure no faster
than one), so a file of many signed records is verified by forked processes:
each child validates and verifies a contiguous slice of the records while the
parent makes the file-level checks (header, the walk of the whole file,
duplicate ids, the file signature) and a smaller slice of its own.

The verdict and the error are the serial path's by construction: the parallel
run only answers "everything passed". When any part fails (or a child dies),
the serial :func:`memspec._file.verify_file` runs again with ``jobs=1`` and
raises its first error, exactly as a serial call would have.

Forking is used only where it is safe and available: a ``fork`` start method,
and no other thread running in this process (a forked child of a threaded
process can inherit a held lock). Anywhere else the serial path runs.
"""

from __future__ import annotations

import multiprocessing
import os
import threading
from multiprocessing.connection import Connection
from typing import Any

from memspec._canonical import DEFAULT_LIMITS
from memspec._record import _verify_validated, validate_record

__all__ = ["PARALLEL_MIN_RECORDS", "available_cpus", "plan_jobs", "verify_parallel"]

#: Below this many records a file is verified serially unless ``jobs`` asks otherwise:
#: forking costs a few milliseconds, a record's check ~0.1 ms.
PARALLEL_MIN_RECORDS = 2000
#: How much smaller the parent's slice is than an even share: it also makes the
#: file-level checks (the walk and the file signature cost ~15% of the whole).
_PARENT_DISCOUNT = 0.1
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


def _slice_passes(records: list[Any], low: int, high: int) -> bool:
    """Whether every record in ``records[low:high]`` validates and its signature verifies.

    The parent walks the whole file at the default limits; a slice only passes
    when that walk passes too, so each record's own walk is skipped here.
    """
    try:
        for index in range(low, high):
            record = records[index]
            validate_record(record, DEFAULT_LIMITS, _walked=True)
            _verify_validated(record)
    except Exception:  # any failure: the serial path names it
        return False
    return True


def _child(low: int, high: int, answer: Connection) -> None:
    assert _WORK is not None
    try:
        answer.send(_slice_passes(_WORK, low, high))
    finally:
        answer.close()


def _bounds(count: int, jobs: int) -> list[tuple[int, int]]:
    """Contiguous slices: ``jobs - 1`` equal ones for the children, a smaller last one for
    the parent."""
    parent = int(count * max(0.0, 1 / jobs - _PARENT_DISCOUNT))
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
    passed = True
    _WORK = records
    try:
        for low, high in slices[:-1]:
            receive, send = context.Pipe(duplex=False)
            child = context.Process(target=_child, args=(low, high, send), daemon=True)
            child.start()
            send.close()
            children.append((child, receive))
        try:
            _file._verify_file(memory_file, require_signature=require_signature,
                               expected_agent=expected_agent, records_checked=True)
        except Exception:
            passed = False
        passed = passed and _slice_passes(records, *slices[-1])
        for child, receive in children:
            try:
                passed = bool(receive.recv()) and passed
            except (EOFError, OSError):  # the child died: let the serial path decide
                passed = False
            finally:
                receive.close()
                child.join()
    finally:
        _WORK = None
    if not passed:
        _file.verify_file(memory_file, require_signature=require_signature,
                          expected_agent=expected_agent, jobs=1)
