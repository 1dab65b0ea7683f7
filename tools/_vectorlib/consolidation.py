"""consolidation.json: one consolidation pass over stores the setup builds (CONS-3).

The report is compared on what the spec fixes (section 15.1): each action's pass,
action, record_ids (in the order fixed per action), before and after; reasons
are the engine's wording and are not compared. Only sub-passes whose output the
spec fixes are exercised: exact dedup (keeper and order, ties included), the
rule-flag sweep, promotion (CONS-10) and slot-conflict transitions (CONS-13).
A promoted rule's id follows from wording the engine chooses and the order of a
detected transition's sides is the engine's, so those ids are placeholders (the
group's ``placeholders``): ``{"bind": name}`` a record the pass created,
``{"bind": name, "among": [...]}`` one of the listed ids. Whether a pair is a near
duplicate is the engine's heuristic (only a merge's shape is normative, CONS-6),
so no vector expects a merge; the kit's test of CONS-3 checks a merge's ids when
the engine merges.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _vectorlib.fixtures import (
    T1,
    T2,
    T3,
    T4,
    case,
    day,
    evolve,
    group,
    make,
    provenance,
    vector_file,
)
from _vectorlib.lifecycle import archive

NAME = "consolidation"
PROJECTION = {"actions": ["pass", "action", "record_ids", "before", "after"],
              "deferred": ["pass", "record_ids"]}
STRICT = {"near_dup_threshold": "0.95", "promotion_threshold": 3}


def _copy(body: str, ref: str, created_at: str, confidence: str,
          slots: dict[str, Any] | None = None) -> dict[str, Any]:
    return make("fact", body, created_at=created_at, confidence=confidence,
                slots=slots or {}, prov=provenance(ref=ref))


def _action(pass_: str, action: str, ids: Sequence[str | dict[str, Any]], before: list[str],
            after: list[str]) -> dict[str, Any]:
    """One report action; an id the engine chooses is a placeholder (``_new``, ``_side``)."""
    return {"pass": pass_, "action": action, "record_ids": ids, "before": before,
            "after": after}


def _case(cid: str, comment: str, flags: list[str], reqs: list[str],
          setup: list[dict[str, Any]], actions: list[dict[str, Any]]) -> dict[str, Any]:
    return case(f"{NAME}/{cid}", comment, ["projected", *flags], reqs,
                {"now": T4, "config": STRICT}, setup=setup,
                expected={"actions": actions, "rejections": [], "deferred": []})


def _dedup(copies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    order = sorted(copies, key=lambda c: (-float(c["confidence"]), c["created_at"], c["id"]))
    keeper, rest = order[0], order[1:]
    return [_action("exact-dedup", "supersede", [c["id"], keeper["id"]], ["active", "active"],
                    ["superseded", "active"]) for c in rest]


def _new(name: str) -> dict[str, Any]:
    return {"bind": name}


def _side(name: str, *records: dict[str, Any]) -> dict[str, Any]:
    return {"bind": name, "among": [r["id"] for r in records]}


def _episodes(tag: str, bodies: tuple[str, ...]) -> list[dict[str, Any]]:
    return [make("episode", body, created_at=day(1, i + 1), tags=(tag,),
                 occurred_at=day(0, i + 1), confidence=f"0.{6 + i}000",
                 prov=provenance(ref=f"{tag}-{i}")) for i, body in enumerate(bodies)]


def _conflict() -> tuple[dict[str, Any], dict[str, Any]]:
    """Two facts whose shared slot disagrees (the CONS-13 floor), worded apart."""
    return (make("fact", "The nightly export writes to the east bucket.", created_at=T1,
                 slots={"export bucket": "east"}, prov=provenance(ref="ops-1")),
            make("fact", "Exports land in a western storage bin.", created_at=T2,
                 slots={"export bucket": "west"}, prov=provenance(ref="ops-2")))


def build() -> dict[str, Any]:
    body, slots = "The backup job runs at two.", {"job": "backup"}
    graded = [_copy(body, f"graded-{i}", T1, c, slots)
              for i, c in enumerate(("0.7000", "0.9000", "0.8000"))]
    tied_late = _copy(body, "tie-late", T2, "0.8000", slots)
    tied = [_copy(body, f"tie-{i}", T1, "0.8000", slots) for i in range(3)]
    weaker = _copy(body, "tie-weak", T1, "0.6000", slots)
    stale = _copy(body, "archived-copy", T1, "0.9900", slots)
    stale_a = archive(stale, "Retired.", T2)
    dead = make("fact", "The old VPN client needed a restart.", created_at=T1)
    dead_a = archive(dead, "Client retired.", T2)
    live = make("fact", "The printer on floor two jams on thick paper.", created_at=T1)
    stale_rule = make("rule", "Restart the VPN client whenever it hangs.", created_at=T1,
                      evidence=(dead["id"],))
    wrongly = evolve(make("rule", "Use thin paper in the floor two printer.", created_at=T1,
                          evidence=(live["id"],)), T3, flagged=True, flag_reason="Stale.")
    fine = make("rule", "Feed the printer from tray two.", created_at=T1,
                evidence=(live["id"], dead["id"]))
    sweep = sorted([(stale_rule["id"], "flag"), (wrongly["id"], "unflag")])
    standups = _episodes("standup", ("Standup overran because of the outage review.",
                                     "A fire drill cut standup short.",
                                     "Standup moved to the big room on Thursday."))
    east, west = _conflict()
    promoted = [_action("promotion", "create", [_new("rule")], [], ["active"])]
    opened = [_action("contradiction", "transition", [_side("first", east, west),
                                                      _side("second", east, west)],
                      ["active", "active"], ["transitional", "transitional"])]
    tests = [
        _case("dedup-keeper-by-confidence", "The copy with the highest confidence keeps; the "
              "others follow strongest first, each [copy, keeper]", ["dedup"], ["CONS-3", "CONS-5"],
              graded, _dedup(graded)),
        _case("dedup-ties", "A tie on confidence falls to the earliest created_at, then the "
              "smallest id", ["dedup"], ["CONS-3", "CONS-5"], [tied_late, *tied, weaker],
              _dedup([tied_late, *tied, weaker])),
        _case("dedup-skips-archived-copy", "An archived copy is not collapsed", ["dedup"],
              ["CONS-5"], [*graded, stale, stale_a], _dedup(graded)),
        _case("flag-sweep", "The sweep flags a rule whose evidence is archived and unflags one "
              "whose evidence is live, in id order, each [rule] with its state unchanged; a "
              "rule whose flag is right is not written", ["sweep"], ["CONS-3", "CONS-11"],
              [dead, dead_a, live, stale_rule, wrongly, fine],
              [_action("flag-sweep", kind, [rid], ["active"], ["active"])
               for rid, kind in sweep]),
        _case("promotion-lists-the-rule", "Three episodes share a tag: one create action "
              "naming the new rule alone (its episodes are in its evidence, not in the action)",
              ["promotion", "placeholders"], ["CONS-3"], standups, promoted),
        _case("below-threshold-no-rule", "Two episodes share a tag, one short of the "
              "threshold: nothing is promoted", ["promotion"], ["CONS-10"], standups[:2], []),
        _case("transition-lists-both-sides", "Two facts whose shared slot disagrees: one "
              "transition action naming both sides, each once (their order is the block's, "
              "which the engine chooses)", ["contradiction", "placeholders"],
              ["CONS-3"], [east, west], opened),
        _case("nothing-to-do", "Distinct records: an empty report", [], ["CONS-3"],
              [live, make("fact", "The canteen opens at noon.", created_at=T2)], []),
    ]
    return vector_file(
        NAME, "One consolidation pass over stores the setup builds; the report compared on "
        "what the spec fixes (pass, action, record_ids, before, after).",
        {"projected": "Report entries are compared on the members the group's project names "
                      "(reasons are the engine's wording).",
         "dedup": "Exact dedup: the keeper, the order of the copies, ties.",
         "sweep": "The rule-flag sweep.",
         "promotion": "Promotion of episodes that share a signature (CONS-10).",
         "contradiction": "A contradiction detected by a slot conflict (CONS-13).",
         "placeholders": "Ids the engine chooses are placeholders: {\"bind\": name} for a "
                         "record the pass created, {\"bind\": name, \"among\": [...]} for "
                         "one of the listed ids; a name binds one id throughout the case."},
        [{**group(f"{NAME}-pass", "consolidate with near-dup nearly off: entries compared on "
                  "pass, action, record_ids, before and after (project)", "consolidate",
                  "consolidation", tests), "project": PROJECTION, "placeholders": True}])
