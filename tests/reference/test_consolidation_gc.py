"""The collector policy of a consolidation pass: raised inside, the caller's thresholds after."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from memspec.reference.pipeline import (
    ConsolidationOperators,
    HeuristicContradictionOperator,
    TrigramNearDupOperator,
    consolidate,
)
from memspec.reference.pipeline.consolidation_gc import PASS_THRESHOLDS, pass_collector
from memspec.reference.proposals import Proposal
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import InMemoryRecordStore
from tests.reference.conftest import at, new_record

NOW = "2026-03-01T00:00:00.000Z"


@pytest.fixture(autouse=True)
def _caller_thresholds() -> Iterator[None]:
    """Every test starts from odd thresholds of its own and leaves the process's as found."""
    kept = gc.get_threshold()
    gc.set_threshold(613, 7, 5)
    yield
    gc.set_threshold(*kept)


class _Watching(TrigramNearDupOperator):
    """The shipped verdicts, recording the collector thresholds seen during the pass."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.seen: list[tuple[int, int, int]] = []
        self.fail = fail

    def propose_merge(self, a: MemoryRecord, b: MemoryRecord, *, now: str) -> Proposal | None:
        self.seen.append(gc.get_threshold())
        if self.fail:
            raise RuntimeError("operator crashed mid-pass")
        return super().propose_merge(a, b, now=now)


def _store() -> InMemoryRecordStore:
    store = InMemoryRecordStore()
    for day, body in enumerate(("The staging db is Postgres.", "The staging DB is postgres!",
                                "The prod db is MySQL."), start=1):
        store.put(new_record(body, created_at=at(day)))
    return store


def test_the_pass_runs_under_raised_thresholds_and_restores_the_callers() -> None:
    watching = _Watching()
    report = consolidate(_store(), now=NOW, operators=ConsolidationOperators(
        watching, HeuristicContradictionOperator()))
    assert report.by_pass("near-dup")
    assert watching.seen == [PASS_THRESHOLDS]
    assert gc.get_threshold() == (613, 7, 5)


def test_the_callers_thresholds_come_back_when_the_pass_raises() -> None:
    watching = _Watching(fail=True)
    with pytest.raises(RuntimeError, match="crashed mid-pass"):
        consolidate(_store(), now=NOW, operators=ConsolidationOperators(
            watching, HeuristicContradictionOperator()))
    assert watching.seen == [PASS_THRESHOLDS]
    assert gc.get_threshold() == (613, 7, 5)


def test_a_threshold_the_caller_raised_further_is_kept() -> None:
    gc.set_threshold(PASS_THRESHOLDS[0] * 3, 2, PASS_THRESHOLDS[2] + 1)
    with pass_collector():
        assert gc.get_threshold() == (PASS_THRESHOLDS[0] * 3, PASS_THRESHOLDS[1],
                                      PASS_THRESHOLDS[2] + 1)
    assert gc.get_threshold() == (PASS_THRESHOLDS[0] * 3, 2, PASS_THRESHOLDS[2] + 1)


def test_automatic_collection_switched_off_stays_off() -> None:
    gc.set_threshold(0, 4, 3)
    with pass_collector():
        assert gc.get_threshold() == (0, 4, 3)
    assert gc.get_threshold() == (0, 4, 3)


def test_nested_passes_restore_once_at_the_outermost_exit() -> None:
    with pass_collector():
        with pass_collector():
            assert gc.get_threshold() == PASS_THRESHOLDS
        assert gc.get_threshold() == PASS_THRESHOLDS
    assert gc.get_threshold() == (613, 7, 5)


def test_overlapping_passes_in_threads_restore_the_callers_thresholds() -> None:
    """The first pass ends while the second still runs: the second keeps the policy, and the
    thresholds from before both come back when the second ends."""
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()
    seen: list[tuple[int, int, int]] = []

    def second() -> None:
        first_in.wait()
        with pass_collector():
            second_in.set()
            first_out.wait()
            seen.append(gc.get_threshold())

    worker = threading.Thread(target=second)
    worker.start()
    with pass_collector():
        first_in.set()
        second_in.wait()
    first_out.set()
    worker.join()
    assert seen == [PASS_THRESHOLDS]
    assert gc.get_threshold() == (613, 7, 5)


def test_a_crashed_operator_in_the_contradiction_sub_pass_restores_too() -> None:
    class Crashing(HeuristicContradictionOperator):
        def beyond_slot_conflicts(self, records: object) -> None:
            raise RuntimeError("candidate generation crashed")

    with pytest.raises(RuntimeError, match="candidate generation crashed"):
        consolidate(_store(), now=NOW, operators=ConsolidationOperators(
            TrigramNearDupOperator(), Crashing()))
    assert gc.get_threshold() == (613, 7, 5)
