"""The kit's shared test driver: the small steps every behaviour suite takes.

A :class:`Driver` holds an engine session and a clock and offers each step once:
making records with distinct provenance refs, putting them, applying proposals,
reading versions back, running passes and recall. Everything goes through the
engine interface (``call(op, **args)``, wire JSON in and out), so the same driver
serves the kit's suites, in process or over the process protocol, and an engine
author's own tests (it is exported by :mod:`memspec.testing`)::

    from memspec.testing import Driver, KitClock, connect

    def test_supersede_keeps_history():
        driver = Driver(connect(MyEngine()), KitClock())
        old = driver.create("the kettle is in the left cupboard")
        driver.supersede(old, "the kettle is in the right cupboard")
        assert [v["state"] for v in driver.history(old["id"])] == ["active", "superseded"]

Where suites genuinely differ (the provenance a record carries, how far the clock
moves before a birth or a write) the difference is a constructor argument; a
suite takes the kit's ``driver`` fixture and :meth:`Driver.configured` it.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memspec.conformance import _builders as build
from memspec.conformance._clock import KitClock
from memspec.conformance._session import EngineSession

__all__ = ["DEFAULT_BODY", "RECALL_BUDGET", "Driver"]

#: The body a record gets when a step does not care what it says.
DEFAULT_BODY = "the kettle is in the left cupboard"
#: A recall token budget no test's records come near: everything eligible fits.
RECALL_BUDGET = 100_000


@dataclass(frozen=True)
class Driver:
    """An engine session, a clock and a serial counter, with the steps tests share.

    ``ref_prefix`` and ``provenance_kind`` make every record's provenance
    ``{"kind": provenance_kind, "ref": f"{ref_prefix}-{n}", "agent": None}`` with ``n``
    counting from 1, so two records with the same body still have distinct ids.
    ``birth_step`` is how many seconds the clock moves before each record is born
    (0: records are born at the current time); ``write_step`` how many it moves before
    each write that takes a ``now`` and is not given one (apply, redact, touch, ingest,
    a new version).
    """

    engine: EngineSession
    clock: KitClock
    ref_prefix: str = "kit"
    provenance_kind: str = "observation"
    birth_step: float = 0.0
    write_step: float = 1.0
    # Why a counter object: the driver is frozen, the count of records it made is not.
    _serial: Iterator[int] = field(default_factory=lambda: itertools.count(1), init=False,
                                   repr=False, compare=False)

    def configured(self, **changes: Any) -> Driver:
        """The same engine and clock with other settings (and a fresh serial counter)."""
        return dataclasses.replace(self, **changes)

    # -- records -------------------------------------------------------------------------

    def provenance(self) -> dict[str, Any]:
        """The next distinct provenance (``ref_prefix-1``, ``ref_prefix-2``, ...)."""
        return {"kind": self.provenance_kind, "ref": f"{self.ref_prefix}-{next(self._serial)}",
                "agent": None}

    def new(self, body: str = DEFAULT_BODY, kind: str = "fact", *, at: str | None = None,
            **fields: Any) -> dict[str, Any]:
        """A newborn record (not stored), born at ``at`` or after ``birth_step`` seconds.

        An episode gets ``occurred_at`` = the current time unless ``fields`` names one
        (``occurred_at=None`` builds an episode without it). ``fields`` are
        :func:`memspec.conformance._builders.record`'s keyword arguments.
        """
        if kind == "episode" and "occurred_at" not in fields:
            fields["occurred_at"] = self.clock.now()
        born = at if at is not None else self.clock.advance(seconds=self.birth_step)
        return build.record(kind, body, created_at=born, provenance=self.provenance(),
                            **fields)

    def put(self, body: str = DEFAULT_BODY, kind: str = "fact", *, at: str | None = None,
            **fields: Any) -> dict[str, Any]:
        """:meth:`new`, stored with ``put``; returns the record."""
        record = self.new(body, kind, at=at, **fields)
        self.engine.call("put", record=record)
        return record

    def put_version(self, record: Mapping[str, Any], now: str | None = None,
                    **changes: Any) -> dict[str, Any]:
        """A new version of ``record`` with ``changes`` (``updated_at = now``), stored with
        ``put``; returns the version."""
        version = build.evolve(record, now or self._write_time(), **changes)
        self.engine.call("put", record=version)
        return version

    # -- proposals and lifecycle writes --------------------------------------------------

    def apply(self, proposal: Mapping[str, Any], now: str | None = None
              ) -> list[dict[str, Any]]:
        """Apply one proposal; returns the versions the engine wrote."""
        written: list[dict[str, Any]] = self.engine.call(
            "apply_proposal", proposal=dict(proposal), now=now or self._write_time())["written"]
        return written

    def create(self, body: str = DEFAULT_BODY, kind: str = "fact", **fields: Any
               ) -> dict[str, Any]:
        """:meth:`new`, written through a ``create`` proposal; returns the record."""
        record = self.new(body, kind, **fields)
        self.apply(build.proposal("create", record))
        return record

    def supersede(self, old: Mapping[str, Any], body: str = "the kettle moved to the right",
                  reason: str = "the kettle moved", now: str | None = None
                  ) -> dict[str, Any]:
        """A successor of ``old`` (born at ``now`` if given), applied as a supersede proposal;
        returns the successor."""
        successor = self.new(body, at=now, supersedes=old["id"])
        self.apply(build.proposal("supersede", successor, target_id=old["id"], reason=reason),
                   now)
        return successor

    def transition(self, a: Mapping[str, Any], b: Mapping[str, Any],
                   reason: str = "they disagree", now: str | None = None) -> None:
        """Apply a transition proposal between records ``a`` and ``b``."""
        self.apply(build.proposal("transition", target_id=a["id"], other_id=b["id"],
                                  reason=reason), now)

    def pair(self, reason: str = "they disagree") -> tuple[dict[str, Any], dict[str, Any]]:
        """Two records created and put in transition with each other; returns both."""
        a = self.create("the staging database is Postgres")
        b = self.create("the staging database is not Postgres")
        self.transition(a, b, reason)
        return a, b

    def archive(self, rid: str, reason: str = "no longer relevant", now: str | None = None
                ) -> None:
        """Apply an archive proposal for record ``rid``."""
        self.apply(build.proposal("archive", target_id=rid, reason=reason), now)

    def redact(self, rid: str, reason: str = "a secret was remembered by mistake",
               now: str | None = None) -> dict[str, Any]:
        """Redact record ``rid``; returns the tombstone version the engine wrote."""
        record: dict[str, Any] = self.engine.call(
            "redact", id=rid, reason=reason, now=now or self._write_time())["record"]
        return record

    def touch(self, rid: str, now: str | None = None) -> int:
        """Touch record ``rid``; returns its access count."""
        count: int = self.engine.call("touch", id=rid, now=now or self._write_time())["count"]
        return count

    def ingest(self, proposals: Sequence[Any], now: str | None = None) -> dict[str, Any]:
        """Run ``ingest`` over ``proposals`` (wire form); returns the ingest report."""
        result: dict[str, Any] = self.engine.call("ingest", proposals=list(proposals),
                                                  now=now or self._write_time())
        return result

    # -- reads ---------------------------------------------------------------------------

    def get(self, rid: str) -> dict[str, Any]:
        """The latest version of record ``rid``."""
        record: dict[str, Any] = self.engine.call("get", id=rid)["record"]
        return record

    def history(self, rid: str) -> list[dict[str, Any]]:
        """Every version of record ``rid``, oldest first."""
        versions: list[dict[str, Any]] = self.engine.call("history", id=rid)["records"]
        return versions

    def iterate(self) -> list[dict[str, Any]]:
        """The latest version of every record, in the engine's order."""
        records: list[dict[str, Any]] = self.engine.call("iterate")["records"]
        return records

    def latest(self) -> dict[str, dict[str, Any]]:
        """The latest version of every record, by id."""
        return {r["id"]: r for r in self.iterate()}

    # -- passes, search and recall -------------------------------------------------------

    def consolidate(self, config: Mapping[str, Any] | None = None, now: str | None = None
                    ) -> dict[str, Any]:
        """Run a consolidation pass (at ``now``, or a day later); returns its report."""
        return self._pass("consolidate", config, now)

    def decay(self, config: Mapping[str, Any] | None = None, now: str | None = None
              ) -> dict[str, Any]:
        """Run a decay pass (at ``now``, or a day later); returns its report."""
        return self._pass("decay", config, now)

    def search(self, query: str, k: int = 20) -> list[tuple[str, float]]:
        """The ``k`` best search candidates for ``query``: (id, score), best first."""
        found = self.engine.call("search", query=query, k=k)["candidates"]
        return [(c["id"], c["score"]) for c in found]

    def recall(self, query: str, budget: int = RECALL_BUDGET, now: str | None = None,
               **flags: bool) -> dict[str, Any]:
        """The recall result for ``query`` at ``now`` (default: the current time)."""
        result: dict[str, Any] = self.engine.call(
            "recall", query=query, budget_tokens=budget, now=now or self.clock.now(), **flags)
        return result

    def entries(self, query: str, budget: int = RECALL_BUDGET, now: str | None = None,
                **flags: bool) -> dict[str, dict[str, Any]]:
        """The recall result's entries for ``query``, by record id."""
        return {e["record"]["id"]: e for e in self.recall(query, budget, now, **flags)["records"]}

    # -- internals -----------------------------------------------------------------------

    def _write_time(self) -> str:
        return self.clock.advance(seconds=self.write_step)

    def _pass(self, operation: str, config: Mapping[str, Any] | None, now: str | None
              ) -> dict[str, Any]:
        args: dict[str, Any] = {"now": now or self.clock.advance(days=1)}
        if config is not None:
            args["config"] = dict(config)
        report: dict[str, Any] = self.engine.call(operation, **args)
        return report
