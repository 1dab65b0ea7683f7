"""Every case of every vectors file, run against the engine as vectors/README.md describes.

A case runs as: reset; put each ``setup`` record; call the group's operation
with ``args``; a valid case must answer every ``expected`` key with an equal
JSON value; an invalid case must be rejected with the case's error class. A
failure fails the requirement the case decides (its ``decides`` when it lists several,
SPEC 19.2) and is inconclusive for the others it lists. Two protocol requirements a case may
concern are judged by tests of their own, so that they fail only when the protocol
is what broke: PROTO-7 (for operations that touch the store, a rejection writes
nothing; it holds vacuously when the engine accepted, which is test_vector's
failure) and PROTO-8 (a case listing it, run over the process protocol, where the
message's number tokens must reach the engine; in process the kit hands over the
values it parsed itself, so there it is CJ-6 alone that the case judges). A group's
``project`` names, per result key, the members each entry of that result list
is compared on (recall scores and ingest messages are the engine's own), and a
group with ``placeholders`` names the ids the engine chooses by placeholders
(memspec.conformance._placeholders).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from memspec._errors import EngineError
from memspec.conformance._machines_observe import wrote_on_rejection
from memspec.conformance._outcomes import RequirementFailed, judges_input, untestable_reason
from memspec.conformance._placeholders import bind_placeholders
from memspec.conformance._session import EngineSession, summarize
from memspec.data import json_resource, operations_with, vector_files

#: Operations whose rejection must leave the store unchanged.
STORE_BACKED = operations_with("writes")
#: Requirements a vector may list that a test of their own judges (see the module docstring).
_OWN_TESTS = frozenset({"PROTO-7", "PROTO-8"})


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


def _cases(only: str | None = None) -> list[Any]:
    """Every vector case, with the requirements test_vector judges; or (``only``) the cases
    the PROTO-7 or PROTO-8 test judges, with that requirement alone."""
    params: list[Any] = []
    for name in vector_files():
        data = json_resource("vectors", name)
        if not isinstance(data, dict) or "groups" not in data:
            continue
        for group in data["groups"]:
            for case in group["tests"]:
                listed = list(case.get("requirements", []))
                if only == "PROTO-7":
                    if case["result"] != "invalid" or group["operation"] not in STORE_BACKED:
                        continue
                elif only == "PROTO-8":
                    if "PROTO-8" not in listed:
                        continue
                reqs = [only] if only else [r for r in listed if r not in _OWN_TESTS]
                marks = [pytest.mark.requirement(*reqs)]
                if not only and case.get("decides"):
                    marks.append(pytest.mark.decides(case["decides"]))
                if only == "PROTO-7":
                    # The store the rejection must leave alone, and the operation's profile;
                    # PROTO-7 is claim-conditional (SPEC 19.2, Appendix B), so for an engine
                    # without them the case is untestable, never left out.
                    marks.append(pytest.mark.profile("store", group["profile"]))
                else:
                    marks.append(pytest.mark.profile(group["profile"]))
                    if case.get("setup"):
                        marks.append(pytest.mark.profile("store"))
                    if case.get("requires_profiles"):
                        marks.append(pytest.mark.profile(*case["requires_profiles"]))
                params.append(pytest.param(name, group, case, id=case["id"], marks=marks))
    return params


def decided(case: Mapping[str, Any]) -> tuple[str, ...]:
    """The requirement a wrong answer to ``case`` fails: its ``decides`` when it lists several
    (the others are what it also exercises: inconclusive, SPEC 19.2), else the one it lists."""
    if case.get("decides"):
        return (str(case["decides"]),)
    own = tuple(r for r in case.get("requirements", []) if r not in _OWN_TESTS)
    return own or tuple(case.get("requirements", ()))


def _context(case: dict[str, Any]) -> str:
    flags = f" flags={case['flags']}" if case.get("flags") else ""
    return f"vector {case['id']} ({case.get('comment', '')}{flags})"


CASES = _cases()
REJECTIONS = _cases("PROTO-7")
NUMBER_TOKENS = _cases("PROTO-8")
if not CASES:
    pytest.skip("no vectors files are installed yet", allow_module_level=True)


def _run_case(engine: EngineSession, group: dict[str, Any], case: dict[str, Any],
              blamed: tuple[str, ...]) -> None:
    """Run one case; a wrong answer raises RequirementFailed naming ``blamed``."""
    op = group["operation"]
    for rec in case.get("setup", []):
        engine.call("put", record=rec)
    held = {str(rec["id"]) for rec in case.get("setup", [])}
    bound: dict[str, str] = {}
    if case["result"] == "valid":
        try:
            result = engine.request(op, case["args"])
        except EngineError as exc:
            raise RequirementFailed(blamed, f"{_context(case)}: {op} rejected a valid input "
                                            f"with {exc.code!r}: {exc.message}") from None
        projection = group.get("project", {})
        for key, expected in case.get("expected", {}).items():
            # A key whose value one listed requirement fixes alone fails that one.
            own = group.get("decides_by_key", {}).get(key)
            judged = (own,) if own in case.get("requirements", ()) else blamed
            if key not in result:
                raise RequirementFailed(
                    judged, f"{_context(case)}: {op} result lacks {key!r} (has {sorted(result)})")
            answered = project(result[key], projection.get(key))
            if group.get("placeholders"):
                expected = bind_placeholders(expected, answered, held, bound)
            if not json_equal(answered, expected):
                raise RequirementFailed(
                    judged, f"{_context(case)}: {op} answered {key} = "
                            f"{summarize(answered, 300)}, expected {summarize(expected, 300)}")
        return
    try:
        engine.reject_request(op, case["error"], case["args"])
    except AssertionError as exc:
        # Refusing malformed input is input strictness (SPEC 18.4 judges column, 19.2).
        raise RequirementFailed(blamed, f"{_context(case)}: {exc}",
                                strictness=judges_input(case["error"])) from None


@pytest.mark.parametrize(("vectors_file", "group", "case"), CASES)
def test_vector(
    engine: EngineSession, vectors_file: str, group: dict[str, Any], case: dict[str, Any]
) -> None:
    _run_case(engine, group, case, decided(case))


@pytest.mark.parametrize(("vectors_file", "group", "case"), NUMBER_TOKENS)
def test_vector_number_tokens(
    engine: EngineSession, vectors_file: str, group: dict[str, Any], case: dict[str, Any]
) -> None:
    """PROTO-8 for one case: over the protocol, the case's number tokens reach the engine
    as spelled and the engine judges the artifact by them."""
    if engine.mode != "process":
        pytest.skip(untestable_reason(
            "in process the kit hands the engine the values it parsed itself: there is no "
            "protocol reader to judge (the case judges CJ-6 in test_vector)"))
    _run_case(engine, group, case, ("PROTO-8",))


@pytest.mark.parametrize(("vectors_file", "group", "case"), REJECTIONS)
def test_vector_rejection_writes_nothing(
    engine: EngineSession, vectors_file: str, group: dict[str, Any], case: dict[str, Any]
) -> None:
    """PROTO-7 for one invalid case: if the engine rejects it, the store is unchanged.

    An engine that accepts the case fails the case's own requirements in test_vector;
    here it meets PROTO-7 vacuously, as nothing was rejected. For an engine that does not
    claim the operation's profile the case is not claimed, which for PROTO-7, claim-conditional
    (SPEC 19.2, Appendix B), counts as untestable: the engine has no such operation to reject
    (it answers it ``unsupported``, PROTO-4).
    """
    op = group["operation"]
    for rec in case.get("setup", []):
        engine.call("put", record=rec)
    before = engine.snapshot()
    try:
        engine.request(op, case["args"])
    except EngineError:
        after = engine.snapshot()
        if after != before:
            raise RequirementFailed(wrote_on_rejection(op), (
                f"{_context(case)}: {op} was rejected but the store changed "
                f"(before {summarize(before, 200)}, after {summarize(after, 200)})")) from None
