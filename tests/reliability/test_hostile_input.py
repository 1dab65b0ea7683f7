"""Hostile input: every parser and validator answers random and mutated input with a typed error.

Property-based tests (hypothesis) over canonical JSON, records, memory files,
proposals, signatures, addresses, search queries, the command line and the
process protocol. The only exceptions allowed to escape are memspec's typed
errors (MemspecError subclasses with a wire error class and a message saying
what is wrong); anything else (KeyError, TypeError, RecursionError, a
traceback from the CLI, a crashed protocol loop) fails the property.

The default run is short and derandomized (the same examples every time);
``MEMSPEC_LONG_FUZZ=1`` runs thousands of random examples per property.
Deterministic reproducers of the bugs these properties found live next to them,
so each stays fixed.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import sys
from collections.abc import Callable
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memspec import (
    ERROR_CLASSES,
    CanonicalJSONError,
    EncodingError,
    FileError,
    LimitError,
    MemspecError,
    RecordError,
    SignatureError,
    SigningKey,
    address_from_public_key,
    canonical_json,
    decode_signature,
    encode_signature,
    parse_json,
    public_key_from_address,
    sign_file,
    sign_record,
    signing_input,
    validate_file,
    validate_record,
    verify_by_address,
    verify_file,
    verify_record,
)
from memspec import strategies as ms
from memspec.cli import main as cli_main
from memspec.conformance import _builders as build
from memspec.protocol import WIRE_ERROR_CODES, serve
from memspec.reference.engine import create_engine
from memspec.reference.proposals import Proposal, apply_proposal
from memspec.reference.records import MemoryRecord
from memspec.reference.search import InMemorySearchIndex, SQLiteSearchIndex
from memspec.reference.search.sqlite_index import fts_query
from memspec.reference.stores import InMemoryRecordStore

LONG = os.environ.get("MEMSPEC_LONG_FUZZ") == "1"
fuzz = settings(
    max_examples=2_000 if LONG else 80,
    deadline=None,
    derandomize=not LONG,
    database=None,
    suppress_health_check=list(HealthCheck),
)
NOW = "2026-04-01T00:00:00.000Z"
LATER = "2026-04-02T00:00:00.000Z"
KEY = SigningKey(bytes(range(32)))
#: The same settings with fewer default examples, for the properties whose examples are costly
#: (each starts an engine, builds an argument parser or signs files).
fuzz_costly = settings(fuzz, max_examples=2_000 if LONG else 40)


def _record_pool() -> list[dict[str, Any]]:
    """Valid records of every shape (types, states, links, signatures, tombstones, extensions):
    the seeds the properties mutate. Built by hand because drawing records from
    ``memspec.strategies`` costs tens of milliseconds each; the long run adds them."""
    fact = build.record("fact", "the kettle is in the left cupboard", created_at=NOW,
                        tags=["kitchen"], slots={"room": "kitchen", "n": [1, 2]})
    other = build.record("fact", "the kettle is in the right cupboard", created_at=NOW)
    episode = build.record("episode", "met Ana at the café ☕", created_at=NOW, occurred_at=NOW,
                           provenance={"kind": "conversation", "ref": "chat-1",
                                       "agent": KEY.address})
    rule = build.record("rule", "kettles live in cupboards", created_at=NOW,
                        evidence=[fact["id"], other["id"]])
    block = build.transition_block(fact["id"], other["id"], "they disagree")
    tombstone = MemoryRecord.tombstone(MemoryRecord.model_validate(other), reason="forget it",
                                       now=LATER).model_dump()
    pool = [
        fact, other, episode, rule, tombstone,
        build.evolve(rule, LATER, flagged=True, flag_reason="no live evidence"),
        build.evolve(fact, LATER, state="transitional", transition=block),
        build.evolve(other, LATER, state="superseded", superseded_by=fact["id"],
                     state_reason="newer"),
        build.evolve(episode, LATER, state="archived", state_reason="faded"),
        sign_record(fact, KEY), sign_record(episode, KEY),
        build.record("procedure", "Ünïcödé 🦉 steps", created_at=NOW,
                     extra={"x_vendor": {"kept": True, "n": 7}}),
    ]
    for record in pool:
        validate_record(record)
    return pool


POOL = _record_pool()
STORED = [MemoryRecord.model_validate(r) for r in POOL[:3]]
FILES = [
    build.memory_file(POOL[:4], created_at=NOW),
    sign_file(build.memory_file(POOL[4:9] + POOL[10:11], created_at=LATER,
                                extra={"x_header": [1, "two"]}), KEY),
    sign_file(build.memory_file(POOL[9:], created_at=LATER), KEY),
]
PROPOSALS = [
    build.proposal("create", build.record("fact", "a new fact", created_at=NOW)),
    build.proposal("supersede", build.record("fact", "the kettle moved", created_at=LATER,
                                             supersedes=POOL[0]["id"]),
                   target_id=POOL[0]["id"], reason="moved"),
    build.proposal("transition", target_id=POOL[0]["id"], other_id=POOL[1]["id"],
                   reason="they disagree"),
    build.proposal("archive", target_id=POOL[2]["id"], reason="old"),
]
records = (st.sampled_from(POOL) | ms.records(signed=None) | ms.tombstones() if LONG
           else st.sampled_from(POOL))
files = (st.sampled_from(FILES) | ms.memory_files(signed=None) if LONG
         else st.sampled_from(FILES))
signed_files = (st.sampled_from(FILES[1:]) | ms.memory_files(signed=True) if LONG
                else st.sampled_from(FILES[1:]))
proposals = (st.sampled_from(PROPOSALS) | ms.proposals() if LONG
             else st.sampled_from(PROPOSALS))


def typed(call: Callable[..., Any], *allowed: type[MemspecError]) -> Any:  # lambdas bind defaults
    """Run ``call``: a result, or a typed memspec error (of ``allowed``) naming the problem."""
    try:
        return call()
    except MemspecError as exc:
        assert isinstance(exc, allowed or (MemspecError,)), (
            f"{type(exc).__name__} escaped where {[a.__name__ for a in allowed]} was expected: "
            f"{exc}")
        assert exc.code in ERROR_CLASSES, f"untyped error class {exc.code!r}: {exc}"
        assert str(exc).strip(), "an error with no message"
        return exc


# -- hostile values ----------------------------------------------------------------------------

any_text = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()),
                   max_size=40)
scalars = (st.none() | st.booleans() | st.integers() | st.floats() | any_text
           | st.binary(max_size=8) | st.decimals(allow_nan=True)
           | st.sampled_from([object(), 2**53, -(2**53), -0.0, float("inf"), Decimal("1.5"),
                              "\ud800", "e\u0301", "\ufeff", "\x00", "mem:" + "0" * 32]))
junk = st.recursive(
    scalars,
    lambda kids: (st.lists(kids, max_size=4) | st.tuples(kids, kids)
                  | st.dictionaries(any_text | st.integers() | st.none(), kids, max_size=4)
                  | st.frozensets(st.integers(), max_size=3)),
    max_leaves=10,
)


@st.composite
def mutated(draw: st.DrawFn, base: st.SearchStrategy[Any]) -> Any:
    """A valid value with a few random fields replaced, deleted or added, anywhere in it."""
    value = json.loads(json.dumps(draw(base)))
    for _ in range(draw(st.integers(1, 3))):
        holder: Any = value
        while isinstance(holder, dict | list) and holder and draw(st.booleans()):
            keys = list(holder) if isinstance(holder, dict) else list(range(len(holder)))
            child = holder[draw(st.sampled_from(keys))]
            if not isinstance(child, dict | list):
                break
            holder = child
        action = draw(st.sampled_from(["set", "delete", "add"]))
        if isinstance(holder, dict) and holder and action != "add":
            key = draw(st.sampled_from(list(holder)))
            if action == "delete":
                del holder[key]
            else:
                holder[key] = draw(junk)
        elif isinstance(holder, dict):
            holder[draw(any_text)] = draw(junk)
        elif isinstance(holder, list) and holder and action != "add":
            holder[draw(st.integers(0, len(holder) - 1))] = draw(junk)
        elif isinstance(holder, list):
            holder.append(draw(junk))
    return value


@st.composite
def mangled_bytes(draw: st.DrawFn, base: st.SearchStrategy[bytes]) -> bytes:
    """Bytes with random flips, insertions, deletions and truncations."""
    data = bytearray(draw(base))
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["flip", "insert", "delete", "truncate"]))
        at = draw(st.integers(0, max(0, len(data) - 1)))
        if op == "flip" and data:
            data[at] ^= draw(st.integers(1, 255))
        elif op == "insert":
            data[at:at] = draw(st.binary(min_size=1, max_size=4)
                               | st.sampled_from([b"\\ud800", b"1e2", b"-0", b'"":1,', b"[" * 70,
                                                  b"\xef\xbb\xbf", b"NaN", b"\\u0000"]))
        elif op == "delete" and data:
            del data[at:at + draw(st.integers(1, 4))]
        else:
            del data[at:]
    return bytes(data)


# -- canonical JSON ----------------------------------------------------------------------------


@fuzz
@given(st.binary(max_size=200) | mangled_bytes(ms.json_values().map(canonical_json)))
def test_parse_json_bytes(data: bytes) -> None:
    result = typed(lambda: parse_json(data), CanonicalJSONError, LimitError)
    if not isinstance(result, MemspecError):
        assert parse_json(canonical_json(result)) == result


@fuzz
@given(any_text | st.text(alphabet='{}[]":,-0123456789.eE truefalsn\\u', max_size=60))
def test_parse_json_text(text: str) -> None:
    typed(lambda: parse_json(text), CanonicalJSONError, LimitError)


@fuzz
@given(junk)
def test_canonical_json_values(value: Any) -> None:
    data = typed(lambda: canonical_json(value), CanonicalJSONError, LimitError)
    if isinstance(data, bytes):
        assert canonical_json(parse_json(data)) == data  # canonical output always parses


# -- records and files -------------------------------------------------------------------------


@fuzz
@given(junk | records | mutated(records))
def test_validate_record(record: Any) -> None:
    result = typed(lambda: validate_record(record), RecordError)
    if not isinstance(result, MemspecError):
        typed(lambda: verify_record(record), SignatureError)
        assert MemoryRecord.model_validate(record).model_dump() == record


@fuzz
@given(mangled_bytes(records.map(canonical_json)))
def test_record_text(data: bytes) -> None:
    value = typed(lambda: parse_json(data), CanonicalJSONError, LimitError)
    if not isinstance(value, MemspecError):
        typed(lambda: validate_record(value), RecordError)


@fuzz
@given(junk | files | mutated(files))
def test_validate_and_verify_file(memory_file: Any) -> None:
    typed(lambda: validate_file(memory_file), FileError)
    typed(lambda: verify_file(memory_file), FileError, SignatureError)
    typed(lambda: verify_file(memory_file, require_signature=False), FileError, SignatureError)


def _payload_bytes(memory_file: Any) -> bytes | None:
    try:
        return canonical_json({k: v for k, v in memory_file.items() if k != "signature"})
    except (MemspecError, AttributeError):
        return None


@fuzz_costly
@given(signed_files, st.data())
def test_any_change_to_a_signed_file_is_refused(memory_file: dict[str, Any],
                                                 data: st.DataObject) -> None:
    changed = data.draw(mutated(st.just(memory_file)))
    result = typed(lambda: verify_file(changed), FileError, SignatureError)
    same_payload = _payload_bytes(changed) == _payload_bytes(memory_file)
    same_signature = isinstance(changed, dict) and changed.get("signature") == memory_file[
        "signature"]
    if not (same_payload and same_signature):
        assert isinstance(result, MemspecError), "a changed signed file verified"


# -- proposals ---------------------------------------------------------------------------------


@fuzz_costly
@given(junk | proposals | mutated(proposals))
def test_proposals(wire: Any) -> None:
    store = InMemoryRecordStore()
    for record in STORED:
        store.put(record)
    before = {rid: store.history(rid) for rid in store.ids()}
    proposal = typed(lambda: Proposal.model_validate(wire))
    if isinstance(proposal, Proposal):
        written = typed(lambda: apply_proposal(store, proposal, now=NOW))
        if isinstance(written, MemspecError):  # OP-3: a rejected proposal writes nothing
            assert {rid: store.history(rid) for rid in store.ids()} == before
    for rid, versions in before.items():  # and no proposal rewrites history
        assert store.history(rid)[:len(versions)] == versions


# -- signatures and addresses ------------------------------------------------------------------


@fuzz
@given(any_text | st.binary(max_size=100).map(lambda b: encode_signature(b)) | junk)
def test_decode_signature(text: Any) -> None:
    raw = typed(lambda: decode_signature(text), EncodingError)
    if isinstance(raw, bytes):
        assert len(raw) == 64 and encode_signature(raw) == text


contexts = st.sampled_from(["record", "memory-file", "conformance-report"]) | any_text


@fuzz
@given(ms.addresses() | any_text | junk, contexts, ms.json_values() | junk,
       st.binary(min_size=64, max_size=64).map(encode_signature) | any_text | junk)
def test_verify_by_address(address: Any, context: str, payload: Any, signature: Any) -> None:
    typed(lambda: verify_by_address(address, context, payload, signature),
          SignatureError, CanonicalJSONError, LimitError)


@fuzz
@given(st.text("123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0OIl+/", max_size=60)
       .map(lambda s: "amp:key:" + s) | any_text | junk)
def test_addresses(address: Any) -> None:
    key = typed(lambda: public_key_from_address(address), EncodingError)
    if isinstance(key, bytes):
        assert len(key) == 32 and address_from_public_key(key) == address


def test_signing_input_with_unhashable_context_is_a_typed_error() -> None:
    for context in (["record"], {"record": 1}):
        with pytest.raises(SignatureError):
            signing_input(context, {})  # type: ignore[arg-type]
        with pytest.raises(SignatureError):
            verify_by_address(KEY.address, context, {},  # type: ignore[arg-type]
                              KEY.sign("record", {}))


def test_sign_file_and_verify_record_reject_non_objects() -> None:
    with pytest.raises(RecordError):
        verify_record([])  # type: ignore[arg-type]
    with pytest.raises(FileError):
        sign_file([], KEY)  # type: ignore[arg-type]


# -- search queries ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def indexes() -> list[Any]:
    found: list[Any] = [InMemorySearchIndex(), SQLiteSearchIndex()]
    for body in ("the kettle is in the left cupboard", "OR NOT NEAR", 'quote " star * caret ^'):
        record = MemoryRecord.create("fact", body, {"kind": "test"}, created_at=NOW,
                                     tags=("x-tag",))
        for index in found:
            index.index(record)
    return found


@fuzz
@given(any_text | st.text('"*^:(){}+-NEAROTAD \'', max_size=30) | junk,
       st.integers(-3, 5) | st.sampled_from([2**70, True]) | junk)
def test_search_queries(indexes: list[Any], query: Any, k: Any) -> None:
    for index in indexes:
        result = typed(lambda index=index: index.candidates(query, k), EncodingError, LimitError)
        if isinstance(result, tuple):
            assert len(result) <= k
    if isinstance(query, str):
        assert re.fullmatch(r'(?:"[^"\s]+"(?: OR "[^"\s]+")*)?', fts_query(query))


# -- the command line --------------------------------------------------------------------------

SUBCOMMANDS = ["validate", "verify", "id", "canonicalize", "fingerprint", "diff", "merge",
               "keygen", "sign"]
OPTIONS = ["--json", "--allow-unsigned", "--hex", "--records", "--force", "--prefer", "first",
           "--now", "2026-01-01T00:00:00Z", "-o", "--key", "--help", "--version", "-", "",
           "--bogus", "-x"]


def _safe_token(text: str) -> bool:
    """Random argv words stay inside the test's directory and clear of the known OS-error
    bugs (an output path that is a directory or empty, a name over NAME_MAX)."""
    return ("\x00" not in text and "/" not in text and text not in ("", ".", "..")
            and len(text.encode("utf-8", "surrogatepass")) < 100)


@pytest.fixture
def cli_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    signed = sign_file({"format": "fg-agent-memory/0.1", "agent": None, "created_at": NOW,
                        "records": [], "signature": ""}, KEY)
    samples = {
        "file.json": canonical_json(signed),
        "record.json": canonical_json(MemoryRecord.create(
            "fact", "a", {"kind": "t"}, created_at=NOW).model_dump()),
        "junk.json": b"\xff{[",
        "lines.jsonl": b"{}\n[]\n1\n",
        "key.json": json.dumps({"kind": "memspec-ed25519-seed",
                                "seed_hex": KEY.seed.hex()}).encode(),
    }
    for name, data in samples.items():
        (tmp_path / name).write_bytes(data)
    return tmp_path


@fuzz_costly
@given(st.lists(st.sampled_from(SUBCOMMANDS) | st.sampled_from(OPTIONS)
                | st.sampled_from(["file.json", "record.json", "junk.json", "lines.jsonl",
                                   "key.json", "missing.json", "out.json"])
                | any_text.filter(_safe_token), max_size=6),
       st.binary(max_size=60))
def test_cli_random_argv(cli_dir: Path, argv: list[str], stdin: bytes) -> None:
    out, err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8"), io.StringIO()
    fake_stdin = io.TextIOWrapper(io.BytesIO(stdin), encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err), \
            _patched(sys, "stdin", fake_stdin):
        try:
            code = cli_main(argv)
        except SystemExit as exc:  # argparse: --help, --version and usage errors
            code = exc.code if isinstance(exc.code, int) else 2
    assert code in (0, 1, 2), f"exit code {code} for {argv}"
    assert "Traceback" not in err.getvalue()


@contextlib.contextmanager
def _patched(owner: Any, name: str, value: Any) -> Any:
    old = getattr(owner, name)
    setattr(owner, name, value)
    try:
        yield
    finally:
        setattr(owner, name, old)


@pytest.mark.parametrize("argv", [
    pytest.param(["validate", "a" * 5000], id="name-too-long"),
    pytest.param(["keygen", "-o", "no-such-dir/agent.key"], id="output-dir-missing"),
    pytest.param(["canonicalize", "file.json", "-o", "no-such-dir/out.json"],
                 id="canonicalize-output-dir-missing"),
    pytest.param(["canonicalize", "file.json", "-o", "."], id="output-is-cwd"),
    pytest.param(["canonicalize", "file.json", "-o", ""], id="output-empty"),
    pytest.param(["keygen", "-o", "adir", "--force"], id="output-is-a-directory"),
])
def test_cli_os_errors_are_one_line_messages(cli_dir: Path, argv: list[str]) -> None:
    (cli_dir / "adir").mkdir()
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        code = cli_main(argv)
    assert code in (1, 2) and "error" in err.getvalue()


# -- the process protocol ----------------------------------------------------------------------

OPERATIONS = ["hello", "bye", "reset", "canonicalize", "validate_record", "record_id", "put",
              "get", "history", "list", "search", "recall", "load", "export", "apply_proposal",
              "lifecycle", "verify_file", "sign_record", "redact", "decay", "consolidate",
              "no-such-op", "", "op_get", "__class__"]
requests = st.fixed_dictionaries(
    {"id": st.integers(0, 2**31) | junk, "op": st.sampled_from(OPERATIONS) | junk},
    optional={"args": st.dictionaries(
        st.sampled_from(["text", "record", "id", "query", "k", "file", "verify", "now",
                         "proposal", "protocol", "value", "seed_hex", "state"]),
        ms.json_values() | records | ms.record_ids() | ms.timestamps() | files | proposals,
        max_size=4) | junk})


def _line(request: Any) -> bytes:
    try:
        return json.dumps(request, ensure_ascii=False, default=repr).encode(
            "utf-8", "surrogatepass")
    except (TypeError, ValueError):
        return repr(request).encode("utf-8", "surrogatepass")


@fuzz_costly
@given(st.lists(requests.map(_line) | mangled_bytes(requests.map(_line)) | st.binary(max_size=40),
                min_size=1, max_size=6))
def test_protocol_answers_every_line_with_a_well_formed_message(lines: list[bytes]) -> None:
    lines = [line.replace(b"\n", b" ").replace(b"\r", b" ") for line in lines]
    inp, out = io.BytesIO(b"\n".join(lines) + b"\n"), io.BytesIO()
    assert serve(create_engine(), inp, out) == 0
    answers = [json.loads(line) for line in out.getvalue().splitlines()]
    assert len(answers) == _answered(lines), "a request line went unanswered"
    for answer in answers:
        assert set(answer) == ({"id", "ok", "result"} if answer["ok"]
                               else {"id", "ok", "error"})
        if not answer["ok"]:
            error = answer["error"]
            assert error["code"] in WIRE_ERROR_CODES and error["message"]
            assert error["code"] != "internal", f"engine bug: {error['message']}"


def _answered(lines: list[bytes]) -> int:
    """How many responses serve owes: one per non-blank line, up to and including a bye."""
    count = 0
    for line in lines:
        if not line.strip():
            continue
        count += 1
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if (isinstance(message, dict) and message.get("op") == "bye"
                and type(message.get("id")) is int and isinstance(message.get("args", {}), dict)):
            break
    return count


def test_protocol_survives_a_deeply_nested_line() -> None:
    out = io.BytesIO()
    inp = io.BytesIO(b"[" * 100_000 + b"\n" + b'{"id":1,"op":"bye","args":{}}\n')
    assert serve(create_engine(), inp, out) == 0
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["ok"] is False and first["error"]["code"] in ("protocol", "limit")
    assert second == {"id": 1, "ok": True, "result": {}}


# -- the atheris harnesses stay working --------------------------------------------------------


def _fuzz_targets() -> Any:
    folder = str(Path(__file__).resolve().parents[2] / "fuzz")
    sys.path.insert(0, folder)
    try:
        import targets
    finally:
        sys.path.remove(folder)
    return targets


@pytest.mark.parametrize("name", ["canonical", "record", "file", "encodings", "protocol"])
def test_fuzz_targets_accept_their_seeds(name: str) -> None:
    targets = _fuzz_targets()
    corpus = targets.seeds(name)
    assert corpus, f"no seeds for {name}"
    step = max(1, len(corpus) // 60)  # a sample keeps the protocol target quick
    for data in corpus[::step]:
        targets.TARGETS[name](data)
        targets.TARGETS[name](data[: len(data) // 2])
