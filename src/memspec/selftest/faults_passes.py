"""Faults of the background passes that only exact, adversarial data shows: a wall
clock instead of the pass's ``now``, a sweep of active rules only, slot values
compared with the host language's equality, the wrong keeper on a confidence tie,
and a tombstone that keeps the record's extension fields."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta

from memspec._canonical import canonical_json
from memspec._encoding import timestamp_from_datetime
from memspec._record import record_id
from memspec.selftest._shapes import DEFINED_FIELDS, Masked, Watcher, all_records, history_of
from memspec.selftest._shapes import put as put_version
from memspec.selftest.faults import Fault, Inner, Json, Stateful, after, before, evolve

__all__ = ["FAULTS"]

_C = "consolidate"
#: How far the "wall clock" of the faulty passes runs ahead of the caller's now.
_SKEW = timedelta(hours=1, minutes=17)


def _wall_clock(args: Json) -> Json:
    now = args.get("now")
    if isinstance(now, str):
        try:
            moment = datetime.fromisoformat(now.replace("Z", "+00:00"))
        except ValueError:
            return args
        args["now"] = timestamp_from_datetime(moment + _SKEW)
    return args


def _counts(inner: Inner) -> dict[str, int]:
    return {r["id"]: len(history_of(inner, r["id"])) for r in all_records(inner)}


class _SweepActiveOnly(Masked):
    """The flag sweep visits only active rules: a superseded rule keeps its stale flag."""

    def act(self, op: str, args: Json, inner: Inner) -> Json:
        if op != _C:
            return inner(op, args)
        counts = _counts(inner)
        report = inner(op, args)
        kept = []
        for action in report["actions"]:
            ids = action["record_ids"]
            if action["pass"] == "flag-sweep" and action["before"] == ["superseded"]:
                self.hide(ids[0], counts.get(ids[0], 0))
                continue
            kept.append(action)
        return {**report, "actions": kept}


def _host_equal_only(a: Json, b: Json) -> bool:
    """Whether the pair's slots disagree only where the host language calls them equal."""
    shared = set(a["slots"]) & set(b["slots"])
    differing = [k for k in shared
                 if canonical_json(a["slots"][k]) != canonical_json(b["slots"][k])]
    return bool(differing) and all(a["slots"][k] == b["slots"][k] for k in differing)


class _HostEquality(Masked):
    """Slot values compared with ``==``: ``1`` and ``true`` agree, so no contradiction."""

    def act(self, op: str, args: Json, inner: Inner) -> Json:
        if op != _C:
            return inner(op, args)
        counts = _counts(inner)
        report = inner(op, args)
        latest = {r["id"]: r for r in all_records(inner)}
        kept = []
        for action in report["actions"]:
            ids = action["record_ids"]
            if (action["pass"] == "contradiction" and len(ids) == 2
                    and all(i in latest for i in ids)
                    and _host_equal_only(latest[ids[0]], latest[ids[1]])):
                for rid in ids:
                    self.hide(rid, counts.get(rid, 0))
                continue
            kept.append(action)
        return {**report, "actions": kept}


def _content(record: Json) -> bytes:
    return canonical_json([record["type"], record["body"], record["slots"]])


def _latest_keeper(op: str, args: Json, inner: Inner) -> Json:
    """Exact dedup breaks a confidence tie by the latest created_at (then the largest id)."""
    if op != _C:
        return inner(op, args)
    now = str(args.get("now"))
    groups: dict[bytes, list[Json]] = {}
    for record in all_records(inner):
        if record["state"] == "active" and "redacted" not in record:
            groups.setdefault(_content(record), []).append(record)
    actions: list[Json] = []
    for copies in groups.values():
        top = max((c["confidence"] for c in copies), default="")
        tied = [c for c in copies if c["confidence"] == top]
        if len(copies) < 2 or len(tied) < 2:
            continue
        keeper = max(tied, key=lambda c: (c["created_at"], c["id"]))
        rest = sorted((c for c in copies if c is not keeper),
                      key=lambda c: (-float(c["confidence"]), c["created_at"], c["id"]))
        current = keeper
        for copy_ in rest:
            current = evolve(current, now, supersedes=copy_["id"])
            put_version(inner, current)
            put_version(inner, evolve(copy_, now, state="superseded",
                                      superseded_by=keeper["id"],
                                      state_reason="an exact duplicate of the keeper"))
            actions.append({"pass": "exact-dedup", "action": "supersede",
                            "record_ids": [copy_["id"], keeper["id"]],
                            "before": ["active", "active"], "after": ["superseded", "active"],
                            "reason": "an exact duplicate of the keeper"})
    report = inner(op, args)
    return {**report, "actions": actions + report["actions"]}


class _TombstoneKeepsExtensions(Watcher):
    """A redaction that rebuilds only the defined fields and copies the rest across."""

    def forget(self) -> None:
        self.kept: dict[str, Json] = {}

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        if op == "redact":
            rid = str(args.get("id"))
            versions = history_of(inner, rid)
            if versions:
                extra = {k: v for k, v in versions[-1].items() if k not in DEFINED_FIELDS}
                if extra:
                    self.kept[rid] = {**self.kept.get(rid, {}), **extra}
        return super().handle(op, args, inner)

    def _with(self, record: Json) -> Json:
        extra = self.kept.get(record.get("id", "")) if record.get("redacted") else None
        return {**record, **copy.deepcopy(extra)} if extra else record

    def rewrite(self, op: str, args: Json, result: Json, inner: Inner) -> Json:
        if op in ("redact", "get"):
            return {**result, "record": self._with(result["record"])}
        if op in ("history", "iterate", "list"):
            return {"records": [self._with(r) for r in result["records"]]}
        return result


def _merged_first(result: Json, args: Json) -> Json:
    for action in result["actions"]:
        if action["action"] == "merge":
            ids, after_ = action["record_ids"], action["after"]
            action["record_ids"] = [ids[-1], *ids[:-1]]
            action["after"] = [after_[-1], *after_[:-1]]
    return result


def _trigrams(text: str) -> set[str]:
    folded = " ".join(text.lower().split())
    return {folded[i:i + 3] for i in range(max(1, len(folded) - 2))}


def _similar(a: Json, b: Json, threshold: float) -> bool:
    left, right = _trigrams(a["body"]), _trigrams(b["body"])
    return len(left & right) / max(1, len(left | right)) >= threshold


def _slot_conflict(a: Json, b: Json) -> bool:
    return any(canonical_json(a["slots"][k]) != canonical_json(b["slots"][k])
               for k in set(a["slots"]) & set(b["slots"]))


def _merge_conflicts(op: str, args: Json, inner: Inner) -> Json:
    """Near-dup compares text only: a similar pair whose slots disagree is merged too."""
    if op != _C:
        return inner(op, args)
    given = args.get("config")
    config: Json = given if isinstance(given, dict) else {}
    try:
        threshold = float(config.get("near_dup_threshold", "0.6"))
    except (TypeError, ValueError):
        return inner(op, args)
    now = str(args.get("now"))
    records = [r for r in all_records(inner)
               if r["state"] == "active" and r["type"] in ("fact", "procedure")]
    used: set[str] = set()
    actions: list[Json] = []
    for i, a in enumerate(records):
        for b in records[i + 1:]:
            if used & {a["id"], b["id"]} or not _slot_conflict(a, b) \
                    or not _similar(a, b, threshold):
                continue
            merged = {**copy.deepcopy(b), "id": "", "evidence": [a["id"], b["id"]],
                      "supersedes": a["id"], "created_at": now, "updated_at": now,
                      "provenance": {"kind": "consolidation", "ref": None, "agent": None}}
            merged["id"] = record_id(merged)
            inner("apply_proposal", {"now": now, "proposal": {
                "kind": "supersede", "record": merged, "target_id": a["id"], "other_id": None,
                "reason": "near duplicates merged"}})
            put_version(inner, evolve(b, now, state="superseded", superseded_by=merged["id"],
                                      state_reason="near duplicates merged"))
            used |= {a["id"], b["id"]}
            actions.append({"pass": "near-dup", "action": "merge",
                            "record_ids": [a["id"], b["id"], merged["id"]],
                            "before": ["active", "active"],
                            "after": ["superseded", "superseded", "active"],
                            "reason": "near duplicates merged"})
    report = inner(op, args)
    return {**report, "actions": actions + report["actions"]}


def _archive_keeps_signature(result: Json, args: Json) -> Json:
    """The archive lifecycle function copies the record and changes only its state fields."""
    if args.get("operation") == "archive":
        sources = [r for r in args.get("records") or [] if isinstance(r, dict)]
        for version, source in zip(result["records"], sources, strict=False):
            version["signed_by"] = source.get("signed_by")
            version["signature"] = source.get("signature", "")
    return result


class _MultiplicativeReinforcement(Stateful):
    """Salience as confidence x decay x (1 + bonus x touches) instead of a sum."""

    def forget(self) -> None:
        self.touches: dict[str, int] = {}

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        result = inner(op, args)
        if op == "touch":
            self.touches[str(args.get("id"))] = int(result["count"])
        elif op == "decay":
            given = args.get("config")
            config: Json = given if isinstance(given, dict) else {}
            bonus = float(config.get("reinforcement_bonus", 0.25))
            for rid, value in result["saliences"].items():
                count = self.touches.get(rid, 0)
                if count:
                    result["saliences"][rid] = round(
                        (value - bonus * count) * (1 + bonus * count), 6)
        return result


def _zero_half_life_is_unset(args: Json) -> Json:
    """A falsy ``half_life_days`` (0) is taken as "not given": the default applies."""
    config = args.get("config")
    if isinstance(config, dict) and config.get("half_life_days") == 0:
        args["config"] = {k: v for k, v in config.items() if k != "half_life_days"}
    return args


_KNOWN_CONFIG = ("near_dup_threshold", "promotion_threshold", "contradiction_threshold",
                 "max_block")


def _ignore_unknown_config(args: Json) -> Json:
    """Members the pass does not know are silently ignored instead of refused."""
    config = args.get("config")
    if isinstance(config, dict):
        args["config"] = {k: v for k, v in config.items() if k in _KNOWN_CONFIG}
    return args


FAULTS = (
    Fault("lifecycle-archive-keeps-signature", "LC-6", "lifecycle",
          "the archive lifecycle function keeps the record's signature on the new version",
          after("lifecycle", _archive_keeps_signature)),
    Fault("consolidation-stamps-wall-clock", "CONS-15", "consolidation",
          "consolidation stamps the versions it writes with its own clock, not the pass's now",
          before(_C, _wall_clock)),
    Fault("decay-stamps-wall-clock", "DEC-1", "decay",
          "decay stamps its archivals with its own clock, not the pass's now",
          before("decay", _wall_clock)),
    Fault("sweep-skips-superseded-rules", "CONS-11", "consolidation",
          "the flag sweep visits only active rules, so a superseded rule is never flagged",
          _SweepActiveOnly()),
    Fault("slots-compared-by-host-equality", "CONS-13", "consolidation",
          "slot values are compared with the host language's equality (1 == true)",
          _HostEquality()),
    Fault("dedup-tie-keeps-latest", "CONS-5", "consolidation",
          "exact dedup breaks a confidence tie by the latest created_at instead of the earliest",
          _latest_keeper),
    Fault("merge-lists-merged-first", "CONS-3", "consolidation",
          "a merge action lists the merged record first instead of [target, other, merged]",
          after(_C, _merged_first)),
    Fault("near-dup-merges-slot-conflicts", "CONS-14", "consolidation",
          "near-dup compares text only and merges a similar pair whose shared slot disagrees",
          _merge_conflicts),
    Fault("reinforcement-multiplies", "DEC-6", "decay",
          "salience multiplies the decayed confidence by (1 + bonus x touches) instead of "
          "adding the bonus", _MultiplicativeReinforcement()),
    Fault("decay-zero-half-life-is-default", "DEC-8", "decay",
          "decay takes a half_life_days of 0 as unset and uses the default",
          before("decay", _zero_half_life_is_unset)),
    Fault("consolidate-ignores-unknown-config", "CONS-16", "consolidation",
          "consolidation silently ignores configuration members it does not know",
          before(_C, _ignore_unknown_config)),
    Fault("tombstone-keeps-extensions", "RED-9", "redaction",
          "the tombstone keeps the redacted record's extension fields",
          _TombstoneKeepsExtensions()),
)
