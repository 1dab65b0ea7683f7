"""Tampering: every tamper class of spec/tamper.json, against signed files, unsigned files of
signed records and the reference stores, detected exactly where the table says.

The table (spec/tamper.json, rendered to docs/tamper.md) is the claim; these tests
are the proof. Each test is parametrized by tamper class id (and variant and
scenario), runs the attack, and asserts the outcome the table gives for it:
*refused* by every verifying read path with an error naming the file or the
record and nothing written, refused only by a witness-keeping loader, or
(documented limitations) not detected at all.
"""

from __future__ import annotations

import copy
import json
import shutil
import sqlite3
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest

from memspec import (
    CONTEXT_MEMORY_FILE,
    CONTEXT_RECORD,
    MemspecError,
    SigningKey,
    canonical_json,
    file_payload,
    parse_json,
    sign_file,
    sign_record,
    signed_payload,
    verify_file,
)
from memspec._requirements import load_requirements
from memspec._rollback import Witness, sign_with_sequence, verify_fresh
from memspec.conformance import _builders as build
from memspec.data import json_resource
from memspec.reference.engine import create_engine
from memspec.reference.memory import Memory, export_file, load_file
from memspec.reference.records import MemoryRecord
from memspec.reference.stores import FileRecordStore, InMemoryRecordStore, SQLiteRecordStore

ROOT = Path(__file__).resolve().parents[2]
TABLE: Mapping[str, Any] = json_resource("spec", "tamper.json")
CLASSES = {entry["id"]: entry for entry in TABLE["classes"]}
AGENT = SigningKey(bytes(range(100, 132)))
ATTACKER = SigningKey(bytes(range(200, 232)))
T = [f"2026-07-0{day}T00:00:00.000Z" for day in range(1, 10)]


# -- the agent's memory ------------------------------------------------------------------------


def _born(body: str, at: str) -> dict[str, Any]:
    return build.record("fact", body, created_at=at,
                        provenance={"kind": "observation", "ref": None, "agent": AGENT.address})


R1 = sign_record(_born("the kettle is in the left cupboard", T[0]), AGENT)
R2_OLD = sign_record(_born("standup starts at nine", T[0]), AGENT)
R2 = sign_record(build.evolve(R2_OLD, T[1], tags=["moved"], confidence="0.8000"), AGENT)
R3 = sign_record(_born("the spare key is under the blue pot", T[2]), AGENT)
R4 = sign_record(_born("Ana prefers tea", T[2]), AGENT)
HISTORY = {R1["id"]: [R1], R2["id"]: [R2_OLD, R2], R3["id"]: [R3], R4["id"]: [R4]}
LATEST = [versions[-1] for _, versions in sorted(HISTORY.items())]


def _header(records: list[dict[str, Any]], at: str, **extra: Any) -> dict[str, Any]:
    return build.memory_file(records, created_at=at, agent=AGENT.address,
                             extra={"x_header": {"kept": True}, **extra})


# The exporter's history: an older snapshot (sequence 1), then the current one (sequence 2);
# the holder accepted the current one, so its witness is at 2.
_OLD_RECORDS = sorted([R1, R2_OLD], key=lambda r: r["id"])
OLD_SIGNED, _W1 = sign_with_sequence(_header(_OLD_RECORDS, T[2]), AGENT, Witness())
CURRENT_SIGNED, HOLDER = sign_with_sequence(_header(LATEST, T[3]), AGENT, _W1)
OLD_UNSIGNED = _header(_OLD_RECORDS, T[2], sequence=1)
CURRENT_UNSIGNED = _header(LATEST, T[3], sequence=2)


def _stray(variant: str) -> dict[str, Any]:
    record = _born("the agent never wrote this", T[4])
    if variant == "attacker-signed":
        return sign_record(record, ATTACKER)
    if variant == "forged-signature":
        return {**record, "signed_by": AGENT.address,
                "signature": ATTACKER.sign(CONTEXT_RECORD, signed_payload(record, AGENT.address))}
    return record


def _retagged(record: dict[str, Any], key: SigningKey | None = None) -> dict[str, Any]:
    changed = {**copy.deepcopy(record), "tags": ["tampered"]}
    return sign_record({**changed, "signed_by": None, "signature": ""}, key) if key else changed


# -- the attacks on files ----------------------------------------------------------------------


def _index(memory_file: dict[str, Any], record_id: str) -> int:
    return next(i for i, r in enumerate(memory_file["records"]) if r["id"] == record_id)


def tamper_file(cls: str, variant: str, base: dict[str, Any], signed: bool) -> dict[str, Any]:
    """The attack ``cls`` (``variant``) on a copy of ``base``; the signature is kept unless
    the attack is to replace it."""
    f = copy.deepcopy(base)
    records = f["records"]
    if cls == "content-tamper":
        i = _index(f, R1["id"])
        if variant == "birth-field":
            records[i]["body"] = "the kettle is in the garage"
        else:
            records[i]["tags"] = ["tampered"]
    elif cls == "tail-truncation":
        del records[-1:]
    elif cls == "middle-deletion":
        del records[1]
    elif cls == "reordering":
        records[0], records[1] = records[1], records[0]
    elif cls == "forged-insertion":
        records.append(_stray(variant))
    elif cls == "cross-context-replay":
        if signed:
            f["signature"] = AGENT.sign(CONTEXT_RECORD, file_payload(f))
        else:
            i = _index(f, R1["id"])
            records[i]["signature"] = AGENT.sign(
                CONTEXT_MEMORY_FILE, signed_payload(records[i], AGENT.address))
    elif cls == "record-rollback":
        records[_index(f, R2["id"])] = copy.deepcopy(R2_OLD)
    elif cls == "metadata-tamper":
        changes = {"created_at": T[8], "agent": ATTACKER.address,
                   "extension": None, "sequence": 99}
        key = "x_header" if variant == "extension" else variant
        f[key] = changes[variant] if variant != "extension" else {"kept": False}
    elif cls == "snapshot-rollback":
        f = copy.deepcopy(OLD_SIGNED if signed else OLD_UNSIGNED)
    elif cls == "key-substitution":
        i = _index(f, R1["id"])
        records[i] = _retagged(records[i], ATTACKER)
        if signed:
            f = sign_file({**f, "signature": ""}, ATTACKER)
    else:  # pragma: no cover - the coverage test keeps this unreachable
        raise AssertionError(f"no attack for {cls}")
    return f


#: Every tamper class tamper_file implements (the coverage test compares it with the table).
FILE_ATTACKS = ("content-tamper", "tail-truncation", "middle-deletion", "reordering",
                "forged-insertion", "cross-context-replay", "record-rollback", "metadata-tamper",
                "snapshot-rollback", "key-substitution")


# -- the read paths of a file ------------------------------------------------------------------


Loader = Callable[[dict[str, Any]], list[str]]


def _loaders(tmp_path: Path, verify: bool, *, persistent: bool) -> dict[str, Loader]:
    """Each loader loads a file and returns the ids now stored (raises when it refuses).

    ``persistent`` adds the loaders that write to disk (the porcelain over a directory,
    engines over the file and SQLite stores); they verify exactly as the in-memory
    ones do, and cost fsyncs when they accept.
    """

    def core(f: dict[str, Any]) -> list[str]:
        verify_file(f, require_signature=verify)
        return [r["id"] for r in f["records"]]

    def porcelain(f: dict[str, Any], on_disk: bool = False) -> list[str]:
        source, target = tmp_path / "incoming.json", tmp_path / "memory"
        shutil.rmtree(target, ignore_errors=True)
        source.write_bytes(canonical_json(f))
        try:
            with Memory.load(source, path=target if on_disk else None,
                             verify=verify) as memory:
                return list(memory.store.ids())
        except MemspecError:
            assert not target.exists() or FileRecordStore(target / "records").ids() == (), (
                "refused but wrote")
            raise

    def engine(kind: str, **extra: Any) -> Callable[[dict[str, Any]], list[str]]:
        def load(f: dict[str, Any]) -> list[str]:
            instance = create_engine(kind)
            try:
                try:
                    instance.call("load", {"file": f, "verify": verify, **extra})
                except MemspecError:
                    assert instance.call("iterate", {})["records"] == [], "refused but wrote"
                    raise
                return [r["id"] for r in instance.call("iterate", {})["records"]]
            finally:
                instance.close()
        return load

    def witnessed(f: dict[str, Any]) -> list[str]:
        store = InMemoryRecordStore()
        try:
            verify_fresh(f, HOLDER, require_signature=verify)
        except MemspecError:
            assert store.ids() == ()
            raise
        load_file(store, f, verify=verify)
        return list(store.ids())

    loaders: dict[str, Loader] = {"verify_file": core, "Memory.load": porcelain,
                                  "engine-memory": engine("memory"), "witness-loader": witnessed}
    if verify:
        # The holder knows whose memory this is (FILE-11); only a signed file can satisfy that.
        loaders["agent-loader"] = engine("memory", expected_agent=AGENT.address)
    if persistent:
        loaders.update({"Memory.load(path)": lambda f: porcelain(f, on_disk=True),
                        "engine-file": engine("file"), "engine-sqlite": engine("sqlite")})
    return loaders


def _names_it(error: MemspecError, f: dict[str, Any], record_level: bool) -> bool:
    text = str(error)
    ids = {r.get("id") for r in f.get("records", []) if isinstance(r, dict)} | {R2["id"]}
    if any(isinstance(rid, str) and rid in text for rid in ids):
        return True
    return not record_level and ("memory-file" in text or "memory file" in text)


def _cases(scenario: str) -> list[Any]:
    out = []
    for entry in TABLE["classes"]:
        cell = entry[scenario]
        for variant in entry.get("variants", ["default"]):
            out.append(pytest.param(entry["id"], variant, cell,
                                    id=f"{entry['id']}-{variant}-{scenario}"))
    return out


def _refused(cell: dict[str, Any], variant: str) -> bool:
    return cell["outcome"] == "refused" or (
        cell["outcome"] == "partial" and variant in cell.get("refused", []))


@pytest.mark.parametrize(("cls", "variant", "cell"),
                         _cases("signed-file") + _cases("unsigned-file"))
def test_tamper_class_on_a_file(cls: str, variant: str, cell: dict[str, Any],
                                request: pytest.FixtureRequest, tmp_path: Path) -> None:
    signed = request.node.callspec.id.endswith("-signed-file")
    base = CURRENT_SIGNED if signed else CURRENT_UNSIGNED
    tampered = tamper_file(cls, variant, base, signed)
    assert tampered != base
    # The on-disk loaders verify exactly as these do: test_refusals_write_nothing_to_disk runs
    # them on every refused attack, test_untampered_files_load_everywhere on the originals.
    loaders = _loaders(tmp_path, verify=signed, persistent=False)
    for name, loader in loaders.items():
        refuse = _refused(cell, variant) or (cell["outcome"], name) in {
            ("witness", "witness-loader"), ("expected-agent", "agent-loader")}
        if refuse:
            with pytest.raises(MemspecError) as info:
                loader(copy.deepcopy(tampered))
            assert info.value.code in ("signature", "file"), (name, info.value)
            assert _names_it(info.value, tampered, record_level=not signed), (name, info.value)
        else:
            assert loader(copy.deepcopy(tampered)), f"{name} refused {cls}/{variant}"


@pytest.mark.parametrize("signed", [True, False], ids=["signed-file", "unsigned-file"])
def test_untampered_files_load_everywhere(signed: bool, tmp_path: Path) -> None:
    base = CURRENT_SIGNED if signed else CURRENT_UNSIGNED
    for name, loader in _loaders(tmp_path, verify=signed, persistent=True).items():
        assert loader(copy.deepcopy(base)) == sorted(HISTORY), name


def test_refusals_write_nothing_to_disk(tmp_path: Path) -> None:
    """The loaders over the file and SQLite stores (engine and porcelain) refuse every attack
    the table says a verifying load refuses, and leave their stores empty."""
    refused = [(c, v, cell) for c, v, cell in (p.values for p in _cases("signed-file"))
               if _refused(cell, v)]
    assert len({c for c, _, _ in refused}) >= 8
    engines = {kind: create_engine(kind) for kind in ("file", "sqlite")}
    try:
        for cls, variant, _ in refused:
            tampered = tamper_file(cls, variant, CURRENT_SIGNED, signed=True)
            for kind, engine in engines.items():
                with pytest.raises(MemspecError) as info:
                    engine.call("load", {"file": copy.deepcopy(tampered), "verify": True})
                assert info.value.code in ("signature", "file"), (kind, cls, variant)
                assert engine.call("iterate", {})["records"] == [], (kind, cls, variant)
            on_disk = _loaders(tmp_path, verify=True, persistent=True)["Memory.load(path)"]
            with pytest.raises(MemspecError):
                on_disk(copy.deepcopy(tampered))
    finally:
        for engine in engines.values():
            engine.close()


# -- the attacks on the stores at rest ---------------------------------------------------------


class RawStore:
    """A reference store's medium, edited directly as an attacker with disk access would."""

    def __init__(self, kind: str, root: Path) -> None:
        self.kind, self.root = kind, root

    def versions(self, record_id: str) -> list[bytes]:
        if self.kind == "file":
            folder = self.root / "records" / record_id[4:]
            return [p.read_bytes() for p in sorted(folder.glob("[0-9]*.json"))]
        with sqlite3.connect(self.root / "records.sqlite") as conn:
            rows = conn.execute("SELECT payload FROM history WHERE id = ? ORDER BY version",
                                (record_id,)).fetchall()
        return [str(row[0]).encode() for row in rows]

    def set_versions(self, record_id: str, versions: list[bytes]) -> None:
        """Make ``versions`` the whole history of ``record_id`` (none: the record is gone)."""
        if self.kind == "file":
            folder = self.root / "records" / record_id[4:]
            shutil.rmtree(folder, ignore_errors=True)
            if versions:
                folder.mkdir()
            for number, data in enumerate(versions, 1):
                (folder / f"{number:06d}.json").write_bytes(data)
            return
        with sqlite3.connect(self.root / "records.sqlite") as conn:
            for table in ("history", "records", "record_tags"):
                conn.execute(f"DELETE FROM {table} WHERE id = ?", (record_id,))
            for number, data in enumerate(versions, 1):
                conn.execute("INSERT INTO history VALUES (?, ?, ?)",
                             (record_id, number, data.decode()))
            if versions:
                latest = json.loads(versions[-1])
                conn.execute("INSERT INTO records VALUES (?, ?, ?, ?, ?)",
                             (record_id, latest["state"], latest["type"], versions[-1].decode(),
                              len(versions)))
                conn.executemany("INSERT INTO record_tags VALUES (?, ?)",
                                 [(record_id, tag) for tag in latest["tags"]])


def _store(kind: str, root: Path) -> Any:
    return (FileRecordStore(root / "records") if kind == "file"
            else SQLiteRecordStore(root / "records.sqlite"))


def tamper_store(cls: str, variant: str, raw: RawStore) -> bool:
    """Run attack ``cls`` on the medium; False when the class has no meaning for a store."""
    ids = sorted(HISTORY)
    r1 = raw.versions(R1["id"])
    if cls == "content-tamper":
        latest = parse_json(r1[-1])
        if variant == "birth-field":
            latest["body"] = "the kettle is in the garage"
        else:
            latest["tags"] = ["tampered"]
        raw.set_versions(R1["id"], [*r1[:-1], canonical_json(latest)])
    elif cls == "tail-truncation":
        raw.set_versions(ids[-1], [])
    elif cls == "middle-deletion":
        raw.set_versions(ids[1], [])
    elif cls == "reordering":
        raw.set_versions(R2["id"], raw.versions(R2["id"])[::-1])
    elif cls == "forged-insertion":
        stray = _stray(variant)
        raw.set_versions(stray["id"], [canonical_json(stray)])
    elif cls == "cross-context-replay":
        latest = parse_json(r1[-1])
        latest["signature"] = AGENT.sign(CONTEXT_MEMORY_FILE,
                                         signed_payload(latest, AGENT.address))
        raw.set_versions(R1["id"], [canonical_json(latest)])
    elif cls == "record-rollback":
        raw.set_versions(R2["id"], raw.versions(R2["id"])[:-1])
    elif cls == "snapshot-rollback":
        for rid in ids:
            raw.set_versions(rid, [canonical_json(v) for v in HISTORY[rid]
                                   if v in (R1, R2_OLD)])
    elif cls == "key-substitution":
        raw.set_versions(R1["id"], [canonical_json(_retagged(R1, ATTACKER))])
    else:
        return False
    return True


def store_read_path(kind: str, root: Path) -> list[str]:
    """Open the store, read every history, export it and verify every signed record."""
    store = _store(kind, root)
    try:
        for rid in store.ids():
            for version in store.history(rid):
                MemoryRecord.model_validate(version.model_dump())
        exported = export_file(store, now=T[8])
        verify_file(exported, require_signature=False)
        return [r["id"] for r in exported["records"]]
    finally:
        store.close()


@pytest.fixture(scope="module")
def pristine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """One store of each kind holding the agent's memory, built once and copied per test."""
    roots = {}
    for kind in ("file", "sqlite"):
        root = tmp_path_factory.mktemp(f"pristine-{kind}")
        store = _store(kind, root)
        for versions in HISTORY.values():
            for version in versions:
                store.put(MemoryRecord.model_validate(version))
        store.close()
        assert store_read_path(kind, root) == sorted(HISTORY)
        roots[kind] = root
    return roots


@pytest.mark.parametrize(("cls", "variant", "cell"), _cases("store"))
@pytest.mark.parametrize("kind", ["file", "sqlite"])
def test_tamper_class_on_a_store(cls: str, variant: str, cell: dict[str, Any], kind: str,
                                 tmp_path: Path, pristine: dict[str, Path]) -> None:
    tmp_path.rmdir()
    shutil.copytree(pristine[kind], tmp_path)
    applied = tamper_store(cls, variant, RawStore(kind, tmp_path))
    if cell["outcome"] == "n/a":
        assert not applied
        return
    assert applied
    if _refused(cell, variant):
        with pytest.raises(MemspecError) as info:
            store_read_path(kind, tmp_path)
        text = str(info.value)
        assert any(rid in text or rid[4:] in text for rid in (R1["id"], _stray(variant)["id"])), (
            f"the error does not name the record: {text}")
    else:
        assert store_read_path(kind, tmp_path)


# -- the table itself --------------------------------------------------------------------------


def test_every_tamper_class_in_the_table_is_run_by_a_test() -> None:
    tested = {param.values[0] for param in _cases("signed-file") + _cases("unsigned-file")}
    assert tested == set(CLASSES) == set(FILE_ATTACKS)
    for entry in TABLE["classes"]:
        for scenario in TABLE["scenarios"]:
            cell = entry[scenario]
            assert cell["outcome"] in TABLE["outcomes"], (entry["id"], scenario)
            assert cell["where"].strip(), (entry["id"], scenario)
            if cell["outcome"] == "partial":
                assert set(cell["refused"]) < set(entry["variants"]), entry["id"]
    first_eight = [e["id"] for e in TABLE["classes"]][:8]
    assert all(CLASSES[c]["signed-file"]["outcome"] == "refused" for c in first_eight)
    assert CLASSES["snapshot-rollback"]["signed-file"]["outcome"] == "witness"
    assert CLASSES["key-substitution"]["signed-file"]["outcome"] == "expected-agent"


def test_the_table_cites_only_known_requirements() -> None:
    known = {requirement.id for requirement in load_requirements()}
    for entry in TABLE["classes"]:
        for scenario in TABLE["scenarios"]:
            for rid in entry[scenario]["requirements"]:
                assert rid in known or rid.startswith("ROLL-"), (entry["id"], rid)


def test_docs_tamper_page_is_generated_from_the_table() -> None:
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_tamper_table
    finally:
        sys.path.remove(str(ROOT / "tools"))
    page = ROOT / "docs" / "tamper.md"
    assert page.read_text(encoding="utf-8") == gen_tamper_table.render(dict(TABLE)), (
        "docs/tamper.md is stale: run python tools/gen_tamper_table.py")
