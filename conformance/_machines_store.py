"""The store state machine: random puts, valid and invalid, and every read, against a model.

Build it with the engine under test and let hypothesis drive it (see
:mod:`memspec.testing`); the kit runs it in ``suites/test_store.py``, once per requirement
(``judge``), so that one broken rule never leaves the store's other rules unjudged.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from memspec.conformance import _builders as build
from memspec.conformance._machines_observe import (
    ClockLike,
    EngineLike,
    attempt,
    canon,
    expect_rejected,
    fresh_id,
    shorten,
)
from memspec.conformance._outcomes import RequirementFailed, blame
from memspec.conformance._store_contract import StoreSteps, bad_versions

__all__ = ["STORE_MACHINE_REQUIREMENTS", "StoreMachine"]

_TYPES = ("fact", "episode", "procedure")
_BODIES = (
    "the kettle is in the left cupboard",
    "standup starts at nine",
    "café au lait comes before the first meeting",
    "the printer on floor two jams on A3 paper",
)
# Tags that contain one another, so a substring match is caught.
_TAGS = ("kitchen", "kitchenware", "home", "Home", "🦉")
_CONFIDENCES = ("0.0000", "0.0500", "0.5000", "0.9999", "1.0000")
_FILTER_STATES = (None, "active", "archived", "superseded", "transitional")
#: The requirements the machine checks; STORE-11 is judged by its invalid puts alone.
STORE_MACHINE_REQUIREMENTS = ("STORE-1", "STORE-2", "STORE-3", "STORE-4", "STORE-5", "STORE-6",
                              "STORE-11")


class StoreMachine(RuleBasedStateMachine):
    """Random puts of new records and new versions, invalid puts and every read.

    The model is every version written to every id, in write order. Each put must
    report the version number the model expects (STORE-1); each invalid put must be
    refused with a record error, writing nothing (STORE-11); get, history, list and
    iterate must show exactly what the model holds (STORE-3, STORE-2, STORE-5), an
    unknown id is not found (STORE-4), and no version is ever lost (STORE-6).

    With ``judge``, only the checks of those requirements run (and the reads they need):
    the model follows the puts alone, never the engine's answers, so a rule the engine
    breaks does not stop the others being judged. Invalid puts run only when STORE-11 is
    judged. Without ``judge``, every requirement is checked.
    """

    def __init__(self, engine: EngineLike, clock: ClockLike, *,
                 judge: Collection[str] | None = None) -> None:
        super().__init__()
        unknown = sorted(set(judge or ()) - set(STORE_MACHINE_REQUIREMENTS))
        if unknown:
            raise ValueError(f"the store machine checks none of {unknown}")
        self.judged = frozenset(STORE_MACHINE_REQUIREMENTS if judge is None else judge)
        self.engine = engine
        self.clock = clock
        self.steps = StoreSteps(engine, clock, label="store-machine")
        self.model: dict[str, list[dict[str, Any]]] = {}

    def judges(self, *requirements: str) -> bool:
        """Whether the machine checks any of ``requirements``."""
        return not self.judged.isdisjoint(requirements)

    def _fail(self, requirement: str, message: str) -> None:
        if requirement in self.judged:
            raise RequirementFailed(requirement, message)

    def _latest(self, rid: str) -> dict[str, Any]:
        return self.model[rid][-1]

    def _put(self, record: dict[str, Any], what: str) -> None:
        # A valid put that is refused breaks STORE-1 (put appends) whatever is judged: the
        # model cannot follow a write that may or may not have happened.
        with blame("STORE-1"):
            version = self.steps.put(record)
        self.model.setdefault(record["id"], []).append(record)
        expected = len(self.model[record["id"]])
        if version != expected:
            self._fail("STORE-1", f"put of {what} {record['id']} reported version {version!r}, "
                       f"expected {expected} (versions are numbered from 1 in write order)")

    # -- rules -----------------------------------------------------------------------

    @initialize()
    def fresh_engine(self) -> None:
        """A reset engine and clock, so a failing run replays identically."""
        restart = getattr(self.clock, "reset", None)
        if callable(restart):
            restart()
        self.engine.call("reset")

    @precondition(lambda self: len(self.model) < 8)
    @rule(kind=st.sampled_from(_TYPES), body=st.sampled_from(_BODIES),
          tags=st.lists(st.sampled_from(_TAGS), max_size=2, unique=True),
          later=st.integers(1, 90_000))
    def put_new(self, kind: str, body: str, tags: list[str], later: int) -> None:
        """A new record, born at a distinct later instant."""
        self.clock.advance(ms=later)
        record = self.steps.new(body, kind, tags=sorted(tags))
        self._put(record, f"new {kind}")

    def _active(self, data: st.DataObject) -> str:
        live = sorted(rid for rid, v in self.model.items() if v[-1]["state"] == "active")
        return data.draw(st.sampled_from(live), label="active record")

    @precondition(lambda self: any(v[-1]["state"] == "active" for v in self.model.values()))
    @rule(data=st.data(), confidence=st.sampled_from(_CONFIDENCES),
          tags=st.lists(st.sampled_from(_TAGS), max_size=3, unique=True))
    def put_version(self, data: st.DataObject, confidence: str, tags: list[str]) -> None:
        """A new version of an active record: its confidence and tags move."""
        rid = self._active(data)
        now = self.clock.advance(seconds=1)
        self._put(build.evolve(self._latest(rid), now, confidence=confidence,
                               tags=sorted(tags)), "a new version of")

    @precondition(lambda self: any(v[-1]["state"] == "active" for v in self.model.values()))
    @rule(data=st.data())
    def put_archived(self, data: st.DataObject) -> None:
        """An archived version of an active record (written through put, as a store sees
        every lifecycle change)."""
        rid = self._active(data)
        now = self.clock.advance(seconds=1)
        self._put(build.evolve(self._latest(rid), now, state="archived",
                               state_reason="no longer relevant"), "an archived version of")

    @precondition(lambda self: self.judges("STORE-11") and bool(self.model))
    @rule(data=st.data())
    def put_invalid(self, data: st.DataObject) -> None:
        """An invalid record (new, or a new version of a stored one) is refused."""
        rid = data.draw(st.sampled_from(sorted(self.model)), label="stored record")
        bad = bad_versions(self.steps, self._latest(rid))
        what = data.draw(st.sampled_from(sorted(bad)), label="what is wrong")
        expect_rejected(self.engine, "put", "record", "STORE-11",
                        f"put of a record with {what}", record=bad[what])

    @precondition(lambda self: self.judges("STORE-3") and bool(self.model))
    @rule(data=st.data())
    def get(self, data: st.DataObject) -> None:
        """get answers the latest version written."""
        rid = data.draw(st.sampled_from(sorted(self.model)), label="record")
        with blame("STORE-3"):
            got = self.engine.call("get", id=rid)["record"]
        if canon(got) != canon(self._latest(rid)):
            self._fail("STORE-3", f"get({rid}) returned {shorten(got)}, not the latest of its "
                       f"{len(self.model[rid])} versions")

    @rule(seed=st.integers(0, 1_000))
    def get_unknown(self, seed: int) -> None:
        """get and history of an id never written are not found."""
        if not self.judges("STORE-4"):
            return  # kept as a rule, so that some rule can always run
        ghost = fresh_id(f"store-machine-{seed}")
        for op in ("get", "history"):
            result, error = attempt(self.engine, op, id=ghost)
            if error is None or error.code != "not-found":
                got = f"succeeded: {shorten(result)}" if error is None else (
                    f"failed with {error.code!r}: {error}")
                self._fail("STORE-4", f"{op}(id={ghost!r}) of an id never stored should fail "
                           f"with 'not-found' but {got}")

    @precondition(lambda self: self.judges("STORE-2", "STORE-6") and bool(self.model))
    @rule(data=st.data())
    def history(self, data: st.DataObject) -> None:
        """history answers every version written, oldest first."""
        rid = data.draw(st.sampled_from(sorted(self.model)), label="record")
        self._check_history(rid)

    @precondition(lambda self: self.judges("STORE-5"))
    @rule(state=st.sampled_from(_FILTER_STATES),
          kind=st.sampled_from((None, *_TYPES)), tag=st.sampled_from((None, *_TAGS)))
    def list_records(self, state: str | None, kind: str | None, tag: str | None) -> None:
        """list applies every given filter to the latest versions, ordered by id."""
        filters = {name: value for name, value in
                   (("state", state), ("type", kind), ("tag", tag)) if value is not None}
        want = [self._latest(rid) for rid in sorted(self.model)
                if (state is None or self._latest(rid)["state"] == state)
                and (kind is None or self._latest(rid)["type"] == kind)
                and (tag is None or tag in self._latest(rid)["tags"])]
        with blame("STORE-5"):
            got = self.engine.call("list", **filters)["records"]
        if [canon(r) for r in got] != [canon(r) for r in want]:
            self._fail("STORE-5", f"list({filters}) returned {[r.get('id') for r in got]}, "
                       f"expected the latest versions of {[r['id'] for r in want]} in id order")

    # -- invariants ------------------------------------------------------------------

    def _check_history(self, rid: str) -> None:
        # Which of STORE-2 and STORE-6 a refused history breaks: the one judged.
        with blame("STORE-6" if self.judges("STORE-6") else "STORE-2"):
            versions = self.engine.call("history", id=rid)["records"]
        got = [canon(v) for v in versions]
        want = [canon(v) for v in self.model[rid]]
        if len(got) < len(want):
            self._fail("STORE-6", f"the history of {rid} lost versions: it has {len(got)} of "
                       f"the {len(want)} written")
        elif got != want:
            self._fail("STORE-2", f"the history of {rid} is not its {len(want)} versions as "
                       f"written, oldest first (it has {len(got)}, changed, reordered or extra)")

    @invariant()
    def store_matches_model(self) -> None:
        """iterate shows every id once, at its latest version, in id order, and history
        every version written (each part only when its requirement is judged)."""
        if self.judges("STORE-5", "STORE-6"):
            with blame("STORE-5" if self.judges("STORE-5") else "STORE-6"):
                shown = self.engine.call("iterate")["records"]
            ids = [r.get("id") for r in shown]
            lost = sorted(set(self.model) - set(ids))
            if lost:
                self._fail("STORE-6", f"iterate no longer shows {lost}")
            if ids != sorted(self.model):
                self._fail("STORE-5", f"iterate returned ids {ids}, expected every stored id "
                           f"once, in order: {sorted(self.model)}")
            for record in shown:
                if (record.get("id") in self.model
                        and canon(record) != canon(self._latest(record["id"]))):
                    self._fail("STORE-5", f"iterate returned a version of {record['id']} that "
                               "is not its latest")
        if self.judges("STORE-2", "STORE-6"):
            for rid in sorted(self.model):
                self._check_history(rid)
