"""Faults that prove the kit's attribution (issue 14): each breaks one requirement in a way
that used to be reported under others.

``resolve-accepts-self-resolution`` accepts one invalid input, a resolution of a record with
itself, and writes nothing: the kit must fail RES-1, the vector's own requirement, and neither
PROTO-7 (nothing was rejected, so nothing rejected wrote) nor anything of ``core``.
"""

from __future__ import annotations

from memspec.selftest.faults import Fault, Inner, Json, only

__all__ = ["FAULTS"]


def _accept_self_resolution(op: str, args: Json, inner: Inner) -> Json:
    # Why an empty written list: the engine "accepts" the resolution without touching the
    # store, so the only thing wrong is that it was not refused.
    if args.get("winner_id") is not None and args.get("winner_id") == args.get("loser_id"):
        return {"written": []}
    return inner(op, args)


FAULTS: tuple[Fault, ...] = (
    Fault("resolve-accepts-self-resolution", "RES-1", "lifecycle",
          "resolve accepts a resolution whose winner and loser are one record (and writes "
          "nothing) instead of rejecting it",
          only("resolve", _accept_self_resolution)),
)
