"""Faults of the consolidation report's ``record_ids`` (CONS-3, the table of SPEC 15).

Each action names the records it wrote, each once, in an order fixed per action.
These faults write exactly what a correct pass writes and only misreport the ids:
the keeper listed first, a transition's sides against the block's order, a
promotion or a flag listing the rule's evidence, a merge leaving out the side
it retired.
"""

from __future__ import annotations

from collections.abc import Callable

from memspec.selftest._shapes import stored
from memspec.selftest.faults import Fault, Inner, Json, after, only

__all__ = ["FAULTS"]

_C = "consolidate"


def _rewrite(kinds: tuple[str, ...], change: Callable[[Json], None]) -> Callable[[Json, Json],
                                                                                Json]:
    """A report rewrite applying ``change`` to every action of one of ``kinds``."""

    def run(result: Json, args: Json) -> Json:
        for action in result["actions"]:
            if action["action"] in kinds:
                change(action)
        return result

    return run


def _keeper_first(action: Json) -> None:
    action["record_ids"] = action["record_ids"][::-1]
    action["before"] = action["before"][::-1]
    action["after"] = action["after"][::-1]


def _sides_reversed(action: Json) -> None:
    _keeper_first(action)


def _other_side_left_out(action: Json) -> None:
    if len(action["record_ids"]) == 3:
        ids, before_, after_ = action["record_ids"], action["before"], action["after"]
        action["record_ids"] = [ids[0], ids[2]]
        action["before"] = before_[:1]
        action["after"] = [after_[0], after_[2]]


def _with_evidence(kinds: tuple[str, ...]) -> Callable[[str, Json, Inner], Json]:
    """Actions of ``kinds`` list the rule followed by its evidence records."""

    def run(op: str, args: Json, inner: Inner) -> Json:
        result = inner(op, args)
        for action in result["actions"]:
            if action["action"] not in kinds or len(action["record_ids"]) != 1:
                continue
            rule = stored(inner, action["record_ids"][0])
            evidence = [e for e in (rule or {}).get("evidence", [])
                        if stored(inner, e) is not None]
            states = [str((stored(inner, e) or {}).get("state")) for e in evidence]
            action["record_ids"] = [*action["record_ids"], *evidence]
            action["before"] = [*action["before"], *states]
            action["after"] = [*action["after"], *states]
        return result

    return run


FAULTS = (
    Fault("dedup-lists-keeper-first", "CONS-3", "consolidation",
          "an exact-dedup action lists [keeper, copy] instead of [copy, keeper]",
          after(_C, _rewrite(("supersede",), _keeper_first))),
    Fault("transition-ids-against-block", "CONS-3", "consolidation",
          "a transition action lists its two sides in the reverse of the block's sides",
          after(_C, _rewrite(("transition",), _sides_reversed))),
    Fault("merge-omits-retired-side", "CONS-3", "consolidation",
          "a merge that also retires the other side lists only [target, merged record]",
          after(_C, _rewrite(("merge",), _other_side_left_out))),
    Fault("promotion-lists-evidence", "CONS-3", "consolidation",
          "a promotion's create action lists the rule followed by its evidence episodes",
          only(_C, _with_evidence(("create",)))),
    Fault("flag-lists-evidence", "CONS-3", "consolidation",
          "a flag or unflag action lists the rule followed by its evidence records",
          only(_C, _with_evidence(("flag", "unflag")))),
)
