"""Parallel verification (memspec._parallel): the serial path's verdict and first error.

Files are built small (the ``jobs`` argument forces the parallel path at any size)
and tampered in every way a check can catch: a record's content or signature, a
record's shape, a duplicate id, the file's header or signature, the expected agent.
Each verdict, error class, message, pointer and requirement must equal the serial
path's. Nothing here measures time.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable
from typing import Any

import pytest

from benchmarks._data import memory_file, signed_records, typical_records
from memspec import MemspecError, SigningKey, _parallel
from memspec._file import verify_file

pytestmark = pytest.mark.skipif(not _parallel._can_fork(), reason="no fork start method here")

OTHER = SigningKey.from_hex("11" * 32)


@pytest.fixture(scope="module")
def signed_file() -> dict[str, Any]:
    return memory_file(signed_records(typical_records(60, seed=8)), signed=True)


def _outcome(memory_file: dict[str, Any], jobs: int, **kwargs: Any) -> tuple[Any, ...]:
    try:
        verify_file(memory_file, jobs=jobs, **kwargs)
    except MemspecError as exc:
        return (type(exc).__name__, exc.code, exc.message, exc.pointer, exc.requirement)
    return ("ok",)


def _at(index: int, field: str, value: object) -> Callable[[dict[str, Any]], None]:
    def change(f: dict[str, Any]) -> None:
        f["records"][index][field] = value
    return change


TAMPERS: dict[str, Callable[[dict[str, Any]], object]] = {  # called for the effect only
    "untouched": lambda f: None,
    "body of a late record": _at(57, "body", "changed"),
    "body of an early record": _at(2, "body", "changed"),
    "two records, the later first in the parent's slice": lambda f: (
        _at(59, "body", "x")(f), _at(30, "body", "y")(f)),
    "record signature": lambda f: f["records"][40].__setitem__(
        "signature", f["records"][41]["signature"]),
    "record shape": _at(10, "confidence", "2.5"),
    "record type": _at(50, "tags", "not a list"),
    "duplicate id": lambda f: f["records"].__setitem__(20, copy.deepcopy(f["records"][19])),
    "file header": lambda f: f.__setitem__("created_at", "yesterday"),
    "file signature": lambda f: f.__setitem__("signature", f["records"][0]["signature"]),
    "records after signing": lambda f: f["records"].pop(),
    "unsigned file": lambda f: f.__setitem__("signature", ""),
    "not a list": lambda f: f.__setitem__("records", {"a": 1}),
}


@pytest.mark.parametrize("name", sorted(TAMPERS))
@pytest.mark.parametrize("jobs", [2, 3])
def test_parallel_verdict_and_first_error_equal_the_serial_path(
        signed_file: dict[str, Any], name: str, jobs: int) -> None:
    tampered = copy.deepcopy(signed_file)
    TAMPERS[name](tampered)
    serial = _outcome(tampered, 1)
    assert (serial == ("ok",)) == (name == "untouched")
    assert _outcome(tampered, jobs) == serial
    assert _outcome(tampered, jobs, require_signature=False) == _outcome(
        tampered, 1, require_signature=False)


def test_expected_agent_is_judged_the_same(signed_file: dict[str, Any]) -> None:
    agent = signed_file["agent"]
    for expected in (agent, OTHER.address):
        assert _outcome(signed_file, 2, expected_agent=expected) == _outcome(
            signed_file, 1, expected_agent=expected)


def test_plan_uses_processes_only_when_asked_or_large(signed_file: dict[str, Any]) -> None:
    assert _parallel.plan_jobs(signed_file, None) == 1  # 60 records: serial
    assert _parallel.plan_jobs(signed_file, 2) == 2
    assert _parallel.plan_jobs(signed_file, 1) == 1
    assert _parallel.plan_jobs({"records": [{}]}, 4) == 1
    assert _parallel.plan_jobs("not a file", 4) == 1
    big: dict[str, Any] = {"records": [{}] * _parallel.PARALLEL_MIN_RECORDS}
    assert _parallel.plan_jobs(big, None) == min(_parallel.available_cpus(),
                                                 _parallel.PARALLEL_MIN_RECORDS) or 1


def test_a_threaded_process_stays_serial(signed_file: dict[str, Any]) -> None:
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        assert _parallel.plan_jobs(signed_file, 2) == 1
    finally:
        stop.set()
        worker.join()


def test_slices_cover_every_record_once() -> None:
    for count in (2, 3, 7, 100, 2001):
        for jobs in (2, 3, 4):
            slices = _parallel._bounds(count, jobs)
            assert len(slices) == jobs
            covered = [i for low, high in slices for i in range(low, high)]
            assert covered == list(range(count))


def test_the_verify_command_takes_jobs(signed_file: dict[str, Any], tmp_path: Any) -> None:
    import json
    import subprocess
    import sys

    good, bad = tmp_path / "good.json", tmp_path / "bad.json"
    good.write_text(json.dumps(signed_file), encoding="utf-8")
    tampered = copy.deepcopy(signed_file)
    tampered["records"][33]["body"] = "changed"
    bad.write_text(json.dumps(tampered), encoding="utf-8")

    def verify(*args: str) -> tuple[int, str]:
        done = subprocess.run([sys.executable, "-m", "memspec", "verify", *args, "--json"],
                              capture_output=True, text=True, timeout=120, check=False)
        return done.returncode, done.stdout

    for path in (good, bad):
        assert verify(str(path), "--jobs", "2") == verify(str(path), "--jobs", "1")
    assert verify(str(bad), "--jobs", "2")[0] == 1
    assert verify(str(good), "--jobs", "0")[0] == 2


def test_a_record_not_in_nfc_is_judged_the_same() -> None:
    """A record whose body is not NFC is valid (its signed bytes are normalized): the
    parent's file signature, checked over the encoder's bytes while the children work,
    is checked again over the canonical bytes once a child says its strings were not NFC."""
    from memspec._record import record_id, sign_record

    records = typical_records(40, seed=12)
    decomposed = {**records[5], "body": "Cafe\u0301 opens at nine"}
    records[5] = {**decomposed, "id": record_id(decomposed)}
    signed = memory_file(signed_records(records), signed=True)
    assert _outcome(signed, 2) == _outcome(signed, 1) == ("ok",)
    tampered = copy.deepcopy(signed)
    tampered["records"][0] = sign_record({**tampered["records"][0], "tags": ["x"]}, OTHER)
    assert _outcome(tampered, 2) == _outcome(tampered, 1) != ("ok",)


def test_a_child_that_dies_leaves_the_verdict_to_the_serial_path(
        signed_file: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    def dies(low: int, high: int, answer: Any) -> None:
        os._exit(3)

    monkeypatch.setattr(_parallel, "_child", dies)
    assert _outcome(signed_file, 2) == ("ok",)
    tampered = copy.deepcopy(signed_file)
    tampered["records"][1]["body"] = "changed"
    assert _outcome(tampered, 2) == _outcome(tampered, 1) != ("ok",)
