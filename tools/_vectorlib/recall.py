"""recall.json: core recall (section 13) over stores the setup builds.

Scores and token counts are the engine's own, so entries are compared on the
record and its reasons (the group's ``project``) and in order; every case is
built so that the order the spec fixes does not depend on an engine's
constants: records that tie on every factor (same state, relevance, updated_at,
confidence and no touches) come in ascending id order (RCL-10).

Two of section 13's cases are kit tests, not vectors. A budget skip (RCL-9) needs
a budget between two records' token counts, and `tokens` is the engine's own
estimate, so the kit reads the counts first (test_recall). Two recalls in a row
(step 7) differ only in touch counts, which one call per case cannot observe; the
kit recalls twice and reads the counts with `touch` (test_recall_states, RCL-14).
"""

from __future__ import annotations

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
from _vectorlib.lifecycle import archive, begin, resolve, supersede

NAME = "recall"
PROJECTION = {"records": ["record", "reasons"]}
WHY = "They disagree."


def _entry(record: dict[str, Any], *reasons: str) -> dict[str, Any]:
    return {"record": record, "reasons": list(reasons or ("query-match",))}


def _case(cid: str, comment: str, flags: list[str], reqs: list[str],
          setup: list[dict[str, Any]], query: str, entries: list[dict[str, Any]],
          budget: int = 1000, **flags_: bool) -> dict[str, Any]:
    expected: dict[str, Any] = {"records": entries}
    if not entries:
        expected["total_tokens"] = 0
    args = {"query": query, "budget_tokens": budget, "now": T4, **flags_}
    return case(f"{NAME}/{cid}", comment, ["projected", *flags], reqs, args, setup=setup,
                expected=expected)


def _by_id(*records: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: str(r["id"]))


def _twins() -> dict[str, Any]:
    """Two sides of one transition with the same wording: they tie on every factor."""
    body = "The fire exit is on the north stairwell."
    a, b = (make("fact", body, created_at=T1, prov=provenance(ref=f"walkthrough-{i}"))
            for i in (1, 2))
    a_t, b_t = begin(a, b, WHY, T2)
    first, second = _by_id(a_t, b_t)
    return {"setup": [a, b, a_t, b_t], "first": first, "second": second}


def _ghost() -> dict[str, Any]:
    """Section 15.5: X and not-X, resolved for not-X; the query matches only not-X."""
    x = make("fact", "Postgres holds the ledger.", created_at=T1, slots={"ledger db": "postgres"})
    not_x = make("fact", "MySQL stores the accounts.", created_at=T1,
                 slots={"ledger db": "mysql"})
    x_t, not_x_t = begin(x, not_x, WHY, T2)
    winner, loser = resolve(not_x_t, x_t, "The migration finished.", T3)
    return {"setup": [x, not_x, x_t, not_x_t, winner, loser], "winner": winner}


def _passed_over() -> dict[str, Any]:
    """C supersedes B supersedes A; B was archived after it was superseded."""
    a = make("fact", "Deliveries arrive at gate one.", created_at=T1)
    b = make("fact", "Trucks unload at the side entrance.", created_at=T2, supersedes=a["id"])
    c = make("fact", "Courier parcels go to the loading dock.", created_at=T3,
             supersedes=b["id"])
    a_s = supersede(a, b, "Moved.", T2)
    b_s = supersede(b, c, "Moved again.", T3)
    b_a = archive(b_s, "Entrance demolished.", day(3, 6))
    return {"setup": [a, b, a_s, c, b_s, b_a], "current": c, "behind": a_s}


def _dangling() -> dict[str, Any]:
    """C supersedes B, and B names a predecessor this store does not hold."""
    b = make("fact", "Guests sign the book at the door.", created_at=T2,
             supersedes="mem:" + "0" * 31 + "2")
    c = make("fact", "Visitor badges are printed at reception.", created_at=T3,
             supersedes=b["id"])
    b_s = supersede(b, c, "New system.", T3)
    return {"setup": [b, c, b_s], "current": c, "behind": b_s}


def _long_chain() -> dict[str, Any]:
    """Ten versions of one fact, each born at its own hour, all retired at T3."""
    bodies = [f"Meal requests stop at {h} sharp." for h in range(10, 19)]
    chain: list[dict[str, Any]] = []
    for i, body in enumerate(bodies):
        chain.append(make("fact", body, created_at=day(1, i + 1),
                          supersedes=chain[-1]["id"] if chain else None))
    current = make("fact", "The lunch order for friday closes at noon.", created_at=T3,
                   supersedes=chain[-1]["id"])
    retired = [supersede(r, nxt, "Changed.", T3) for r, nxt in zip(chain, [*chain[1:], current],
                                                                  strict=True)]
    return {"setup": [*chain, current, *retired], "current": current, "behind": retired}


def build() -> dict[str, Any]:
    side = make("fact", "The deploy target is the blue cluster.", created_at=T1)
    other = make("fact", "Everything ships to green now.", created_at=T1)
    side_t, other_t = begin(side, other, WHY, T2)
    gone = archive(other_t, "Withdrawn.", T3)
    alone = make("fact", "The release train leaves on the blue platform.", created_at=T1)
    alone_t = evolve(alone, T2, state="transitional", transition={
        "sides": [alone["id"], "mem:" + "0" * 31 + "1"], "reason": WHY})
    first = make("fact", "Meetings happen in room three.", created_at=T1)
    second = make("fact", "The standup room is number four.", created_at=T1,
                  supersedes=first["id"])
    third = make("fact", "The planning room is the library.", created_at=T2,
                 supersedes=second["id"])
    first_s = supersede(first, second, "Moved.", T2)
    second_s = supersede(second, third, "Moved again.", T2)
    chain = [first, second, first_s, third, second_s]
    old = make("fact", "The guest wifi password is swordfish.", created_at=T1)
    new = make("fact", "The guest wifi password is marlin.", created_at=T2,
               supersedes=old["id"])
    old_s = supersede(old, new, "Rotated.", T2)
    wifi = [old, new, old_s]
    shed = make("fact", "The garden hose hangs in the shed.", created_at=T1)
    shed_a = archive(shed, "Sold the house.", T2)
    pair = [side, other, side_t, other_t]
    twins = _twins()
    ghost = _ghost()
    passed_over = _passed_over()
    dangling = _dangling()
    long_chain = _long_chain()
    tests = [
        _case("transition-pair-together", "A matching side brings its partner; the two tie "
              "and come in id order", ["pair"], ["RCL-5", "RCL-11"], pair,
              "blue cluster deploy target",
              [_entry(r, "query-match") if r["id"] == side["id"]
               else _entry(r, "transition-partner") for r in _by_id(side_t, other_t)]),
        _case("archived-partner-hides-both", "The partner was archived: the side cannot be "
              "shown with its other side, and the archived partner is not shown", ["pair"],
              ["RCL-5"], [*pair, gone], "blue cluster deploy target", []),
        _case("archived-partner-with-include-archived", "include_archived does not mend the "
              "pair: the partner is archived, not transitional", ["pair"], ["RCL-5"],
              [*pair, gone], "blue cluster deploy target", [], include_archived=True),
        _case("lone-transitional-skipped", "A transitional record whose partner is not "
              "stored is skipped", ["pair"], ["RCL-5"], [alone, alone_t],
              "release train blue platform", []),
        _case("history-chain", "include_history walks the supersedes chain nearest first; "
              "the two predecessors tie and come in id order", ["history"], ["RCL-7"],
              chain, "planning library",
              [_entry(third), *(_entry(r, "predecessor") for r in _by_id(first_s, second_s))],
              include_history=True),
        _case("chain-without-history", "Without include_history only the current record",
              ["history"], ["RCL-6"], chain, "planning library", [_entry(third)]),
        _case("superseded-match-excluded", "A superseded record that matches is excluded "
              "by default", [], ["RCL-6"], wifi, "guest wifi password", [_entry(new)]),
        _case("include-archived-keeps-superseded-out", "include_archived admits archived "
              "records, never superseded ones", [], ["RCL-6"], wifi, "guest wifi password",
              [_entry(new)], include_archived=True),
        _case("superseded-match-with-history", "With include_history the superseded match is "
              "a predecessor of the record that replaced it, and a query match itself",
              ["history"], ["RCL-7"], wifi, "guest wifi password",
              [_entry(new), _entry(old_s, "query-match", "predecessor")],
              include_history=True),
        _case("archived-excluded-by-default", "An archived match is not recalled by default",
              [], ["RCL-8"], [shed, shed_a], "garden hose shed", []),
        _case("archived-on-request", "include_archived brings the archived match back", [],
              ["RCL-8"], [shed, shed_a], "garden hose shed", [_entry(shed_a)],
              include_archived=True),
        _case("partner-also-matches", "Both sides match equally (the same wording): the one "
              "with the smaller id is taken first as a query match and brings the other, which "
              "is both a query match and its transition partner", ["pair"], ["RCL-11"],
              twins["setup"], "fire exit north stairwell",
              [_entry(twins["first"], "query-match"),
               _entry(twins["second"], "query-match", "transition-partner")]),
        _case("ghost-is-no-predecessor", "After a resolution the winner names no predecessor "
              "(the loser's superseded_by is not a supersedes link): include_history adds "
              "nothing", ["history"], ["RCL-7"], ghost["setup"], "mysql accounts",
              [_entry(ghost["winner"])], include_history=True),
        _case("ghost-stays-away", "After a resolution default recall shows the winner "
              "alone", [], ["RCL-6"], ghost["setup"], "mysql accounts",
              [_entry(ghost["winner"])]),
        _case("history-passes-over-archived", "An archived predecessor is passed over and the "
              "walk goes on to the superseded record behind it", ["history"], ["RCL-7"],
              passed_over["setup"], "courier parcels dock",
              [_entry(passed_over["current"]), _entry(passed_over["behind"], "predecessor")],
              include_history=True),
        _case("history-ends-at-missing-id", "The walk ends at a supersedes link to an id the "
              "store does not hold", ["history"], ["RCL-7"], dangling["setup"],
              "visitor badges reception",
              [_entry(dangling["current"]), _entry(dangling["behind"], "predecessor")],
              include_history=True),
        _case("history-long-chain", "Ten versions of one fact, born at distinct times: every "
              "predecessor is surfaced, not only the nearest; they tie and come in id order",
              ["history"], ["RCL-7"], long_chain["setup"], "lunch order friday",
              [_entry(long_chain["current"]),
               *(_entry(r, "predecessor") for r in _by_id(*long_chain["behind"]))],
              include_history=True),
        _case("budget-zero", "A budget of 0 selects nothing", ["budget"], ["RCL-9"],
              [shed, *pair], "blue cluster deploy target garden hose", [], budget=0),
    ]
    return vector_file(
        NAME, "Core recall over stores the setup builds: transition pairs whole or not at "
        "all, a partner that is also a query match, include_history chains (long, broken, "
        "past an archived link), the ghost memory after resolution, superseded and archived "
        "records, an empty budget.",
        {"projected": "Entries of a result list are compared on the members the group's "
                      "project names (recall scores and token counts are the engine's own).",
         "pair": "A transition pair, whole, broken or missing its other side.",
         "history": "The supersedes chain with and without include_history.",
         "budget": "The token budget."},
        [{**group(f"{NAME}-core", "recall of the core: entries compared on record and reasons, "
                  "in order (project)", "recall", "recall", tests), "project": PROJECTION}])
