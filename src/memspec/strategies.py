"""Hypothesis strategies for fg-agent-memory wire objects, for engine authors' own tests.

Every strategy here generates values that memspec's own validators accept:
records pass :func:`memspec.validate_record`, memory files pass
:func:`memspec.validate_file` (and :func:`memspec.verify_file` when signed),
and all of them pass the published JSON Schemas. Records are plain wire
dicts in memspec's field order, with content-addressed ids computed by
:func:`memspec.record_id`. Signed values are signed with :data:`TEST_KEY`, a
fixed, public test key: never use it for anything but tests. Generated text
is drawn from :func:`text_alphabet`, the characters Unicode 14.0 assigns, so
its NFC (and every hash and signature over it) is the same under every
Unicode version (SPEC.md section 2.1, CJ-11).

Example::

    from hypothesis import given
    from memspec import strategies as ms

    @given(ms.records(types=["fact"], states=["active"]))
    def test_put_then_get(record): ...
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from hypothesis import strategies as st
from hypothesis.errors import InvalidArgument

from memspec._canonical import MAX_SAFE_INTEGER
from memspec._encoding import address_from_public_key
from memspec._file import FORMAT_VERSION, sign_file
from memspec._record import (
    OPTIONAL_FIELDS,
    RECORD_FIELDS,
    RECORD_STATES,
    RECORD_TYPES,
    birth_digest,
    record_id,
    sign_record,
)
from memspec._signing import SigningKey
from memspec._unicode import UNICODE_VERSION, assigned_in_unicode_14
from memspec.data import proposal_kinds, tombstone

__all__ = [
    "PROPOSAL_KINDS",
    "STRATEGIES",
    "TEST_KEY",
    "TEST_SEED",
    "addresses",
    "born_records",
    "confidences",
    "json_values",
    "memory_files",
    "proposals",
    "provenances",
    "reasons",
    "record_ids",
    "records",
    "text_alphabet",
    "timestamps",
    "tombstones",
]

#: The fixed seed of :data:`TEST_KEY` (bytes 0x00..0x1f, the published vectors' seed A).
TEST_SEED = bytes(range(32))
#: The public test key signed strategies sign with.
TEST_KEY = SigningKey(TEST_SEED)
PROPOSAL_KINDS = proposal_kinds()

_DEFINED = frozenset(RECORD_FIELDS) | frozenset(OPTIONAL_FIELDS)
_SOURCE_KINDS = ("conversation", "observation", "tool", "consolidation", "import")
_BODIES = (
    "The deploy pipeline runs on Fridays.",
    "Met Ana at the café to review the draft.",
    "Always rerun the vectors after a wire-format change.",
    "Der Kunde bevorzugt Rückrufe am Vormittag.",
    "東京のオフィスは月曜日に閉まっています。",
)
_REASONS = ("newer observation", "contradicted by the user", "no longer relevant", "merged")
#: Reasons made of blank-looking characters that are not ASCII whitespace, so still reasons.
_UNICODE_SPACE_REASONS = ("\u00a0", "\u3000", " \u2003\t")
#: The only characters that count as blank in a reason (SPEC.md section 1.2).
_BLANK = frozenset("\t\n\x0b\x0c\r ")
_EARLIEST = datetime(1, 1, 1)
_LATEST = datetime(9999, 12, 31, 23, 59, 59, 999999)
_ALPHABET = st.characters(codec="utf-8", exclude_categories=("Cn", "Cs"))
if unicodedata.unidata_version != UNICODE_VERSION:
    # Newer Unicode data assigns characters 14.0 does not; the filter is costly, so only here.
    _ALPHABET = _ALPHABET.filter(assigned_in_unicode_14)


def _nfc(text: str) -> str:
    return unicodedata.normalize("NFC", text)


def text_alphabet() -> st.SearchStrategy[str]:
    """Single characters that Unicode 14.0 assigns: no unassigned code point (``Cn``) and no
    surrogate (``Cs``).

    Text made only of these characters has the same NFC under every Unicode
    version, so canonical bytes, ids and signatures computed over it agree
    between implementations built on different Unicode data (SPEC.md section
    2.1). Pass it to ``st.text`` wherever a test generates free text::

        st.text(ms.text_alphabet(), max_size=20)

    The filter matters only on a Python newer than 3.11, whose Unicode data
    assigns characters that 14.0 does not.
    """
    return _ALPHABET


def _text(*, min_size: int = 0, max_size: int = 24) -> st.SearchStrategy[str]:
    """Text over :func:`text_alphabet` in NFC, so canonical JSON leaves it unchanged."""
    raw = st.text(_ALPHABET, min_size=min_size, max_size=max_size)
    return raw.map(_nfc).filter(lambda s: len(s) >= min_size)


def _is_reason(text: str) -> bool:
    return any(char not in _BLANK for char in text)


def _check_subset(name: str, given: Sequence[str], allowed: Sequence[str]) -> tuple[str, ...]:
    chosen = tuple(given)
    if not chosen or not set(chosen) <= set(allowed):
        raise InvalidArgument(f"{name} must be a non-empty selection of {list(allowed)}, "
                              f"not {list(chosen)}")
    return chosen


def json_values(*, max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Values canonical JSON can represent: null, booleans, integers within +-(2**53 - 1),
    NFC text (non-ASCII included, no lone surrogates) and arrays / objects of them
    (object keys in NFC)."""
    scalars = (
        st.none()
        | st.booleans()
        | st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
        | _text()
    )
    return st.recursive(
        scalars,
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(_text(max_size=8), children, max_size=4),
        max_leaves=max_leaves,
    )


def timestamps() -> st.SearchStrategy[str]:
    """Canonical timestamps ``YYYY-MM-DDTHH:MM:SS.mmmZ`` of valid instants in years 0001-9999."""
    moments = st.datetimes(min_value=_EARLIEST, max_value=_LATEST)
    return moments.map(_spell)


def _spell(moment: datetime) -> str:
    # Spelled here, independently of the code under test (strftime("%Y") is platform-dependent).
    return (f"{moment.year:04d}-{moment.month:02d}-{moment.day:02d}T{moment.hour:02d}:"
            f"{moment.minute:02d}:{moment.second:02d}.{moment.microsecond // 1000:03d}Z")


def addresses() -> st.SearchStrategy[str]:
    """``amp:key:`` addresses of arbitrary 32-byte public keys, leading-zero keys included."""
    keys = st.binary(min_size=32, max_size=32) | st.sampled_from(
        [bytes(32), b"\0\0\x01" + bytes(29), b"\xff" * 32]
    )
    return keys.map(address_from_public_key)


def record_ids() -> st.SearchStrategy[str]:
    """Well-formed record ids (``mem:`` + 32 lowercase hex digits) of no particular record."""
    return st.binary(min_size=16, max_size=16).map(lambda raw: "mem:" + raw.hex())


def confidences() -> st.SearchStrategy[str]:
    """Wire confidence strings: four fractional digits within [0, 1]."""
    return st.integers(0, 10_000).map(lambda n: f"{n // 10_000}.{n % 10_000:04d}")


def reasons() -> st.SearchStrategy[str]:
    """Reasons: strings holding a character other than ASCII whitespace (U+0009-U+000D,
    U+0020). Unicode spaces such as U+00A0 and U+3000 count as content, so some reasons
    look blank."""
    return (st.sampled_from(_REASONS) | st.sampled_from(_UNICODE_SPACE_REASONS)
            | _text(min_size=1).filter(_is_reason))


def provenances() -> st.SearchStrategy[dict[str, Any]]:
    """Provenance objects ``{kind, ref, agent}``: a non-empty kind, ref and agent optional."""
    return st.fixed_dictionaries({
        "kind": st.sampled_from(_SOURCE_KINDS) | _text(min_size=1, max_size=12),
        "ref": st.none() | _text(max_size=16),
        "agent": st.none() | addresses(),
    })


def _other_id(draw: st.DrawFn, *taken: str) -> str:
    # Step past taken ids instead of redrawing, so even the all-zero input yields distinct ids.
    number = int(draw(_RECORD_IDS)[4:], 16)
    while (candidate := f"mem:{number:032x}") in taken:
        number = (number + 1) % 2**128
    return candidate


def _ordered_times(draw: st.DrawFn, born: bool) -> tuple[str, str]:
    first, second = sorted([draw(_TIMESTAMPS), draw(_TIMESTAMPS)])
    return (first, first) if born else (first, second)


# Built once: constructing strategies inside every draw dominates generation time.
_TIMESTAMPS = timestamps()
_RECORD_IDS = record_ids()
_REASONS_S = reasons()
_CONFIDENCES = confidences()
_PROVENANCES = provenances()
_MAYBE_ADDRESS = st.none() | addresses()
_BODIES_S = st.sampled_from(_BODIES) | _text(min_size=1, max_size=64)
_SLOTS = st.dictionaries(_text(max_size=10), json_values(max_leaves=4), max_size=4)
_TAGS = st.lists(_text(min_size=1, max_size=12), max_size=3, unique=True)
_EXTENSIONS = st.dictionaries(
    (st.from_regex(r"x_[a-z]{1,8}", fullmatch=True) | _text(min_size=1, max_size=10))
    .filter(lambda name: name not in _DEFINED),
    json_values(max_leaves=4),
    max_size=2,
)
_STATE_REASONS = st.none() | st.just("") | _REASONS_S


@st.composite
def _record(
    draw: st.DrawFn,
    types: tuple[str, ...],
    states: tuple[str, ...],
    signed: bool | None,
    born: bool,
    supersedes: str | None = None,
) -> dict[str, Any]:
    rtype = draw(st.sampled_from(types))
    state = "active" if born else draw(st.sampled_from(states))
    created_at, updated_at = _ordered_times(draw, born)
    birth = {
        "type": rtype,
        "body": draw(_BODIES_S),
        "slots": draw(_SLOTS),
        "provenance": draw(_PROVENANCES),
        "created_at": created_at,
    }
    rid = record_id(birth)
    evidence: list[str] = []
    for _ in range(draw(st.integers(1 if rtype == "rule" else 0, 3))):
        evidence.append(_other_id(draw, rid, *evidence))
    if supersedes is None and not born and draw(st.booleans()):
        supersedes = _other_id(draw, rid)
    superseded_by = None
    if state == "superseded" or (state == "archived" and draw(st.booleans())):
        superseded_by = _other_id(draw, rid)
    transition = None
    if state == "transitional":
        sides = draw(st.permutations([rid, _other_id(draw, rid)]))
        transition = {"sides": list(sides), "reason": draw(_REASONS_S)}
    if state in ("superseded", "archived"):
        state_reason: str | None = draw(_REASONS_S)
    else:
        state_reason = draw(_STATE_REASONS)
    flagged = rtype == "rule" and not born and draw(st.booleans())
    record: dict[str, Any] = {
        "id": rid,
        "type": rtype,
        "body": birth["body"],
        "slots": birth["slots"],
        "state": state,
        "confidence": draw(_CONFIDENCES),
        "created_at": created_at,
        "updated_at": updated_at,
        "provenance": birth["provenance"],
        "evidence": evidence,
        "supersedes": supersedes,
        "superseded_by": superseded_by,
        "transition": transition,
        "state_reason": state_reason,
        "tags": draw(_TAGS),
        "flagged": flagged,
        "flag_reason": draw(_REASONS_S) if flagged else None,
        "signed_by": None,
        "signature": "",
    }
    if draw(st.integers(0, 3)) == 0 or (rtype == "episode" and draw(st.booleans())):
        record["occurred_at"] = draw(_TIMESTAMPS)
    if draw(st.integers(0, 3)) == 0:
        record.update(draw(_EXTENSIONS))
    if signed or (signed is None and draw(st.booleans())):
        record = sign_record(record, TEST_KEY)
    return record


def records(
    types: Sequence[str] = RECORD_TYPES,
    states: Sequence[str] = RECORD_STATES,
    *,
    signed: bool | None = False,
) -> st.SearchStrategy[dict[str, Any]]:
    """Valid wire records of the given types and states.

    Ids are the content address of the birth fields; timestamps are ordered
    (created_at <= updated_at); a transitional record carries a block whose
    sides are its own id and another; superseded and archived records carry
    a reason (and superseded_by where needed); rules carry evidence and are
    sometimes flagged with a reason. occurred_at (often on episodes),
    supersedes, tags, non-ASCII text and unknown extension fields appear
    sometimes. ``signed=True`` signs every record with :data:`TEST_KEY`,
    ``None`` signs some, ``False`` none.
    """
    chosen_types = _check_subset("types", types, RECORD_TYPES)
    chosen_states = _check_subset("states", states, RECORD_STATES)
    return _record(chosen_types, chosen_states, signed, born=False)


def born_records(types: Sequence[str] = RECORD_TYPES) -> st.SearchStrategy[dict[str, Any]]:
    """Records as they are born (REC-14): active, updated_at = created_at, no supersedes,
    superseded_by or transition, unflagged and unsigned."""
    return _record(_check_subset("types", types, RECORD_TYPES), ("active",), False, born=True)


@st.composite
def _tombstone(draw: st.DrawFn, types: tuple[str, ...]) -> dict[str, Any]:
    original = draw(_record(types, RECORD_STATES, False, born=False))
    reason = draw(_REASONS_S)
    now = max(original["updated_at"], draw(_TIMESTAMPS))
    return {
        "id": original["id"],
        "type": original["type"],
        **tombstone().fixed_values(),
        "created_at": original["created_at"],
        "updated_at": now,
        "evidence": original["evidence"],
        "supersedes": original["supersedes"],
        "superseded_by": original["superseded_by"],
        "transition": None,
        "state_reason": reason if draw(st.booleans()) else draw(_REASONS_S),
        "flagged": original["flagged"],
        "flag_reason": original["flag_reason"],
        "redacted": True,
        "redaction_reason": reason,
        "birth_digest": birth_digest(original),
    }


def tombstones(types: Sequence[str] = RECORD_TYPES) -> st.SearchStrategy[dict[str, Any]]:
    """Valid redaction tombstones of generated records.

    id, type, created_at and the link graph (evidence, supersedes,
    superseded_by) are the original's; the content is replaced by the fixed
    tombstone values (archived, body "[redacted]", empty slots and tags,
    redaction provenance, confidence "0.0000", unsigned) with redacted: true,
    a redaction_reason and the original's full birth_digest.
    """
    return _tombstone(_check_subset("types", types, RECORD_TYPES))


@st.composite
def _proposal(draw: st.DrawFn, kinds: tuple[str, ...]) -> dict[str, Any]:
    kind = draw(st.sampled_from(kinds))
    proposal: dict[str, Any] = {
        "kind": kind, "record": None, "target_id": None, "other_id": None, "reason": "",
    }
    if kind == "create":
        proposal["record"] = draw(_record(RECORD_TYPES, ("active",), False, born=True))
        proposal["reason"] = "" if draw(st.booleans()) else draw(_REASONS_S)
        return proposal
    proposal["reason"] = draw(_REASONS_S)
    target = draw(_RECORD_IDS)
    proposal["target_id"] = target
    if kind == "supersede":
        proposal["record"] = draw(_record(RECORD_TYPES, ("active",), False, born=True,
                                          supersedes=target))
    elif kind == "transition":
        proposal["other_id"] = _other_id(draw, target)
    return proposal


def proposals(kinds: Sequence[str] = PROPOSAL_KINDS) -> st.SearchStrategy[dict[str, Any]]:
    """Well-formed wire proposals ``{kind, record, target_id, other_id, reason}``.

    create carries a born record (see :func:`born_records`) and an optional
    reason; supersede a born successor whose ``supersedes`` is the target;
    transition two distinct ids; archive one id. supersede, transition and
    archive carry a non-empty reason. The ids name no stored record: the
    proposals are well formed, whether they apply depends on the store.
    """
    return _proposal(_check_subset("kinds", kinds, PROPOSAL_KINDS))


@st.composite
def _memory_file(draw: st.DrawFn, signed: bool | None, max_records: int) -> dict[str, Any]:
    entries = st.one_of(_record(RECORD_TYPES, RECORD_STATES, None, born=False),
                        _tombstone(RECORD_TYPES))
    listed = draw(st.lists(entries, max_size=max_records, unique_by=_by_id))
    memory_file: dict[str, Any] = {
        "format": FORMAT_VERSION,
        "agent": draw(_MAYBE_ADDRESS),
        "created_at": draw(_TIMESTAMPS),
        "records": listed,
        "signature": "",
    }
    if draw(st.integers(0, 3)) == 0:
        extra = draw(_EXTENSIONS)
        # "sequence" is a defined header member (ROLL-1), not free for extension data.
        memory_file.update({k: v for k, v in extra.items()
                            if k not in memory_file and k != "sequence"})
    if signed or (signed is None and draw(st.booleans())):
        memory_file = sign_file(memory_file, TEST_KEY)
    return memory_file


def _by_id(record: dict[str, Any]) -> str:
    rid: str = record["id"]
    return rid


def memory_files(
    *, signed: bool | None = False, max_records: int = 4
) -> st.SearchStrategy[dict[str, Any]]:
    """Valid MemoryFiles holding up to ``max_records`` records with distinct ids.

    Records are a mix of plain records (some signed with :data:`TEST_KEY`) and
    tombstones; unknown header fields appear sometimes. ``signed=True`` signs
    every file with :data:`TEST_KEY` (agent becomes its address), ``None``
    signs some, ``False`` none (agent is then an address or null).
    """
    if max_records < 0:
        raise InvalidArgument(f"max_records must be >= 0, not {max_records}")
    return _memory_file(signed, max_records)


#: Every public strategy factory by name (handy for parametrized tests).
STRATEGIES: dict[str, Callable[..., st.SearchStrategy[Any]]] = {
    "addresses": addresses,
    "born_records": born_records,
    "confidences": confidences,
    "json_values": json_values,
    "memory_files": memory_files,
    "proposals": proposals,
    "provenances": provenances,
    "reasons": reasons,
    "record_ids": record_ids,
    "records": records,
    "text_alphabet": text_alphabet,
    "timestamps": timestamps,
    "tombstones": tombstones,
}
