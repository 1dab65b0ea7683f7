"""Consolidation: dedup, contradiction, promotion and the flag sweep, gated and reported."""

from __future__ import annotations

from typing import Any

import pytest

from memspec import ERROR_CLASSES, canonical_json, is_reason
from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._driver import Driver
from memspec.conformance._machines import (
    check_lifecycle_invariants,
    describe_change,
    fresh_id,
    snapshot,
)
from memspec.conformance._outcomes import RequirementFailed, blame
from memspec.conformance._session import EngineSession

PASSES = ("exact-dedup", "near-dup", "contradiction", "resolution", "promotion", "flag-sweep")
#: A near-dup threshold high enough that only (near-)identical text merges.
STRICT = {"near_dup_threshold": "0.95", "promotion_threshold": 3}
POSITIVE = "The staging database is Postgres."
NEGATIVE = "The staging database is not Postgres."
#: Contradictions are triggered by slot conflicts, the CONS-13 floor every default operator
#: detects; negation polarity is the reference's own extra (section 15.4), never relied on.
DB_A = ("The staging database is Postgres.", {"staging database": "postgres"})
DB_B = ("Staging data lives in MySQL.", {"staging database": "mysql"})


@pytest.fixture
def driver(driver: Driver) -> Driver:
    """The kit's driver, with this suite's provenance refs (cons-1, cons-2, ...)."""
    return driver.configured(ref_prefix="cons")


def _birth_unchanged(before: dict[str, Any], after: dict[str, Any]) -> bool:
    return all(before[f] == after[f] for f in ("body", "slots", "type", "provenance",
                                                 "created_at"))


def _seed_everything(driver: Driver) -> list[dict[str, Any]]:
    """One record set that gives every sub-pass something to do; returns every version put."""
    puts: list[dict[str, Any]] = [
        driver.new("The backup job runs at two.", confidence="0.9000"),
        driver.new("The backup job runs at two.", confidence="0.7000"),
        driver.new("The deploy script lives in the tools folder."),
        driver.new("The deploy script lives in the tools folder!"),
        driver.new(POSITIVE),
        driver.new(NEGATIVE),
        driver.new("The staging database is never Postgres."),
        driver.new("The build cache lives on the fast disk.", slots={"cache disk": "fast"}),
        driver.new("Cache files go to the archive volume.", slots={"cache disk": "archive"}),
        driver.new("Standup overran because of the outage review.", "episode", tags=["standup"]),
        driver.new("Standup was cut short by a fire drill.", "episode", tags=["standup"]),
        driver.new("Standup moved to the big room on Thursday.", "episode", tags=["standup"]),
    ]
    dead = driver.new("The old VPN client needed a restart.")
    puts += [dead, build.evolve(dead, driver.clock.advance(seconds=1), state="archived",
                                state_reason="client retired")]
    puts.append(driver.new("Restart the VPN client whenever it hangs.", "rule",
                           evidence=[dead["id"]]))
    return puts


# -- exact dedup -------------------------------------------------------------------------


@pytest.mark.requirement("CONS-5")
def test_exact_dedup_collapses_to_one_keeper(driver: Driver) -> None:
    copies = [driver.put("The backup job runs at two.", confidence=c, slots={"job": "backup"})
              for c in ("0.7000", "0.9000", "0.8000")]
    old_copy = driver.put("The backup job runs at two.", slots={"job": "backup"})
    driver.engine.call("apply_proposal", proposal=build.proposal(
        "archive", target_id=old_copy["id"], reason="stale"), now=driver.clock.advance(seconds=1))
    other = driver.put("The backup job runs at three.", slots={"shift": "late"})
    archived_before = driver.history(old_copy["id"])
    report = driver.consolidate(STRICT)
    states = {c["id"]: driver.get(c["id"]) for c in copies}
    keepers = [rid for rid, r in states.items() if r["state"] == "active"]
    assert len(keepers) == 1, (
        f"CONS-5: exact duplicates did not collapse to one active keeper (states "
        f"{[r['state'] for r in states.values()]})"
    )
    keeper = keepers[0]
    keeper_history = driver.history(keeper)
    for rid, record in states.items():
        assert _birth_unchanged(next(c for c in copies if c["id"] == rid), record), (
            f"CONS-5: dedup rewrote the content of {rid}"
        )
        if rid == keeper:
            continue
        assert record["state"] == "superseded" and record["superseded_by"] == keeper, (
            f"CONS-5: duplicate {rid} is {record['state']} with superseded_by "
            f"{record['superseded_by']}, expected superseded by the keeper {keeper}"
        )
        assert is_reason(record["state_reason"]), (
            f"CONS-5: duplicate {rid} was superseded without a reason"
        )
        assert any(v["supersedes"] == rid for v in keeper_history), (
            f"CONS-5: no version of the keeper {keeper} names the duplicate {rid} in supersedes"
        )
    assert driver.history(old_copy["id"]) == archived_before, (
        "CONS-5: exact dedup touched an archived copy (only active records are collapsed)"
    )
    assert driver.get(other["id"])["state"] == "active", (
        "CONS-5: a record with different body and slots was treated as a duplicate"
    )
    assert keeper == max(copies, key=lambda c: c["confidence"])["id"], (
        "CONS-5: the keeper is not the copy with the highest confidence"
    )
    actions = [a for a in report["actions"] if a["pass"] == "exact-dedup"]
    weaker = sorted((c for c in copies if c["id"] != keeper),
                    key=lambda c: (-float(c["confidence"]), c["created_at"], c["id"]))
    wanted = [[c["id"], keeper] for c in weaker]
    assert [a["record_ids"] for a in actions] == wanted, (
        f"CONS-5: exact dedup should report one supersede per copy, strongest copy first, with "
        f"record_ids [copy, keeper]: {[a['record_ids'] for a in actions]}"
    )


# -- near-dup ----------------------------------------------------------------------------


@pytest.mark.requirement("CONS-6")
def test_near_dup_merge_is_an_evidence_linked_supersede(driver: Driver) -> None:
    a = driver.put("The deploy script lives in the tools folder.")
    b = driver.put("The deploy script lives in the tools folder!")
    report = driver.consolidate({"near_dup_threshold": "0.6", "promotion_threshold": 3})
    latest = driver.latest()
    merges = [x for x in report["actions"] if x["pass"] == "near-dup"]
    if not merges:
        for side in (a, b):
            assert latest[side["id"]]["state"] == "active", (
                f"CONS-6: {side['id']} was changed although no near-dup merge was reported"
            )
        return
    created = sorted(set(latest) - {a["id"], b["id"]})
    assert len(created) == 1, f"CONS-6: a merge should create one merged record, made {created}"
    merged = latest[created[0]]
    assert {a["id"], b["id"]} <= set(merged["evidence"]), (
        f"CONS-6: the merged record's evidence {merged['evidence']} does not link both sides"
    )
    links = {v["supersedes"] for v in driver.history(merged["id"])}
    assert links & {a["id"], b["id"]}, "CONS-6: the merged record supersedes neither side"
    for side in (a, b):
        record, hops = latest[side["id"]], 0
        assert record["state"] == "superseded", (
            f"CONS-6: original {side['id']} is {record['state']} after the merge, not superseded"
        )
        assert _birth_unchanged(side, record), f"CONS-6: the merge rewrote {side['id']}"
        while record["superseded_by"] is not None and record["id"] != merged["id"] and hops < 5:
            record, hops = latest[record["superseded_by"]], hops + 1
        assert record["id"] == merged["id"], (
            f"CONS-6: the superseded_by chain of {side['id']} does not reach the merged record"
        )


@pytest.mark.requirement("CONS-12")
def test_near_dup_abstains_on_episodes_and_slot_conflicts(driver: Driver) -> None:
    e1 = driver.put("We deployed the billing service on Monday.", "episode")
    e2 = driver.put("We deployed the billing service on Monday!", "episode")
    f1 = driver.put("The office door code is 4711.", slots={"door code": "4711"})
    f2 = driver.put("The office door code is 4712.", slots={"door code": "4712"})
    report = driver.consolidate({"near_dup_threshold": "0.6", "promotion_threshold": 3})
    merged = {rid for x in report["actions"] if x["pass"] == "near-dup" for rid in x["record_ids"]}
    assert not merged & {e1["id"], e2["id"]}, "CONS-12: near-dup merged two similar episodes"
    assert not merged & {f1["id"], f2["id"]}, (
        "CONS-12: near-dup merged two records whose shared slot disagrees"
    )
    for record in (f1, f2):
        assert driver.get(record["id"])["state"] in ("active", "transitional"), (
            f"CONS-12: {record['id']} with a disagreeing slot was merged away"
        )


# -- contradiction -----------------------------------------------------------------------


def _assert_pair(driver: Driver, a: dict[str, Any], b: dict[str, Any], requirement: str) -> None:
    left, right = driver.get(a["id"]), driver.get(b["id"])
    assert left["state"] == "transitional" and right["state"] == "transitional", (
        f"{requirement}: the contradicting pair is {left['state']} / {right['state']}, "
        "expected both transitional"
    )
    assert left["transition"] == right["transition"], (
        f"{requirement}: the two sides carry different transition blocks "
        f"({left['transition']} vs {right['transition']})"
    )
    assert set(left["transition"]["sides"]) == {a["id"], b["id"]}, (
        f"{requirement}: the transition block names {left['transition']['sides']}, not the pair"
    )
    for side, now in ((a, left), (b, right)):
        assert _birth_unchanged(side, now), (
            f"{requirement}: contradiction handling overwrote {side['id']} (body now "
            f"{now['body']!r})"
        )


@pytest.mark.requirement("CONS-7")
def test_contradiction_opens_a_transition_without_overwriting(driver: Driver) -> None:
    a, b = driver.put(DB_A[0], slots=DB_A[1]), driver.put(DB_B[0], slots=DB_B[1])
    report = driver.consolidate(STRICT)
    _assert_pair(driver, a, b, "CONS-7")
    created = sorted(set(driver.latest()) - {a["id"], b["id"]})
    assert not created, f"CONS-7: the contradiction created records {created}"
    for side in (a, b):
        states = [v["state"] for v in driver.history(side["id"])]
        assert states == ["active", "transitional"], (
            f"CONS-7: history of {side['id']} is {states}, expected active, transitional"
        )
    assert any(x["pass"] == "contradiction" and {a["id"], b["id"]} <= set(x["record_ids"])
               for x in report["actions"]), "CONS-7: the report names no contradiction action"


@pytest.mark.requirement("CONS-14")
def test_near_dup_never_merges_a_slot_conflict(driver: Driver) -> None:
    pairs = [
        (driver.put("The staging database runs Postgres 15.", slots={"postgres": 15}),
         driver.put("The staging database runs Postgres 16.", slots={"postgres": 16})),
        (driver.put("Rotate the API keys every 30 days.", "procedure",
                    slots={"rotation": {"days": 30}}),
         driver.put("Rotate the API keys every 90 days.", "procedure",
                    slots={"rotation": {"days": 90}})),
        (driver.put("The retry flag of the uploader is set.", slots={"retry": 1}),
         driver.put("The retry flag of the uploader is set!", slots={"retry": True})),
    ]
    for config in (None, {"near_dup_threshold": "0.1", "promotion_threshold": 3}):
        report = driver.consolidate(config)
        merged = {rid for x in report["actions"] if x["pass"] == "near-dup"
                  for rid in x["record_ids"]}
        for a, b in pairs:
            assert not merged & {a["id"], b["id"]}, (
                f"CONS-14: near-dup (configuration {config or 'default'}) merged "
                f"{a['slots']} / {b['slots']}, a pair whose shared slot disagrees"
            )
            for side in (a, b):
                record = driver.get(side["id"])
                assert record["state"] in ("active", "transitional"), (
                    f"CONS-14: with configuration {config or 'default'} {side['id']}, one side "
                    f"of a slot conflict, is {record['state']} (superseded by "
                    f"{record['superseded_by']})"
                )


@pytest.mark.requirement("CONS-8")
def test_a_record_joins_one_transition_per_pass(driver: Driver) -> None:
    hub = driver.put("Staging runs Postgres in Frankfurt.",
                     slots={"staging database": "postgres", "staging region": "eu"})
    first = driver.put("Staging data lives in MySQL.", slots={"staging database": "mysql"})
    second = driver.put("The staging hosts are in Virginia.", slots={"staging region": "us"})
    report = driver.consolidate(STRICT)
    latest = driver.latest()
    partners = [r for r in (first, second) if latest[r["id"]]["state"] == "transitional"]
    assert latest[hub["id"]]["state"] == "transitional" and len(partners) == 1, (
        f"CONS-8: expected the hub in exactly one transition; states hub="
        f"{latest[hub['id']]['state']}, others="
        f"{[latest[r['id']]['state'] for r in (first, second)]}"
    )
    waiting = next(r for r in (first, second) if r is not partners[0])
    assert latest[waiting["id"]]["state"] == "active", (
        f"CONS-8: the second contradiction partner is {latest[waiting['id']]['state']}"
    )
    deferred = [d for d in report["deferred"] if waiting["id"] in d["record_ids"]]
    assert deferred, (
        f"CONS-8: the further contradiction ({hub['id']}, {waiting['id']}) was dropped "
        f"silently instead of reported as deferred: {report['deferred']}"
    )
    assert all(is_reason(d["reason"]) for d in deferred), (
        "CONS-8: a deferral gives no reason"
    )


@pytest.mark.requirement("CONS-9")
def test_episodes_and_rules_are_never_contradiction_candidates(driver: Driver) -> None:
    anchor = driver.put("The coffee machine was descaled.")
    pairs = [
        (driver.put(POSITIVE, "episode"), driver.put(NEGATIVE, "episode")),
        (driver.put(DB_A[0], "episode", slots=DB_A[1]),
         driver.put(DB_B[0], "episode", slots=DB_B[1])),
        (driver.put("The build cache is shared.", "rule", evidence=[anchor["id"]]),
         driver.put("The build cache is not shared.", "rule", evidence=[anchor["id"]])),
        (driver.put("Share the build cache.", "rule", evidence=[anchor["id"]],
                    slots={"cache shared": True}),
         driver.put("Keep build caches private.", "rule", evidence=[anchor["id"]],
                    slots={"cache shared": False})),
        (driver.put("The release branch is frozen."),
         driver.put("The release branch is not frozen.", "episode")),
        (driver.put("The release branch is frozen.", slots={"release branch": "frozen"}),
         driver.put("We unfroze the release branch.", "episode",
                    slots={"release branch": "open"})),
    ]
    report = driver.consolidate(STRICT)
    for a, b in pairs:
        for record in (a, b):
            state = driver.get(record["id"])["state"]
            assert state != "transitional", (
                f"CONS-9: the {record['type']} {record['id']} became transitional; episodes and "
                "rules are never contradiction candidates"
            )
    involved = {rid for x in report["actions"] if x["pass"] == "contradiction"
                for rid in x["record_ids"]}
    assert not involved & {r["id"] for pair in pairs for r in pair if r["type"] != "fact"}, (
        "CONS-9: the report shows a contradiction action on an episode or a rule"
    )


# -- promotion ---------------------------------------------------------------------------


def _rules(driver: Driver) -> list[dict[str, Any]]:
    return [r for r in driver.latest().values() if r["type"] == "rule"]


@pytest.mark.requirement("CONS-10")
def test_promotion_links_all_episodes_once(driver: Driver) -> None:
    bodies = ("Standup overran because of the outage review.",
              "Standup was cut short by a fire drill.",
              "Standup moved to the big room on Thursday.")
    episodes = [driver.put(b, "episode", tags=["standup"]) for b in bodies]
    driver.put("Retro ran long on Friday.", "episode", tags=["retro"])
    driver.put("Retro skipped because of the holiday.", "episode", tags=["retro"])
    driver.consolidate(STRICT)
    rules = _rules(driver)
    assert len(rules) == 1, (
        f"CONS-10: three episodes sharing tags should promote exactly one rule (threshold 3), "
        f"got {len(rules)}; two sharing another tag must not"
    )
    rule = rules[0]
    assert set(rule["evidence"]) == {e["id"] for e in episodes}, (
        f"CONS-10: the promoted rule's evidence {sorted(rule['evidence'])} does not link all "
        f"supporting episodes {sorted(e['id'] for e in episodes)}"
    )
    assert rule["state"] == "active" and rule["flagged"] is False, (
        "CONS-10: the promoted rule is not born active and unflagged"
    )
    for episode in episodes:
        assert len(driver.history(episode["id"])) == 1, (
            f"CONS-10: promotion wrote a new version of evidence {episode['id']}"
        )
    driver.consolidate(STRICT)
    driver.put("Standup started late after the network outage.", "episode", tags=["standup"])
    driver.consolidate(STRICT)
    assert len(_rules(driver)) == 1, (
        f"CONS-10: promotion is not idempotent per signature: {len(_rules(driver))} rules after "
        "three passes"
    )


@pytest.mark.requirement("CONS-10")
def test_no_promotion_below_threshold(driver: Driver) -> None:
    for body in ("Standup overran because of the outage review.",
                 "Standup was cut short by a fire drill.",
                 "Standup moved to the big room on Thursday."):
        driver.put(body, "episode", tags=["standup"])
    driver.consolidate({"near_dup_threshold": "0.95", "promotion_threshold": 4})
    assert not _rules(driver), "CONS-10: a rule was promoted from 3 episodes with threshold 4"
    driver.put("Standup is skipped on public holidays.", "fact", tags=["standup"])
    driver.consolidate({"near_dup_threshold": "0.95", "promotion_threshold": 4})
    assert not _rules(driver), "CONS-10: a fact was counted as an episode towards promotion"


# -- flag sweep --------------------------------------------------------------------------


@pytest.mark.requirement("CONS-11")
def test_every_pass_sweeps_rule_flags(driver: Driver) -> None:
    dead = driver.put("The old VPN client needed a restart.")
    driver.engine.call("apply_proposal", proposal=build.proposal(
        "archive", target_id=dead["id"], reason="client retired"),
        now=driver.clock.advance(seconds=1))
    live = driver.put("The printer on floor two jams on thick paper.")
    stale = driver.put("Restart the VPN client whenever it hangs.", "rule", evidence=[dead["id"]])
    orphan = driver.put("Water the office plants on Mondays.", "rule",
                        evidence=[fresh_id("gone")])
    wrongly = {**driver.new("Use thin paper in the floor two printer.", "rule",
                            evidence=[live["id"]]), "flagged": True, "flag_reason": "stale"}
    driver.engine.call("put", record=wrongly)
    fine = driver.put("Feed the printer from tray two.", "rule", evidence=[live["id"], dead["id"]])
    fine_history = driver.history(fine["id"])
    report = driver.consolidate(STRICT)
    for rule in (stale, orphan):
        now = driver.get(rule["id"])
        if not (now["flagged"] is True and isinstance(now["flag_reason"], str) and \
            now["flag_reason"].strip()):
            raise RequirementFailed(
                "CONS-11",
                f"(RULE-2) rule {rule['id']} whose evidence is archived or missing was not flagged "
                f"with a reason by the sweep (flagged={now['flagged']!r})")
        if now["state"] != "active":
            raise RequirementFailed("CONS-11", f"flagging (RULE-6) moved {rule['id']} to "
                                               f"{now['state']}")
    cleared = driver.get(wrongly["id"])
    if not (cleared["flagged"] is False and cleared["flag_reason"] is None):
        raise RequirementFailed(
            "CONS-11", "(RULE-3) the sweep left a rule flagged although its evidence is live")
    if driver.history(fine["id"]) != fine_history:
        raise RequirementFailed("CONS-11", "the sweep rewrote a rule whose flag was already right")
    sweeps = [x for x in report["actions"] if x["pass"] == "flag-sweep"]
    swept = {rid for x in sweeps for rid in x["record_ids"]}
    missing = {stale["id"], orphan["id"], wrongly["id"]} - swept
    if missing:
        raise RequirementFailed(
            "CONS-11", f"flag changes of {sorted(missing)} are not reported as mutations")
    for action in sweeps:
        expected = "unflag" if action["record_ids"] == [wrongly["id"]] else "flag"
        if not (action["action"] == expected and action["before"] == action["after"]):
            raise RequirementFailed(
                "CONS-11",
                f"the sweep reported {action['action']} with states {action['before']} -> "
                f"{action['after']} for {action['record_ids']}; expected {expected} with the state "
                "unchanged (RULE-6)")


# -- the pass as a whole -----------------------------------------------------------------


@pytest.mark.requirement("CONS-1")
def test_sub_passes_run_in_order(driver: Driver, engine: EngineSession) -> None:
    for record in _seed_everything(driver):
        engine.call("put", record=record)
    report = driver.consolidate({"near_dup_threshold": "0.6", "promotion_threshold": 3})
    order = [PASSES.index(x["pass"]) for x in report["actions"]]
    assert order == sorted(order), (
        f"CONS-1: the report's actions are not in sub-pass order: "
        f"{[x['pass'] for x in report['actions']]}"
    )
    seen = {x["pass"] for x in report["actions"]}
    for needed in ("exact-dedup", "contradiction", "promotion", "flag-sweep"):
        assert needed in seen, f"CONS-1: the {needed} sub-pass did not run (actions: {seen})"


@pytest.mark.requirement("CONS-2")
def test_every_consolidation_write_is_a_legal_lifecycle_step(
    driver: Driver, engine: EngineSession
) -> None:
    for record in _seed_everything(driver):
        engine.call("put", record=record)
    before = snapshot(engine)
    driver.consolidate({"near_dup_threshold": "0.6", "promotion_threshold": 3})
    after = snapshot(engine)
    for rid, versions in before.items():
        if after[rid][: len(versions)] != versions:
            raise RequirementFailed(
                "CONS-2", f"consolidation altered or removed stored versions of {rid}")
    histories = {rid: engine.call("history", id=rid)["records"] for rid in after}
    with blame("CONS-2", override=True):  # an illegal write of the pass breaks CONS-2
        check_lifecycle_invariants(histories)


_ACTIONS = {"supersede", "merge", "transition", "resolve", "create", "flag", "unflag"}


@pytest.mark.requirement("CONS-3")
def test_report_records_every_mutation(driver: Driver, engine: EngineSession) -> None:
    for record in _seed_everything(driver):
        engine.call("put", record=record)
    before = snapshot(engine)
    report = driver.consolidate({"near_dup_threshold": "0.6", "promotion_threshold": 3})
    after = snapshot(engine)
    histories = {rid: engine.call("history", id=rid)["records"] for rid in after}
    old_state = {rid: histories[rid][len(v) - 1]["state"] for rid, v in before.items()}
    written = {rid: [v["state"] for v in histories[rid][len(before.get(rid, ())):]]
               for rid in after}
    named: set[str] = set()
    for action in report["actions"]:
        ids, done, was = action["record_ids"], action["after"], action["before"]
        what = f"action {action['action']!r} of {action['pass']} on {ids}"
        assert action["action"] in _ACTIONS, (
            f"CONS-3: {what} is not one of {sorted(_ACTIONS)}"
        )
        assert ids, f"CONS-3: {what} names no records"
        assert is_reason(action["reason"]), (
            f"CONS-3: {what} gives no reason"
        )
        existing = [rid for rid in ids if rid in old_state]
        assert len(done) == len(ids) and len(existing) <= len(was) <= len(ids), (
            f"CONS-3: {what} lists {len(ids)} records but {len(was)} before and {len(done)} "
            "after states (before covers the records that existed before the action)"
        )
        for rid, state_after in zip(ids, done, strict=True):
            assert written[rid], f"CONS-3: {what} names {rid}, which the pass did not write"
            assert state_after in written[rid], (
                f"CONS-3: {what} reports {rid} after as {state_after}, but the pass wrote "
                f"states {written[rid]} for it"
            )
        if len(was) == len(existing):
            for rid, state_before in zip(existing, was, strict=True):
                assert state_before == old_state[rid] or state_before in written[rid], (
                    f"CONS-3: {what} reports {rid} before as {state_before}, but it was "
                    f"{old_state[rid]}"
                )
        named.update(ids)
    changed = {rid for rid in after if after[rid] != before.get(rid)}
    unreported = sorted(changed - named)
    assert not unreported, (
        f"CONS-3: the pass changed {unreported} without reporting the mutation "
        f"({describe_change(before, after)})"
    )
    for rejection in report["rejections"]:
        assert rejection["code"] in ERROR_CLASSES and rejection["detail"].strip(), (
            f"CONS-3: a rejection lacks its cause: {rejection}"
        )


@pytest.mark.requirement("CONS-4")
def test_same_store_same_report(driver: Driver, engine: EngineSession, clock: KitClock) -> None:
    seed = _seed_everything(driver)
    now = clock.advance(days=2)
    firsts = [r for r in seed if r["state"] == "active"]
    laters = [r for r in seed if r["state"] != "active"]
    orders = (seed, firsts[::-1] + laters, firsts[3:] + firsts[:3] + laters)
    reports, stores = [], []
    for order in (*orders, orders[0]):
        engine.call("reset")
        for record in order:
            engine.call("put", record=record)
        reports.append(canonical_json(driver.consolidate(
            {"near_dup_threshold": "0.6", "promotion_threshold": 3}, now=now)))
        stores.append(snapshot(engine))
    for i, (report, store) in enumerate(zip(reports[1:], stores[1:], strict=True), start=1):
        assert report == reports[0], (
            f"CONS-4: run {i} gave a different report for the same store, clock and "
            f"configuration ({'a different insertion order' if i < 3 else 'a repeat run'})"
        )
        assert store == stores[0], (
            f"CONS-4: run {i} left the store different: {describe_change(stores[0], store)}"
        )


@pytest.mark.requirement("CONS-13")
def test_default_operator_detects_slot_disagreement(driver: Driver) -> None:
    db_a = driver.put("Our analytics warehouse runs on one engine.", slots={"warehouse": "duckdb"})
    db_b = driver.put("Reports are served from the analytics store.",
                      slots={"warehouse": "clickhouse"})
    proc_a = driver.put("Rotate the keys monthly.", "procedure", slots={"rotation": {"days": 30}})
    proc_b = driver.put("Key rotation happens on a schedule.", "procedure",
                        slots={"rotation": {"days": 90}})
    same_a = driver.put("The office opens early.", slots={"opens": {"hour": 7}})
    same_b = driver.put("Doors unlock before most people arrive.", slots={"opens": {"hour": 7}})
    driver.consolidate(STRICT)
    for a, b in ((db_a, db_b), (proc_a, proc_b)):
        left, right = driver.get(a["id"]), driver.get(b["id"])
        assert left["state"] == right["state"] == "transitional" and \
            left["transition"] == right["transition"], (
                f"CONS-13: two active {a['type']}s whose shared slot disagrees were not put "
                f"into one transition (states {left['state']}, {right['state']})"
            )
    for record in (same_a, same_b):
        assert driver.get(record["id"])["state"] == "active", (
            "CONS-13: records whose shared slot holds equal values were treated as a "
            "contradiction"
        )


def _first_versions(engine: EngineSession, rid: str) -> list[dict[str, Any]]:
    versions: list[dict[str, Any]] = engine.call("history", id=rid)["records"]
    return versions


@pytest.mark.requirement("CONS-3")
def test_each_action_lists_exactly_its_records_in_order(
    driver: Driver, engine: EngineSession
) -> None:
    for record in _seed_everything(driver):
        engine.call("put", record=record)
    wrongly = {**driver.new("Use thin paper in the floor two printer.", "rule",
                            evidence=[driver.put("The floor two printer jams.")["id"]]),
               "flagged": True, "flag_reason": "stale"}
    engine.call("put", record=wrongly)
    existing = {r["id"] for r in engine.call("iterate")["records"]}
    report = driver.consolidate({"near_dup_threshold": "0.6", "promotion_threshold": 3})
    latest = driver.latest()
    seen: set[str] = set()
    for action in report["actions"]:
        ids, kind = action["record_ids"], action["action"]
        what = f"{action['pass']} {kind} {ids}"
        seen.add(kind)
        assert len(ids) == len(set(ids)), f"CONS-3: {what} names a record twice"
        new = [rid for rid in ids if rid not in existing]
        existing.update(ids)
        assert len(action["after"]) == len(ids) and \
            len(action["before"]) == len(ids) - len(new), (
                f"CONS-3: {what} has before {action['before']} and after {action['after']}: "
                "after covers every listed record, before those that existed"
            )
        if kind == "supersede":
            assert len(ids) == 2 and not new and latest[ids[0]]["superseded_by"] == ids[1], (
                f"CONS-3: exact dedup's {what} should be [copy, keeper], the copy superseded "
                "by the keeper"
            )
        elif kind == "merge":
            merged = ids[-1]
            assert len(ids) in (2, 3) and new == [merged], (
                f"CONS-3: {what} should be [target, other side, merged record], the merged "
                "record new and last"
            )
            first = _first_versions(engine, merged)[0]
            assert first["supersedes"] == ids[0], (
                f"CONS-3: {what}: the merged record's first version supersedes "
                f"{first['supersedes']}, but the target is listed first"
            )
            if len(ids) == 3:
                assert latest[ids[1]]["superseded_by"] == merged, (
                    f"CONS-3: {what}: the other side {ids[1]} is not superseded by the merged "
                    "record"
                )
        elif kind == "transition":
            block = latest[ids[0]]["transition"] if ids[0] in latest else None
            assert len(ids) == 2 and block is not None and block["sides"] == ids, (
                f"CONS-3: {what} should list the two sides in the order of the block's sides "
                f"({block['sides'] if block else None})"
            )
        elif kind in ("create", "flag", "unflag"):
            assert len(ids) == 1 and latest[ids[0]]["type"] == "rule", (
                f"CONS-3: {what} should list the rule alone (a promotion's episodes are in its "
                "evidence, not in the action)"
            )
            assert (ids[0] in new) == (kind == "create"), (
                f"CONS-3: {what}: only a create lists a record the action made"
            )
    assert {"supersede", "transition", "create", "flag", "unflag"} <= seen, (
        f"CONS-3: kit data: expected every kind of action, saw {sorted(seen)}"
    )
