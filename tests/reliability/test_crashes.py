"""Writers killed with SIGKILL at random moments lose no acknowledged write and tear nothing.

For the file store and the SQLite store, a forked writer creates records and
appends versions (to two contended ids and to its own records) as fast as the
store allows, reporting each acknowledged version to the parent over a pipe. The
parent kills it with SIGKILL after a random delay, then checks that the store
opens, every version on the medium parses and validates (nothing torn or half
written), version numbers have no gaps, and every acknowledged version is
present, intact, at the number ``put`` returned. Repeated on one store: ~50 kills
per store by default, 500 with ``MEMSPEC_LONG_KILL=1``.
"""

from __future__ import annotations

import contextlib
import os
import re
import tempfile
from pathlib import Path

import pytest

from memspec import StoreError
from memspec.reference.stores import FileRecordStore
from tests.reliability._workers import STORE_KINDS, base_record, kill_rounds, version_of

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork (POSIX)")
LONG = os.environ.get("MEMSPEC_LONG_KILL") == "1"
ROUNDS = 500 if LONG else 50


@pytest.mark.requirement("STORE-7", "STORE-12", "STORE-2")
@pytest.mark.parametrize("kind", STORE_KINDS)
def test_sigkilled_writers_lose_no_acknowledged_version(
        kind: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    report = kill_rounds(kind, tmp_path, ROUNDS, seed=20260301 + len(kind),
                         full_every=10 if not LONG else 50)
    assert report.child_errors == []
    assert report.kills + report.exited_before_kill == ROUNDS
    # Writers run forever, so every round must have ended in a kill.
    assert report.kills == ROUNDS
    assert report.acknowledged > 0, "no writer got a version acknowledged before its kill"
    with capsys.disabled():
        print(f"\n[reliability] crashes {kind}: {ROUNDS} writers, {report.kills} SIGKILLs "
              f"survived, {report.acknowledged} versions acknowledged, {report.found} versions "
              f"found ({report.found - report.acknowledged} written but unacknowledged), "
              f"{report.leftovers} temp files left behind")


def test_file_store_ignores_a_torn_temp_file(tmp_path: Path) -> None:
    """A crash mid-write leaves a partial temp file: readers never see it as a version."""
    store = FileRecordStore(tmp_path / "records")
    record = base_record("torn")
    store.put(record)
    directory = tmp_path / "records" / record.id[4:]
    full = record.canonical_bytes()
    (directory / ".tmp-crash.part").write_bytes(full[: len(full) // 2])
    assert [v.canonical_bytes() for v in store.history(record.id)] == [full]
    later = version_of(record, "after-crash", 1)
    assert store.put(later) == 2
    assert store.get(record.id) == later


def test_file_store_refuses_a_torn_version_file_by_name(tmp_path: Path) -> None:
    """Were a version file ever torn (a medium fault, not a crash), reading names it."""
    store = FileRecordStore(tmp_path / "records")
    record = base_record("torn-version")
    store.put(record)
    path = tmp_path / "records" / record.id[4:] / "000001.json"
    path.write_bytes(record.canonical_bytes()[:40])
    with pytest.raises(StoreError, match=re.escape(str(path))):
        store.get(record.id)


def test_a_killed_writer_between_temp_and_link_leaves_no_version() -> None:
    """A writer killed after writing its temp file but before linking adds no version."""
    with tempfile.TemporaryDirectory() as root:
        store = FileRecordStore(Path(root) / "records")
        record = base_record("unlinked")
        store.put(record)
        directory = Path(root) / "records" / record.id[4:]
        with contextlib.suppress(FileExistsError):
            (directory / ".tmp-killed.part").write_bytes(
                version_of(record, "ghost", 1).canonical_bytes())
        assert len(store.history(record.id)) == 1
        assert store.ids() == (record.id,)


@pytest.mark.parametrize("damage", ["version-is-a-directory", "root-is-a-file"])
def test_a_damaged_file_store_is_a_store_error(tmp_path: Path, damage: str) -> None:
    if damage == "root-is-a-file":
        (tmp_path / "records").write_bytes(b"not a directory")
        with pytest.raises(StoreError):
            FileRecordStore(tmp_path / "records")
        return
    store = FileRecordStore(tmp_path / "records")
    record = base_record("damaged")
    store.put(record)
    (tmp_path / "records" / record.id[4:] / "000002.json").mkdir()
    with pytest.raises(StoreError):
        store.get(record.id)
