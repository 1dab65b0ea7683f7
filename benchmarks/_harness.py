"""Timing, results and reporting shared by every benchmark.

Every comparison is measured *paired*: the subject and its baseline run back
to back in each repeat (alternating which goes first), each figure is the
median over the repeats, and the ratio is the median of the per-repeat
ratios. On a shared, loaded machine this cancels most of the drift that
absolute timings would suffer. Nothing here asserts a timing: a goal is
evaluated and recorded as met or not, and the run goes on.
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = [
    "Figure",
    "Goal",
    "Paired",
    "Result",
    "Sizes",
    "Skip",
    "chunks",
    "paired",
    "paired_chunks",
    "throughput",
    "time_once",
]

_T = TypeVar("_T")


class Skip(Exception):
    """Raised by a benchmark that cannot run here (e.g. an optional package is missing)."""


@dataclass(frozen=True)
class Sizes:
    """How big each benchmark runs; one instance per mode (full, quick, smoke)."""

    mode: str
    repeats: int
    canonical_records: int
    jcs_records: int
    fingerprint_records: int
    signed_records: int
    schema_records: int
    store_puts: int
    recall_sizes: tuple[int, int]
    recall_queries: int
    consolidation_sizes: tuple[int, int]
    consolidation_budget_s: float
    #: Passes per size (one pass swings ~40%); the two target sizes are interleaved and the
    #: growth is the median of the paired ratios.
    consolidation_repeats: int
    suite_repeats: int
    suite_targets: tuple[str, ...]


@dataclass(frozen=True)
class Figure:
    """One measured figure: what it is, its value and its unit."""

    label: str
    value: float
    unit: str

    def to_json(self) -> dict[str, Any]:
        return {"label": self.label, "value": _round(self.value), "unit": self.unit}


@dataclass(frozen=True)
class Goal:
    """A goal on the ratio: ``ratio <op> target``."""

    op: str
    target: float
    meaning: str

    def met(self, ratio: float) -> bool:
        if self.op == ">=":
            return ratio >= self.target
        if self.op == "<=":
            return ratio <= self.target
        if self.op == "<":
            return ratio < self.target
        raise ValueError(f"unknown goal operator {self.op!r}")

    @property
    def text(self) -> str:
        return f"ratio {self.op} {self.target:g}"

    def gap(self, ratio: float) -> str:
        if self.op == ">=":
            short = (self.target - ratio) / self.target * 100
            return f"ratio {ratio:.3f} is {short:.0f}% below the goal of {self.target:g}"
        if not self.target:
            return f"ratio {ratio:.3f} is above the goal of {self.target:g}"
        over = (ratio - self.target) / self.target * 100
        return f"ratio {ratio:.3f} is {over:.0f}% above the goal of {self.target:g}"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "target": self.target, "text": self.text, "meaning": self.meaning}


@dataclass
class Result:
    """One benchmark entry of results.json."""

    name: str
    compares: str
    goal: Goal
    subject: Figure | None = None
    baseline: Figure | None = None
    ratio: float | None = None
    status: str = "met"
    gap: str | None = None
    cause: str | None = None
    reason: str | None = None
    size: dict[str, int] = field(default_factory=dict)
    repeats: int = 0
    pairs: int = 0
    samples: dict[str, list[float]] = field(default_factory=dict)
    extra: list[Figure] = field(default_factory=list)
    notes: str | None = None
    seconds: float = 0.0

    def judge(self, cause_if_unmet: str) -> Result:
        """Set status (and gap and cause when the goal is missed) from the ratio."""
        assert self.ratio is not None
        if self.goal.met(self.ratio):
            self.status, self.gap, self.cause = "met", None, None
        else:
            self.status = "unmet"
            self.gap = self.goal.gap(self.ratio)
            self.cause = cause_if_unmet
        return self

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "name": self.name,
            "compares": self.compares,
            "subject": None if self.subject is None else self.subject.to_json(),
            "baseline": None if self.baseline is None else self.baseline.to_json(),
            "ratio": None if self.ratio is None else _round(self.ratio),
            "goal": self.goal.to_json(),
            "status": self.status,
            "gap": self.gap,
            "cause": self.cause,
            "reason": self.reason,
            "size": dict(self.size),
            "repeats": self.repeats,
            "pairs": self.pairs or self.repeats,
            "samples": {k: [_round(v) for v in vs] for k, vs in self.samples.items()},
            "extra": [f.to_json() for f in self.extra],
            "notes": self.notes,
            "seconds": round(self.seconds, 2),
        }
        return out


def _round(value: float) -> float:
    if value == 0 or not value == value:  # zero or NaN
        return value
    magnitude = abs(value)
    digits = 6 if magnitude < 1 else 4 if magnitude < 1000 else 1
    return round(value, digits)


def time_once(work: Callable[[], object]) -> float:
    """Wall seconds of one call of ``work`` (after a collection, so garbage is not billed)."""
    gc.collect()
    start = time.perf_counter()
    work()
    return time.perf_counter() - start


@dataclass(frozen=True)
class Paired:
    """Per-repeat seconds of a subject and its baseline, run back to back."""

    subject: list[float]
    baseline: list[float]
    #: Per-pair baseline/subject time ratios, when finer than one per repeat.
    pair_ratios: list[float] = field(default_factory=list)

    @classmethod
    def merge(cls, runs: Sequence[Paired]) -> Paired:
        """One Paired holding every repeat and every pair ratio of ``runs``."""
        return cls([t for r in runs for t in r.subject], [t for r in runs for t in r.baseline],
                   [q for r in runs for q in r.pair_ratios])

    @property
    def pairs(self) -> int:
        """How many paired timings the ratio is the median of."""
        return len(self.pair_ratios) or len(self.subject)

    def median_subject(self) -> float:
        return statistics.median(self.subject)

    def median_baseline(self) -> float:
        return statistics.median(self.baseline)

    def ratios(self) -> list[float]:
        """Every per-pair baseline/subject time ratio (the chunk ratios where there are)."""
        if self.pair_ratios:
            return list(self.pair_ratios)
        return [b / s for s, b in zip(self.subject, self.baseline, strict=True)]

    def speed_ratio(self) -> float:
        """Median of per-pair baseline/subject time: subject throughput relative to baseline."""
        return statistics.median(self.ratios())

    def time_ratio(self) -> float:
        """Median of per-pair subject/baseline time (an overhead factor)."""
        if self.pair_ratios:
            return statistics.median(1 / r for r in self.pair_ratios)
        return statistics.median(s / b for s, b in zip(self.subject, self.baseline, strict=True))


def paired(subject: Callable[[], object], baseline: Callable[[], object], repeats: int,
           *, warmup: bool = True) -> Paired:
    """Time ``subject`` and ``baseline`` ``repeats`` times each, alternating which runs first."""
    if warmup:
        subject()
        baseline()
    subject_times: list[float] = []
    baseline_times: list[float] = []
    for index in range(repeats):
        if index % 2 == 0:
            subject_times.append(time_once(subject))
            baseline_times.append(time_once(baseline))
        else:
            baseline_times.append(time_once(baseline))
            subject_times.append(time_once(subject))
    return Paired(subject_times, baseline_times)


def chunks(items: Sequence[_T], size: int) -> list[Sequence[_T]]:
    """``items`` cut into consecutive slices of at most ``size``."""
    return [items[i:i + size] for i in range(0, len(items), max(1, size))]


def paired_chunks(subject: Callable[[Sequence[_T]], object],
                  baseline: Callable[[Sequence[_T]], object],
                  items: Sequence[_T], *, chunk: int, repeats: int,
                  warmup: bool = True) -> Paired:
    """Paired timing over ``items`` cut into chunks, subject and baseline alternating per chunk.

    Short paired slices (tens of milliseconds each) see the same machine load,
    so the per-chunk ratios are far steadier than two long runs. The figures
    are per-repeat totals (median over repeats); the ratio is the median of
    every per-chunk ratio of every repeat.
    """
    pieces = chunks(items, chunk)
    if warmup:
        subject(pieces[0])
        baseline(pieces[0])
    totals_s: list[float] = []
    totals_b: list[float] = []
    ratios: list[float] = []
    for repeat in range(repeats):
        gc.collect()
        sum_s = sum_b = 0.0
        for index, piece in enumerate(pieces):
            first, second = ((subject, baseline) if (repeat + index) % 2 == 0
                             else (baseline, subject))
            start = time.perf_counter()
            first(piece)
            middle = time.perf_counter()
            second(piece)
            end = time.perf_counter()
            t_first, t_second = middle - start, end - middle
            t_s, t_b = (t_first, t_second) if first is subject else (t_second, t_first)
            sum_s += t_s
            sum_b += t_b
            ratios.append(t_b / t_s)
        totals_s.append(sum_s)
        totals_b.append(sum_b)
    return Paired(totals_s, totals_b, ratios)


def throughput(run: Paired, count: int, unit: str, *, name: str, compares: str, goal: Goal,
               subject: str, baseline: str, size: dict[str, int] | None = None,
               notes: str | None = None) -> Result:
    """The entry for a paired throughput comparison: ``count`` items through each side.

    Figures are ``count`` over the median per-repeat time of each side, the ratio is the
    paired median (:meth:`Paired.speed_ratio`), and the raw samples are kept.
    """
    return Result(
        name=name, compares=compares, goal=goal,
        subject=Figure(subject, count / run.median_subject(), unit),
        baseline=Figure(baseline, count / run.median_baseline(), unit),
        ratio=run.speed_ratio(), size=dict(size) if size is not None else {"records": count},
        repeats=len(run.subject), pairs=run.pairs,
        samples={"subject_s": run.subject, "baseline_s": run.baseline}, notes=notes,
    )
