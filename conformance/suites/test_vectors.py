"""Every case of every vectors file, run against the engine as COMMON.md describes.

A case runs as: reset; put each ``setup`` record; call the group's operation
with ``args``; a valid case must answer every ``expected`` key with an equal
JSON value; an invalid case must be rejected with the case's error class, and
for operations that touch the store nothing may be written. A group's
``project`` names, per result key, the members each entry of that result list
is compared on (recall scores and ingest messages are the engine's own).
"""

from __future__ import annotations

from typing import Any

import pytest

from memspec._data import load_vectors, vector_files
from memspec.conformance._session import EngineSession, summarize

#: Operations whose rejection must leave the store unchanged.
STORE_BACKED = frozenset({
    "put", "apply_proposal", "resolve", "ingest", "consolidate", "decay", "redact", "load",
    "touch", "index", "observe", "falsify",
})


def json_equal(a: Any, b: Any) -> bool:
    """JSON equality: like ==, but true/false never equal 1/0 and 1 never equals 1.0."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


def project(value: Any, members: list[str] | None) -> Any:
    """``value`` with each object of the list reduced to ``members`` (unchanged if None)."""
    if members is None or not isinstance(value, list):
        return value
    return [{k: v for k, v in item.items() if k in members} if isinstance(item, dict) else item
            for item in value]


def _cases() -> list[Any]:
    params: list[Any] = []
    for name in vector_files():
        data = load_vectors(name)
        if not isinstance(data, dict) or "groups" not in data:
            continue
        for group in data["groups"]:
            for case in group["tests"]:
                reqs = list(case.get("requirements", []))
                if case["result"] == "invalid" and group["operation"] in STORE_BACKED and reqs:
                    reqs.append("PROTO-7")  # the runner checks that nothing was written
                marks = [pytest.mark.requirement(*reqs), pytest.mark.profile(group["profile"])]
                if case.get("setup"):
                    marks.append(pytest.mark.profile("store"))
                params.append(pytest.param(name, group, case, id=case["id"], marks=marks))
    return params


def _context(case: dict[str, Any]) -> str:
    flags = f" flags={case['flags']}" if case.get("flags") else ""
    return f"vector {case['id']} ({case.get('comment', '')}{flags})"


CASES = _cases()
if not CASES:
    pytest.skip("no vectors files are installed yet", allow_module_level=True)


@pytest.mark.parametrize(("vectors_file", "group", "case"), CASES)
def test_vector(
    engine: EngineSession, vectors_file: str, group: dict[str, Any], case: dict[str, Any]
) -> None:
    op = group["operation"]
    for rec in case.get("setup", []):
        engine.call("put", record=rec)
    if case["result"] == "valid":
        result = engine.request(op, case["args"])
        projection = group.get("project", {})
        for key, expected in case.get("expected", {}).items():
            assert key in result, (
                f"{_context(case)}: {op} result lacks {key!r} (has {sorted(result)})"
            )
            answered = project(result[key], projection.get(key))
            assert json_equal(answered, expected), (
                f"{_context(case)}: {op} answered {key} = {summarize(answered, 300)}, "
                f"expected {summarize(expected, 300)}"
            )
        return
    before = engine.snapshot() if op in STORE_BACKED else None
    try:
        engine.reject_request(op, case["error"], case["args"])
    except AssertionError as exc:
        raise AssertionError(f"{_context(case)}: {exc}") from None
    if before is not None:
        after = engine.snapshot()
        assert after == before, (
            f"{_context(case)}: {op} was rejected but the store changed "
            f"(before {summarize(before, 200)}, after {summarize(after, 200)})"
        )
