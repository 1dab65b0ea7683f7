"""Faults of the consolidation, decay and redaction-sweep behaviour."""

from __future__ import annotations

import re
from typing import Any

from memspec._errors import MemspecError
from memspec._record import record_id
from memspec.selftest._shapes import (
    InsertionOrder,
    Watcher,
    all_records,
    propose,
    put,
    stored,
    then,
)
from memspec.selftest.faults import Fault, Inner, Json, after, before, evolve, only
from memspec.selftest.faults_lifecycle import Hidden

__all__ = ["FAULTS"]

PASSES = ("exact-dedup", "near-dup", "contradiction", "resolution", "promotion", "flag-sweep")
_C = "consolidate"


def _add_action(report: Json, action: Json) -> None:
    """Insert ``action`` after every action of its own or an earlier sub-pass."""
    rank = PASSES.index(action["pass"])
    actions = report["actions"]
    where = max((i + 1 for i, a in enumerate(actions) if PASSES.index(a["pass"]) <= rank),
                default=0)
    actions.insert(where, action)


def _action(pass_name: str, action: str, ids: list[str], before_: list[str],
            after_: list[str], reason: str) -> Json:
    return {"pass": pass_name, "action": action, "record_ids": ids, "before": before_,
            "after": after_, "reason": reason}


def _sweep_first(result: Json, args: Json) -> Json:
    actions = result["actions"]
    result["actions"] = ([a for a in actions if a["pass"] == "flag-sweep"]
                         + [a for a in actions if a["pass"] != "flag-sweep"])
    return result


def _revive_evidence(report: Json, args: Json, inner: Inner) -> None:
    records = {r["id"]: r for r in all_records(inner)}
    for rule in [r for r in records.values() if r["type"] == "rule" and r["state"] == "active"]:
        for rid in rule["evidence"]:
            old = records.get(rid)
            if old and old["state"] == "archived" and "redacted" not in old:
                put(inner, evolve(old, str(args.get("now")), state="active",
                                  state_reason=None, superseded_by=None))
                records[rid] = {**old, "state": "active"}
                _add_action(report, _action("flag-sweep", "revive-evidence", [rid],
                                            ["archived"], ["active"],
                                            "evidence of an active rule was revived"))


def _stale_after(result: Json, args: Json) -> Json:
    for action in result["actions"]:
        before_ = list(action["before"])
        action["after"] = (before_ + ["active"] * len(action["record_ids"]))[
            : len(action["record_ids"])]
    return result


class _ReasonNamesInsertion(InsertionOrder):
    """Each action's reason says when its first record was put (order leaks into reports)."""

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == _C:
            for action in result["actions"]:
                first = action["record_ids"][0] if action["record_ids"] else ""
                action["reason"] += f" (first seen as record #{self.order.get(first, -1) + 1})"
        return result


def _same_content(a: Json, b: Json) -> bool:
    return all(a[k] == b[k] for k in ("type", "body", "slots"))


def _dedup_archived_copies(report: Json, args: Json, inner: Inner) -> None:
    records = all_records(inner)
    for action in [a for a in report["actions"] if a["pass"] == "exact-dedup"]:
        keeper = next((r for r in records if r["id"] in action["record_ids"]
                       and r["state"] == "active"), None)
        if keeper is None:
            continue
        for other in records:
            if (other["state"] == "archived" and other["id"] != keeper["id"]
                    and "redacted" not in other and _same_content(other, keeper)):
                put(inner, evolve(other, str(args.get("now")), superseded_by=keeper["id"],
                                  state_reason="a duplicate of the keeper"))
                _add_action(report, _action("exact-dedup", "link-archived-copy", [other["id"]],
                                            ["archived"], ["archived"], "archived duplicate"))


def _merge_without_evidence(report: Json, args: Json, inner: Inner) -> None:
    for action in [a for a in report["actions"] if a["pass"] == "near-dup"]:
        for rid in action["record_ids"]:
            record = stored(inner, rid)
            if record and record["state"] == "active" and record["evidence"] \
                    and record["type"] != "rule":
                put(inner, evolve(record, str(args.get("now")), evidence=[]))


def _resolve_at_once(report: Json, args: Json, inner: Inner) -> None:
    deferred = {rid for d in report["deferred"] for rid in d["record_ids"]}
    for action in [a for a in report["actions"] if a["pass"] == "contradiction"]:
        ids = action["record_ids"]
        if len(ids) != 2 or deferred & set(ids):
            continue
        inner("resolve", {"winner_id": ids[0], "loser_id": ids[1], "now": args.get("now"),
                          "reason": "the first statement wins"})
        _add_action(report, _action("resolution", "resolve", list(ids),
                                    ["transitional", "transitional"], ["active", "superseded"],
                                    "the first statement wins"))


def _drop_deferred(result: Json, args: Json) -> Json:
    result["deferred"] = []
    return result


_NEGATORS = re.compile(r"\b(?:not|never|no)\b|[^\w\s]")


def _episodes_contradict(report: Json, args: Json, inner: Inner) -> None:
    episodes = [r for r in all_records(inner) if r["type"] == "episode" and r["state"] == "active"]
    used: set[str] = set()
    for i, a in enumerate(episodes):
        for b in episodes[i + 1:]:
            if used & {a["id"], b["id"]} or a["body"] == b["body"]:
                continue
            if " ".join(_NEGATORS.sub(" ", a["body"].lower()).split()) != \
                    " ".join(_NEGATORS.sub(" ", b["body"].lower()).split()):
                continue
            propose(inner, args.get("now"), "transition", target_id=a["id"],
                    other_id=b["id"], reason="the episodes contradict each other")
            used |= {a["id"], b["id"]}
            _add_action(report, _action("contradiction", "transition", [a["id"], b["id"]],
                                        ["active", "active"], ["transitional", "transitional"],
                                        "the episodes contradict each other"))


def _lower_threshold(args: Json) -> Json:
    config = args.get("config")
    if isinstance(config, dict) and isinstance(config.get("promotion_threshold"), int):
        config["promotion_threshold"] = max(1, config["promotion_threshold"] - 1)
    return args


def _promote_again(report: Json, args: Json, inner: Inner) -> None:
    records = all_records(inner)
    episodes = {r["id"]: r for r in records if r["type"] == "episode" and r["state"] == "active"}
    for rule in [r for r in records if r["type"] == "rule" and r["state"] == "active"]:
        cited = [episodes[e] for e in rule["evidence"] if e in episodes]
        if not cited or len(cited) != len(rule["evidence"]) or not cited[0]["tags"]:
            continue
        group = sorted(e["id"] for e in episodes.values() if e["tags"] == cited[0]["tags"])
        if set(group) <= set(rule["evidence"]):
            continue
        again = {**rule, "id": "", "evidence": group, "body": rule["body"] + " (again)",
                 "created_at": args.get("now"), "updated_at": args.get("now"),
                 "flagged": False, "flag_reason": None, "signed_by": None, "signature": ""}
        again["id"] = record_id(again)
        propose(inner, args.get("now"), "create", record=again, reason="promoted again")
        _add_action(report, _action("promotion", "promote", [again["id"], *group], [],
                                    ["active"] + [episodes[g]["state"] for g in group],
                                    "episodes share a signature"))


def _unflag(inner: Inner, rule: Json, now: Any) -> None:
    put(inner, evolve(rule, str(now), flagged=False, flag_reason=None))


def _missing_counts_live(report: Json, args: Json, inner: Inner) -> None:
    for rule in all_records(inner):
        if rule["type"] == "rule" and rule["flagged"] and all(
                stored(inner, e) is None for e in rule["evidence"]):
            _unflag(inner, rule, args.get("now"))


def _redacted_counts_live(report: Json, args: Json, inner: Inner) -> None:
    for rule in all_records(inner):
        evidence = [stored(inner, e) for e in rule["evidence"]]
        if rule["type"] == "rule" and rule["flagged"] and any(
                e is not None and e.get("redacted") for e in evidence):
            _unflag(inner, rule, args.get("now"))


# -- decay ---------------------------------------------------------------------------------


class _DecayedVanish(Hidden):
    def vanish(self, op: str, args: Json, result: Json) -> None:
        if op == "decay":
            self.gone.update(result["archived"])

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        if op in ("get", "history"):
            return inner(op, args)  # only the listings lose them
        return super().handle(op, args, inner)


def _archive_protected(protection: str) -> Any:
    def run(op: str, args: Json, inner: Inner) -> Json:
        report = inner(op, args)
        for entry in [p for p in report["protected"] if p["protection"] == protection]:
            try:
                propose(inner, args.get("now"), "archive", target_id=entry["id"],
                        reason="salience below the threshold")
            except MemspecError:
                continue
            report["protected"].remove(entry)
            report["archived"].append(entry["id"])
        return report

    return only("decay", run)


def _hide_protections(result: Json, args: Json) -> Json:
    result["protected"] = []
    return result


class _SalienceInRecord(Watcher):
    """Records archived by decay come back carrying their touch count as a field."""

    def forget(self) -> None:
        self.decayed: set[str] = set()

    def note(self, op: str, args: Json, result: Json) -> None:
        if op == "decay":
            self.decayed.update(result["archived"])

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op == "get" and result["record"]["id"] in self.decayed:
            return {"record": {**result["record"], "touches": 0}}
        return result


FAULTS = (
    Fault("sweep-reported-first", "CONS-1", "consolidation",
          "the flag sweep runs (and is reported) before the other sub-passes",
          after(_C, _sweep_first)),
    Fault("consolidation-revives-archived", "CONS-2", "consolidation",
          "consolidation brings archived rule evidence back to active without any proposal",
          then(_C, _revive_evidence)),
    Fault("report-after-states-wrong", "CONS-3", "consolidation",
          "the report gives each record's before state as its after state",
          after(_C, _stale_after)),
    Fault("report-depends-on-insertion", "CONS-4", "consolidation",
          "action reasons name the order records were put in", _ReasonNamesInsertion()),
    Fault("dedup-rewrites-archived-copy", "CONS-5", "consolidation",
          "exact dedup also rewrites archived copies of the keeper",
          then(_C, _dedup_archived_copies)),
    Fault("merge-drops-evidence", "CONS-6", "consolidation",
          "the merged record of a near-dup merge loses its evidence links",
          then(_C, _merge_without_evidence)),
    Fault("contradiction-overwrites-one-side", "CONS-7", "consolidation",
          "a detected contradiction is settled at once: the second side is superseded",
          then(_C, _resolve_at_once)),
    Fault("deferred-pairs-dropped", "CONS-8", "consolidation",
          "further contradiction pairs of a record are dropped instead of reported deferred",
          after(_C, _drop_deferred)),
    Fault("episodes-contradict", "CONS-9", "consolidation",
          "episodes that differ by a negation are put into a transition",
          then(_C, _episodes_contradict)),
    Fault("promotion-below-threshold", "CONS-10", "consolidation",
          "promotion fires one episode below the configured threshold",
          before(_C, _lower_threshold)),
    Fault("promotion-twice", "CONS-10", "consolidation",
          "a signature gaining an episode is promoted again into a second rule",
          then(_C, _promote_again)),
    Fault("sweep-treats-missing-as-live", "CONS-11", "consolidation",
          "the flag sweep counts missing evidence as live and unflags the rule",
          then(_C, _missing_counts_live)),
    Fault("redacted-evidence-stays-live", "RED-8", "redaction",
          "the flag sweep counts redacted evidence as live",
          then(_C, _redacted_counts_live)),
    Fault("decayed-records-vanish", "DEC-1", "decay",
          "records archived by decay disappear from the store's listings", _DecayedVanish()),
    Fault("decay-archives-transitional", "DEC-2", "decay",
          "decay archives transitional records below the threshold",
          _archive_protected("transitional")),
    Fault("decay-archives-unflagged-rule", "DEC-3", "decay",
          "decay archives unflagged rules below the threshold",
          _archive_protected("unflagged-rule")),
    Fault("decay-archives-rule-evidence", "DEC-4", "decay",
          "decay archives the evidence of active rules", _archive_protected("rule-evidence")),
    Fault("decay-hides-protections", "DEC-5", "decay",
          "the decay report never names the protections that kept records",
          after("decay", _hide_protections)),
    Fault("salience-stored-in-record", "DEC-7", "decay",
          "a decayed record shows its touch count as a record field", _SalienceInRecord()),
)
