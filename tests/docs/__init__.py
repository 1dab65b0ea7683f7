"""Shared helpers of the docs tests: one generated and built site per test session.

The site is built from a copy of the repository's docs sources in a temporary
folder (never in the working tree): ``tools/gen_docs.py`` writes the generated
pages, then ``mkdocs build --strict`` runs with the copy as its working
directory. The conformance report it shows comes from the CI workflow's own
``memspec certify`` command when that subcommand exists, else from a quick run
of the kit's vectors through the pytest plugin.
"""

from __future__ import annotations

import argparse
import fcntl
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
WORKFLOW = REPO / ".github" / "workflows" / "conformance.yml"
GENERATED_DIRS = ("generated", "schemas", "vectors", "spec")
_CACHE: dict[str, Any] = {}


@dataclass(frozen=True)
class Built:
    """A generated and built site."""

    root: Path  # the copy of the sources (mkdocs.yml, docs/, ...)
    docs: Path
    site: Path
    log: str
    report: Path


def load_yaml(path: Path) -> Any:
    """A YAML file, with MkDocs' ``!!python/name`` tags read as plain strings."""
    yaml = pytest.importorskip("yaml")

    class Loader(yaml.SafeLoader):  # type: ignore[misc, name-defined]
        pass

    def python_name(loader: Any, suffix: str, node: Any) -> str:
        return f"python/name:{suffix}"

    Loader.add_multi_constructor("tag:yaml.org,2002:python/name:", python_name)
    with path.open(encoding="utf-8") as handle:
        return yaml.load(handle, Loader=Loader)


def workflow_steps() -> list[dict[str, Any]]:
    """The steps of the CI gate workflow's one job."""
    doc = load_yaml(WORKFLOW)
    jobs = doc["jobs"]
    (job,) = jobs.values()
    steps: list[dict[str, Any]] = job["steps"]
    return steps


def certify_command() -> str:
    """The workflow's ``memspec certify`` command line."""
    for step in workflow_steps():
        run = str(step.get("run", ""))
        if run.strip().startswith("memspec certify"):
            return run.strip()
    raise AssertionError("the workflow has no memspec certify step")


def memspec_subcommands() -> set[str]:
    """The subcommands the real CLI parser knows."""
    from memspec.cli import build_parser

    parser = build_parser()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return set(action.choices)
    return set()


def _run(args: list[str], cwd: Path, timeout: float = 900) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


def conformance_report(tmp: Path) -> tuple[Path, str]:
    """A report of the reference engine and how it was made (cached for the session)."""
    if "report" in _CACHE:
        return _CACHE["report"]  # type: ignore[no-any-return]
    folder = tmp / "report"
    folder.mkdir(parents=True, exist_ok=True)
    bindir = Path(sys.executable).parent
    if "certify" in memspec_subcommands():
        argv = shlex.split(certify_command())
        argv[0] = str(bindir / "memspec")
        how = "the workflow's certify command"
        report = folder / argv[argv.index("--report") + 1]
    else:
        report = folder / "report.json"
        argv = [sys.executable, "-m", "pytest", "--pyargs", "memspec.conformance",
                "--memspec-engine=reference", f"--memspec-report={report}", "-q",
                "-p", "no:cacheprovider", "-k", "test_vector or test_is_legal"]
        how = "a vectors-only kit run (memspec certify does not exist yet)"
    done = _run(argv, folder)
    # 0: certified, 1: not certified; both must leave a report. Anything else is broken.
    if done.returncode not in (0, 1) or not report.is_file():
        raise AssertionError(f"{how} made no report (exit {done.returncode}):\n"
                             f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    _CACHE["report"] = (report, f"{how}, exit {done.returncode}")
    return _CACHE["report"]  # type: ignore[no-any-return]


def copy_sources(root: Path) -> Path:
    """mkdocs.yml, the hand-written docs, the theme overrides and the files they include,
    copied to ``root``."""
    root.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "mkdocs.yml", root / "mkdocs.yml")
    shutil.copy2(REPO / "README.md", root / "README.md")
    (root / ".github").mkdir(exist_ok=True)
    shutil.copytree(REPO / ".github" / "workflows", root / ".github" / "workflows")
    shutil.copytree(REPO / "overrides", root / "overrides")
    shutil.copytree(REPO / "docs", root / "docs",
                    ignore=lambda folder, names: [n for n in names
                                                  if Path(folder) == REPO / "docs"
                                                  and n in GENERATED_DIRS])
    return root


def gen_docs(root: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """Run tools/gen_docs.py into ``root/docs/generated``."""
    return _run([sys.executable, str(REPO / "tools" / "gen_docs.py"),
                 "--out", str(root / "docs" / "generated"), *extra], REPO)


def skip_without_mermaid(done: subprocess.CompletedProcess[str]) -> None:
    """Skip (with the reason) when gen_docs could not obtain the pinned mermaid package."""
    if done.returncode != 0 and "mermaid" in done.stderr and (
        "npm" in done.stderr or "cached" in done.stderr
    ):
        pytest.skip(f"the mermaid npm package is not available here: {done.stderr.strip()}")


def built_site(factory: pytest.TempPathFactory) -> Built:
    """Generate and build the site once per test run (with the reference engine's report).

    Under pytest-xdist the workers share one build: the first to ask builds it in the
    run's common temporary folder under a lock, the others wait and read it (a build
    with its report costs about a minute of CPU).
    """
    if "site" in _CACHE:
        return _CACHE["site"]  # type: ignore[no-any-return]
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    base = factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the run's folder, above each worker's own
    tmp = base / "docs-site"
    marker = tmp / "built.json"
    with _locked(base / "docs-site.lock"):
        if not marker.is_file():
            shutil.rmtree(tmp, ignore_errors=True)  # a build that failed half-way
            report, how = conformance_report(tmp)
            root = copy_sources(tmp / "src")
            generated = gen_docs(root, "--report", str(report))
            skip_without_mermaid(generated)
            assert generated.returncode == 0, (
                f"gen_docs failed:\n{generated.stdout}\n{generated.stderr}")
            build = _run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f",
                          "mkdocs.yml", "-d", str(tmp / "site")], root)
            log = build.stdout + build.stderr
            assert build.returncode == 0, f"mkdocs build --strict failed:\n{log[-5000:]}"
            marker.write_text(json.dumps({"root": str(root), "site": str(tmp / "site"),
                                          "log": log, "report": str(report), "how": how}),
                              encoding="utf-8")
        done = json.loads(marker.read_text(encoding="utf-8"))
    root = Path(done["root"])
    _CACHE["report"] = (Path(done["report"]), done["how"])
    _CACHE["site"] = Built(root, root / "docs", Path(done["site"]), done["log"],
                           Path(done["report"]))
    return _CACHE["site"]  # type: ignore[no-any-return]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` (created) for the body, across processes."""
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def page(site: Path, path: str) -> str:
    """The HTML of a built page (``generated/spec`` -> ``generated/spec/index.html``)."""
    target = site / path / "index.html" if not path.endswith(".html") else site / path
    return target.read_text(encoding="utf-8")


class Scan(HTMLParser):
    """Ids, links and external resource references of one HTML page."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []
        self.resources: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if values.get("id"):
            self.ids.add(values["id"])
        if tag == "a" and values.get("name"):
            self.ids.add(values["name"])
        if tag == "a" and "href" in values:
            self.links.append(values["href"])
        if tag in ("script", "img", "iframe", "source", "audio", "video", "embed") and (
            values.get("src")
        ):
            self.resources.append(values["src"])
        if tag == "link" and values.get("href"):
            rel = values.get("rel", "").lower().split()
            if not set(rel) & {"canonical", "alternate", "prev", "next"}:
                self.resources.append(values["href"])
        if tag == "object" and values.get("data"):
            self.resources.append(values["data"])


def scan(html: str) -> Scan:
    """The ids, links and resources of an HTML page."""
    parser = Scan()
    parser.feed(html)
    return parser


def html_pages(site: Path) -> list[Path]:
    """Every HTML file of a built site."""
    return sorted(site.rglob("*.html"))


def is_external(url: str) -> bool:
    """A URL that leaves the site."""
    return url.startswith(("http://", "https://", "//"))


def bash_blocks(markdown: str) -> list[str]:
    """The bodies of the ```bash blocks of a Markdown text."""
    return re.findall(r"```bash\n(.*?)```", markdown, re.S)


def memspec_commands(script: str) -> list[list[str]]:
    """Every ``memspec ...`` simple command of a shell script (split like a shell would)."""
    found = []
    for line in script.splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words: list[str] = []
        for token in [*lexer, ";"]:
            if token in ("{", "}") or (token and set(token) <= set(";&|()<>")):
                if words and words[0] == "memspec":
                    found.append(words)
                words = []
            else:
                words.append(token)
    return found
