"""Decay: mechanical archival through the lifecycle, with protections reported, never deletion."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import is_reason
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import describe_change, snapshot
from memspec.conformance._outcomes import RequirementFailed
from memspec.conformance._session import EngineSession

#: Forces low salience: one-day half-life, no touch bonus, a high threshold.
HARSH = {"half_life_days": 1, "reinforcement_bonus": 0, "archive_threshold": 0.5}
FAR = 3650  # days after the clock's start: ten years on


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (decay-1, decay-2, ...)."""
    return driver.configured(ref_prefix="decay")


def _decay(driver: Driver, config: dict[str, Any] | None = HARSH,
           now: str | None = None) -> dict[str, Any]:
    """A decay pass (default: the harsh config, ten years on)."""
    return driver.decay(config, now or driver.clock.at(FAR))


def _protections(report: dict[str, Any]) -> dict[str, str]:
    return {p["id"]: p["protection"] for p in report["protected"]}


@pytest.mark.requirement("DEC-1")
def test_low_salience_is_archived_never_deleted(driver: Driver, engine: EngineSession) -> None:
    old = driver.put("the fax machine is in room 12")
    gone = driver.put("the old intranet lived at intranet.local")
    successor = build.record("fact", "the intranet moved to the wiki",
                             created_at=driver.clock.now(), supersedes=gone["id"],
                             provenance={"kind": "observation", "ref": "decay-s", "agent": None})
    driver.apply(build.proposal("supersede", successor, target_id=gone["id"], reason="moved"))
    before = snapshot(engine)
    now = driver.clock.at(FAR)
    report = _decay(driver, now=now)
    for record in (old, gone, successor):
        if record["id"] not in report["archived"]:
            raise RequirementFailed(
                "DEC-1",
                f"{record['id']} has salience far below the threshold but was not archived "
                f"(report {report['archived']})")
        latest = driver.get(record["id"])
        if latest["state"] != "archived":
            raise RequirementFailed(
                "DEC-1", f"{record['id']} is reported archived but stored as {latest['state']}")
        reason = latest["state_reason"]
        if not is_reason(reason):
            raise RequirementFailed("DEC-1", f"{record['id']} was archived without a reason")
        if latest["updated_at"] != now:
            raise RequirementFailed(
                "LC-5",
                f"the archived version of {record['id']} has updated_at {latest['updated_at']}, "
                f"not the decay time {now}")
    after = snapshot(engine)
    for rid, versions in before.items():
        if rid not in after:
            raise RequirementFailed("DEC-1", f"decay deleted {rid}")
        if not (after[rid][: len(versions)] == versions and len(after[rid]) == len(versions) + 1):
            raise RequirementFailed(
                "DEC-1", f"decay should add exactly one archived version of {rid}: "
                f"{describe_change({rid: versions}, {rid: after[rid]})}")


@pytest.mark.requirement("DEC-1")
def test_records_above_threshold_are_left_alone(driver: Driver, engine: EngineSession) -> None:
    fresh = driver.put("the parking permit renews in june", confidence="1.0000")
    before = snapshot(engine)
    report = _decay(driver, {"half_life_days": 30, "reinforcement_bonus": 0.25,
                             "archive_threshold": 0.05}, now=driver.clock.at(1))
    assert fresh["id"] not in report["archived"], (
        "DEC-1: a one-day-old record with confidence 1 was archived with default-like settings"
    )
    assert snapshot(engine) == before, "DEC-1: decay wrote to records above the threshold"


@pytest.mark.requirement("DEC-2", "DEC-5")
def test_transitional_records_never_decay(driver: Driver) -> None:
    a = driver.put("the staging database is Postgres")
    b = driver.put("the staging database is not Postgres")
    driver.apply(build.proposal("transition", target_id=a["id"], other_id=b["id"],
                                reason="dispute"))
    report = _decay(driver)
    protected = _protections(report)
    for side in (a, b):
        if side["id"] in report["archived"]:
            raise RequirementFailed("DEC-2", f"transitional {side['id']} decayed")
        if driver.get(side["id"])["state"] != "transitional":
            raise RequirementFailed(
                "DEC-2", f"transitional {side['id']} left its state during decay")
        if protected.get(side["id"]) != "transitional":
            raise RequirementFailed(
                "DEC-5",
                f"below-threshold transitional {side['id']} survived without being reported "
                f"as protected 'transitional' (protected: {report['protected']})")


@pytest.mark.requirement("DEC-3", "DEC-5")
def test_unflagged_rules_never_decay(driver: Driver) -> None:
    cited = driver.put("the night build failed on tuesday", "episode")
    rule = driver.put("night builds fail after schema changes", "rule", evidence=[cited["id"]])
    report = _decay(driver)
    if rule["id"] in report["archived"]:
        raise RequirementFailed("DEC-3", "an unflagged rule decayed")
    if driver.get(rule["id"])["state"] != "active":
        raise RequirementFailed("DEC-3", "an unflagged rule left active")
    if _protections(report).get(rule["id"]) != "unflagged-rule":
        raise RequirementFailed(
            "DEC-5", f"the surviving unflagged rule is not reported as protected 'unflagged-rule' "
            f"(protected: {report['protected']})")


@pytest.mark.requirement("DEC-3")
def test_flagged_rules_may_decay(driver: Driver) -> None:
    dead = driver.put("the old VPN client hung")
    driver.apply(build.proposal("archive", target_id=dead["id"], reason="retired"))
    flagged = {**driver.new("restart the VPN client when it hangs", "rule",
                            evidence=[dead["id"]]),
               "flagged": True, "flag_reason": "every evidence record is archived"}
    driver.engine.call("put", record=flagged)
    report = _decay(driver)
    assert flagged["id"] in report["archived"], (
        "DEC-3: a flagged rule far below the threshold was not archived; only unflagged rules "
        "are protected"
    )


@pytest.mark.requirement("DEC-4", "DEC-5")
def test_rule_evidence_never_decays(driver: Driver) -> None:
    cited = driver.put("deploys on friday broke the cache twice")
    other = driver.put("deploys on friday are frowned upon")
    rule = driver.put("never deploy on fridays", "rule", evidence=[cited["id"], other["id"]])
    loose = driver.put("the cafeteria closes at three")
    report = _decay(driver)
    protected = _protections(report)
    for evidence in (cited, other):
        if evidence["id"] in report["archived"]:
            raise RequirementFailed(
                "DEC-4", f"{evidence['id']} is evidence of an active rule but decayed")
        if driver.get(evidence["id"])["state"] != "active":
            raise RequirementFailed(
                "DEC-4", f"rule evidence {evidence['id']} left active during decay")
        if protected.get(evidence["id"]) != "rule-evidence":
            raise RequirementFailed(
                "DEC-5", f"surviving rule evidence {evidence['id']} is not reported as protected "
                f"'rule-evidence' (protected: {report['protected']})")
    if loose["id"] not in report["archived"]:
        raise RequirementFailed(
            "DEC-4", "an uncited record was protected as well; the protection must be targeted")
    if rule["id"] in report["archived"]:
        raise RequirementFailed("DEC-3", "the unflagged rule decayed")


@pytest.mark.requirement("DEC-5")
def test_protections_name_below_threshold_records_only(driver: Driver) -> None:
    a = driver.put("the wifi is called office-5g")
    b = driver.put("the wifi is not called office-5g")
    driver.apply(build.proposal("transition", target_id=a["id"], other_id=b["id"],
                                reason="dispute"))
    rule = driver.put("the boiler is serviced yearly", "rule", evidence=[a["id"]])
    cited = driver.put("the boiler was serviced in may")
    driver.put("the boiler room is locked", "rule", evidence=[cited["id"]])
    gone = driver.put("the old boiler leaked")
    considered = {r["id"] for r in driver.engine.call("iterate")["records"]
                  if r["state"] != "archived"}
    report = _decay(driver)
    assert set(report["saliences"]) == considered, (
        f"DEC-5: saliences should be reported for every record that is not archived "
        f"({len(considered)}), got {len(report['saliences'])}"
    )
    ids = [p["id"] for p in report["protected"]]
    assert len(ids) == len(set(ids)), f"DEC-5: a record is reported protected twice: {ids}"
    assert ids == sorted(ids), f"DEC-5: protected ids are not in ascending order: {ids}"
    assert report["archived"] == sorted(report["archived"]), (
        f"DEC-1: archived ids are not in ascending order: {report['archived']}"
    )
    saliences = report["saliences"]
    for entry in report["protected"]:
        assert saliences.get(entry["id"], 0) < HARSH["archive_threshold"], (
            f"DEC-5: {entry['id']} is reported protected although its salience "
            f"{saliences.get(entry['id'])} is not below the threshold"
        )
    expected = {a["id"]: "transitional", b["id"]: "transitional", rule["id"]: "unflagged-rule",
                cited["id"]: "rule-evidence"}
    protections = _protections(report)
    for rid, protection in expected.items():
        assert protections.get(rid) == protection, (
            f"DEC-5: {rid} should be reported under its first applicable protection "
            f"{protection!r}, the report says {protections.get(rid)!r}"
        )
    assert gone["id"] in report["archived"] and gone["id"] not in protections, (
        "DEC-5: an unprotected record was reported as protected"
    )


@pytest.mark.requirement("DEC-6")
def test_reference_salience_scoring(driver: Driver, clock: KitClock) -> None:
    record = driver.put("the spare toner is in the cupboard", confidence="0.8000")
    report = _decay(driver, None, now=clock.at(30))
    value = report["saliences"].get(record["id"])
    assert value is not None, "DEC-6: the decay report gives no salience for the record"
    assert abs(value - 0.4) <= 1e-4, (
        f"DEC-6: salience of confidence 0.8 after one 30-day half-life is {value}, the reference "
        "scoring gives 0.4"
    )
    assert record["id"] not in report["archived"], (
        "DEC-6: a record at salience 0.4 was archived under the default threshold 0.05"
    )
    late = _decay(driver, None, now=clock.at(30 * 5))
    assert abs(late["saliences"][record["id"]] - 0.8 / 32) <= 1e-4, (
        f"DEC-6: salience after five half-lives is {late['saliences'][record['id']]}, expected "
        f"{0.8 / 32}"
    )
    assert record["id"] in late["archived"], (
        "DEC-6: salience 0.025 is below the default threshold 0.05 but the record was not "
        "archived"
    )


@pytest.mark.requirement("DEC-6")
@pytest.mark.profile("recall")
def test_reference_salience_with_touches(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    touched = driver.put("the label printer needs the blue tape", confidence="0.8000")
    idle = driver.put("the label printer lives by the window", confidence="0.8000")
    for _ in range(3):
        engine.call("touch", id=touched["id"], now=clock.at(10))
    report = _decay(driver, None, now=clock.at(40))
    expected = {touched["id"]: 0.8 * 0.5 + 0.25 * 3, idle["id"]: 0.8 * 0.5 ** (40 / 30)}
    for rid, want in expected.items():
        got = report["saliences"].get(rid)
        assert got is not None and abs(got - want) <= 1e-4, (
            f"DEC-6: salience of {rid} is {got}, the reference scoring gives {want:.6f}: "
            "confidence x 0.5^(idle days / 30) + 0.25 x touches, idle days counted from the "
            "last touch (3 touches on day 10, decay on day 40)"
        )
    tuned = _decay(driver, {"half_life_days": 15, "reinforcement_bonus": 0.1,
                            "archive_threshold": 0.01}, now=clock.at(40))
    want = 0.8 * 0.25 + 0.1 * 3
    assert abs(tuned["saliences"][touched["id"]] - want) <= 1e-4, (
        f"DEC-6: with half_life_days 15 and reinforcement_bonus 0.1 the salience is "
        f"{tuned['saliences'][touched['id']]}, the reference scoring gives {want:.6f}"
    )


@pytest.mark.requirement("DEC-7")
def test_decay_writes_nothing_but_archivals(driver: Driver, engine: EngineSession) -> None:
    keep = driver.put("the conference room seats twelve", confidence="1.0000")
    drop = driver.put("the projector bulb was replaced", confidence="0.1000")
    before = snapshot(engine)
    report = _decay(driver, {"half_life_days": 365, "reinforcement_bonus": 0.25,
                             "archive_threshold": 0.5}, now=driver.clock.at(10))
    assert report["archived"] == [drop["id"]], (
        f"DEC-7: expected only the low-confidence record archived, got {report['archived']}"
    )
    after = snapshot(engine)
    assert after[keep["id"]] == before[keep["id"]], (
        "DEC-7: decay wrote a version of a record it did not archive (salience bookkeeping "
        "belongs in the sidecar, never in the record)"
    )
    archived = driver.get(drop["id"])
    extra = set(archived) - set(drop) - {"occurred_at"}
    assert not extra, f"DEC-7: decay added fields {sorted(extra)} to the record"


@pytest.mark.requirement("DEC-7", "RCL-4")
def test_touches_live_in_the_sidecar_and_slow_decay(
    driver: Driver, engine: EngineSession, clock: KitClock
) -> None:
    touched = driver.put("the lab key hangs by the door", confidence="0.3000")
    idle = driver.put("the lab key hangs by the door", confidence="0.3000")
    for day in (1, 2, 3):
        engine.call("touch", id=touched["id"], now=clock.at(day))
    before = snapshot(engine)
    report = _decay(driver, {"half_life_days": 1, "reinforcement_bonus": 0.25,
                             "archive_threshold": 0.2}, now=clock.at(4))
    saliences = report["saliences"]
    if saliences[touched["id"]] <= saliences[idle["id"]]:
        raise RequirementFailed(
            "DEC-7", f"touches did not raise salience ({saliences[touched['id']]} vs "
            f"{saliences[idle['id']]} for an untouched twin)")
    if not (idle["id"] in report["archived"] and touched["id"] not in report["archived"]):
        raise RequirementFailed(
            "DEC-7", f"reinforcement did not protect the touched record from decay "
            f"(archived {report['archived']})")
    if snapshot(engine)[touched["id"]] != before[touched["id"]]:
        raise RequirementFailed("DEC-7", "touches or decay wrote a version of the touched record")
