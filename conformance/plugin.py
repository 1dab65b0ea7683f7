"""pytest plugin of the memspec conformance kit (entry point ``pytest11: memspec``).

Inert unless asked: without ``--memspec-engine`` / ``--memspec-engine-cmd`` it
only registers its options and markers, and refuses (with a usage error) to
run the kit's own suites without an engine. With an engine it loads it, gives
kit tests the ``engine``, ``clock``, ``driver`` and ``keys`` fixtures, reports tests of
unclaimed profiles as *not claimed*, engine protocol faults as *errored* and
failures of SHOULD-level requirements as warnings (xfail-like: shown, never
failing the run), and ends with a per-profile / per-requirement summary and,
with ``--memspec-report``, a JSON report validated against schemas/report.json.

    pytest --pyargs memspec.conformance --memspec-engine=reference

Under pytest-xdist (``-n N``) each worker loads its own engine (its own process
for ``--memspec-engine-cmd``) and runs its share; its reports reach the
controller carrying the kit's outcome, and at the end each worker hands the
controller its collected kit tests and its engine's handshake and fault through
``workeroutput``. Only the controller writes the report and prints the summary,
the same ones a one-process run gives. The controller never loads the engine.
"""

from __future__ import annotations

import importlib.util
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from memspec._display import terminal
from memspec.conformance._outcomes import (
    KitItem,
    Logged,
    load_hypothesis_profile,
    logged_outcome,
    mark_report,
    report_status,
)

if TYPE_CHECKING:
    from collections.abc import Generator

    from memspec.conformance._builders import Keys
    from memspec.conformance._clock import KitClock
    from memspec.conformance._driver import Driver
    from memspec.conformance._session import Connection, EngineSession, EngineState
    from memspec.report import Report

__all__ = ["KIT_RUN", "KitRun", "is_kit_item", "kit_id", "suites_dir"]

KIT_RUN: pytest.StashKey[KitRun] = pytest.StashKey()
#: The keys of the kit's entries in an xdist worker's ``workeroutput``.
WORKER_OUTPUT_KEY = "memspec"
WORKER_USAGE_KEY = "memspec-usage-error"

USAGE = (
    "the memspec conformance suites need an engine to certify: pass "
    "--memspec-engine=NAME (an installed memspec.engines entry point, e.g. reference), "
    "--memspec-engine=module:callable, or --memspec-engine-cmd='COMMAND ARGS' for an engine "
    "speaking the process protocol"
)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memspec", "memspec conformance kit (fg-agent-memory/0.1)")
    group.addoption(
        "--memspec-engine", dest="memspec_engine", metavar="NAME|MODULE:CALLABLE", default=None,
        help="certify an in-process engine: a memspec.engines entry point name or module:callable",
    )
    group.addoption(
        "--memspec-engine-cmd", dest="memspec_engine_cmd", metavar="COMMAND", default=None,
        help="certify an engine process speaking the memspec-engine/1 protocol (shlex-split)",
    )
    group.addoption(
        "--memspec-report", dest="memspec_report", metavar="PATH", default=None,
        help="write the JSON conformance report (validated against schemas/report.json) to PATH",
    )
    group.addoption(
        "--memspec-timeout", dest="memspec_timeout", metavar="SECONDS", type=float, default=10.0,
        help="per-request timeout for process engines (default 10)",
    )
    group.addoption(
        "--memspec-thorough", dest="memspec_thorough", action="store_true", default=False,
        help="run property-based tests with many more examples",
    )
    group.addoption(
        "--memspec-report-channel", dest="memspec_report_channel", metavar="KEYFD,REPORTFD",
        default=None,
        help="hand the report to memspec certify over these inherited pipes (set by certify, "
        "which signs the report itself; see docs/tamper.md)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requirement(*ids): the spec requirement ids a memspec kit test checks"
    )
    config.addinivalue_line(
        "markers", "profile(*names): extra profiles a memspec kit test needs beyond its "
        "requirements' own (e.g. the operation's profile)"
    )
    config.addinivalue_line(
        "markers", "kit_check: a memspec kit test that checks the kit itself, not the engine"
    )
    config.addinivalue_line(
        "markers", "decides(id): of a memspec kit test's requirements, the one a wrong answer "
        "breaks (a vector's decides); the test only exercises the others"
    )
    engine = config.getoption("memspec_engine", None)
    command = config.getoption("memspec_engine_cmd", None)
    if not engine and not command:
        return
    if engine and command:
        raise pytest.UsageError("give --memspec-engine or --memspec-engine-cmd, not both")
    if config.getoption("memspec_timeout") <= 0:
        raise pytest.UsageError("--memspec-timeout must be a positive number of seconds")
    run = KitRun(config)
    config.stash[KIT_RUN] = run
    config.pluginmanager.register(run, "memspec-kit")


@cache
def suites_dir() -> Path | None:
    """The folder holding the kit's suites, wherever the package is installed."""
    spec = importlib.util.find_spec("memspec.conformance.suites")
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations))).resolve()


def is_kit_item(item: pytest.Item) -> bool:
    """Whether ``item`` is one of the kit's own suite tests."""
    root = suites_dir()
    if root is None:
        return False
    try:
        Path(item.path).resolve().relative_to(root)
    except ValueError:
        return False
    return True


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if KIT_RUN in config.stash:
        return
    if any(is_kit_item(item) for item in items):
        raise usage_error(config, _usage_with_engines())


def usage_error(config: pytest.Config, message: str) -> pytest.UsageError:
    """A usage error to raise; an xdist worker also hands it to the controller to show."""
    output = getattr(config, "workeroutput", None)
    if isinstance(output, dict):
        output[WORKER_USAGE_KEY] = message
    if KIT_RUN in config.stash:
        config.stash[KIT_RUN].usage_failed = True
    return pytest.UsageError(message)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    # xdist would otherwise trip over a worker that stopped at collection; a usage error
    # raised on the controller ends the run as it would without xdist.
    output = getattr(node, "workeroutput", None)
    if isinstance(output, dict) and isinstance(output.get(WORKER_USAGE_KEY), str):
        raise usage_error(node.config, output[WORKER_USAGE_KEY])


def _usage_with_engines() -> str:
    try:
        from memspec.conformance._loading import available_engines

        found = ", ".join(sorted(available_engines())) or "none"
    except Exception:  # pragma: no cover - listing is a courtesy
        found = "unknown"
    return f"{USAGE} (installed engines: {found})"


# --------------------------------------------------------------------------- the active kit


def kit_id(item: pytest.Item) -> str | None:
    """The kit's stable id of ``item`` (``suites/test_x.py::name[param]``), None if not a kit
    test."""
    root = suites_dir()
    if root is None or not is_kit_item(item):
        return None
    rel = Path(item.path).resolve().relative_to(root.parent).as_posix()
    _, _, rest = item.nodeid.partition("::")
    return f"{rel}::{rest}" if rest else rel


class KitRun:
    """The kit's hooks and fixtures for one run (registered only when an engine is given)."""

    def __init__(self, config: pytest.Config) -> None:
        from memspec._encoding import timestamp_from_datetime

        self.config = config
        self.engine_spec: str | None = config.getoption("memspec_engine")
        self.command: str | None = config.getoption("memspec_engine_cmd")
        self.timeout: float = config.getoption("memspec_timeout")
        self.report_path: str | None = config.getoption("memspec_report")
        #: The report channel to memspec certify: (one-time key, report pipe), or None.
        self.channel: tuple[bytes, int] | None = None
        self.items: dict[str, KitItem] = {}
        self.results: dict[str, Logged] = {}
        self.deselected: set[str] = set()
        #: What xdist workers handed over (controller only): engine states by worker id,
        #: how many workers did, and anything unreadable.
        self.worker_states: dict[str, EngineState] = {}
        self.workers_done = 0
        self.worker_problems: list[str] = []
        self.report: Report | None = None
        self.report_problem: str | None = None
        self.usage_failed = False
        self._conn: Connection | None = None
        self.started_at = timestamp_from_datetime(_utcnow())
        channel = config.getoption("memspec_report_channel")
        if channel is not None and not hasattr(config, "workerinput"):
            self.channel = _open_channel(channel)
        self._hypothesis_ready = False

    # -- engine

    @property
    def label(self) -> str:
        return self.engine_spec or self.command or "?"

    @property
    def role(self) -> str:
        """``worker`` / ``controller`` under pytest-xdist, else ``single``."""
        if hasattr(self.config, "workerinput"):
            return "worker"
        if self.config.pluginmanager.has_plugin("dsession"):
            return "controller"
        return "single"

    def connection(self) -> Connection:
        """The run's engine connection (loaded on first use)."""
        if self._conn is None:
            from memspec.conformance._loading import EngineLoadError, load_engine, process_engine
            from memspec.conformance._session import Connection

            try:
                engine = (load_engine(self.engine_spec) if self.engine_spec
                          else process_engine(self.command or "", timeout=self.timeout))
            except EngineLoadError as exc:
                raise usage_error(self.config,
                                  f"cannot load the engine under test: {exc}") from None
            self._conn = Connection(engine, label=self.label)
        return self._conn

    # -- fixtures (kit tests, and an engine author's own tests run with the kit's options)

    # The connection itself lives on the run (not a session fixture): pytest deprecates
    # session-scoped fixtures that are methods, and the run owns its closing anyway.

    @pytest.fixture
    def engine(self) -> EngineSession:
        """The engine under test, reset to an empty state."""
        from memspec.conformance._session import EngineSession

        session = EngineSession(self.connection())
        session.reset()
        return session

    @pytest.fixture
    def clock(self) -> KitClock:
        """A deterministic clock starting at 2026-01-01T00:00:00.000Z."""
        from memspec.conformance._clock import KitClock

        return KitClock()

    @pytest.fixture
    def driver(self, engine: EngineSession, clock: KitClock) -> Driver:
        """The shared test driver over ``engine`` and ``clock`` (kit settings; a suite
        needing others ``configured`` it in a fixture of its own)."""
        from memspec.conformance._driver import Driver

        return Driver(engine, clock)

    @pytest.fixture
    def keys(self) -> Keys:
        """The kit's fixed signing keys a, b and c."""
        from memspec.conformance._builders import fixed_keys

        return fixed_keys()

    # -- collection

    def pytest_collect_file(self, file_path: Path, parent: pytest.Collector) -> None:
        # Load the hypothesis profile before the first kit module is imported, so that
        # @settings(...) in the suites inherit it; not earlier, as importing hypothesis is slow.
        root = suites_dir()
        if self._hypothesis_ready or root is None or file_path.suffix != ".py":
            return
        if root == file_path.resolve().parent or root in file_path.resolve().parents:
            load_hypothesis_profile(bool(self.config.getoption("memspec_thorough")))
            self._hypothesis_ready = True

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        from memspec.conformance._outcomes import catalogue

        known = catalogue()
        found = {item.nodeid: KitItem.of(item, ident) for item in items
                 if (ident := kit_id(item)) is not None}
        unmarked = [nodeid for nodeid, kit in found.items()
                    if not kit.requirements and not kit.kit_check]
        unknown = [f"{nodeid}: {r}" for nodeid, kit in found.items()
                   for r in kit.requirements if r not in known]
        if unmarked:
            raise usage_error(
                config, "memspec kit tests must carry @pytest.mark.requirement(...): "
                + ", ".join(unmarked[:20]) + (" ..." if len(unmarked) > 20 else "")
            )
        if unknown:
            raise usage_error(
                config, "memspec kit tests name requirement ids the catalogue does not have: "
                + ", ".join(unknown[:20])
            )
        if found:
            conn = self.connection()
            if conn.start() is None and conn.never_started:
                # An engine that never answers its handshake would fault on every test: stop
                # the run here, once, with the reason and what the engine said.
                raise usage_error(config, "the engine under test did not start: "
                                  + terminal(conn.start_fault or "no handshake"))
        self.items = found

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        self.deselected.update(item.nodeid for item in items)

    # -- running

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        info = self.items.get(item.nodeid)
        if info is None or info.kit_check:
            return
        conn = self.connection()
        if conn.start() is None:
            return  # the engine fixture reports the fault; claims are unknown
        missing = sorted(set(info.profiles) - conn.claimed)
        if missing:
            from memspec.conformance._outcomes import not_claimed_reason

            pytest.skip(not_claimed_reason(missing, conn.name))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        info = self.items.get(item.nodeid)
        if info is None:
            return report
        from memspec.conformance._session import EngineSession

        session = getattr(item, "funcargs", {}).get("engine")
        transcript = session.transcript if isinstance(session, EngineSession) else []
        mark_report(report, call.excinfo.value if call.excinfo is not None else None,
                    info.levels, [terminal(str(entry)) for entry in transcript])
        _neutralize(report)
        if report.failed and isinstance(session, EngineSession):
            stderr = session.stderr_lines()
            if stderr:
                report.sections.append(("memspec engine stderr (last lines)",
                                        terminal("\n".join(stderr))))
        return report

    @pytest.hookimpl(tryfirst=True)
    def pytest_report_teststatus(self, report: pytest.TestReport, config: pytest.Config) -> Any:
        return report_status(report)

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # The xdist controller collects nothing: it learns which tests are kit tests only
        # when the workers finish, so it keeps every result and the report picks its own.
        if report.nodeid not in self.items and self.role != "controller":
            return
        logged = logged_outcome(report, self.results.get(report.nodeid))
        if logged is not None:
            self.results[report.nodeid] = logged

    # -- pytest-xdist (optional hooks: called only when xdist is installed and active)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: object | None) -> None:
        """Take in a finished worker's kit tests, deselections and engine state."""
        from memspec._errors import MemspecError
        from memspec.conformance._report import HandOver

        output = getattr(node, "workeroutput", None)
        payload = output.get(WORKER_OUTPUT_KEY) if isinstance(output, dict) else None
        if payload is None:
            return  # a worker that crashed
        worker = str(getattr(node, "workerinput", {}).get("workerid", self.workers_done))
        self.workers_done += 1
        try:
            handed = HandOver.from_wire(payload)
        except MemspecError as exc:
            self.worker_problems.append(f"kit bug: worker {worker}: {exc}")
            return
        for nodeid, item in handed.items:
            self.items.setdefault(nodeid, item)
        self.deselected.update(handed.deselected)
        if handed.engine is not None:
            self.worker_states[worker] = handed.engine

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport,
                               sched: Any) -> None:
        """A test whose worker died (an in-process engine can take it down) is errored."""
        from memspec.conformance._outcomes import ERRORED

        report.memspec_outcome = ERRORED  # type: ignore[attr-defined]
        report.memspec_message = (  # type: ignore[attr-defined]
            f"{report.longrepr}: the engine crashed the xdist worker process (or was killed)"
        )

    # -- the end

    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        try:
            if self.role == "worker":
                self._hand_over()
            elif self.worker_problems or (self.role == "controller" and self.results
                                          and not self.workers_done):
                self.report_problem = "; ".join(self.worker_problems) or (
                    "no xdist worker handed over its kit tests (did every worker crash?)")
                self.report_problem += "; no report was made"
                session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            elif self.items and not self.config.option.collectonly:
                self._finish_report(session)
        finally:
            if self._conn is not None:
                try:
                    self._conn.close()
                except Exception as exc:  # a failing close must not hide the verdict
                    self.report_problem = f"engine close() failed: {exc}"
            if self.channel is not None:
                # Only now, with the engine gone, does the report leave the kit.
                from memspec.conformance._channel import send_report

                key, fd = self.channel
                self.channel = None
                send_report(fd, key, self.report.to_wire()
                            if self.report is not None and self.report_problem is None else None)

    def _hand_over(self) -> None:
        # An xdist worker makes no report: the controller folds every worker's share.
        from memspec.conformance._report import HandOver

        handed = HandOver(tuple(self.items.items()), tuple(sorted(self.deselected)),
                          self._conn.state if self._conn is not None else None)
        self.config.workeroutput[WORKER_OUTPUT_KEY] = handed.to_wire()  # type: ignore[attr-defined]

    def _engine_state(self) -> EngineState | None:
        from memspec.conformance._session import EngineState

        if self.role != "controller":
            return self._conn.state if self._conn is not None else None
        order = sorted(self.worker_states, key=lambda w: (len(w), w))  # gw2 before gw10
        return EngineState.merge([self.worker_states[w] for w in order])

    def _finish_report(self, session: pytest.Session) -> None:
        import memspec
        from memspec._encoding import timestamp_from_datetime
        from memspec.conformance._report import (
            build_report,
            check_report,
            fold_items,
            suite_digest,
        )
        from memspec.report import Verdict

        tests, kit_checks = fold_items(self.items, self.results, self.deselected)
        state = self._engine_state()
        report = build_report(
            engine_info=state.info if state else None,
            engine_label=self.label,
            engine_fault=state.fault if state else None,
            mode=state.mode if state else ("process" if self.command else "in-process"),
            kit_version=memspec.__version__,
            tests=tests,
            digest=suite_digest(item.kit_id for item in self.items.values()),
            started_at=self.started_at,
            finished_at=timestamp_from_datetime(_utcnow()),
            findings=state.findings if state else (),
            kit_checks=kit_checks,
        )
        self.report = report
        try:
            check_report(report)
        except ValueError as exc:
            self.report_problem = f"kit bug: {exc}"
            session.exitstatus = pytest.ExitCode.INTERNAL_ERROR
            return
        if self.report_path:
            path = Path(self.report_path)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(report.to_json(), encoding="utf-8")
        if report.verdict in (Verdict.FAILED, Verdict.ERRORED) and session.exitstatus == 0:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any, exitstatus: int,
                                config: pytest.Config) -> None:
        from memspec.conformance._summary import render_summary

        tr = terminalreporter
        if config.option.collectonly or self.role == "worker" or self.usage_failed:
            return
        if not self.items and self.report_problem is None:
            tr.write_sep("=", "memspec conformance")
            tr.write_line("no kit tests were collected; run: pytest --pyargs memspec.conformance "
                          f"--memspec-engine{'-cmd' if self.command else ''}=...")
            return
        tr.write_sep("=", "memspec conformance")
        if self.report is not None:
            verbose = config.getoption("verbose", 0) > 0
            for line, markup in render_summary(self.report, verbose=verbose):
                tr.write_line(terminal(line, one_line=True), **markup)
            if self.report_path and self.report_problem is None:
                tr.write_line(f"report written to {self.report_path}")
        if self.report_problem:
            tr.write_line(terminal(self.report_problem), red=True)


def _neutralize(report: pytest.TestReport) -> None:
    """Make what pytest prints of a kit test's report (its failure, its skip reason) unable
    to act on a terminal: the engine's words are in it, escapes and all."""
    longrepr = report.longrepr
    if report.failed and longrepr is not None and not isinstance(longrepr, str):
        text = str(longrepr)
        if text != terminal(text):
            report.longrepr = terminal(text)
    elif isinstance(longrepr, tuple) and len(longrepr) == 3:
        path, line, reason = longrepr
        report.longrepr = (path, line, terminal(str(reason), one_line=True))
    elif isinstance(longrepr, str):
        report.longrepr = terminal(longrepr)
    report.sections = [(title, terminal(text)) for title, text in report.sections]


def _open_channel(option: str) -> tuple[bytes, int]:
    """Read the one-time key of ``--memspec-report-channel=KEYFD,REPORTFD`` (before any engine
    is loaded) and keep the report pipe open for the end of the run."""
    import os

    from memspec.conformance._channel import ChannelError, read_key

    try:
        key_fd, report_fd = (int(part) for part in option.split(","))
        os.fstat(report_fd)
        return read_key(key_fd), report_fd
    except (ValueError, OSError, ChannelError) as exc:
        raise pytest.UsageError(f"--memspec-report-channel={option}: not the pipes of a "
                                f"memspec certify run ({exc})") from None


def _utcnow() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)
