"""Recall: state-aware scoring, atomic transition pairs, whole-record budgets, determinism."""

from __future__ import annotations

from itertools import pairwise
from typing import Any

import pytest

from memspec import canonical_json
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import RECALL_BUDGET, Driver
from memspec.conformance._machines import expect_rejected, fresh_id, snapshot
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession

_ALLOWED_REASONS = {"query-match", "transition-partner", "predecessor"}


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (recall-1, ...); a write takes
    the current time (the clock moves only where a test moves it)."""
    return driver.configured(ref_prefix="recall", write_step=0)


def _ids(result: dict[str, Any]) -> list[str]:
    return [e["record"]["id"] for e in result["records"]]


@pytest.mark.requirement("RCL-1")
def test_score_is_a_product_of_independent_factors(driver: Driver, clock: KitClock) -> None:
    old_time = clock.now()
    now = clock.advance(days=60)
    body = "the office wifi password rotates monthly"
    grid = {(conf, age): driver.put(body, at=old_time if age == "old" else now, confidence=conf)
            for conf in ("0.8000", "0.4000") for age in ("new", "old")}
    found = driver.entries("office wifi password", now=now)
    missing = [r["id"] for r in grid.values() if r["id"] not in found]
    assert not missing, f"RCL-1: recall left out matching records {missing}"
    s = {key: found[r["id"]]["score"] for key, r in grid.items()}
    assert s[("0.8000", "new")] > s[("0.4000", "new")] > 0, (
        f"RCL-1: a higher confidence did not raise the score ({s})"
    )
    assert s[("0.8000", "new")] > s[("0.8000", "old")] > 0, (
        f"RCL-1: recency does not discount an older record ({s})"
    )
    cross = s[("0.8000", "new")] * s[("0.4000", "old")]
    other = s[("0.4000", "new")] * s[("0.8000", "old")]
    assert abs(cross - other) <= 1e-3 * max(cross, other), (
        f"RCL-1: scores are not a product of independent factors: confidence changes the score "
        f"by a different ratio for new and old records ({s})"
    )
    zero = driver.put(body, confidence="0.0000")
    entry = driver.entries("office wifi password", now=now).get(zero["id"])
    assert entry is None or entry["score"] == 0, (
        f"RCL-1: a record with confidence 0 scored {entry['score'] if entry else None}; "
        "a product with a zero factor is zero"
    )


@pytest.mark.requirement("RCL-2")
def test_active_outranks_transitional_and_superseded(driver: Driver, clock: KitClock) -> None:
    now = clock.now()
    body = "the build server restarts at midnight"
    active = driver.put(body)
    disputed = driver.put(body)
    driver.transition(disputed, driver.put("lunch is served at noon"), now=now)
    old = driver.put(body)
    driver.supersede(old, "the build server reboot is now scheduled by the ops team",
                     reason="corrected", now=now)
    result = driver.recall("build server restarts midnight", now=now, include_history=True)
    found = {e["record"]["id"]: e for e in result["records"]}
    assert active["id"] in found and disputed["id"] in found, (
        "RCL-2: recall left out an active or a transitional record that matches the query"
    )
    order = _ids(result)
    assert found[active["id"]]["score"] > found[disputed["id"]]["score"], (
        f"RCL-2: an active record scored {found[active['id']]['score']}, not above an "
        f"otherwise-equal transitional one ({found[disputed['id']]['score']})"
    )
    assert order.index(active["id"]) < order.index(disputed["id"]), (
        "RCL-2: an otherwise-equal transitional record ranks before the active one"
    )
    if old["id"] in found:
        assert found[active["id"]]["score"] > found[old["id"]]["score"], (
            f"RCL-2: an active record scored {found[active['id']]['score']}, not above an "
            f"otherwise-equal superseded one ({found[old['id']]['score']})"
        )
        assert order.index(active["id"]) < order.index(old["id"]), (
            "RCL-2: an otherwise-equal superseded record ranks before the active one"
        )


@pytest.mark.requirement("RCL-3")
def test_age_discounts_but_never_erases(driver: Driver, clock: KitClock) -> None:
    ancient = driver.put("the lighthouse keeper feeds the cat", at=clock.at(0))
    later = clock.at(36_500)
    fresh = driver.put("the lighthouse keeper feeds the cat", at=later)
    found = driver.entries("lighthouse keeper cat", now=later)
    assert ancient["id"] in found, "RCL-3: a 100-year-old matching record was not returned"
    assert found[ancient["id"]]["score"] > 0, "RCL-3: age erased a record's score to zero"
    assert found[fresh["id"]]["score"] > found[ancient["id"]]["score"], (
        "RCL-3: a 100-year-old record scored as high as a new one; age must discount"
    )


@pytest.mark.requirement("RCL-4", "RCL-13")
def test_reinforcement_never_lowers_a_score_or_writes(driver: Driver, engine: EngineSession,
                                                      clock: KitClock) -> None:
    touched = driver.put("the spare key is under the blue pot")
    twin = driver.put("the spare key is under the blue pot")
    before = snapshot(engine)
    counts = [engine.call("touch", id=touched["id"], now=clock.advance(seconds=1))["count"]
              for _ in range(3)]
    if counts != [1, 2, 3]:
        raise RequirementFailed("RCL-4", f"touch counts after 1, 2, 3 touches are {counts}")
    expect_rejected(engine, "touch", "not-found", "RCL-4", "a touch of an unknown id",
                    id=fresh_id("never-stored"), now=clock.now())
    now = clock.now()
    scores = []
    for _ in range(4):
        found = driver.entries("spare key blue pot", now=now)
        if not (touched["id"] in found and twin["id"] in found):
            raise RequirementFailed("RCL-4", "recall lost a record")
        if found[touched["id"]]["score"] < found[twin["id"]]["score"]:
            raise RequirementFailed(
                "RCL-4", f"a touched record scored {found[touched['id']]['score']}, below an "
                f"untouched otherwise-equal record ({found[twin['id']]['score']})")
        scores.append(found[touched["id"]]["score"])
    if scores != sorted(scores):
        raise RequirementFailed(
            "RCL-4", f"the same record's score fell as retrieval reinforced it: {scores}")
    if snapshot(engine) != before:
        raise RequirementFailed(
            "RCL-4",
            "touches or recalls wrote record versions; reinforcement belongs in the sidecar")
    stored = engine.call("get", id=touched["id"])["record"]
    if canonical_json(stored) != canonical_json(touched):
        raise RequirementFailed(
            "RCL-4",
            "the touched record's stored form changed (touch counts are never record fields)")


@pytest.mark.requirement("RCL-5", "TRN-5")
def test_transition_partner_is_pulled_in(driver: Driver) -> None:
    side = driver.put("the deploy target is the blue cluster")
    partner = driver.put("everything ships to green now")
    driver.put("the coffee machine is broken")
    driver.transition(side, partner)
    found = driver.entries("deploy target blue cluster")
    if side["id"] not in found:
        raise RequirementFailed("RCL-5", "recall did not return the matching transitional record")
    if partner["id"] not in found:
        raise RequirementFailed(
            "RCL-5", "recall showed one side of a transition without its partner")
    if "transition-partner" not in found[partner["id"]]["reasons"]:
        raise RequirementFailed(
            "RCL-5", f"the pulled-in partner's reasons are {found[partner['id']]['reasons']}, "
            "expected transition-partner")


@pytest.mark.requirement("RCL-5")
def test_transition_pair_is_budgeted_atomically(driver: Driver) -> None:
    small = driver.put("the deploy target is blue")
    large = driver.put("the deploy target is green, as agreed in the long planning meeting "
                       "that covered every cluster, region and failover path in detail " * 3)
    driver.transition(small, large)
    full = driver.entries("deploy target blue")
    assert {small["id"], large["id"]} <= set(full), "RCL-5: the pair is not recalled together"
    cost = {rid: full[rid]["tokens"] for rid in (small["id"], large["id"])}
    pair = cost[small["id"]] + cost[large["id"]]
    for budget in sorted({cost[small["id"]], cost[large["id"]], pair - 1, 1}):
        if budget < 0:
            continue
        shown = set(driver.entries("deploy target blue", budget)) & {small["id"], large["id"]}
        assert len(shown) != 1, (
            f"RCL-5: with a budget of {budget} tokens (the pair costs {pair}) recall showed "
            f"only {shown}; a pair that does not fit is left out whole"
        )
    shown = set(driver.entries("deploy target blue", pair)) & {small["id"], large["id"]}
    assert len(shown) == 2, f"RCL-5: a budget of exactly {pair} tokens did not fit the pair"


@pytest.mark.requirement("RCL-6")
def test_superseded_records_are_excluded_by_default(driver: Driver) -> None:
    old = driver.put("the meeting room is on floor three")
    new = driver.supersede(old, "the meeting room is on floor four", reason="corrected")
    found = driver.entries("meeting room floor")
    assert new["id"] in found, "RCL-6: the active successor was not recalled"
    assert old["id"] not in found, "RCL-6: a superseded record was recalled by default"


@pytest.mark.requirement("RCL-7")
def test_history_surfaces_predecessors(driver: Driver) -> None:
    first = driver.put("the meeting room is on floor three")
    second = driver.supersede(first, "the meeting room is on floor four", reason="corrected")
    third = driver.supersede(second, "the meeting room is on floor five", reason="corrected")
    found = driver.entries("meeting room floor", include_history=True)
    assert third["id"] in found, "RCL-7: the current record was not recalled"
    for predecessor in (second, first):
        assert predecessor["id"] in found, (
            f"RCL-7: with include_history the predecessor {predecessor['id']} was not surfaced"
        )
        assert "predecessor" in found[predecessor["id"]]["reasons"], (
            f"RCL-7: predecessor {predecessor['id']} is marked "
            f"{found[predecessor['id']]['reasons']}, not predecessor"
        )


@pytest.mark.requirement("RCL-8")
def test_archived_records_only_on_request(driver: Driver) -> None:
    kept = driver.put("the garden hose is in the shed")
    gone = driver.put("the garden hose was in the garage")
    driver.apply(build.proposal("archive", target_id=gone["id"], reason="moved"))
    default = driver.entries("garden hose")
    assert kept["id"] in default, "RCL-8: an active matching record was not recalled"
    assert gone["id"] not in default, "RCL-8: an archived record was recalled by default"
    wanted = driver.entries("garden hose", include_archived=True)
    assert gone["id"] in wanted, "RCL-8: include_archived did not include the archived record"


@pytest.mark.requirement("RCL-9")
def test_budget_selects_whole_records(driver: Driver, engine: EngineSession) -> None:
    big = driver.put("quokka " * 60 + "the quokka enclosure opens at ten")
    small = driver.put("a quokka")
    stored = {r["id"]: canonical_json(r) for r in (big, small)}
    full = driver.entries("quokka")
    assert set(stored) <= set(full), "RCL-9: recall left out matching records"
    for budget in (full[big["id"]]["tokens"] - 1, full[small["id"]]["tokens"], 3, RECALL_BUDGET):
        for entry in driver.recall("quokka", max(budget, 0))["records"]:
            rid = entry["record"]["id"]
            assert canonical_json(entry["record"]) == stored[rid], (
                f"RCL-9: with a budget of {budget} recall returned {rid} altered (body "
                f"{entry['record']['body'][:40]!r}...); records are selected whole, never "
                "truncated or rewritten"
            )
    shown = driver.entries("quokka", full[big["id"]]["tokens"] - 1)
    assert big["id"] not in shown, "RCL-9: a record larger than the budget was returned"
    assert small["id"] in shown, (
        "RCL-9: a record that did not fit stopped the selection; it is skipped and a smaller "
        "candidate that fits is still included"
    )


@pytest.mark.requirement("RCL-10")
def test_ranking_is_deterministic_with_ties(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    now = clock.now()
    twins = [driver.new("the night bus leaves at one") for _ in range(4)]
    others = [driver.new("the night bus is route nine"), driver.new("buses stop at midnight")]
    runs = []
    for order in (twins + others, others + twins[::-1], [twins[2], *others, twins[0],
                                                         twins[3], twins[1]]):
        engine.call("reset")
        for record in order:
            engine.call("put", record=record)
        result = driver.recall("night bus leaves", now=now)
        runs.append([(e["record"]["id"], e["score"], sorted(e["reasons"]))
                     for e in result["records"]])
    for run in runs[1:]:
        assert run == runs[0], (
            f"RCL-10: the same store gave different rankings depending on insertion order: "
            f"{runs[0]} vs {run}"
        )
    ranked = runs[0]
    twin_ids = {t["id"] for t in twins}
    assert twin_ids <= {rid for rid, _, _ in ranked}, "RCL-10: recall left out matching records"
    for (a, sa, _), (b, sb, _) in pairwise(ranked):
        assert sa >= sb, f"RCL-10: results are not ranked by score ({a} {sa} before {b} {sb})"
        if sa == sb:
            assert a < b, f"RCL-10: equal scores are not tie-broken on record id ({a}, {b})"


@pytest.mark.requirement("RCL-11")
def test_every_record_says_why_it_is_included(driver: Driver) -> None:
    side = driver.put("the invoice template lives in the finance drive")
    partner = driver.put("everything moved elsewhere")
    driver.transition(side, partner)
    plain = driver.put("invoice numbers start at 1000")
    result = driver.recall("invoice template finance")
    assert result["records"], "RCL-11: recall returned nothing for a matching query"
    for entry in result["records"]:
        reasons = entry.get("reasons")
        rid = entry["record"]["id"]
        assert isinstance(reasons, list) and reasons, f"RCL-11: {rid} carries no reasons"
        assert set(reasons) <= _ALLOWED_REASONS, (
            f"RCL-11: {rid} carries reasons {reasons} outside {sorted(_ALLOWED_REASONS)}"
        )
    found = {e["record"]["id"]: e["reasons"] for e in result["records"]}
    for rid in (side["id"], plain["id"]):
        if rid in found:
            assert "query-match" in found[rid], (
                f"RCL-11: directly matching record {rid} is marked {found[rid]}, not query-match"
            )
    assert partner["id"] in found and "transition-partner" in found[partner["id"]], (
        f"RCL-11: the record pulled in as a transition partner is marked "
        f"{found.get(partner['id'])}, not transition-partner"
    )


@pytest.mark.requirement("RCL-12")
def test_total_tokens_never_exceed_the_budget(driver: Driver) -> None:
    for i in range(8):
        driver.put(f"the ferry timetable changes in spring {'and autumn ' * i}")
    side = driver.put("the ferry leaves from pier one")
    driver.transition(side, driver.put("boats depart from pier two " * 4))
    for budget in (0, 1, 5, 12, 25, 40, 80, RECALL_BUDGET):
        result = driver.recall("ferry timetable pier", budget)
        total = result["total_tokens"]
        assert total <= budget, f"RCL-12: a budget of {budget} returned {total} tokens"
        summed = sum(e["tokens"] for e in result["records"])
        assert summed == total, (
            f"RCL-12: total_tokens {total} is not the sum of the records' tokens ({summed})"
        )


@pytest.mark.requirement("RCL-13")
def test_recall_writes_nothing(driver: Driver, engine: EngineSession) -> None:
    old = driver.put("the wiki password is in the vault")
    driver.supersede(old, "the wiki uses single sign-on now", reason="corrected")
    side = driver.put("the vault is in the basement")
    driver.transition(side, driver.put("the vault moved upstairs"))
    before = snapshot(engine)
    for history in (False, True):
        for archived in (False, True):
            for budget in (5, RECALL_BUDGET):
                driver.recall("wiki vault password", budget, include_history=history,
                              include_archived=archived)
    assert snapshot(engine) == before, "RCL-13: recall wrote record versions"
