"""Extension x-hypothesis: records without a source are labelled and ranked below sourced ones
of equal score; only observe makes them facts (spec/EXTENSIONS.md section X5)."""

from __future__ import annotations

from typing import Any

import pytest

from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._session import EngineSession

NO_SOURCE = {"kind": "inference", "ref": None, "agent": None}


def _twins(clock: KitClock, body: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """Two records with equal recall scores: same body, one sourced, one a hypothesis."""
    sourced = build.record("fact", body, created_at=clock.now(),
                           provenance={"kind": "inference", "ref": "doc-7", "agent": None})
    guess = build.record("fact", body, created_at=clock.now(), provenance=NO_SOURCE)
    return sourced, guess


@pytest.mark.requirement("XHYP-1")
def test_hypotheses_are_labelled(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    sourced, guess = _twins(clock, "the backup runs every night")
    observed = build.record("fact", "the backup runs on the nas", created_at=clock.now(),
                            provenance=NO_SOURCE, extra={"x_observed_at": clock.now()})
    for record in (sourced, guess, observed):
        engine.call("put", record=record)
    entries = driver.entries("backup runs")
    assert "hypothesis" in entries[guess["id"]].get("x_marks", []), (
        f"XHYP-1: a record without a source is marked {entries[guess['id']].get('x_marks')}")
    for rid in (sourced["id"], observed["id"]):
        assert "hypothesis" not in entries[rid].get("x_marks", []), (
            f"XHYP-1: {rid} has a source or an observation, yet is marked hypothesis")


@pytest.mark.requirement("XHYP-2")
def test_sourced_records_rank_first_on_equal_scores(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    pairs = [_twins(clock, "the deploy window is tuesday") for _ in range(1)]
    sourced, guess = pairs[0]
    for record in (guess, sourced):
        engine.call("put", record=record)
    entries = driver.recall("deploy window tuesday")["records"]
    ids = [e["record"]["id"] for e in entries]
    scores = {e["record"]["id"]: e["score"] for e in entries}
    assert scores[sourced["id"]] == scores[guess["id"]], (
        "XHYP-2 precondition: the twins should score alike")
    assert ids.index(sourced["id"]) < ids.index(guess["id"]), (
        f"XHYP-2: the hypothesis {guess['id']} ranks before the sourced record "
        f"{sourced['id']} of equal score")


@pytest.mark.requirement("XHYP-3")
def test_use_never_makes_a_fact(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    guess = build.record("fact", "the vendor will renew the contract", created_at=clock.now(),
                         provenance=NO_SOURCE)
    engine.call("put", record=guess)
    for _ in range(5):
        engine.call("touch", id=guess["id"], now=clock.advance(hours=1))
        driver.recall("vendor renew contract")
    assert engine.call("get", id=guess["id"])["record"] == guess, (
        "XHYP-3: touches or recalls wrote a new version of a hypothesis")
    entries = driver.entries("vendor renew")
    assert "hypothesis" in entries[guess["id"]].get("x_marks", []), (
        "XHYP-3: repeated use turned a hypothesis into a fact")
    engine.call("observe", id=guess["id"], now=clock.advance(hours=1))
    entries = driver.entries("vendor renew")
    assert "hypothesis" not in entries[guess["id"]].get("x_marks", []), (
        "XHYP-3: an observed record is still marked hypothesis")
