"""Deterministic time for the kit: engines never read their own clock (PROTO-5)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from memspec._encoding import timestamp_from_datetime

__all__ = ["EPOCH", "KitClock"]

#: Where every test's clock starts.
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


class KitClock:
    """A manual clock handing out canonical timestamps (``YYYY-MM-DDTHH:MM:SS.mmmZ``)."""

    def __init__(self, start: datetime = EPOCH) -> None:
        self._start = start
        self._now = start

    def now(self) -> str:
        """The current time, as a canonical timestamp."""
        return timestamp_from_datetime(self._now)

    def advance(
        self, days: float = 0, hours: float = 0, seconds: float = 0, ms: int = 0
    ) -> str:
        """Move the clock forward and return the new current time."""
        step = timedelta(days=days, hours=hours, seconds=seconds, milliseconds=ms)
        if step < timedelta(0):
            raise ValueError("the kit clock never runs backwards")
        self._now += step
        return self.now()

    def at(self, offset_days: float) -> str:
        """The time ``offset_days`` after the clock's start (the clock does not move)."""
        return timestamp_from_datetime(self._start + timedelta(days=offset_days))

    def reset(self) -> None:
        """Back to the start."""
        self._now = self._start
