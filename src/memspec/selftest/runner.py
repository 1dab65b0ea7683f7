"""Run the conformance kit against every faulty engine and the reference engine.

Each run is a separate ``python -m pytest --pyargs memspec.conformance ...``
with ``--memspec-report``: in process (``--memspec-engine=memspec.selftest.
engines:faulty.<name>``) or as a process (``--memspec-engine-cmd="python -m
memspec.selftest.proxy --fault NAME"``). A fault is *caught* when the kit
reports its own requirement failed, by a test the reference engine passes in
the same mode. Every other requirement the kit reports failing is listed
(``reported``), and those the reference does not fail too, and the fault does not
name as broken too (``also``), are *collateral*.
The reference engine must fail nothing.

With ``claim="narrow"`` (or ``"both"``) each faulty engine is also run claiming only
the narrowest claim that includes its fault's profile (the profile and those it
requires; :func:`memspec.selftest.engines.narrow_claim`). There it is caught when its
requirement fails as above, or is reported ``partial``: the kit says it could not
judge it without another profile, instead of passing it (or ``untestable``, for a
claim-conditional requirement: the narrow engine has no instance of what it ranges over).

Unless ``full`` is set, a fault run is restricted to the kit tests of the
fault's profile and those naming its requirement (selected by the
:mod:`memspec.selftest._select` plugin from one collection of the kit).
"""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from memspec._encoding import timestamp_from_datetime
from memspec.data import requirements
from memspec.report import MalformedReport, Outcome, Report
from memspec.selftest.faults import Fault, all_faults, fault_named
from memspec.selftest.proxy import reference_command

__all__ = [
    "CLAIMS",
    "MODES",
    "FaultRow",
    "ReferenceRow",
    "SelftestError",
    "SelftestResult",
    "check_result",
    "run_selftest",
]

MODES = ("in-process", "process")
#: Claims a fault run can make: everything the reference claims, or the narrowest one.
CLAIMS = ("all", "narrow")
#: Seconds one kit run may take before it is abandoned.
RUN_TIMEOUT = 900.0
#: Per-request timeout for engine processes: generous, so a loaded machine slows a run down
#: instead of turning it into protocol faults.
PROCESS_TIMEOUT = 60
_MESSAGE_LIMIT = 400

#: progress(done, total, label, outcome) after each finished kit run.
Progress = Callable[[int, int, str, str], None]


class SelftestError(Exception):
    """The selftest itself could not run (bad arguments, the kit cannot be collected)."""


@dataclass(frozen=True)
class FaultRow:
    """What the kit made of one faulty engine in one mode."""

    fault: str
    profile: str
    requirement: str
    description: str
    mode: str
    caught: bool
    reported: tuple[str, ...]
    collateral: tuple[str, ...]
    errored: tuple[str, ...]
    message: str
    seconds: float
    #: ``all`` (the reference's claim) or ``narrow`` (the fault's profile and its requires).
    claim: str = "all"

    def to_json(self) -> dict[str, Any]:
        """The row as in schemas/selftest.json."""
        return {"fault": self.fault, "profile": self.profile, "requirement": self.requirement,
                "description": self.description, "mode": self.mode, "claim": self.claim,
                "caught": self.caught,
                "reported": list(self.reported), "collateral": list(self.collateral),
                "errored": list(self.errored), "message": self.message,
                "seconds": round(self.seconds, 2)}


@dataclass(frozen=True)
class ReferenceRow:
    """What the kit made of the reference engine in one mode: it must fail nothing."""

    mode: str
    passed: bool
    failed: tuple[str, ...]
    errored: tuple[str, ...]
    verdict: str
    message: str
    seconds: float

    def to_json(self) -> dict[str, Any]:
        """The row as in schemas/selftest.json."""
        return {"engine": "reference", "mode": self.mode, "passed": self.passed,
                "failed": list(self.failed), "errored": list(self.errored),
                "verdict": self.verdict, "message": self.message,
                "seconds": round(self.seconds, 2)}


@dataclass(frozen=True)
class SelftestResult:
    """Every fault row and reference row of one selftest."""

    faults: tuple[FaultRow, ...]
    references: tuple[ReferenceRow, ...]
    modes: tuple[str, ...]
    full: bool
    started_at: str
    finished_at: str

    @property
    def ok(self) -> bool:
        """Every fault caught on its own requirement and the reference passing everything."""
        return all(r.caught for r in self.faults) and all(r.passed for r in self.references)

    def summary(self) -> dict[str, Any]:
        """Counts for people and machines."""
        caught = sum(r.caught for r in self.faults)
        return {"faults": len({r.fault for r in self.faults}), "runs": len(self.faults),
                "caught": caught, "missed": len(self.faults) - caught,
                "with_collateral": sum(bool(r.collateral) for r in self.faults),
                "reference_passed": all(r.passed for r in self.references),
                "ok": self.ok}

    def to_json(self) -> dict[str, Any]:
        """The result as in schemas/selftest.json."""
        return {"selftest_version": 1, "modes": list(self.modes), "full": self.full,
                "started_at": self.started_at, "finished_at": self.finished_at,
                "faults": [r.to_json() for r in self.faults],
                "references": [r.to_json() for r in self.references],
                "summary": self.summary()}


def check_result(document: Any) -> list[str]:
    """Problems of ``document`` under schemas/selftest.json (empty when it is valid)."""
    from memspec._schemas import iter_errors

    return [f"{where or '/'}: {message}" for where, message in iter_errors(document, "selftest")]


# -- one kit run -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Job:
    label: str
    mode: str
    fault: Fault | None
    narrow: bool = False


@dataclass(frozen=True)
class _Outcome:
    job: _Job
    report: Report | None
    problem: str
    seconds: float


def _now() -> str:
    return timestamp_from_datetime(datetime.now(UTC))


def _engine_option(job: _Job) -> str:
    if job.mode == "in-process":
        if job.fault is None:
            return "--memspec-engine=reference"
        from memspec.selftest.engines import factory_spec

        return f"--memspec-engine={factory_spec(job.fault.name, narrowed=job.narrow)}"
    if job.fault is None:
        command = reference_command()
    else:
        command = [sys.executable, "-m", "memspec.selftest.proxy", "--fault", job.fault.name,
                   *(["--narrow"] if job.narrow else [])]
    return "--memspec-engine-cmd=" + shlex.join(command)



class _Children:
    """The kit runs in flight, so an interrupted selftest can stop them (and their engines)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.running: set[subprocess.Popen[bytes]] = set()
        self.stopping = False

    def start(self, command: list[str], cwd: Path, out: IO[bytes]) -> subprocess.Popen[bytes]:
        with self.lock:
            if self.stopping:
                raise SelftestError("the selftest was interrupted")
            proc = subprocess.Popen(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                    env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
                                    start_new_session=(os.name == "posix"))
            self.running.add(proc)
            return proc

    def done(self, proc: subprocess.Popen[bytes]) -> None:
        with self.lock:
            self.running.discard(proc)

    def stop_all(self) -> None:
        with self.lock:
            self.stopping = True
            procs = list(self.running)
        for proc in procs:
            _kill(proc)


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """Stop one kit run and everything it started (its own process group)."""
    if proc.poll() is not None:
        return
    try:
        if os.name == "posix":
            os.killpg(proc.pid, signal.SIGKILL)
        else:  # pragma: no cover - the selftest is POSIX-first
            proc.kill()
    except (ProcessLookupError, PermissionError):
        proc.kill()
    proc.wait()


def _pytest(children: _Children, args: Sequence[str], cwd: Path, log: Path,
            timeout: float) -> str:
    """Run pytest; return "" or a one-line problem."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
               "-p", "memspec.selftest._select", *args]
    with log.open("wb") as out:
        try:
            proc = children.start(command, cwd, out)
        except OSError as exc:
            return f"cannot run pytest: {exc}"
        try:
            code = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            return f"the kit run took longer than {timeout:g}s and was stopped"
        finally:
            children.done(proc)
    if code not in (0, 1):
        tail = log.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-3:]
        return f"pytest exited with {code}: " + " | ".join(tail)
    return ""


def _run(children: _Children, job: _Job, work: Path, targets: Sequence[str],
         only: Path | None) -> _Outcome:
    if not targets:
        assert job.fault is not None
        return _Outcome(job, None, f"the kit has no test of {job.fault.requirement} or of "
                                   f"profile {job.fault.profile}", 0.0)
    slug = f"{job.label}.{job.mode}{'.narrow' if job.narrow else ''}".replace("/", "_")
    report_path = work / f"{slug}.report.json"
    args = [*targets, _engine_option(job), f"--memspec-report={report_path}"]
    if job.mode == "process":
        args.append(f"--memspec-timeout={PROCESS_TIMEOUT}")
    if only is not None:
        args.append(f"--selftest-only={only}")
    started = time.monotonic()
    problem = _pytest(children, args, work, work / f"{slug}.log", RUN_TIMEOUT)
    report = None
    if report_path.is_file():
        try:
            report = Report.load(report_path)
        except MalformedReport as exc:
            problem = problem or f"the kit's report is unreadable: {exc}"
    elif not problem:
        problem = "the kit wrote no report"
    return _Outcome(job, report, problem, time.monotonic() - started)


# -- selection ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _IndexEntry:
    """One collected kit test, as ``--selftest-index`` writes it (memspec.selftest._select)."""

    id: str
    module: str
    requirements: frozenset[str]
    profiles: frozenset[str]


def _index(children: _Children, work: Path) -> list[_IndexEntry]:
    path = work / "index.json"
    problem = _pytest(children, ["--pyargs", "memspec.conformance", "--collect-only",
                       "--memspec-engine=reference", f"--selftest-index={path}"],
                      work, work / "index.log", RUN_TIMEOUT)
    if problem or not path.is_file():
        raise SelftestError(f"cannot collect the conformance kit: {problem or 'no index'}")
    try:
        return [_IndexEntry(str(e["id"]), str(e["module"]), frozenset(e["requirements"]),
                            frozenset(e["profiles"]))
                for e in json.loads(path.read_text(encoding="utf-8"))]
    except (ValueError, TypeError, KeyError) as exc:
        raise SelftestError(f"the kit's test index is malformed: {exc!r}") from None


def _selection(fault: Fault, index: Iterable[_IndexEntry],
               scope: str) -> tuple[list[str], list[str]]:
    """(kit ids, suite modules) of the tests a run of ``fault`` needs."""
    chosen = [e for e in index if fault.requirement in e.requirements
              or (scope == "profile" and fault.profile in e.profiles)]
    modules = sorted({e.module for e in chosen})
    return [e.id for e in chosen], modules


# -- folding reports into rows -----------------------------------------------------------


def _failing_tests(report: Report) -> set[str]:
    return {t.nodeid for e in report.requirements for t in e.tests
            if t.outcome == Outcome.FAILED}


def _ids(report: Report | None, outcome: Outcome) -> tuple[str, ...]:
    return report.ids(outcome) if report is not None else ()


def _short(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _MESSAGE_LIMIT else line[: _MESSAGE_LIMIT - 3] + "..."


def _fault_row(outcome: _Outcome, reference: _Outcome | None) -> FaultRow:
    fault = outcome.job.fault
    assert fault is not None
    report = outcome.report
    reported = _ids(report, Outcome.FAILED)
    errored = _ids(report, Outcome.ERRORED)
    base_tests = _failing_tests(reference.report) if reference and reference.report else set()
    base_reqs = set(_ids(reference.report, Outcome.FAILED)) if reference else set()
    own = report.requirement(fault.requirement) if report is not None else None
    catching = [t for t in (own.tests if own else ()) if t.outcome == Outcome.FAILED]
    fresh = [t for t in catching if t.nodeid not in base_tests]
    # Under a narrow claim, "not fully judged" is an honest answer too (issue 20), and so is
    # "untestable" for a requirement that reaches only what the engine claims (SPEC 19.2).
    honest = {Outcome.PARTIAL}
    if requirements()[fault.requirement].claim_conditional is not None:
        honest.add(Outcome.UNTESTABLE)
    unjudged = (outcome.job.narrow and own is not None and own.outcome in honest
                and not fresh)
    if outcome.problem and report is None:
        message = outcome.problem
    elif fresh:
        message = f"{fresh[0].nodeid}: {fresh[0].message or 'failed'}"
    elif unjudged:
        message = (f"{fault.requirement} reported {own.outcome.value if own else 'partial'}: "
                   f"{(own.note if own else None) or ''}")
    elif catching:
        message = (f"only tests the reference engine fails too report {fault.requirement} "
                   f"({catching[0].nodeid})")
    elif report is not None and report.engine.fault:
        message = f"engine fault: {report.engine.fault}"
    else:
        also = ", ".join(reported) or "nothing"
        message = (f"the kit did not report {fault.requirement} failed "
                   f"(it reported {also}{'; errored ' + ', '.join(errored) if errored else ''})")
    return FaultRow(
        fault=fault.name, profile=fault.profile, requirement=fault.requirement,
        description=fault.description, mode=outcome.job.mode,
        caught=bool(fresh) or unjudged, claim="narrow" if outcome.job.narrow else "all",
        reported=reported,
        collateral=tuple(r for r in reported if r != fault.requirement and r not in base_reqs
                         and r not in fault.also),
        errored=errored, message=_short(message), seconds=outcome.seconds)


def _reference_row(outcome: _Outcome) -> ReferenceRow:
    report = outcome.report
    failed, errored = _ids(report, Outcome.FAILED), _ids(report, Outcome.ERRORED)
    verdict = report.verdict.value if report else "errored"
    passed = report is not None and not failed and not errored and not outcome.problem
    if passed:
        message = "passes every test of the kit"
    elif report is None:
        message = outcome.problem
    else:
        bad = [t for e in report.with_outcome(Outcome.FAILED, Outcome.ERRORED) for t in e.tests
               if t.outcome in (Outcome.FAILED, Outcome.ERRORED)]
        message = (f"{bad[0].nodeid}: {bad[0].message or bad[0].outcome.value}" if bad
                   else outcome.problem or f"verdict {verdict}")
    return ReferenceRow(mode=outcome.job.mode, passed=passed, failed=failed, errored=errored,
                        verdict=verdict, message=_short(message), seconds=outcome.seconds)


# -- the whole selftest ------------------------------------------------------------------


def _resolve(faults: Iterable[Fault | str] | None) -> list[Fault]:
    if faults is None:
        return list(all_faults())
    return [f if isinstance(f, Fault) else fault_named(f) for f in faults]


def run_selftest(
    faults: Iterable[Fault | str] | None = None,
    modes: Sequence[str] = MODES,
    jobs: int = 2,
    full: bool = False,
    progress: Progress | None = None,
    *,
    scope: str = "profile",
    claim: str = "all",
) -> SelftestResult:
    """Run the kit against ``faults`` (default: all) and the reference, in ``modes``.

    Without ``full`` a fault run is restricted to the kit tests naming the fault's
    requirement and (``scope="profile"``, the default) the tests of its profile;
    ``scope="requirement"`` is quicker and shows less collateral. ``claim`` is ``all``
    (the faulty engine claims what the reference claims), ``narrow`` (only the fault's
    profile and those it requires) or ``both`` (two runs per fault and mode).
    """
    chosen = _resolve(faults)
    modes = tuple(dict.fromkeys(modes))
    unknown = [m for m in modes if m not in MODES]
    if unknown or not modes:
        raise SelftestError(f"modes must be among {list(MODES)}, not {list(modes)}")
    if jobs < 1:
        raise SelftestError("jobs must be at least 1")
    if scope not in ("profile", "requirement"):
        raise SelftestError(f"scope must be profile or requirement, not {scope!r}")
    if claim not in (*CLAIMS, "both"):
        raise SelftestError(f"claim must be all, narrow or both, not {claim!r}")
    narrows = {"all": (False,), "narrow": (True,), "both": (False, True)}[claim]
    started = _now()
    with tempfile.TemporaryDirectory(prefix="memspec-selftest-") as tmp:
        work = Path(tmp)
        children = _Children()
        index = None if full else _index(children, work)
        plan: list[tuple[_Job, list[str], Path | None]] = [
            (_Job("reference", mode, None), ["--pyargs", "memspec.conformance"], None)
            for mode in modes]
        for fault in chosen:
            targets, only = ["--pyargs", "memspec.conformance"], None
            if index is not None:
                ids, modules = _selection(fault, index, scope)
                if not ids:  # nothing names the requirement: fall back to its profile
                    ids, modules = _selection(fault, index, "profile")
                only = work / f"{fault.name}.only.json"
                only.write_text(json.dumps(ids), encoding="utf-8")
                targets = (["--pyargs", *(f"memspec.conformance.suites.{m}" for m in modules)]
                           if modules else [])
            plan += [(_Job(fault.name, mode, fault, narrow), targets, only)
                     for narrow in narrows for mode in modes]
        outcomes = _execute(children, plan, work, jobs, progress)
    references = {o.job.mode: o for o in outcomes if o.job.fault is None}
    rows = [_fault_row(o, references.get(o.job.mode)) for o in outcomes if o.job.fault]
    order = {f.name: i for i, f in enumerate(chosen)}
    rows.sort(key=lambda r: (order[r.fault], r.claim != "all", modes.index(r.mode)))
    return SelftestResult(
        faults=tuple(rows),
        references=tuple(_reference_row(references[m]) for m in modes if m in references),
        modes=modes, full=full, started_at=started, finished_at=_now())


def _execute(children: _Children, plan: list[tuple[_Job, list[str], Path | None]],
             work: Path, jobs: int, progress: Progress | None) -> list[_Outcome]:
    outcomes: list[_Outcome] = []
    pool = ThreadPoolExecutor(max_workers=jobs)
    try:
        futures = [pool.submit(_run, children, job, work, targets, only)
                   for job, targets, only in plan]
        for future in as_completed(futures):
            outcome = future.result()
            outcomes.append(outcome)
            if progress is not None:
                narrow = ", narrow claim" if outcome.job.narrow else ""
                progress(len(outcomes), len(plan),
                         f"{outcome.job.label} ({outcome.job.mode}{narrow})",
                         _verdict_word(outcome))
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        children.stop_all()
        raise
    finally:
        pool.shutdown(wait=True)
    return outcomes


def _verdict_word(outcome: _Outcome) -> str:
    if outcome.report is None:
        return f"no report: {outcome.problem}"
    fault = outcome.job.fault
    if fault is None:
        failed = _ids(outcome.report, Outcome.FAILED) + _ids(outcome.report, Outcome.ERRORED)
        return "passes everything" if not failed else f"FAILS {', '.join(failed)}"
    own = outcome.report.requirement(fault.requirement)
    return f"{fault.requirement} {own.outcome.value if own else 'not reported'}"
