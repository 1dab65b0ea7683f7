"""The lifecycle state machine: random proposals, resolutions and flag refreshes.

Build it with the engine under test and let hypothesis drive it (see
:mod:`memspec.conformance._machines`).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import (
    Bundle,
    RuleBasedStateMachine,
    initialize,
    invariant,
    multiple,
    precondition,
    rule,
)

from memspec import SigningKey, is_reason, sign_record
from memspec.conformance import _builders as build
from memspec.conformance._machines_observe import (
    ClockLike,
    EngineLike,
    attempt,
    canon,
    fresh_id,
    shorten,
    wrote_on_rejection,
)
from memspec.conformance._model import (
    LIVE_STATES,
    check_lifecycle_invariants,
    check_version,
    planned_requirement,
    version_problems,
)
from memspec.conformance._outcomes import RequirementFailed, judges_input

__all__ = ["LifecycleMachine"]


_TYPES = ("fact", "episode", "procedure")
_BODIES = (
    "the kettle is in the left cupboard",
    "standup starts at nine",
    "the staging database is Postgres",
    "café au lait comes before the first meeting",
    "the printer on floor two jams on A3 paper",
)
# Generation favours the first and last choices, so the faulty ones sit in the middle.
_REASONS = st.sampled_from(["newer information", "seen to conflict", "no longer relevant",
                            "checked by hand", "", "newer information", "seen to conflict",
                            "no longer relevant", "checked by hand"])
_LINKS = st.sampled_from(["back-reference", "back-reference", "none", "elsewhere",
                          "back-reference", "back-reference"])
_BAD_KINDS = ("delete", "redact", "update", "merge", "resolve", "Create", "")
# Proposals wrong in themselves: (variant, requirement, error class). A valid record that is
# not newborn, or an id already stored, is a bad proposal; a record that breaks the format is
# a bad record; a named id the store does not hold is not found.
_MALFORMED = (
    ("existing-id", "OP-6", "proposal"),
    ("unknown-kind", "OP-1", "proposal"),
    ("unknown-supersede", "OP-2", "not-found"),
    ("unknown-transition", "OP-2", "not-found"),
    ("unknown-archive", "OP-2", "not-found"),
    ("born-archived", "REC-14", "proposal"),
    ("born-later", "REC-14", "proposal"),
    ("born-signed", "REC-14", "proposal"),
    ("born-flagged-rule", "REC-14", "proposal"),
    ("flagged-fact", "RULE-4", "record"),
    ("rule-without-evidence", "RULE-1", "record"),
    ("float-confidence", "CONF-1", "record"),
    ("wrong-id", "ID-2", "record"),
    ("active-with-successor", "SUP-3", "record"),
)
_SIGNER = SigningKey(bytes(range(32)))


class LifecycleMachine(RuleBasedStateMachine):
    """Random legal and illegal proposals, resolutions and flag refreshes against a model.

    The model is the exact version history every record must have. Legal steps
    must be applied exactly as specified; illegal ones must be rejected with an
    error class their fault allows and write nothing. After every step the
    engine's store must equal the model and satisfy the lifecycle invariants.
    """

    records = Bundle("records")

    def __init__(self, engine: EngineLike, clock: ClockLike) -> None:
        super().__init__()
        self.engine = engine
        self.clock = clock
        self.model: dict[str, list[dict[str, Any]]] = {}
        self.serial = 0
        self.malformed_steps = 0
        #: (requirements, what the last step did), for messages when the store surprises.
        self.step: tuple[str | tuple[str, ...], str] = ("OP-3", "a step wrote")

    # -- helpers ---------------------------------------------------------------------

    def _tick(self) -> str:
        return self.clock.advance(seconds=1)

    def _count(self, state: str) -> int:
        return sum(1 for versions in self.model.values() if versions[-1]["state"] == state)

    def _latest(self, rid: str) -> dict[str, Any]:
        return self.model[rid][-1]

    def _state(self, rid: str) -> str | None:
        return self.model[rid][-1]["state"] if rid in self.model else None

    def _new(self, kind: str, body: str, now: str, **fields: Any) -> dict[str, Any]:
        self.serial += 1
        provenance = {"kind": "observation", "ref": f"kit-lifecycle-{self.serial}", "agent": None}
        return build.record(kind, body, created_at=now, provenance=provenance, **fields)

    def _rejected(self, operation: str, faults: list[tuple[str, str, str]], /,
                  **arguments: Any) -> None:
        """Run an operation that has ``faults`` (error class, requirement, description)."""
        classes = {code for code, _, _ in faults}
        requirement = faults[0][1]
        what = "; ".join(f"{text} [{req}]" for _, req, text in faults)
        result, error = attempt(self.engine, operation, **arguments)
        if error is None:
            raise RequirementFailed(
                requirement, f"{what} was accepted by {operation} (expected a "
                f"{'/'.join(sorted(classes))} error); result {shorten(result)}",
                strictness=judges_input(classes))
        if error.code not in classes:
            raise RequirementFailed(
                requirement, f"{what} was rejected by {operation} with error class "
                f"{error.code!r}, expected {'/'.join(sorted(classes))} ({error})",
                strictness=judges_input(classes))
        # The invariant that runs next compares the whole store with the model.
        self.step = (wrote_on_rejection(operation), f"{what} was rejected, yet {operation} wrote")

    def _applied(self, operation: str, what: str,
                 planned: list[tuple[dict[str, Any] | None, dict[str, Any],
                                     Mapping[str, tuple[Any, str]],
                                     Mapping[str, Collection[Any] | None] | Collection[str]]],
                 now: str, /, **arguments: Any) -> None:
        """Run a legal operation and check it wrote exactly the planned versions.

        ``planned`` holds (previous version or None for a new record, base of the
        new version, fields the new version must have, fields it may set freely).
        """
        self.step = ("OP-3", f"{what} wrote versions beyond its own")
        result, error = attempt(self.engine, operation, **arguments)
        if error is not None or result is None:
            raise RequirementFailed(planned_requirement(planned), f"legal {what} was rejected "
                                    f"with {error.code if error else ''}: {error}")
        written = result.get("written")
        if not isinstance(written, list):
            raise RequirementFailed(
                "LC-5", f"{operation} result has no written list: "
                f"{shorten(result)}")
        wanted = [base["id"] for _, base, _, _ in planned]
        reported = [w.get("id") if isinstance(w, dict) else w for w in written]
        if reported != wanted:
            raise RequirementFailed(
                "LC-5", f"{what} should write one version each of {wanted} in that order, "
                f"but the engine reports writing {reported}")
        for (prev, base, fields, free), actual in zip(planned, written, strict=True):
            if prev is None:
                if canon(actual) != canon(base):
                    raise RequirementFailed(
                        "OP-3", f"{what} wrote the new record {base['id']} altered: "
                        f"{shorten(actual)} instead of {shorten(base)}")
            else:
                check_version(what, version_problems(prev, actual, now, fields, free))
            self.model.setdefault(base["id"], []).append(actual)

    # -- rules -----------------------------------------------------------------------

    @initialize(target=records, kinds=st.lists(st.sampled_from(_TYPES), min_size=2, max_size=4))
    def fresh_engine(self, kinds: list[str]) -> Any:
        """A reset engine holding a few records, so lifecycle steps have something to act on."""
        # Every run starts from the same time, so a failing run replays identically.
        restart = getattr(self.clock, "reset", None)
        if callable(restart):
            restart()
        self.engine.call("reset")
        if self.engine.call("iterate")["records"] != []:
            raise RequirementFailed("PROTO-6", "reset left records in the store")
        created = []
        for i, kind in enumerate(kinds):
            created.append(self.create(kind, _BODIES[i % len(_BODIES)]))
        return multiple(*created)

    def _pick(self, data: st.DataObject, label: str, states: Collection[str] = (),
              avoid: str | None = None) -> str:
        """A stored id, usually one in ``states`` (so most steps are legal), sometimes any."""
        pool = sorted(rid for rid, v in self.model.items()
                      if v[-1]["state"] in states and rid != avoid)
        if not pool or data.draw(st.integers(0, 4), label=f"{label}: any state") == 2:
            pool = sorted(rid for rid in self.model if rid != avoid) or sorted(self.model)
        return data.draw(st.sampled_from(pool), label=label)

    @precondition(lambda self: self._count("active") < 4 and len(self.model) < 14)
    @rule(target=records, kind=st.sampled_from(_TYPES), body=st.sampled_from(_BODIES))
    def create(self, kind: str, body: str) -> str:
        now = self._tick()
        record = self._new(kind, body, now)
        self._applied("apply_proposal", f"create of new {kind} {record['id']}",
                      [(None, record, {}, ())], now,
                      proposal=build.proposal("create", record), now=now)
        return str(record["id"])

    @precondition(lambda self: bool(self.model) and len(self.model) < 8)
    @rule(target=records, data=st.data())
    def create_rule(self, data: st.DataObject) -> str:
        now = self._tick()
        evidence = data.draw(st.lists(st.sampled_from(sorted(self.model)), min_size=1,
                                      max_size=3, unique=True), label="evidence")
        if data.draw(st.booleans(), label="cites a missing record"):
            evidence.append(fresh_id(f"evidence-{self.serial}"))
        record = self._new("rule", "when the evidence holds, so does this rule", now,
                           evidence=evidence)
        self._applied("apply_proposal", f"create of rule {record['id']}",
                      [(None, record, {}, ())], now,
                      proposal=build.proposal("create", record), now=now)
        return str(record["id"])

    @precondition(lambda self: bool(self.model))
    @rule(data=st.data(), kind=st.sampled_from(["transition", "supersede", "archive",
                                                "transition", "supersede"]),
          reason=_REASONS)
    def propose(self, data: st.DataObject, kind: str, reason: str) -> None:
        """A supersede, transition or archive proposal, usually legal, sometimes not."""
        {"supersede": self._supersede, "transition": self._transition,
         "archive": self._archive}[kind](data, reason)

    def _supersede(self, data: st.DataObject, reason: str) -> None:
        now = self._tick()
        rid = self._pick(data, "target", ("active",))
        body = data.draw(st.sampled_from(_BODIES), label="successor body")
        link = data.draw(_LINKS, label="successor's supersedes")
        target = {"back-reference": rid, "none": None, "elsewhere": fresh_id(rid)}[link]
        successor = self._new("fact", body, now, supersedes=target)
        faults: list[tuple[str, str, str]] = []
        if data.draw(st.integers(0, 5), label="successor already stored") == 2:
            taken = self._pick(data, "stored successor")
            successor = {**self.model[taken][0], "supersedes": target}
            faults.append(("proposal", "OP-6", f"a successor whose id {taken} is already stored"))
            if taken == target:
                faults.append(("record", "SUP-4", "a successor that supersedes itself"))
        if not is_reason(reason):
            faults.append(("proposal", "LC-3", "supersede without a reason"))
        if link != "back-reference":
            faults.append(("lifecycle", "SUP-1",
                           f"successor whose supersedes is {target!r}, not {rid}"))
        if self._state(rid) != "active":
            faults.append(("lifecycle", "SUP-5", f"supersede of a {self._state(rid)} record"))
        proposal = build.proposal("supersede", successor, target_id=rid, reason=reason)
        if faults:
            self._rejected("apply_proposal", faults, proposal=proposal, now=now)
            return
        old = self._latest(rid)
        self._applied("apply_proposal", f"supersede of {rid}", [
            (None, successor, {}, ()),
            (old, old, {"state": ("superseded", "SUP-2"),
                        "superseded_by": (successor["id"], "SUP-2"),
                        "state_reason": (reason, "LC-3")}, ()),
        ], now, proposal=proposal, now=now)

    def _transition(self, data: st.DataObject, reason: str) -> None:
        now = self._tick()
        a = self._pick(data, "target", ("active",))
        b = self._pick(data, "other", ("active",), avoid=a)
        if data.draw(st.integers(0, 9), label="the same record twice") == 4:
            b = a
        faults: list[tuple[str, str, str]] = []
        if not is_reason(reason):
            faults.append(("proposal", "LC-3", "transition without a reason"))
        if a == b:
            faults.append(("lifecycle", "TRN-4", "transition of a record with itself"))
        for side in dict.fromkeys((a, b)):
            if self._state(side) != "active":
                faults.append(("lifecycle", "TRN-4",
                               f"transition of a {self._state(side)} record"))
        proposal = build.proposal("transition", target_id=a, other_id=b, reason=reason)
        if faults:
            self._rejected("apply_proposal", faults, proposal=proposal, now=now)
            return
        block = build.transition_block(a, b, reason)
        # The reason lives in the block; state_reason is left as it was (SPEC section 8.3).
        fields = {"state": ("transitional", "TRN-3"), "transition": (block, "TRN-3")}
        side_a, side_b = self._latest(a), self._latest(b)
        self._applied("apply_proposal", f"transition of {a} and {b}", [
            (side_a, side_a, fields, ()), (side_b, side_b, fields, ()),
        ], now, proposal=proposal, now=now)

    def _archive(self, data: st.DataObject, reason: str) -> None:
        now = self._tick()
        rid = self._pick(data, "target", ("active", "transitional", "superseded"))
        faults: list[tuple[str, str, str]] = []
        if not is_reason(reason):
            faults.append(("proposal", "LC-3", "archive without a reason"))
        if self._state(rid) == "archived":
            faults.append(("lifecycle", "LC-2", "archive of an archived record"))
        proposal = build.proposal("archive", target_id=rid, reason=reason)
        if faults:
            self._rejected("apply_proposal", faults, proposal=proposal, now=now)
            return
        old = self._latest(rid)
        self._applied("apply_proposal", f"archive of {old['state']} {rid}", [
            (old, old, {"state": ("archived", "LC-1"), "state_reason": (reason, "LC-3"),
                        "transition": (None, "TRN-2")}, ()),
        ], now, proposal=proposal, now=now)

    @precondition(lambda self: self.malformed_steps * 3 <= len(self.model))
    @rule(data=st.data(), variant=st.sampled_from(_MALFORMED), body=st.sampled_from(_BODIES))
    def malformed(self, data: st.DataObject, variant: tuple[str, str, str], body: str) -> None:
        """A proposal that is wrong in itself, whatever the store holds."""
        self.malformed_steps += 1
        now = self._tick()
        name, requirement, code = variant
        record = self._new("fact", body, now)
        proposal: dict[str, Any] | None = None
        if name in ("existing-id", "unknown-kind") and not self.model:
            name, requirement, code = "wrong-id", "ID-2", "record"
        if name == "existing-id":
            taken = self._pick(data, "stored record")
            proposal = build.proposal("create", self.model[taken][0])
        elif name == "unknown-kind":
            kind = data.draw(st.sampled_from(_BAD_KINDS), label="kind")
            proposal = build.proposal(kind, target_id=self._pick(data, "target"),
                                      reason="not a proposal kind")
        elif name.startswith("unknown-"):
            kind = name.removeprefix("unknown-")
            ghost = fresh_id(f"ghost-{self.serial}")
            successor = self._new("fact", "a successor of nothing", now, supersedes=ghost)
            proposal = build.proposal(kind, successor if kind == "supersede" else None,
                                      target_id=ghost, reason="no such record",
                                      other_id=fresh_id(f"other-{self.serial}")
                                      if kind == "transition" else None)
        elif name == "born-archived":
            record.update(state="archived", state_reason="archived at birth")
        elif name == "born-later":
            record["updated_at"] = self.clock.advance(ms=1)
        elif name == "born-signed":
            proposal = build.proposal("create", sign_record(record, _SIGNER))
        elif name == "born-flagged-rule":
            rule_record = self._new("rule", body, now, evidence=[fresh_id(name)])
            rule_record.update(flagged=True, flag_reason="no evidence is live")
            proposal = build.proposal("create", rule_record)
        elif name == "flagged-fact":
            record.update(flagged=True, flag_reason="no evidence")
        elif name == "rule-without-evidence":
            proposal = build.proposal("create", self._new("rule", body, now))
        elif name == "float-confidence":
            record["confidence"] = 0.5
        elif name == "wrong-id":
            record["id"] = fresh_id(name)
        else:
            record["superseded_by"] = fresh_id(name)
        if proposal is None:
            proposal = build.proposal("create", record)
        self._rejected("apply_proposal", [(code, requirement, f"a malformed proposal ({name})")],
                       proposal=proposal, now=now)

    @precondition(lambda self: any(v[-1]["state"] == "transitional"
                                   for v in self.model.values()))
    @rule(data=st.data(), reason=_REASONS)
    def resolve(self, data: st.DataObject, reason: str) -> None:
        winner = self._pick(data, "winner", ("transitional",))
        block = self._latest(winner)["transition"]
        if block is not None and data.draw(st.integers(0, 3), label="its partner") != 1:
            loser = block["sides"][1] if block["sides"][0] == winner else block["sides"][0]
        else:
            loser = self._pick(data, "loser", ("transitional",))
        self._resolve(winner, loser, reason)

    def _resolve(self, winner: str, loser: str, reason: str) -> None:
        now = self._tick()
        faults: list[tuple[str, str, str]] = []
        if not is_reason(reason):
            faults.append(("lifecycle", "RES-1", "resolution without a reason"))
        if winner == loser:
            faults.append(("lifecycle", "RES-1", "resolution of a record with itself"))
        for side in dict.fromkeys((winner, loser)):
            if self._state(side) != "transitional":
                faults.append(("lifecycle", "RES-1",
                               f"resolution naming a {self._state(side)} record"))
        if not faults:
            block = self._latest(winner)["transition"]
            if (self._latest(loser)["transition"] != block
                    or set(block["sides"]) != {winner, loser}):
                faults.append(("lifecycle", "RES-1",
                               "resolution of two records from different transitions"))
        arguments = {"winner_id": winner, "loser_id": loser, "reason": reason, "now": now}
        if faults:
            self._rejected("resolve", faults, **arguments)
            return
        won, lost = self._latest(winner), self._latest(loser)
        self._applied("resolve", f"resolution of {winner} over {loser}", [
            (won, won, {"state": ("active", "RES-2"), "transition": (None, "RES-2"),
                        "state_reason": (reason, "RES-2")}, ()),
            (lost, lost, {"state": ("superseded", "RES-2"), "transition": (None, "RES-2"),
                          "superseded_by": (winner, "RES-2"),
                          "state_reason": (reason, "RES-2")}, ()),
        ], now, **arguments)

    @precondition(lambda self: any(v[-1]["type"] == "rule" for v in self.model.values()))
    @rule(data=st.data(), partial=st.booleans())
    def refresh_rule_flag(self, data: st.DataObject, partial: bool) -> None:
        now = self._tick()
        rules = sorted(rid for rid, v in self.model.items() if v[-1]["type"] == "rule")
        rid = data.draw(st.sampled_from(rules), label="rule")
        rule_record = self._latest(rid)
        present = [e for e in rule_record["evidence"] if e in self.model]
        missing = [e for e in rule_record["evidence"] if e not in self.model]
        given = [self._latest(e) for e in present]
        if partial and given:
            self._rejected("lifecycle", [("lifecycle", "RULE-5",
                                          "flag evaluation over a partial evidence set")],
                           operation="refresh_rule_flag", records=[rule_record, *given[1:]],
                           missing=missing, now=now)
            return
        result = self.engine.call("lifecycle", operation="refresh_rule_flag",
                                  records=[rule_record, *given], missing=missing, now=now)
        (refreshed,) = result["records"]
        live = any(e["state"] in LIVE_STATES for e in given)
        if refreshed.get("flagged") is not (not live):
            raise RequirementFailed(
                "RULE-3" if live else "RULE-2",
                f"refresh_rule_flag left {rid} with flagged={refreshed.get('flagged')!r} "
                f"although {'some evidence is live' if live else 'no evidence is live'} "
                f"(evidence states {[e['state'] for e in given]}, missing {missing})")
        if refreshed.get("flagged") == rule_record["flagged"]:
            return
        reason = refreshed.get("flag_reason")
        if not (is_reason(reason) if not live else reason is None):
            raise RequirementFailed("RULE-2" if not live else "RULE-3",
                                    f"flag_reason of {rid} is {reason!r} with flagged={not live}")
        problems = version_problems(rule_record, refreshed, now,
                                    {"flagged": (not live, "RULE-2"),
                                     "state": (rule_record["state"], "RULE-6")},
                                    ("flag_reason",))
        check_version("refresh_rule_flag", problems)
        self.engine.call("put", record=refreshed)
        self.model[rid].append(refreshed)

    # -- invariants ------------------------------------------------------------------

    @invariant()
    def store_matches_model(self) -> None:
        requirement, step = self.step
        shown = {r["id"]: r for r in self.engine.call("iterate")["records"]}
        lost = sorted(set(self.model) - set(shown))
        if lost:
            raise RequirementFailed(
                "LC-4", f"records {lost} were deleted (iterate no longer lists them)")
        extra = sorted(set(shown) - set(self.model))
        if extra:
            raise RequirementFailed(requirement, f"{step} the new records {extra}")
        histories: dict[str, list[dict[str, Any]]] = {}
        for rid, expected in self.model.items():
            versions = self.engine.call("history", id=rid)["records"]
            histories[rid] = versions
            got = [canon(v) for v in versions]
            want = [canon(v) for v in expected]
            if got[: len(want)] != want[: len(got)]:
                raise RequirementFailed(
                    "STORE-2", f"the history of {rid} no longer starts with the versions written "
                    "earlier (a version was changed, dropped or reordered)")
            if len(got) < len(want):
                raise RequirementFailed(
                    "LC-4", f"the history of {rid} shrank from {len(want)} to {len(got)} versions")
            if got != want:
                raise RequirementFailed(
                    requirement, f"{step} {len(got) - len(want)} new version(s) of {rid}")
            if canon(shown[rid]) != got[-1]:
                raise RequirementFailed(
                    "STORE-3", f"iterate shows a version of {rid} that is not its latest")
        check_lifecycle_invariants(histories)
