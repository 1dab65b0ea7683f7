"""consolidation.json: one consolidation pass over stores the setup builds (CONS-3).

The report is compared on what the spec fixes (section 15.1): each action's pass,
action, record_ids (in the order fixed per action), before and after; reasons
are the engine's wording and are not compared. Only sub-passes whose output the
spec fixes byte for byte are exercised: exact dedup (keeper and order, ties
included) and the rule-flag sweep; promotion and detected transitions name ids
and orders an engine chooses, so the kit tests them by their properties.
"""

from __future__ import annotations

from typing import Any

from _vectorlib.fixtures import T1, T2, T3, T4, case, evolve, group, make, provenance, vector_file
from _vectorlib.lifecycle import archive

NAME = "consolidation"
PROJECTION = {"actions": ["pass", "action", "record_ids", "before", "after"],
              "deferred": ["pass", "record_ids"]}
STRICT = {"near_dup_threshold": "0.95", "promotion_threshold": 3}


def _copy(body: str, ref: str, created_at: str, confidence: str,
          slots: dict[str, Any] | None = None) -> dict[str, Any]:
    return make("fact", body, created_at=created_at, confidence=confidence,
                slots=slots or {}, prov=provenance(ref=ref))


def _action(pass_: str, action: str, ids: list[str], before: list[str],
            after: list[str]) -> dict[str, Any]:
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
        _case("nothing-to-do", "Distinct records: an empty report", [], ["CONS-3"],
              [live, make("fact", "The canteen opens at noon.", created_at=T2)], []),
    ]
    return vector_file(
        NAME, "One consolidation pass over stores the setup builds; the report compared on "
        "what the spec fixes (pass, action, record_ids, before, after).",
        {"projected": "Report entries are compared on the members the group's project names "
                      "(reasons are the engine's wording).",
         "dedup": "Exact dedup: the keeper, the order of the copies, ties.",
         "sweep": "The rule-flag sweep."},
        [{**group(f"{NAME}-pass", "consolidate with near-dup nearly off: entries compared on "
                  "pass, action, record_ids, before and after (project)", "consolidate",
                  "consolidation", tests), "project": PROJECTION}])
