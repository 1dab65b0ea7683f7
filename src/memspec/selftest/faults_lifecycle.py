"""Faults of the lifecycle profile: legality, supersession, transitions, resolution, rule
flags and proposals."""

from __future__ import annotations

import copy
from typing import Any

from memspec import is_reason
from memspec._errors import NotFoundError
from memspec.data import proposal_kinds
from memspec.selftest._shapes import bypass, named, proposal_of, put, still_writes, stored
from memspec.selftest.faults import Fault, Inner, Json, Stateful, after, before, evolve, only

__all__ = ["FAULTS", "Hidden", "stored"]

_KINDS = proposal_kinds()


def _reason(value: Any) -> bool:
    return is_reason(value)


class Hidden(Stateful):
    """Records that disappear after some operation: get/history fail, listings skip them."""

    def forget(self) -> None:
        self.gone: set[str] = set()

    def vanish(self, op: str, args: Json, result: Json) -> None:
        """Remember which ids the finished ``op`` made disappear."""

    def handle(self, op: str, args: Json, inner: Inner) -> Json:
        if op in ("get", "history") and args.get("id") in self.gone:
            raise NotFoundError(f"no record {args['id']}")
        result = inner(op, args)
        if op in ("iterate", "list"):
            return {"records": [r for r in result["records"] if r["id"] not in self.gone]}
        self.vanish(op, args, result)
        return result


class _ArchiveDeletes(Hidden):
    def vanish(self, op: str, args: Json, result: Json) -> None:
        if op == "apply_proposal" and proposal_of(args).get("kind") == "archive":
            self.gone.add(str(proposal_of(args).get("target_id")))


class _ResolveDeletesLoser(Hidden):
    def vanish(self, op: str, args: Json, result: Json) -> None:
        if op == "resolve":
            self.gone.add(str(args.get("loser_id")))


def _superseded_to_transitional(result: Json, args: Json) -> Json:
    if (args.get("from"), args.get("to")) == ("superseded", "transitional"):
        result["legal"] = True
    return result


def _revive_archived(op: str, args: Json, inner: Inner) -> Json:
    proposal = proposal_of(args)
    for key in ("target_id", "other_id"):
        record = named(inner, proposal, key)
        if record is not None and record["state"] == "archived":
            put(inner, evolve(record, str(args.get("now")), state="active",
                              state_reason=None, superseded_by=None))
    return inner(op, args)


def _default_supersede_reason(args: Json) -> Json:
    proposal = proposal_of(args)
    if proposal.get("kind") == "supersede" and not _reason(proposal.get("reason")):
        proposal["reason"] = "superseded"
    return args


def _archive_keeps_updated_at(result: Json, args: Json) -> Json:
    if args.get("operation") == "archive" and args.get("records"):
        result["records"][0]["updated_at"] = args["records"][0]["updated_at"]
    return result


def _link_successor(args: Json) -> Json:
    proposal = proposal_of(args)
    if proposal.get("kind") == "supersede" and isinstance(proposal.get("record"), dict):
        proposal["record"]["supersedes"] = proposal.get("target_id")
    if args.get("operation") == "supersede" and len(args.get("records") or []) == 2:
        successor = args["records"][1]
        if isinstance(successor, dict) and isinstance(args["records"][0], dict):
            successor["supersedes"] = args["records"][0].get("id")
    return args


def _supersession(args: Json, inner: Inner, state: str) -> tuple[str, Json, Json] | None:
    """(reason, successor, stored target) of a supersede proposal with a reason whose
    target is ``state``; None for any other proposal."""
    proposal = proposal_of(args)
    successor = proposal.get("record")
    target = named(inner, proposal, "target_id")
    if (proposal.get("kind") == "supersede" and isinstance(successor, dict) and target
            and target["state"] == state and _reason(proposal.get("reason"))):
        return proposal["reason"], successor, target
    return None


def _successor_only(args: Json, inner: Inner) -> list[Json] | None:
    found = _supersession(args, inner, "active")
    if found is None:
        return None
    _, successor, target = found
    if (successor.get("supersedes") == target["id"]
            and stored(inner, successor.get("id")) is None):
        return [successor]
    return None


def _supersede_transitional(args: Json, inner: Inner) -> list[Json] | None:
    found = _supersession(args, inner, "transitional")
    if found is None:
        return None
    reason, successor, target = found
    old = evolve(target, str(args.get("now")), state="superseded", transition=None,
                 superseded_by=successor.get("id"), state_reason=reason)
    return [successor, old]


def _one_side(args: Json, inner: Inner) -> list[Json] | None:
    proposal = proposal_of(args)
    a = named(inner, proposal, "target_id")
    b = named(inner, proposal, "other_id")
    if (proposal.get("kind") == "transition" and a and b and a["id"] != b["id"]
            and a["state"] == b["state"] == "active" and _reason(proposal.get("reason"))):
        block = {"sides": [a["id"], b["id"]], "reason": proposal["reason"]}
        return [evolve(a, str(args.get("now")), state="transitional", transition=block)]
    return None


def _revive_for_transition(args: Json) -> Json:
    if args.get("operation") == "begin_transition":
        for record in args.get("records") or []:
            if isinstance(record, dict) and record.get("state") == "superseded":
                record.update(state="active", superseded_by=None, state_reason=None)
    return args


def _pair_strangers(args: Json) -> Json:
    records = args.get("records") or []
    if args.get("operation") == "resolve_transition" and len(records) == 2 and all(
            isinstance(r, dict) and r.get("state") == "transitional" for r in records):
        winner, loser = records
        if winner.get("id") != loser.get("id"):
            block = {"sides": [winner["id"], loser["id"]],
                     "reason": (winner.get("transition") or {}).get("reason") or "dispute"}
            winner["transition"] = loser["transition"] = block
    return args


def _winner_without_reason(result: Json, args: Json) -> Json:
    if args.get("operation") == "resolve_transition" and result.get("records"):
        result["records"][0]["state_reason"] = None
    return result


def _refresh(change: Any) -> Any:
    """A fault in refresh_rule_flag: ``change(result rule, input rule, args)``."""

    def run(result: Json, args: Json) -> Json:
        records = args.get("records") or []
        if args.get("operation") == "refresh_rule_flag" and records and result.get("records"):
            result["records"][0] = change(result["records"][0], copy.deepcopy(records[0]), args)
        return result

    return after("lifecycle", run)


def _missing_is_live(out: Json, rule: Json, args: Json) -> Json:
    if out.get("flagged") and args.get("missing"):
        if not rule.get("flagged"):
            return rule
        return evolve(rule, str(args.get("now")), flagged=False, flag_reason=None)
    return out


def _flag_sticks(out: Json, rule: Json, args: Json) -> Json:
    return rule if rule.get("flagged") and not out.get("flagged") else out


def _flag_archives(out: Json, rule: Json, args: Json) -> Json:
    if out.get("flagged") and not rule.get("flagged") and out.get("state") == "active":
        out.update(state="archived", state_reason="its evidence is gone")
    return out


def _complete_evidence(args: Json) -> Json:
    records = args.get("records") or []
    if args.get("operation") == "refresh_rule_flag" and records and isinstance(records[0], dict):
        known = {r.get("id") for r in records[1:] if isinstance(r, dict)}
        missing = list(args.get("missing") or [])
        missing += [e for e in records[0].get("evidence") or []
                    if e not in known and e not in missing]
        args["missing"] = missing
    return args


def _unknown_kind_archives(args: Json) -> Json:
    proposal = proposal_of(args)
    if proposal and proposal.get("kind") not in _KINDS:
        proposal["kind"] = "archive"
    return args


def _successor_leaks(op: str, args: Json, inner: Inner) -> None:
    proposal = proposal_of(args)
    if proposal.get("kind") == "supersede" and isinstance(proposal.get("record"), dict):
        put(inner, proposal["record"])


def _reborn(args: Json) -> Json:
    record = proposal_of(args).get("record")
    if proposal_of(args).get("kind") == "create" and isinstance(record, dict):
        record.update(state="active", superseded_by=None, transition=None, state_reason=None,
                      flagged=False, flag_reason=None, signed_by=None, signature="")
        if "created_at" in record:
            record["updated_at"] = record["created_at"]
    return args


def _create_appends(args: Json, inner: Inner) -> list[Json] | None:
    proposal = proposal_of(args)
    record = proposal.get("record")
    if proposal.get("kind") == "create" and isinstance(record, dict) and stored(
            inner, record.get("id")) is not None:
        return [record]
    return None


_P = "apply_proposal"

FAULTS = (
    Fault("superseded-may-become-transitional", "LC-1", "lifecycle",
          "is_legal allows superseded -> transitional", after("is_legal",
                                                              _superseded_to_transitional)),
    Fault("archived-revived", "LC-2", "lifecycle",
          "a proposal on an archived record first brings it back to active",
          only(_P, _revive_archived)),
    Fault("supersede-without-reason", "LC-3", "lifecycle",
          "a supersession with an empty reason gets the reason 'superseded'",
          before(_P, _default_supersede_reason)),
    Fault("archive-really-deletes", "LC-4", "lifecycle",
          "an archived record is gone: get and history answer not-found, listings skip it",
          _ArchiveDeletes()),
    Fault("archive-keeps-updated-at", "LC-5", "lifecycle",
          "the archived version keeps the old updated_at", after("lifecycle",
                                                                 _archive_keeps_updated_at)),
    Fault("supersede-without-back-reference", "SUP-1", "lifecycle",
          "a successor that does not name the old record is linked to it silently",
          before((_P, "lifecycle"), _link_successor)),
    Fault("supersede-leaves-old-active", "SUP-2", "lifecycle",
          "a supersession writes the successor but never marks the old record superseded",
          bypass(_P, _successor_only)),
    Fault("transitional-superseded", "SUP-5", "lifecycle",
          "a transitional record can be superseded directly, bypassing resolution",
          bypass(_P, _supersede_transitional)),
    Fault("transition-marks-one-side", "TRN-3", "lifecycle",
          "opening a transition writes only the target's transitional version",
          bypass(_P, _one_side)),
    Fault("superseded-side-transition", "TRN-4", "lifecycle",
          "begin_transition treats a superseded side as active",
          before("lifecycle", _revive_for_transition)),
    Fault("resolution-of-strangers", "RES-1", "lifecycle",
          "resolve_transition accepts two transitional records of different blocks",
          before("lifecycle", _pair_strangers)),
    Fault("resolution-forgets-reason", "RES-2", "lifecycle",
          "the winner of a resolution gets no state_reason", after("lifecycle",
                                                                  _winner_without_reason)),
    Fault("resolution-deletes-loser", "RES-3", "lifecycle",
          "the loser of a resolution is gone afterwards", _ResolveDeletesLoser()),
    Fault("missing-evidence-counts-live", "RULE-2", "lifecycle",
          "evidence known to be missing keeps a rule unflagged", _refresh(_missing_is_live)),
    Fault("flag-not-cleared-on-revival", "RULE-3", "lifecycle",
          "a flagged rule stays flagged when its evidence is live again",
          _refresh(_flag_sticks)),
    Fault("partial-evidence-accepted", "RULE-5", "lifecycle",
          "flag evaluation counts evidence it was not given as missing",
          before("lifecycle", _complete_evidence)),
    Fault("flagging-archives-rule", "RULE-6", "lifecycle",
          "flagging an active rule also archives it", _refresh(_flag_archives)),
    Fault("unknown-kind-becomes-archive", "OP-1", "lifecycle",
          "a proposal of an unknown kind (delete, merge, ...) is applied as an archive",
          before(_P, _unknown_kind_archives)),
    Fault("successor-written-before-validation", "OP-2", "lifecycle",
          "a rejected supersession still leaves its successor in the store",
          still_writes(_P, _successor_leaks)),
    Fault("invalid-create-repaired", "OP-3", "lifecycle",
          "a create of a record that is not newborn is 'repaired' to newborn and applied",
          before(_P, _reborn)),
    Fault("create-existing-id-appends", "OP-6", "lifecycle",
          "a create of an id already stored appends a version instead of failing",
          bypass(_P, _create_appends)),
)
