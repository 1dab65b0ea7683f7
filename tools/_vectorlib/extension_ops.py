"""extension-operations.json: the operations of the extension profiles of spec/EXTENSIONS.md.

observe (XPROV-3, XPROV-4), falsify (XFALS-2, XFALS-3), audit (XAUD-1 to XAUD-4), list and
recall as of an instant (XTT-1 to XTT-3), recall with and without include_expired (XEXP-2,
XEXP-3, XEXP-6), decay archiving expired records (XEXP-4), and the field rules on every entry
point that takes in a record (XEXT-4). Every expected value is written out here from the
spec's text: new versions are explicit edits of the stored ones, the audit report is assembled
field by field and its digest is the SHA-256 of this package's own canonical JSON.

Recall scores and token counts are the engine's own (SPEC.md section 13), and so are ingest
messages: a group may carry ``project``, which names, per result key, the members each entry of
that list is compared on (an entry's other members are ignored; a named member the entry lacks
must be absent from the expected entry too). Recall vectors return at most one entry, so their
order never depends on scores.
"""

from __future__ import annotations

import hashlib
from typing import Any

from _vectorlib.fixtures import (
    KEY_A,
    T0,
    T1,
    T2,
    T3,
    T4,
    case,
    evolve,
    file_of,
    group,
    make,
    sign,
    vector_file,
)
from _vectorlib.lifecycle import archive, begin, resolve, supersede
from _vectorlib.primitives import canon
from _vectorlib.records import tombstone

NAME = "extension-operations"
CLAIMED = "claimed-profile"
MID = "2026-01-03T12:00:00.000Z"  # between T2 and T3
RECALL_PROJECTION = {"records": ["record", "reasons", "x_marks"]}
INGEST_PROJECTION = {"rejected": ["index", "code"]}
#: Decay settings under which nothing decays by salience: only expiry archives.
GENTLE = {"half_life_days": 100000, "reinforcement_bonus": 0, "archive_threshold": 0.0001}


def _id(cid: str) -> str:
    return f"{NAME}/{cid}"


def _by_id(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(records, key=lambda r: r["id"])


# -- observe (x-provenance) --------------------------------------------------------------------

SRC = make("fact", "The build cache lives on the NAS.", created_at=T0)
DER = make("fact", "Builds are slow when the NAS is busy.", created_at=T1,
           extra={"x_derivation": {"hops": 1, "from": [SRC["id"]]}})
DER_SEEN = evolve(DER, T2, x_observed_at=T2)
STAND_9 = make("fact", "The standup is at nine.", created_at=T0, slots={"standup": "nine"})
STAND_10 = make("fact", "The standup is at ten.", created_at=T0, slots={"standup": "ten"})
STAND_9T, STAND_10T = begin(STAND_9, STAND_10, "Two standup times.", T1)
STAND_10W, STAND_9L = resolve(STAND_10T, STAND_9T, "The team lead confirmed ten.", T2)
SUCCESSOR = make("fact", "Builds are slow when the NAS backs up.", created_at=T1,
                 supersedes=DER["id"])


def _observe_ok(cid: str, comment: str, flags: list[str], setup: list[dict[str, Any]],
                target: dict[str, Any], now: str) -> dict[str, Any]:
    expected = evolve(target, now, x_observed_at=now)
    return case(_id(cid), comment, flags, ["XPROV-3"], {"id": target["id"], "now": now},
                setup=setup, expected={"record": expected})


def _observe_bad(cid: str, comment: str, flags: list[str], setup: list[dict[str, Any]],
                 rid: str, now: Any, error: str) -> dict[str, Any]:
    return case(_id(cid), comment, flags, ["XPROV-4"], {"id": rid, "now": now}, setup=setup,
                error=error)


def _observe_group() -> dict[str, Any]:
    tomb = tombstone(DER, "Stored by mistake.", T2)
    return group(f"{NAME}-observe", "observe writes one lifecycle-neutral version with "
                 "x_observed_at = updated_at = now and no signature, or rejects the id and "
                 "writes nothing", "observe", "x-provenance", [
        _observe_ok("observe-derived", "A derived, never observed record is observed",
                    [CLAIMED], [DER], DER, T3),
        _observe_ok("observe-again", "A second observation moves x_observed_at forward",
                    [CLAIMED], [DER, DER_SEEN], DER_SEEN, T4),
        _observe_ok("observe-at-updated-at", "now equal to the record's updated_at",
                    [CLAIMED, "boundary"], [DER], DER, T1),
        _observe_ok("observe-transitional", "A transitional record is live: it stays "
                    "transitional with its block", [CLAIMED, "state-kept"],
                    [STAND_9, STAND_10, STAND_9T, STAND_10T], STAND_9T, T3),
        _observe_ok("observe-keeps-state-reason", "The winner of a resolution keeps its "
                    "state_reason", [CLAIMED, "state-kept"],
                    [STAND_9, STAND_10, STAND_9T, STAND_10T, STAND_10W, STAND_9L],
                    STAND_10W, T3),
        _observe_ok("observe-signed", "The stored version is signed; the observed one is not "
                    "(SIG-9)", [CLAIMED, "signed-input"], [sign(DER, KEY_A)],
                    sign(DER, KEY_A), T3),
        _observe_bad("observe-unknown-id", "An id the store does not hold", [CLAIMED],
                     [DER], SRC["id"], T3, "not-found"),
        _observe_bad("observe-archived", "An archived record is not live", [CLAIMED],
                     [DER, archive(DER, "The NAS was replaced.", T2)], DER["id"], T3,
                     "lifecycle"),
        _observe_bad("observe-superseded", "A superseded record is not live", [CLAIMED],
                     [DER, SUCCESSOR, supersede(DER, SUCCESSOR, "Better explanation.", T2)],
                     DER["id"], T3, "lifecycle"),
        _observe_bad("observe-tombstone", "A tombstone is archived, so not live", [CLAIMED],
                     [tomb, tomb], DER["id"], T3, "lifecycle"),
        _observe_bad("observe-stale-now", "now earlier than the record's updated_at",
                     [CLAIMED], [DER, DER_SEEN], DER["id"], T1, "lifecycle"),
        _observe_bad("observe-now-not-canonical", "now without milliseconds (ENC-4)",
                     [CLAIMED], [DER], DER["id"], "2026-01-04T00:00:00Z", "encoding"),
    ])


# -- falsify (x-falsifiability) ----------------------------------------------------------------

WHY = "The staging cluster was shut down on 3 January."
FAL = make("fact", "Deploys go through the staging cluster first.", created_at=T0,
           extra={"x_falsifiable": {"tag": "architectural",
                                    "condition": "The staging cluster is decommissioned."}})
LEASE = make("fact", "The team works from the harbour office.", created_at=T0,
             extra={"x_falsifiable": {"tag": "temporal", "condition": "The office lease ends."},
                    "x_expires_at": "2026-06-30T00:00:00.000Z"})
PLAIN = make("fact", "Deploys need two approvals.", created_at=T0)
LATE = make("fact", "Deploys are frozen in December.", created_at=T2,
            extra={"x_falsifiable": {"tag": "paradigm",
                                     "condition": "The team drops the December freeze."}})
RIVAL = make("fact", "Deploys go straight to production.", created_at=T0)
FAL_T, RIVAL_T = begin(FAL, RIVAL, "Two deploy paths.", T1)
FAL_NEXT = make("fact", "Deploys go through the canary cluster first.", created_at=T1,
                supersedes=FAL["id"])


def _falsified(record: dict[str, Any], reason: str, now: str) -> dict[str, Any]:
    tag = record["x_falsifiable"]["tag"]
    return evolve(record, now, state="archived", state_reason=f"falsified ({tag}): {reason}")


def _falsify_ok(cid: str, comment: str, flags: list[str], stored: dict[str, Any],
                reason: str, now: str) -> dict[str, Any]:
    return case(_id(cid), comment, flags, ["XFALS-2"],
                {"id": stored["id"], "reason": reason, "now": now}, setup=[stored],
                expected={"record": _falsified(stored, reason, now)})


def _falsify_bad(cid: str, comment: str, flags: list[str], setup: list[dict[str, Any]],
                 rid: str, reason: str, now: Any, error: str = "lifecycle") -> dict[str, Any]:
    return case(_id(cid), comment, flags, ["XFALS-3"],
                {"id": rid, "reason": reason, "now": now}, setup=setup, error=error)


def _falsify_group() -> dict[str, Any]:
    return group(f"{NAME}-falsify", "falsify archives an active falsifiable record with "
                 "state_reason 'falsified (<tag>): <reason>', or rejects and writes nothing",
                 "falsify", "x-falsifiability", [
        _falsify_ok("falsify-active", "An active falsifiable record whose condition the "
                    "caller judged met", [CLAIMED], FAL, WHY, T3),
        _falsify_ok("falsify-keeps-other-fields", "The other extension fields stay in the "
                    "archived version", [CLAIMED, "state-kept"], LEASE,
                    "The lease ended early.", T3),
        _falsify_ok("falsify-signed", "The stored version is signed; the archived one is not",
                    [CLAIMED, "signed-input"], sign(FAL, KEY_A), WHY, T3),
        _falsify_ok("falsify-nbsp-reason", "A no-break space is a reason (SPEC.md 1.2)",
                    [CLAIMED, "reason-rule"], FAL, "\u00a0", T3),
        _falsify_ok("falsify-at-updated-at", "now equal to the record's updated_at",
                    [CLAIMED, "boundary"], LATE, "The freeze was dropped.", T2),
        _falsify_bad("falsify-unknown-id", "An id the store does not hold", [CLAIMED], [FAL],
                     PLAIN["id"], WHY, T3, "not-found"),
        _falsify_bad("falsify-not-falsifiable", "The record carries no x_falsifiable",
                     [CLAIMED], [PLAIN], PLAIN["id"], WHY, T3),
        _falsify_bad("falsify-empty-reason", "An empty reason", [CLAIMED, "reason-rule"],
                     [FAL], FAL["id"], "", T3),
        _falsify_bad("falsify-blank-reason", "A reason of ASCII whitespace only",
                     [CLAIMED, "reason-rule"], [FAL], FAL["id"], "\t \n", T3),
        _falsify_bad("falsify-transitional", "A transitional record is not active", [CLAIMED],
                     [FAL, RIVAL, FAL_T, RIVAL_T], FAL["id"], WHY, T3),
        _falsify_bad("falsify-archived", "An archived record is not active", [CLAIMED],
                     [FAL, archive(FAL, "Stale.", T2)], FAL["id"], WHY, T3),
        _falsify_bad("falsify-superseded", "A superseded record is not active", [CLAIMED],
                     [FAL, FAL_NEXT, supersede(FAL, FAL_NEXT, "Canary replaced staging.", T2)],
                     FAL["id"], WHY, T3),
        _falsify_bad("falsify-stale-now", "now earlier than the record's updated_at",
                     [CLAIMED], [LATE], LATE["id"], WHY, T1),
        _falsify_bad("falsify-now-not-canonical", "now without milliseconds (ENC-4)",
                     [CLAIMED], [FAL], FAL["id"], WHY, "2026-01-04T00:00:00Z", "encoding"),
    ])


# -- audit (x-audit) ---------------------------------------------------------------------------


def _report(histories: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """The audit report of section X7, built from each record's versions (oldest first)."""
    records, supersessions, redactions = [], [], []
    for versions in sorted(histories, key=lambda h: h[0]["id"]):
        latest = versions[-1]
        rid = latest["id"]
        records.append({"id": rid, "type": latest["type"],
                        "redacted": latest.get("redacted") is True,
                        "versions": [{"updated_at": v["updated_at"], "state": v["state"],
                                      "state_reason": v["state_reason"]} for v in versions]})
        first = next((v for v in versions if v["state"] == "superseded"), None)
        if first is not None:
            supersessions.append({"id": rid, "successor": first["superseded_by"],
                                  "at": first["updated_at"], "reason": first["state_reason"]})
        if latest.get("redacted") is True:
            redactions.append({"id": rid, "at": latest["updated_at"],
                               "reason": latest["redaction_reason"]})
    supersessions.sort(key=lambda s: (s["at"], s["id"]))
    return {"format": "memspec-audit/1", "records": records, "supersessions": supersessions,
            "redactions": redactions, "rejections": []}


def _audited(histories: list[list[dict[str, Any]]]) -> dict[str, Any]:
    report = _report(histories)
    return {"report": report, "digest": "sha256:" + hashlib.sha256(canon(report)).hexdigest()}


def _audit_group() -> dict[str, Any]:
    badge = make("fact", "The badge office is in room 3.", created_at=T0)
    badge_arch = archive(badge, "The badge office closed.", T2)
    desk = make("fact", "The help desk is on floor one.", created_at=T1)
    old = make("fact", "The wiki lives on the old server.", created_at=T0)
    new = make("fact", "The wiki lives on the new server.", created_at=T1, supersedes=old["id"])
    old_sup = supersede(old, new, "The wiki moved.", T2)
    old_arch = archive(old_sup, "Nobody reads about the old server.", T3)
    vpn = make("fact", "The VPN needs the legacy client.", created_at=T0)
    vpn2 = make("fact", "The VPN needs the new client.", created_at=T0, supersedes=vpn["id"])
    vpn_sup = supersede(vpn, vpn2, "The client was replaced.", T1)
    secret = make("fact", "The door code is 4411.", created_at=T0, tags=("office",))
    tomb = tombstone(secret, "A secret was stored by mistake.", T3)
    history = [[badge, badge_arch], [desk]]
    chain = [[old, old_sup, old_arch], [new], [vpn, vpn_sup], [vpn2]]
    redacted = [[tomb, tomb], [desk]]
    made = group(f"{NAME}-audit", "audit reports every record's history, the supersession "
                 "changelog and the redactions of the store, with the SHA-256 of the report's "
                 "canonical JSON as its digest", "audit", "x-audit", [
        case(_id("audit-empty-store"), "An empty store", [CLAIMED], ["XAUD-1", "XAUD-4"], {},
             setup=[], expected=_audited([])),
        case(_id("audit-history"), "Every version of every record in history order, records "
             "by ascending id", [CLAIMED], ["XAUD-1", "XAUD-4"], {},
             setup=[badge, badge_arch, desk], expected=_audited(history)),
        case(_id("audit-put-order"), "The same store written in another order: the same "
             "report and digest", [CLAIMED, "reproducible"], ["XAUD-1", "XAUD-4"], {},
             setup=[desk, badge, badge_arch], expected=_audited(history)),
        case(_id("audit-supersessions"), "Two supersessions ordered by instant; a superseded "
             "then archived record is listed at its first superseded version", [CLAIMED],
             ["XAUD-2", "XAUD-4"], {}, setup=[old, new, old_sup, old_arch, vpn, vpn2, vpn_sup],
             expected=_audited(chain)),
        case(_id("audit-redaction"), "A tombstone (both versions replaced, RED-1): listed in "
             "redactions with its reason, and no body, slots or tags anywhere", [CLAIMED],
             ["XAUD-3", "XAUD-4"], {}, setup=[tomb, tomb, desk],
             expected=_audited(redacted)),
    ])
    # The digest is XAUD-4's alone; the report decides the case's own requirement.
    return {**{k: v for k, v in made.items() if k != "tests"},
            "decides_by_key": {"digest": "XAUD-4"}, "tests": made["tests"]}


# -- list and recall as of an instant (x-time-travel) ------------------------------------------

LUNCH = make("fact", "The lunch order goes in by eleven.", created_at=T1, tags=("lunch",))
LUNCH_ARCH = archive(LUNCH, "Lunch is catered now.", T3)
ROOM = make("fact", "The lunch room is on floor three.", created_at=T2, tags=("lunch",))
CODE = make("fact", "The lunch fridge code is 1234.", created_at=T1, tags=("lunch",))
CODE_TOMB = tombstone(CODE, "A code was stored by mistake.", T3)
TT_SETUP = [LUNCH, ROOM, LUNCH_ARCH, CODE_TOMB, CODE_TOMB]


def _list_ok(cid: str, comment: str, flags: list[str], args: dict[str, Any],
             records: list[dict[str, Any]]) -> dict[str, Any]:
    return case(_id(cid), comment, [CLAIMED, *flags], ["XTT-1"], args, setup=TT_SETUP,
                expected={"records": _by_id(records)})


def _list_group() -> dict[str, Any]:
    return group(f"{NAME}-list-as-of", "list with as_of returns the view as of that instant: "
                 "per record, the last version written with updated_at not later than as_of",
                 "list", "store", [
        _list_ok("list-as-of-before-any-record", "as_of before every version: an empty view",
                 [], {"as_of": T0}, []),
        _list_ok("list-as-of-first-write", "as_of equal to a version's updated_at includes it",
                 ["boundary"], {"as_of": T1}, [LUNCH]),
        _list_ok("list-as-of-between-writes", "An instant between writes", [],
                 {"as_of": MID}, [LUNCH, ROOM]),
        _list_ok("list-as-of-state-of-then", "The state filter applies to the view's versions: "
                 "archived later, active then", ["state-filter"],
                 {"as_of": MID, "state": "active"}, [LUNCH, ROOM]),
        _list_ok("list-as-of-no-archived-then", "Nothing was archived then", ["state-filter"],
                 {"as_of": MID, "state": "archived"}, []),
        _list_ok("list-as-of-latest", "as_of after every write: the latest versions; the "
                 "tombstone replaced every version", [], {"as_of": T4},
                 [LUNCH_ARCH, ROOM, CODE_TOMB]),
        _list_ok("list-as-of-tag", "The tag filter on the view", ["state-filter"],
                 {"as_of": T4, "state": "active", "tag": "lunch"}, [ROOM]),
        *[case(_id(f"list-as-of-{cid}"), comment, [CLAIMED], ["XTT-3"], {"as_of": value},
               setup=TT_SETUP, error="encoding")
          for cid, comment, value in (
              ("no-milliseconds", "as_of without milliseconds", "2026-01-03T00:00:00Z"),
              ("date-only", "as_of as a date", "2026-01-03"),
              ("number", "as_of as Unix seconds", 1767398400))],
    ])


def _entry(record: dict[str, Any], *marks: str) -> dict[str, Any]:
    out: dict[str, Any] = {"record": record, "reasons": ["query-match"]}
    if marks:
        out["x_marks"] = list(marks)
    return out


EXPIRED = make("fact", "The visitor wifi password is tulip.", created_at=T1,
               extra={"x_expires_at": T2})
EXPIRED_ARCH = archive(EXPIRED, "Rotated.", T2)
LATER = make("fact", "The visitor wifi password is tulip.", created_at=T1,
             prov={"kind": "conversation", "ref": "session-0003", "agent": None},
             extra={"x_expires_at": T3})
WIFI = "visitor wifi password"


def _recall(cid: str, comment: str, flags: list[str], reqs: list[str],
            setup: list[dict[str, Any]], args: dict[str, Any],
            entries: list[dict[str, Any]] | None) -> dict[str, Any]:
    full = {"query": args.pop("query", WIFI), "budget_tokens": 1000, **args}
    if entries is None:
        return case(_id(cid), comment, [CLAIMED, *flags], reqs, full, setup=setup,
                    error="encoding")
    expected: dict[str, Any] = {"records": entries}
    if not entries:
        expected["total_tokens"] = 0
    return case(_id(cid), comment, [CLAIMED, "projected", *flags], reqs, full, setup=setup,
                expected=expected)


def _recall_group() -> dict[str, Any]:
    lunch = [LUNCH, LUNCH_ARCH]
    return {**group(f"{NAME}-recall", "recall as of an instant, and recall of expired records; "
                    "entries compared on record, reasons and x_marks (project)", "recall",
                    "recall", [
        _recall("recall-as-of-before-any-record", "An empty view recalls nothing", [],
                ["XTT-2"], lunch, {"query": "lunch order", "now": T4, "as_of": T0}, []),
        _recall("recall-as-of-earlier-version", "Archived now, active then: recalled as the "
                "version of then", ["state-filter"], ["XTT-2"], lunch,
                {"query": "lunch order", "now": T4, "as_of": MID}, [_entry(LUNCH)]),
        _recall("recall-as-of-expiry-judged-then", "Expired at now, not at as_of: recalled "
                "unmarked", [], ["XTT-2"], [LATER], {"now": T4, "as_of": MID},
                [_entry(LATER)]),
        _recall("recall-as-of-expired-then", "Already expired at as_of", [],
                ["XTT-2", "XEXP-2"], [EXPIRED], {"now": T4, "as_of": MID}, []),
        _recall("recall-as-of-not-canonical", "as_of without milliseconds", [], ["XTT-3"],
                lunch, {"query": "lunch order", "now": T4, "as_of": "2026-01-03T00:00:00Z"},
                None),
        _recall("recall-hides-expired", "An expired record leaves default recall", [],
                ["XEXP-2"], [EXPIRED], {"now": T3}, []),
        _recall("recall-include-expired-false", "include_expired false is the default", [],
                ["XEXP-2"], [EXPIRED], {"now": T3, "include_expired": False}, []),
        _recall("recall-expires-at-now", "x_expires_at equal to now: expired",
                ["boundary"], ["XEXP-2"], [EXPIRED], {"now": T2}, []),
        _recall("recall-not-yet-expired", "x_expires_at after now: recalled as the core says, "
                "without x_marks", [], ["XEXP-6"], [LATER], {"now": T2}, [_entry(LATER)]),
        _recall("recall-include-expired", "include_expired brings it back, marked expired", [],
                ["XEXP-3"], [EXPIRED], {"now": T3, "include_expired": True},
                [_entry(EXPIRED, "expired")]),
        _recall("recall-include-expired-keeps-state-filter", "An archived expired record "
                "stays out without include_archived (RCL-8)", ["state-filter"], ["XEXP-3"],
                [EXPIRED, EXPIRED_ARCH], {"now": T3, "include_expired": True}, []),
        _recall("recall-include-expired-and-archived", "With include_archived too, the "
                "archived expired record is recalled and marked", ["state-filter"],
                ["XEXP-3"], [EXPIRED, EXPIRED_ARCH],
                {"now": T3, "include_expired": True, "include_archived": True},
                [_entry(EXPIRED_ARCH, "expired")]),
    ]), "project": RECALL_PROJECTION}


# -- decay archives expired records (x-expiry) -------------------------------------------------


def _decay_group() -> dict[str, Any]:
    soon = make("fact", "The parking garage code is 4411.", created_at=T0,
                extra={"x_expires_at": T2})
    later = make("fact", "The parking garage code will be 4412.", created_at=T0,
                 extra={"x_expires_at": T4})
    plain = make("fact", "The parking garage closes at ten.", created_at=T0)
    edge = make("fact", "The parking permit runs out today.", created_at=T0,
                extra={"x_expires_at": T3})
    succ = make("fact", "The parking garage code is 5522.", created_at=T1,
                supersedes=soon["id"])
    ferry_a = make("fact", "The ferry leaves from pier four.", created_at=T0,
                   slots={"pier": "four"}, extra={"x_expires_at": T2})
    ferry_b = make("fact", "The ferry leaves from pier five.", created_at=T0,
                   slots={"pier": "five"})
    ferry_at, ferry_bt = begin(ferry_a, ferry_b, "Two piers.", T1)
    ev = make("episode", "The badge reader failed on Monday.", created_at=T0,
              occurred_at="2025-12-29T09:00:00.000Z", extra={"x_expires_at": T2})
    rule = make("rule", "Check the badge reader on Mondays.", created_at=T1,
                evidence=(ev["id"],), extra={"x_expires_at": T2})
    protected = sorted([{"id": ev["id"], "protection": "rule-evidence"},
                        {"id": rule["id"], "protection": "unflagged-rule"}],
                       key=lambda p: p["id"])

    def dc(cid: str, comment: str, flags: list[str], reqs: list[str],
           setup: list[dict[str, Any]], archived: list[str],
           kept: list[dict[str, str]] | None = None) -> dict[str, Any]:
        return case(_id(cid), comment, [CLAIMED, *flags], reqs, {"now": T3, "config": GENTLE},
                    setup=setup, expected={"archived": sorted(archived),
                                           "protected": kept or []})

    return group(f"{NAME}-decay", "decay archives every record expired at now and not yet "
                 "archived, whatever its salience, unless a protection applies", "decay",
                 "decay", [
        dc("decay-archives-expired", "Only the expired record is archived; salience alone "
           "archives nothing under this config", [], ["XEXP-4", "XEXP-6"],
           [soon, later, plain], [soon["id"]]),
        dc("decay-expires-at-now", "x_expires_at equal to now", ["boundary"], ["XEXP-4"],
           [edge], [edge["id"]]),
        dc("decay-expired-superseded", "A superseded expired record is archived too",
           ["state-filter"], ["XEXP-4"],
           [soon, succ, supersede(soon, succ, "New code.", T2)], [soon["id"]]),
        dc("decay-expired-already-archived", "An archived record is not archived again",
           ["state-filter"], ["XEXP-4"], [soon, archive(soon, "Rotated.", T2)], []),
        dc("decay-expired-transitional", "A transitional expired record is protected "
           "(DEC-2, DEC-5)", ["state-filter"], ["XEXP-4", "DEC-5"],
           [ferry_a, ferry_b, ferry_at, ferry_bt], [],
           [{"id": ferry_a["id"], "protection": "transitional"}]),
        dc("decay-expired-rule-and-evidence", "An unflagged rule and its evidence, both "
           "expired, are protected (DEC-3, DEC-4)", ["state-filter"], ["XEXP-4", "DEC-5"],
           [ev, rule], [], protected),
    ])


# -- the field rules on every entry point (XEXT-4) ---------------------------------------------

FIELD_CASES = (
    ("expiry", "x_expires_at without milliseconds", "XEXP-1",
     {"x_expires_at": "2026-03-01T00:00:00Z"}),
    ("derivation", "x_derivation with hops and no sources", "XPROV-1",
     {"x_derivation": {"hops": 2, "from": []}}),
    ("observed-after-update", "x_observed_at later than updated_at", "XPROV-1",
     {"x_observed_at": T4}),
    ("falsifiable", "x_falsifiable with an unknown tag", "XFALS-1",
     {"x_falsifiable": {"tag": "seasonal", "condition": "Winter ends."}}),
)
GOOD = make("fact", "The printer is on floor two.", created_at=T1)
EVERY = make("fact", "The printer toner is in the cupboard.", created_at=T1, extra={
    "x_expires_at": "2026-03-01T00:00:00.000Z", "x_observed_at": T1,
    "x_derivation": {"hops": 1, "from": [GOOD["id"]]},
    "x_falsifiable": {"tag": "observational", "condition": "The cupboard is empty."}})


def _bad(name: str, extra: dict[str, Any]) -> dict[str, Any]:
    return make("fact", f"The printer needs a new {name} label.", created_at=T1, extra=extra)


def _create(record: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "create", "record": record, "target_id": None, "other_id": None,
            "reason": ""}


def _entry_groups() -> list[dict[str, Any]]:
    ingest = [case(_id(f"ingest-malformed-{name}"), f"{comment}: that proposal is rejected "
                   "with class record, the next one admitted", [CLAIMED, "projected"],
                   ["XEXT-4", rule], {"proposals": [_create(_bad(name, extra)), _create(GOOD)],
                                      "now": T3}, setup=[],
                   expected={"accepted": [GOOD["id"]], "deduped": [],
                             "rejected": [{"index": 0, "code": "record"}]})
              for name, comment, rule, extra in FIELD_CASES]
    ingest += [
        case(_id("ingest-malformed-restatement"), "A stored record restated with a malformed "
             "x_expires_at is rejected, not deduplicated", [CLAIMED, "projected"],
             ["XEXT-4", "XEXP-1"], {"proposals": [_create({**GOOD, **FIELD_CASES[0][3]})],
                                    "now": T3}, setup=[GOOD],
             expected={"accepted": [], "deduped": [],
                       "rejected": [{"index": 0, "code": "record"}]}),
        case(_id("ingest-every-field"), "Well-formed fields of every profile are admitted",
             ["old-reader", "projected"], ["XEXT-3"], {"proposals": [_create(EVERY)],
                                                       "now": T3}, setup=[],
             expected={"accepted": [EVERY["id"]], "deduped": [], "rejected": []}),
    ]
    put = [case(_id(f"put-malformed-{name}"), comment, [CLAIMED], ["XEXT-4", rule],
                {"record": _bad(name, extra)}, setup=[], error="record")
           for name, comment, rule, extra in FIELD_CASES]
    load = [case(_id(f"load-malformed-{name}"), f"A file holding a record with {comment}",
                 [CLAIMED], ["XEXT-4", rule],
                 {"file": file_of([GOOD, _bad(name, extra)], created_at=T3), "verify": False},
                 setup=[], error="file")
            for name, comment, rule, extra in FIELD_CASES]
    load.append(case(_id("load-every-field"), "A file with well-formed fields of every "
                     "profile", ["old-reader"], ["XEXT-3"],
                     {"file": file_of([GOOD, EVERY], created_at=T3), "verify": False},
                     setup=[], expected={"loaded": [GOOD["id"], EVERY["id"]], "skipped": []}))
    return [
        {**group(f"{NAME}-ingest", "ingest applies the field rules of the claimed profiles "
                 "before its dedup; rejections compared on index and code (project)", "ingest",
                 "write", ingest), "project": INGEST_PROJECTION},
        group(f"{NAME}-put", "put rejects a record breaking a field rule of a claimed profile",
              "put", "store", put),
        group(f"{NAME}-load", "load rejects a file holding a record that breaks a field rule "
              "of a claimed profile with class file, writing nothing", "load", "files", load),
    ]


def build_all() -> dict[str, Any]:
    assert T2 < MID < T3
    return vector_file(
        NAME,
        "The operations of the extension profiles of spec/EXTENSIONS.md: observe, falsify, "
        "audit, list and recall as of an instant, recall of expired records, decay archiving "
        "them, and the field rules on ingest, put and load (XEXT-4). A group with `project` "
        "compares each entry of the named result lists only on the named members, because "
        "recall scores, token counts and ingest messages are the engine's own.",
        {
            CLAIMED: "Holds for engines that claim the extension profile of its requirements; "
                     "others report it not claimed.",
            "old-reader": "Holds for every engine: well-formed extension fields are unknown "
                          "fields to an engine that claims no extension profile.",
            "boundary": "An instant equal to the limit it is compared with (as_of = "
                        "updated_at, x_expires_at = now, now = updated_at).",
            "state-kept": "The new version keeps the state, transition block, reason or "
                          "extension fields of the stored one.",
            "state-filter": "A state rule or list filter of the core applies on top of the "
                            "extension.",
            "signed-input": "The stored version is signed; the new version is unsigned "
                            "(SIG-9).",
            "reason-rule": "Pins what counts as a reason (SPEC.md section 1.2).",
            "reproducible": "The same store gives the same report and digest.",
            "projected": "Entries of a result list are compared on the members the group's "
                         "project names.",
        },
        [_observe_group(), _falsify_group(), _audit_group(), _list_group(), _recall_group(),
         _decay_group(), *_entry_groups()],
    )
