"""legality.json, lifecycle.json and proposals.json.

Every expected record here is an explicit edit of its input, written out from
the spec's rules (SPEC.md sections 8 and 9):
each new version keeps its id, gets updated_at = now and loses its signature.
No engine computes these values.
"""

from __future__ import annotations

import json
from typing import Any

from _vectorlib.fixtures import (
    KEY_A,
    ROOT,
    T0,
    T1,
    T2,
    T3,
    case,
    edit,
    evolve,
    group,
    load_published,
    make,
    sign,
    vector_file,
)
from _vectorlib.records import tombstone

NOW = T3
WHY = "The operator confirmed the change."

F1 = make("fact", "The deploy target is staging.", slots={"deploy target": "staging"},
          tags=("deploy",), created_at=T0)
F2 = make("fact", "The deploy target is production.", slots={"deploy target": "production"},
          tags=("deploy",), created_at=T1)
F3 = make("fact", "The deploy target is production-eu.", slots={"deploy target":
                                                                 "production-eu"},
          tags=("deploy",), created_at=T2, supersedes=F1["id"])
F4 = make("fact", "Deploys need a change ticket.", created_at=T1)
F5 = make("fact", "Deploys need no change ticket.", created_at=T1)
E1 = make("episode", "Deployed to staging on Monday.", occurred_at="2025-12-29T09:00:00.000Z",
          confidence="0.7000")
E2 = make("episode", "Deployed to staging on Tuesday.", occurred_at="2025-12-30T09:00:00.000Z",
          confidence="0.7000")
R1 = make("rule", "Deploy to staging before production.", evidence=(E1["id"], E2["id"]),
          confidence="0.8000", created_at=T1)


# --- the rules, as explicit edits ------------------------------------------------------------

def supersede(old: dict[str, Any], successor: dict[str, Any], reason: str,
              now: str = NOW) -> dict[str, Any]:
    """SUP-2: the old record becomes superseded, naming its successor, with the reason."""
    return evolve(old, now, state="superseded", superseded_by=successor["id"],
                  state_reason=reason)


def begin(a: dict[str, Any], b: dict[str, Any], reason: str,
          now: str = NOW) -> tuple[dict[str, Any], dict[str, Any]]:
    """TRN-3: both sides become transitional carrying the same block, sides in given order."""
    block = {"sides": [a["id"], b["id"]], "reason": reason}
    return (evolve(a, now, state="transitional", transition=block),
            evolve(b, now, state="transitional", transition=block))


def resolve(winner: dict[str, Any], loser: dict[str, Any], reason: str,
            now: str = NOW) -> tuple[dict[str, Any], dict[str, Any]]:
    """RES-2: the winner returns to active, the loser is superseded by the winner."""
    return (evolve(winner, now, state="active", transition=None, state_reason=reason),
            evolve(loser, now, state="superseded", superseded_by=winner["id"], transition=None,
                   state_reason=reason))


def archive(rec: dict[str, Any], reason: str, now: str = NOW) -> dict[str, Any]:
    """LC-3, TRN-2: archived with the reason; a transition block goes with the state."""
    return evolve(rec, now, state="archived", transition=None, state_reason=reason)


def flag(rule: dict[str, Any], reason: str, now: str = NOW) -> dict[str, Any]:
    """RULE-2, RULE-6: flagged with a reason; the state is untouched."""
    return evolve(rule, now, flagged=True, flag_reason=reason)


def unflag(rule: dict[str, Any], now: str = NOW) -> dict[str, Any]:
    """RULE-3: the flag and its reason are cleared."""
    return evolve(rule, now, flagged=False, flag_reason=None)


# Stored states used as inputs.
PAIR_WHY = "Conflicting deploy targets."
F1T, F2T = begin(F1, F2, PAIR_WHY, T2)
F4T, F5T = begin(F4, F5, "Conflicting ticket rules.", T2)
F1_SUP = supersede(F1, F2, "Production replaced staging.", T2)
F1_ARCH = archive(F1, "Decayed.", T2)
F4_ARCH = archive(F4, "Decayed.", T2)
R1_FLAGGED = flag(R1, "No live evidence.", T2)


# --- legality --------------------------------------------------------------------------------

def _legality() -> dict[str, Any]:
    name = "legality"
    table = json.loads((ROOT / "spec" / "legality.json").read_text(encoding="utf-8"))
    published = load_published("fg-agent-memory-0.1.json")["lifecycle"]["legality"]
    ours = [{"from": t["from"], "to": t["to"], "legal": t["legal"]} for t in table["transitions"]]
    assert ours == published, "spec/legality.json differs from the published table"
    tests = [case(f"{name}/{t['from']}-to-{t['to']}", t["condition"],
                  ["published", "legal" if t["legal"] else "illegal"],
                  sorted(set(t["requirements"]) | {"LC-1"}), {"from": t["from"], "to": t["to"]},
                  expected={"legal": t["legal"]})
             for t in table["transitions"]]
    notes = {
        "published": "The pair and its answer are in the published legality vectors "
                     "(spec/legality.json holds the same 16 answers).",
        "legal": "The legality table allows this transition (under its stated condition).",
        "illegal": "The legality table forbids this transition.",
    }
    return vector_file(name, "The complete lifecycle legality table: all 16 from/to pairs of "
                       "the four states, 7 legal.", notes,
                       [group("table", "from, to -> legal", "is_legal", "lifecycle", tests)])


# --- lifecycle functions ---------------------------------------------------------------------

def _lc(cid: str, comment: str, flags: list[str], reqs: list[str], op: str,
        records: list[dict[str, Any]], *, reason: str | None = WHY,
        missing: list[str] | None = None, expected: list[dict[str, Any]] | None = None,
        error: str | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"operation": op, "records": records}
    if reason is not None:
        args["reason"] = reason
    if missing is not None:
        args["missing"] = missing
    args["now"] = NOW
    return case(f"lifecycle/{cid}", comment, flags, reqs, args,
                expected=None if expected is None else {"records": expected}, error=error)


def _lifecycle() -> dict[str, Any]:
    f3_other = make("fact", "The deploy target is production-us.", created_at=T2,
                    supersedes=F4["id"])
    sup = [
        _lc("supersede", "An active record superseded by its successor", [],
            ["SUP-1", "SUP-2", "LC-3", "LC-5"], "supersede", [F1, F3],
            expected=[supersede(F1, F3, WHY)]),
        _lc("supersede-signed", "A signed record's new version is unsigned", ["signed-input"],
            ["SUP-2", "LC-6"], "supersede", [sign(F1, KEY_A), F3],
            expected=[supersede(F1, F3, WHY)]),
        _lc("supersede-reject-not-referencing", "The successor's supersedes is null",
            ["rejected"], ["SUP-1"], "supersede", [F1, F2], error="lifecycle"),
        _lc("supersede-reject-references-other", "The successor supersedes another record",
            ["rejected"], ["SUP-1"], "supersede", [F1, f3_other], error="lifecycle"),
        _lc("supersede-reject-empty-reason", "An empty reason", ["rejected", "no-reason"],
            ["LC-3"], "supersede", [F1, F3], reason="", error="lifecycle"),
        _lc("supersede-reject-no-reason", "No reason argument", ["rejected", "no-reason"],
            ["LC-3"], "supersede", [F1, F3], reason=None, error="lifecycle"),
        _lc("supersede-reject-transitional", "A transitional record is superseded only by "
            "resolution", ["rejected"], ["SUP-5"], "supersede", [F1T, F3], error="lifecycle"),
        _lc("supersede-reject-archived", "archived is terminal", ["rejected"], ["LC-2"],
            "supersede", [F1_ARCH, F3], error="lifecycle"),
        _lc("supersede-reject-superseded", "superseded -> superseded is not a transition",
            ["rejected"], ["LC-1", "SUP-5"], "supersede", [F1_SUP, F3], error="lifecycle"),
    ]
    trn = [
        _lc("begin-transition", "Two active records become transitional with one block", [],
            ["TRN-1", "TRN-3", "LC-5"], "begin_transition", [F1, F2],
            expected=list(begin(F1, F2, WHY))),
        _lc("begin-transition-order", "sides follow the order of the records", [],
            ["TRN-1", "TRN-3"], "begin_transition", [F2, F1],
            expected=list(begin(F2, F1, WHY))),
        _lc("begin-transition-signed", "Signed sides come out unsigned", ["signed-input"],
            ["TRN-3", "LC-6"], "begin_transition", [sign(F1, KEY_A), sign(F2, KEY_A)],
            expected=list(begin(F1, F2, WHY))),
        _lc("begin-transition-reject-same", "A record cannot contradict itself", ["rejected"],
            ["TRN-4"], "begin_transition", [F1, F1], error="lifecycle"),
        _lc("begin-transition-reject-superseded", "One side is superseded", ["rejected"],
            ["TRN-4"], "begin_transition", [F1_SUP, F2], error="lifecycle"),
        _lc("begin-transition-reject-transitional", "One side is already transitional",
            ["rejected"], ["TRN-4", "LC-1"], "begin_transition", [F1T, F4], error="lifecycle"),
        _lc("begin-transition-reject-archived", "One side is archived", ["rejected"],
            ["TRN-4", "LC-2"], "begin_transition", [F4_ARCH, F2], error="lifecycle"),
        _lc("begin-transition-reject-empty-reason", "An empty reason",
            ["rejected", "no-reason"], ["TRN-3"], "begin_transition", [F1, F2], reason="",
            error="lifecycle"),
    ]
    f1_other_reason = edit(F1T, transition={**F1T["transition"], "reason": "Another reason."})
    res = [
        _lc("resolve-transition", "F2 wins: F2 active again, F1 superseded by F2", [],
            ["RES-1", "RES-2", "LC-5"], "resolve_transition", [F2T, F1T],
            expected=list(resolve(F2T, F1T, WHY))),
        _lc("resolve-transition-first-side-wins", "The first side of the block wins", [],
            ["RES-1", "RES-2"], "resolve_transition", [F1T, F2T],
            expected=list(resolve(F1T, F2T, WHY))),
        _lc("resolve-transition-reject-not-partners", "Sides of two different blocks",
            ["rejected"], ["RES-1"], "resolve_transition", [F2T, F4T], error="lifecycle"),
        _lc("resolve-transition-reject-block-differs", "Same sides, different block reasons",
            ["rejected"], ["RES-1"], "resolve_transition", [F2T, f1_other_reason],
            error="lifecycle"),
        _lc("resolve-transition-reject-winner-active", "The winner is not transitional",
            ["rejected"], ["RES-1"], "resolve_transition", [F2, F1T], error="lifecycle"),
        _lc("resolve-transition-reject-same", "Winner and loser are one record", ["rejected"],
            ["RES-1"], "resolve_transition", [F1T, F1T], error="lifecycle"),
        _lc("resolve-transition-reject-empty-reason", "An empty reason",
            ["rejected", "no-reason"], ["RES-1", "LC-3"], "resolve_transition", [F2T, F1T],
            reason="", error="lifecycle"),
    ]
    arc = [
        _lc("archive-active", "active -> archived", [], ["LC-3", "LC-5"], "archive", [F4],
            expected=[archive(F4, WHY)]),
        _lc("archive-superseded", "superseded -> archived keeps superseded_by", [],
            ["LC-3", "LC-4"], "archive", [F1_SUP], expected=[archive(F1_SUP, WHY)]),
        _lc("archive-transitional", "transitional -> archived drops the block", [],
            ["LC-3", "TRN-2"], "archive", [F1T], expected=[archive(F1T, WHY)]),
        _lc("archive-signed", "A signed record's archived version is unsigned",
            ["signed-input"], ["LC-6"], "archive", [sign(F4, KEY_A)],
            expected=[archive(F4, WHY)]),
        _lc("archive-reject-archived", "archived is terminal", ["rejected"], ["LC-2"],
            "archive", [F4_ARCH], error="lifecycle"),
        _lc("archive-reject-empty-reason", "An empty reason", ["rejected", "no-reason"],
            ["LC-3"], "archive", [F4], reason="", error="lifecycle"),
        _lc("archive-reject-spaces-reason", "A reason of spaces only", ["rejected", "no-reason",
                                                                       "blank-reason"],
            ["LC-3"], "archive", [F4], reason="   ", error="lifecycle"),
        _lc("supersede-reject-ascii-whitespace-reason", "A reason of tab, line feed, line "
            "tabulation, form feed, carriage return and space", ["rejected", "no-reason",
                                                                 "blank-reason"],
            ["LC-3"], "supersede", [F1, F3], reason="\t\n\x0b\x0c\r ", error="lifecycle"),
        _lc("archive-no-break-space-reason", "U+00A0 is not ASCII whitespace: a reason",
            ["unicode-space-reason"], ["LC-3"], "archive", [F4], reason="\u00a0",
            expected=[archive(F4, "\u00a0")]),
    ]
    e1_arch, e2_sup = archive(E1, "Decayed.", T2), supersede(E2, E1, "Duplicate.", T2)
    e1_trans = edit(begin(E1, E2, "Disputed.", T2)[0])
    r1_sup = supersede(R1, F4, "Replaced.", T2)
    e1_tomb = tombstone(E1, "Personal data.", T2)
    rf = "refresh_rule_flag"
    flg = [
        _lc("refresh-live-unchanged", "All evidence active and the rule unflagged: returned "
            "unchanged (no new version)", ["flag-unchanged"], ["RULE-3"], rf, [R1, E1, E2],
            expected=[R1]),
        _lc("refresh-flag-all-invalidated", "One evidence archived, one superseded",
            ["flag-reason"], ["RULE-2", "RULE-6"], rf, [R1, e1_arch, e2_sup],
            expected=[flag(R1, WHY)]),
        _lc("refresh-flag-missing-and-archived", "One archived, one known to be missing",
            ["flag-reason", "missing-evidence"], ["RULE-2"], rf, [R1, e1_arch],
            missing=[E2["id"]], expected=[flag(R1, WHY)]),
        _lc("refresh-flag-all-missing", "Every evidence record is missing",
            ["flag-reason", "missing-evidence"], ["RULE-2"], rf, [R1],
            missing=[E1["id"], E2["id"]], expected=[flag(R1, WHY)]),
        _lc("refresh-flag-redacted-evidence", "A redacted (archived) evidence record is "
            "invalidated like any other", ["flag-reason"], ["RULE-2", "RED-8"], rf,
            [R1, e1_tomb, e2_sup], expected=[flag(R1, WHY)]),
        _lc("refresh-flag-keeps-state", "Flagging a superseded rule leaves it superseded",
            ["flag-reason"], ["RULE-6"], rf, [r1_sup, e1_arch, e2_sup],
            expected=[flag(r1_sup, WHY)]),
        _lc("refresh-flag-signed", "The flagged version of a signed rule is unsigned",
            ["flag-reason", "signed-input"], ["RULE-2", "LC-6"], rf,
            [sign(R1, KEY_A), e1_arch, e2_sup], expected=[flag(R1, WHY)]),
        _lc("refresh-unflag-transitional", "A transitional evidence record is live",
            [], ["RULE-3"], rf, [R1_FLAGGED, e1_trans, e2_sup], expected=[unflag(R1_FLAGGED)]),
        _lc("refresh-unflag-one-active", "One active evidence record is enough",
            ["missing-evidence"], ["RULE-3"], rf, [R1_FLAGGED, E1], missing=[E2["id"]],
            expected=[unflag(R1_FLAGGED)]),
        _lc("refresh-flagged-unchanged", "Already flagged with no live evidence: unchanged, "
            "the earlier flag_reason kept", ["flag-unchanged"], ["RULE-2"], rf,
            [R1_FLAGGED, e1_arch, e2_sup], expected=[R1_FLAGGED]),
        _lc("refresh-reject-partial", "E2 is neither passed nor listed as missing",
            ["rejected", "partial-evidence"], ["RULE-5"], rf, [R1, E1], missing=[],
            error="lifecycle"),
        _lc("refresh-reject-nothing-known", "No evidence passed and none listed missing",
            ["rejected", "partial-evidence"], ["RULE-5"], rf, [R1], error="lifecycle"),
    ]
    notes = {
        "signed-input": "An input record is signed; its new version has signed_by null and "
                        "signature '' (SIG-9).",
        "rejected": "The lifecycle machine forbids the change: error class lifecycle, and no "
                    "record is produced.",
        "no-reason": "The reason is empty or absent where one is required.",
        "blank-reason": "The reason holds only ASCII whitespace (U+0009-U+000D, U+0020), the "
                        "only characters that count as blank: it is no reason.",
        "unicode-space-reason": "The reason holds only a Unicode space that is not ASCII "
                                "whitespace (U+00A0, U+3000): it is a reason.",
        "flag-reason": "The rule gets flagged: flag_reason is the `reason` argument (memspec "
                       "pins the caller's text so that the result is comparable).",
        "flag-unchanged": "The flag is already right: the rule comes back unchanged, same "
                          "updated_at, no new version.",
        "missing-evidence": "args.missing lists evidence ids the caller knows are absent from "
                            "the store; missing evidence counts as invalidated.",
        "partial-evidence": "An evidence id is neither passed as a record nor listed in "
                            "args.missing (RULE-5).",
    }
    groups = [
        group("supersede", "records = [old, successor] -> [old']", "lifecycle", "lifecycle",
              sup),
        group("begin-transition", "records = [a, b] -> [a', b']", "lifecycle", "lifecycle",
              trn),
        group("resolve-transition", "records = [winner, loser] -> [winner', loser']",
              "lifecycle", "lifecycle", res),
        group("archive", "records = [r] -> [r']", "lifecycle", "lifecycle", arc),
        group("refresh-rule-flag", "records = [rule, *evidence], missing = [ids] -> [rule']",
              "lifecycle", "lifecycle", flg),
    ]
    return vector_file("lifecycle", "The pure lifecycle functions: every new version keeps "
                       f"its id, has updated_at = now ({NOW}) and is unsigned; illegal changes "
                       "are rejected with error class lifecycle.", notes, groups)


# --- proposals -------------------------------------------------------------------------------

def _prop(kind: str, record: dict[str, Any] | None = None, target_id: str | None = None,
          other_id: str | None = None, reason: str = "") -> dict[str, Any]:
    return {"kind": kind, "record": record, "target_id": target_id, "other_id": other_id,
            "reason": reason}


def _ap(cid: str, comment: str, flags: list[str], reqs: list[str],
        setup: list[dict[str, Any]], proposal: dict[str, Any], *,
        written: list[dict[str, Any]] | None = None, error: str | None = None) -> dict[str, Any]:
    return case(f"proposals/{cid}", comment, flags, reqs, {"proposal": proposal, "now": NOW},
                setup=setup, expected=None if written is None else {"written": written},
                error=error)


def _accepted() -> list[dict[str, Any]]:
    f1_v2 = evolve(F1, T1, tags=["deploy", "env"])
    return [
        _ap("create-fact", "A new fact into an empty store", [], ["OP-6", "REC-14"], [],
            _prop("create", record=F2), written=[F2]),
        _ap("create-rule", "A rule whose evidence is stored", [], ["OP-6", "RULE-1"],
            [E1, E2], _prop("create", record=R1), written=[R1]),
        _ap("create-beside-existing", "A second record beside a stored one", [], ["OP-6"],
            [F1], _prop("create", record=F2), written=[F2]),
        _ap("supersede", "The successor is written, then the target's superseded version",
            ["write-order"], ["SUP-1", "SUP-2", "LC-5"], [F1],
            _prop("supersede", record=F3, target_id=F1["id"], reason=WHY),
            written=[F3, supersede(F1, F3, WHY)]),
        _ap("supersede-latest-version", "The target's latest stored version is the one "
            "evolved", ["history"], ["SUP-2", "STORE-3"], [F1, f1_v2],
            _prop("supersede", record=F3, target_id=F1["id"], reason=WHY),
            written=[F3, supersede(f1_v2, F3, WHY)]),
        _ap("transition", "Both sides become transitional, sides = [target, other]",
            ["write-order"], ["TRN-1", "TRN-3"], [F1, F2],
            _prop("transition", target_id=F1["id"], other_id=F2["id"], reason=WHY),
            written=list(begin(F1, F2, WHY))),
        _ap("transition-reversed", "Naming F2 as target puts it first", ["write-order"],
            ["TRN-1", "TRN-3"], [F1, F2],
            _prop("transition", target_id=F2["id"], other_id=F1["id"], reason=WHY),
            written=list(begin(F2, F1, WHY))),
        _ap("archive-active", "active -> archived", [], ["LC-3"], [F4],
            _prop("archive", target_id=F4["id"], reason=WHY), written=[archive(F4, WHY)]),
        _ap("archive-ideographic-space-reason", "U+3000 is not ASCII whitespace: a reason",
            ["unicode-space-reason"], ["LC-3"], [F4],
            _prop("archive", target_id=F4["id"], reason="\u3000"),
            written=[archive(F4, "\u3000")]),
        _ap("archive-superseded", "superseded -> archived keeps superseded_by", [],
            ["LC-3", "LC-4"], [F1_SUP], _prop("archive", target_id=F1["id"], reason=WHY),
            written=[archive(F1_SUP, WHY)]),
        _ap("archive-transitional", "transitional -> archived drops the block", [],
            ["LC-3", "TRN-2"], [F1T, F2T], _prop("archive", target_id=F1["id"], reason=WHY),
            written=[archive(F1T, WHY)]),
    ]


def _rejected() -> list[dict[str, Any]]:
    born_archived = archive(F4, "Old.", T1)
    evolved = evolve(F2, T2, tags=["deploy", "late"])
    stale = edit(F2, body="The deploy target is production now.")
    successor_other = make("fact", "The deploy target is production-us.", created_at=T2,
                           supersedes=F4["id"])
    stale_successor = edit(F3, body="Edited after its id was computed.")
    m, lc, nf, rc = "proposal", "lifecycle", "not-found", "record"
    rows: list[tuple[str, str, list[str], list[str], list[dict[str, Any]], dict[str, Any],
                     str]] = [
        ("unknown-kind-merge", "kind merge", ["malformed"], ["OP-1"], [F1, F2],
         _prop("merge", target_id=F1["id"], other_id=F2["id"], reason=WHY), m),
        ("unknown-kind-delete", "kind delete: records are never deleted", ["malformed"],
         ["OP-1", "LC-4"], [F1], _prop("delete", target_id=F1["id"], reason=WHY), m),
        ("unknown-kind-uppercase", "kind CREATE (kinds are lowercase)", ["malformed"],
         ["OP-1"], [], _prop("CREATE", record=F2), m),
        ("create-without-record", "create with record null", ["malformed"], ["OP-6"], [],
         _prop("create"), m),
        ("record-not-an-object", "record is an array holding the record", ["malformed"],
         ["OP-1"], [], {**_prop("create"), "record": [F2]}, m),
        ("target-id-not-an-id", "target_id is a string but not an id (uppercase digits)",
         ["malformed"], ["OP-1"], [F4],
         _prop("archive", target_id="mem:" + F4["id"][4:].upper(), reason=WHY), m),
        ("other-id-not-an-id", "other_id is a string but not an id", ["malformed"], ["OP-1"],
         [F1, F2], _prop("transition", target_id=F1["id"], other_id="F2", reason=WHY), m),
        ("supersede-without-record", "supersede with no successor", ["malformed"],
         ["SUP-1"], [F1], _prop("supersede", target_id=F1["id"], reason=WHY), m),
        ("supersede-missing-reason", "supersede with an empty reason", ["malformed"],
         ["LC-3"], [F1], _prop("supersede", record=F3, target_id=F1["id"]), m),
        ("transition-missing-reason", "transition with an empty reason", ["malformed"],
         ["TRN-1"], [F1, F2], _prop("transition", target_id=F1["id"], other_id=F2["id"]), m),
        ("archive-missing-reason", "archive with an empty reason", ["malformed"], ["LC-3"],
         [F4], _prop("archive", target_id=F4["id"]), m),
        ("archive-spaces-reason", "archive with a reason of spaces only",
         ["malformed", "blank-reason"], ["LC-3"], [F4],
         _prop("archive", target_id=F4["id"], reason="   "), m),
        ("supersede-spaces-reason", "supersede with a reason of spaces only",
         ["malformed", "blank-reason"], ["LC-3"], [F1],
         _prop("supersede", record=F3, target_id=F1["id"], reason="   "), m),
        ("transition-ascii-whitespace-reason", "transition with a reason of tab, line feed "
         "and space", ["malformed", "blank-reason"], ["TRN-1"], [F1, F2],
         _prop("transition", target_id=F1["id"], other_id=F2["id"], reason="\t\n "), m),
        ("create-existing-id", "create of an id already stored", ["not-born"], ["OP-6"], [F1],
         _prop("create", record=F1), m),
        ("create-archived", "create of a record that is not active", ["not-born"],
         ["OP-6", "REC-14"], [], _prop("create", record=born_archived), m),
        ("create-evolved", "create of a record whose updated_at is after created_at",
         ["not-born"], ["OP-6"], [], _prop("create", record=evolved), m),
        ("create-flagged-rule", "create of a flagged rule", ["not-born"], ["OP-6"],
         [E1, E2], _prop("create", record=edit(R1, flagged=True, flag_reason="Doubt.")), m),
        ("create-signed", "create of a signed record (a new record is born unsigned)",
         ["not-born"], ["OP-6"], [], _prop("create", record=sign(F2, KEY_A)), m),
        ("create-invalid-record", "create of a record whose id is stale", ["bad-record"],
         ["OP-6", "ID-2"], [], _prop("create", record=stale), rc),
        ("supersede-invalid-successor", "A successor whose id is stale", ["bad-record"],
         ["ID-2"], [F1], _prop("supersede", record=stale_successor, target_id=F1["id"],
                               reason=WHY), rc),
        ("successor-not-naming-target", "The successor's supersedes is null", ["illegal"],
         ["SUP-1"], [F1], _prop("supersede", record=F2, target_id=F1["id"], reason=WHY), lc),
        ("successor-naming-other", "The successor supersedes another record", ["illegal"],
         ["SUP-1"], [F1, F4],
         _prop("supersede", record=successor_other, target_id=F1["id"], reason=WHY), lc),
        ("supersede-transitional", "A transitional target", ["illegal"], ["SUP-5"], [F1T, F2T],
         _prop("supersede", record=F3, target_id=F1["id"], reason=WHY), lc),
        ("supersede-archived", "An archived target", ["illegal"], ["LC-2"], [F1_ARCH],
         _prop("supersede", record=F3, target_id=F1["id"], reason=WHY), lc),
        ("supersede-superseded", "An already superseded target", ["illegal"],
         ["LC-1", "SUP-5"], [F1_SUP],
         _prop("supersede", record=F3, target_id=F1["id"], reason=WHY), lc),
        ("transition-with-itself", "target and other are the same record", ["illegal"],
         ["TRN-4"], [F1], _prop("transition", target_id=F1["id"], other_id=F1["id"],
                                reason=WHY), lc),
        ("transition-superseded", "The other side is superseded", ["illegal"], ["TRN-4"],
         [F1_SUP, F2], _prop("transition", target_id=F2["id"], other_id=F1["id"],
                             reason=WHY), lc),
        ("transition-transitional", "The target is already in a transition", ["illegal"],
         ["TRN-4"], [F1T, F2T, F4],
         _prop("transition", target_id=F1["id"], other_id=F4["id"], reason=WHY), lc),
        ("archive-archived", "archived is terminal", ["illegal"], ["LC-2"], [F4_ARCH],
         _prop("archive", target_id=F4["id"], reason=WHY), lc),
        ("archive-unknown", "The target is not in the store", ["unknown-id"], ["OP-2"], [F1],
         _prop("archive", target_id=F4["id"], reason=WHY), nf),
        ("supersede-unknown", "The target is not in the store", ["unknown-id"], ["OP-2"], [],
         _prop("supersede", record=F3, target_id=F1["id"], reason=WHY), nf),
        ("transition-unknown-other", "The other side is not in the store", ["unknown-id"],
         ["OP-2"], [F1], _prop("transition", target_id=F1["id"], other_id=F2["id"],
                               reason=WHY), nf),
    ]
    return [_ap(cid, comment, flags, ["OP-2", "OP-3", *[r for r in reqs if r != "OP-2"]],
                setup, proposal, error=err)
            for cid, comment, flags, reqs, setup, proposal, err in rows]


def _resolve_cases() -> list[dict[str, Any]]:
    def rs(cid: str, comment: str, flags: list[str], reqs: list[str],
           setup: list[dict[str, Any]], winner: str, loser: str, reason: str = WHY, *,
           written: list[dict[str, Any]] | None = None,
           error: str | None = None) -> dict[str, Any]:
        return case(f"proposals/{cid}", comment, flags, reqs,
                    {"winner_id": winner, "loser_id": loser, "reason": reason, "now": NOW},
                    setup=setup, expected=None if written is None else {"written": written},
                    error=error)

    f2_active = F2
    return [
        rs("resolve", "F2 wins: written [winner', loser']", ["write-order"],
           ["RES-1", "RES-2", "RES-3"], [F1, F2, F1T, F2T], F2["id"], F1["id"],
           written=list(resolve(F2T, F1T, WHY))),
        rs("resolve-first-side", "F1 wins", ["write-order"], ["RES-1", "RES-2"], [F1T, F2T],
           F1["id"], F2["id"], written=list(resolve(F1T, F2T, WHY))),
        rs("resolve-reject-not-partners", "Sides of two different transitions", ["illegal"],
           ["RES-1"], [F1T, F2T, F4T, F5T], F2["id"], F4["id"], error="lifecycle"),
        rs("resolve-reject-winner-active", "The winner is not transitional", ["illegal"],
           ["RES-1"], [F1T, f2_active], F2["id"], F1["id"], error="lifecycle"),
        rs("resolve-reject-same", "Winner and loser are one record", ["illegal"], ["RES-1"],
           [F1T, F2T], F1["id"], F1["id"], error="lifecycle"),
        rs("resolve-reject-empty-reason", "An empty reason", ["illegal"], ["RES-1", "LC-3"],
           [F1T, F2T], F2["id"], F1["id"], reason="", error="lifecycle"),
        rs("resolve-reject-unknown", "The loser is not in the store", ["unknown-id"],
           ["RES-1"], [F2T], F2["id"], F1["id"], error="not-found"),
    ]


def _proposals() -> dict[str, Any]:
    notes = {
        "write-order": "written lists every version in the order it was written: a "
                       "supersession writes the successor first, then the superseded target; "
                       "a transition and a resolution write the two sides in the order named.",
        "history": "The store holds more than one version of the target; the latest is used.",
        "malformed": "The proposal itself is malformed (unknown kind, a missing record or "
                     "target, an empty reason): error class proposal.",
        "not-born": "A create proposal whose record is not a newly born record (REC-14) or "
                    "whose id is already stored (OP-6): error class proposal.",
        "bad-record": "The proposal carries a record that breaks the record format: error "
                      "class record.",
        "illegal": "A well-formed request the lifecycle machine forbids: error class lifecycle.",
        "blank-reason": "The reason holds only ASCII whitespace (U+0009-U+000D, U+0020), the "
                        "only characters that count as blank: it is no reason.",
        "unicode-space-reason": "The reason holds only a Unicode space that is not ASCII "
                                "whitespace (U+00A0, U+3000): it is a reason.",
        "unknown-id": "A named record id is not in the store: error class not-found.",
    }
    groups = [
        group("accepted", "Valid proposals and the versions they write", "apply_proposal",
              "lifecycle", _accepted()),
        group("rejected", "Invalid proposals: rejected, never repaired, nothing written",
              "apply_proposal", "lifecycle", _rejected()),
        group("resolve", "Resolving a transition pair", "resolve", "lifecycle",
              _resolve_cases()),
    ]
    return vector_file("proposals", "Store-backed lifecycle operations: the setup records are "
                       f"put into a fresh store, then the proposal is applied at now = {NOW}. "
                       "A rejected proposal must leave the store unchanged.", notes, groups)


def build_all() -> list[dict[str, Any]]:
    return [_legality(), _lifecycle(), _proposals()]
