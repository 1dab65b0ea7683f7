"""canonical_json's accelerator: orjson behind a type walk, and an NFC test of UTF-8 text.

Everything here only ever answers "certainly the canonical bytes" or "ask the precise
path" (memspec._canonical), which alone words errors; the package works fully without
orjson, without the walk's C form (memspec._speedups, built where a compiler is) and with
``MEMSPEC_NO_ACCELERATOR=1``. tests/test_fastpaths.py proves each answer against the
precise path, and tests/test_speedups.py the C walk against the Python one.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Callable
from typing import Any

__all__ = ["NFC_QUICK_VERSIONS", "dict_plain", "list_plain", "load_orjson", "load_plain",
           "nfc_utf8", "plain"]

#: orjson's encoder and the options memspec calls it with (see load_orjson).
Dumps = Callable[[Any, None, int], bytes]


def load_orjson(reference: Callable[[Any], str]) -> tuple[Dumps | None, int]:
    """orjson.dumps and its options when orjson is installed and encodes a probe exactly
    as ``reference`` (the checked C encoder) does, else ``(None, 0)``.

    Used only on values of exact JSON types (``dict_plain``: no floats, enums, UUIDs
    or dates; bounded depth) whose text is no longer than the string limit; orjson
    itself refuses non-string and subclassed keys and values
    (``OPT_PASSTHROUGH_SUBCLASS``), integers outside +-(2**53 - 1)
    (``OPT_STRICT_INTEGER``) and lone surrogates. Its output is then the same text:
    keys sorted by code point (UTF-8 byte order is code point order), ``","``/``":"``
    separators, non-ASCII written raw, ``"``, ``\\`` and the controls below U+0020
    escaped the same way (``\\b \\f \\n \\r \\t``, else ``\\u00xx``). NFC is still
    judged on the text, and anything orjson refuses (a lone surrogate, say) takes the
    precise path. The caller calls ``dumps(value, None, option)``: positional, since a
    keyword or a functools.partial costs a fifth of the encoding of a typical record.
    """
    if os.environ.get("MEMSPEC_NO_ACCELERATOR"):
        return None, 0
    try:
        import orjson
    except ImportError:
        return None, 0
    dumps: Dumps = orjson.dumps
    option = orjson.OPT_SORT_KEYS | orjson.OPT_STRICT_INTEGER | orjson.OPT_PASSTHROUGH_SUBCLASS
    probe = {"b": [1, -2, None, True, False, "\u00e9\n\"\\\x00\x1f\x7f\u2028"],
             "a": {}, "\u00e9": [], "e\u0301": ("x", -(2**53 - 1)), "\U0001f680": ""}
    try:
        if dumps(probe, None, option) != reference(probe).encode("utf-8"):
            return None, 0  # pragma: no cover - an orjson that encodes differently
    except Exception:  # pragma: no cover - any surprise: keep the portable path
        return None, 0
    return dumps, option


# The accelerator's walk: only what orjson would encode although canonical JSON refuses it
# (floats, enums, UUIDs, dates, other objects) and the depth; orjson checks the rest.
# Nulls (tested without reading the object) and strings, the commonest values of a record,
# are tested first, and an empty container is judged here (only its depth can fail) rather
# than by a call.
# The loop is written out in both functions, not shared: a call per value would cost
# the id path more than the walk saves (measured by canonical-json-vs-orjson).
def dict_plain(value: dict[Any, Any], depth: int, max_depth: int) -> bool:
    """True when every value in ``value`` (recursively) is of an exact JSON type and no
    container lies ``max_depth`` or more levels deep; False asks the precise path."""
    if depth >= max_depth:
        return False
    for item in value.values():
        if item is None:
            continue
        sub = type(item)
        if sub is str:
            continue
        if sub is dict:
            if item:
                if not dict_plain(item, depth + 1, max_depth):
                    return False
            elif depth + 1 >= max_depth:
                return False
        elif sub is list or sub is tuple:
            if item:
                if not list_plain(item, depth + 1, max_depth):
                    return False
            elif depth + 1 >= max_depth:
                return False
        elif sub is not bool and sub is not int:
            return False
    return True


def list_plain(value: list[Any] | tuple[Any, ...], depth: int, max_depth: int) -> bool:
    """:func:`dict_plain` for an array."""
    if depth >= max_depth:
        return False
    for item in value:
        if item is None:
            continue
        sub = type(item)
        if sub is str:
            continue
        if sub is dict:
            if item:
                if not dict_plain(item, depth + 1, max_depth):
                    return False
            elif depth + 1 >= max_depth:
                return False
        elif sub is list or sub is tuple:
            if item:
                if not list_plain(item, depth + 1, max_depth):
                    return False
            elif depth + 1 >= max_depth:
                return False
        elif sub is not bool and sub is not int:
            return False
    return True


def plain(value: Any, max_depth: int) -> bool:
    """True when ``value`` is a dict, list or tuple that :func:`dict_plain` or
    :func:`list_plain` passes at level 0; False for anything else."""
    kind = type(value)
    if kind is dict:
        return dict_plain(value, 0, max_depth)
    if kind is list or kind is tuple:
        return list_plain(value, 0, max_depth)
    return False


#: Values the C walk must judge as :func:`plain` does before it is used (see load_plain).
_PLAIN_PROBES: tuple[tuple[Any, int, bool], ...] = (
    ({"a": [1, None, True, "x", {"b": ()}]}, 64, True), ({"a": 1.0}, 64, False),
    ([{"a": [[]]}], 3, False), ([{"a": [[]]}], 4, True), ("x", 64, False),
    ({"a": type("S", (str,), {})("x")}, 64, False), ((1, [2, [3]]), 2, False),
    ({"a": -(2**70), 1: "x"}, 64, True),  # integer range and keys are orjson's to refuse
)


def load_plain() -> Callable[[Any, int], bool]:
    """The C form of :func:`plain` (memspec._speedups) when it is built and judges the
    probes as :func:`plain` does, else :func:`plain` itself."""
    if os.environ.get("MEMSPEC_NO_ACCELERATOR"):
        return plain
    try:
        from memspec._speedups import plain as fast
    except ImportError:
        return plain
    try:
        if any(fast(value, depth) is not expected or plain(value, depth) is not expected
               for value, depth, expected in _PLAIN_PROBES):
            return plain  # pragma: no cover - a build that disagrees: keep the Python walk
    except Exception:  # pragma: no cover - any surprise: keep the Python walk
        return plain
    return fast


_ASCII = bytes(range(128))
#: The UTF-8 starts of every character that may compose with the one before it
#: (NFC_Quick_Check=Maybe: the second character of a canonical pair, composition
#: exclusions included, and the Hangul vowel and trailing jamo), and more: whole lead
#: bytes, every 4-byte character outside U+1F000-U+1FFFF. tests/test_fastpaths.py
#: derives the set from the running Unicode database and checks this covers it.
_MAYBE = re.compile(rb"[\xcc\xcd\xd6\xd7\xd9\xe0\xe1\xe3\xf1-\xf4]|\xf0[^\x9f]").search
#: The UTF-8 lead bytes of every block of characters (64 for a 2-byte lead, 4,096 for a
#: 3-byte one, 262,144 for a 4-byte one) that holds a character unsafe to judge alone:
#: NFC_Quick_Check No or Maybe, a nonzero canonical combining class, or a surrogate. A
#: character led by any other byte is class 0 and Quick_Check=Yes. tests/test_fastpaths.py
#: derives the set from the running Unicode database and checks this covers it.
_UNSAFE_LEADS = b"\xcc\xcd\xce\xd2\xd6\xd7\xd8\xd9\xdb\xdc\xdd\xdf\xe0\xe1\xe2\xe3\xea\xed\xef\xf0"
#: 1 for an unsafe lead byte, else 0: a translate table, since a table alone (no deletion)
#: is translate's fast loop.
_LEAD_CLASS = bytes(1 if byte in _UNSAFE_LEADS else 0 for byte in range(256))
#: Unicode versions whose characters _MAYBE and _UNSAFE_LEADS are checked to cover; under
#: another version nfc_utf8 tests the whole text.
NFC_QUICK_VERSIONS = frozenset({"14.0.0"})
_QUICK = unicodedata.unidata_version in NFC_QUICK_VERSIONS


def nfc_utf8(data: bytes) -> bool:
    """Whether the UTF-8 text ``data`` is in NFC: ``unicodedata.is_normalized`` of it.

    Most of a record's text is ASCII, and the per-character test costs more than the
    encoding; so the non-ASCII bytes are tested alone when that settles it. Why that is
    exact: UAX #15's quick check answers YES (and then the text is NFC) when no
    character is NFC_Quick_Check=No or Maybe and no two adjacent characters have
    canonical combining classes ``a > b > 0``. ASCII characters are Quick_Check=Yes and
    class 0, so they pass and never form such a pair; deleting them keeps every other
    character and every adjacency between two non-ASCII characters (UTF-8 sequences of
    non-ASCII characters hold no ASCII byte, so what is left is valid UTF-8 of those
    characters in order). With no Maybe character left (``_MAYBE``), is_normalized is
    the quick check itself, so True on the rest is YES on the rest, hence YES on the
    text. Commonest of all, no character of the rest has an unsafe lead byte
    (``_UNSAFE_LEADS``): then each is class 0 and Quick_Check=Yes, which is YES outright.
    Any other answer tests the whole text.
    """
    if data.isascii():
        return True
    if _QUICK:
        rest = data.translate(None, _ASCII)
        if b"\x01" not in rest.translate(_LEAD_CLASS):
            return True
        if _MAYBE(rest) is None and unicodedata.is_normalized("NFC", rest.decode("utf-8")):
            return True
    return unicodedata.is_normalized("NFC", data.decode("utf-8"))
