"""The spec website: generated from the repository's data, built strictly, self-contained."""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from tests.docs import (
    REPO,
    Built,
    bash_blocks,
    built_site,
    conformance_report,
    copy_sources,
    html_pages,
    is_external,
    load_yaml,
    memspec_commands,
    memspec_subcommands,
    page,
    scan,
    workflow_steps,
)

sys.path.insert(0, str(REPO / "tools"))

from _docgen import kitpower, report, tracing
from _docgen._common import IdLinker
from gen_docs import MARKER, generate, write

from memspec._errors import MemspecError
from memspec._requirements import load_requirements
from memspec.report import MalformedReport

KEY_PAGES = (
    "", "concepts", "generated/spec", "generated/extensions", "generated/requirements",
    "generated/lifecycle", "generated/operations", "generated/schemas",
    "generated/schemas/record", "generated/vectors", "generated/vectors/records",
    "generated/kit-tests", "generated/kit-power", "generated/reference-report", "generated/cli",
    "generated/api", "guide/certify-python", "guide/certify-other-language", "guide/ci-gate",
    "reports", "versioning", "changelog",
)
#: Markdown extensions Zensical supports that this site may use (plus every pymdownx.*).
ZENSICAL_EXTENSIONS = {"abbr", "admonition", "attr_list", "def_list", "footnotes",
                       "md_in_html", "tables", "toc"}


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Built:
    return built_site(tmp_path_factory)


# -- generation --------------------------------------------------------------------------------


def test_generation_is_deterministic(built: Built) -> None:
    first = generate(REPO, built.report, None, None)
    second = generate(REPO, built.report, None, None)
    assert first == second
    for rel_path, data in first.items():
        target = built.docs / rel_path
        assert target.read_bytes() == data, f"{rel_path} differs from the built copy"


def test_write_refuses_to_wipe_a_folder_it_did_not_write(tmp_path: Path) -> None:
    out = tmp_path / "docs" / "generated"
    (tmp_path / "docs" / "schemas").mkdir(parents=True)
    (tmp_path / "docs" / "schemas" / "mine.md").write_text("hand-written", encoding="utf-8")
    with pytest.raises(MemspecError, match="refusing to delete"):
        write({"generated/x.md": b"# x\n"}, out)
    assert (tmp_path / "docs" / "schemas" / "mine.md").exists()


def test_write_replaces_its_own_output(tmp_path: Path) -> None:
    out = tmp_path / "docs" / "generated"
    write({"generated/old.md": b"old", "schemas/a.json": b"{}"}, out)
    assert (out / MARKER).is_file()
    write({"generated/new.md": b"new"}, out)
    assert not (out / "old.md").exists() and (out / "new.md").read_bytes() == b"new"
    assert not (tmp_path / "docs" / "schemas" / "a.json").exists()


def test_build_is_strict_and_clean(built: Built) -> None:
    warnings = [line for line in built.log.splitlines() if "WARNING" in line]
    assert not warnings, "\n".join(warnings)


@pytest.mark.parametrize("path", KEY_PAGES)
def test_key_pages_exist(built: Built, path: str) -> None:
    html = page(built.site, path)
    assert "<h1" in html


# -- the specification and its traceability -------------------------------------------------


def test_every_requirement_is_an_anchor_with_its_trace(built: Built) -> None:
    # SPEC.md's requirements are on the spec page, EXTENSIONS.md's on the extensions page.
    html = page(built.site, "generated/spec") + page(built.site, "generated/extensions")
    ids = scan(html).ids
    missing = [r.id for r in load_requirements() if r.id not in ids]
    assert not missing, f"requirements without an anchor on the spec page: {missing}"
    for req in load_requirements():
        assert f"{req.id} · {req.level} · {req.profile}" in html, f"{req.id} has no trace box"


def test_a_requirement_reaches_its_tests_vectors_and_verdict(built: Built) -> None:
    spec = scan(page(built.site, "generated/spec"))
    requirements_with_both = [
        r.id for r in load_requirements()
        if any(link.endswith(f"#{r.id}") and "reference-report" in link for link in spec.links)
    ]
    assert requirements_with_both, "no trace links to the reference report"
    targets = {
        "vectors": [link for link in spec.links if "/vectors/" in link and "#" in link],
        "tests": [link for link in spec.links if "kit-tests/#" in link],
        "report": [link for link in spec.links if "reference-report/#" in link],
    }
    for kind, links in targets.items():
        assert links, f"the spec page links to no {kind}"
    # The targets are checked to exist by test_internal_links_and_anchors_resolve.


def test_requirements_page_lists_every_requirement(built: Built) -> None:
    ids = scan(page(built.site, "generated/requirements")).ids
    missing = [r.id for r in load_requirements() if r.id not in ids]
    assert not missing


def test_lifecycle_page_has_the_table_and_the_diagram(built: Built) -> None:
    html = page(built.site, "generated/lifecycle")
    legality = json.loads((REPO / "spec" / "legality.json").read_text(encoding="utf-8"))
    assert '<pre class="mermaid"><code>stateDiagram-v2' in html
    legal = [t for t in legality["transitions"] if t["legal"]]
    for item in legal:
        assert f"{item['from']} --&gt; {item['to']}:" in html
    rows = re.findall(r"<tr>\s*<td><code>(\w+)</code></td>\s*<td><code>(\w+)</code></td>", html)
    assert len(rows) == len(legality["transitions"])


# -- raw downloads -------------------------------------------------------------------------------


def test_raw_schemas_are_served_at_their_id_paths(built: Built) -> None:
    schemas = sorted((REPO / "schemas").rglob("*.json"))
    assert schemas
    for path in schemas:
        schema_id = json.loads(path.read_text(encoding="utf-8"))["$id"]
        served = built.site / urlsplit(schema_id).path.lstrip("/")
        assert served.read_bytes() == path.read_bytes(), f"{schema_id} is not served verbatim"


def test_raw_vectors_are_downloadable(built: Built) -> None:
    for path in sorted((REPO / "vectors").glob("*.json")):
        assert (built.site / "vectors" / path.name).read_bytes() == path.read_bytes()
        html = page(built.site, f"generated/vectors/{path.stem}")
        doc = json.loads(path.read_text(encoding="utf-8"))
        ids = scan(html).ids
        for group in doc["groups"]:
            for case in group["tests"]:
                assert case["id"] in ids, f"vector {case['id']} has no anchor"
        for flag in doc["notes"]:
            assert f"flag-{flag}" in ids


def test_every_schema_has_a_page(built: Built) -> None:
    for path in sorted((REPO / "schemas").rglob("*.json")):
        name = path.relative_to(REPO / "schemas").with_suffix("").as_posix()
        html = page(built.site, f"generated/schemas/{name}")
        assert json.loads(path.read_text(encoding="utf-8"))["$id"] in html


# -- self-contained: no CDN, no fonts from the network ------------------------------------------


def test_no_external_resources(built: Built) -> None:
    problems = []
    for path in html_pages(built.site):
        for url in scan(path.read_text(encoding="utf-8")).resources:
            if is_external(url):
                problems.append(f"{path.relative_to(built.site)}: {url}")
    for path in sorted(built.site.rglob("*.css")):
        css = path.read_text(encoding="utf-8", errors="replace")
        for url in re.findall(r"""(?:url\(\s*['"]?|@import\s+['"])(https?:)?//""", css):
            problems.append(f"{path.relative_to(built.site)}: external url() {url}")
    assert not problems, "\n".join(problems[:20])
    assert "fonts.googleapis.com" not in page(built.site, "")


def test_mermaid_is_served_locally_before_material(built: Built) -> None:
    html = page(built.site, "generated/lifecycle")
    scripts = scan(html).resources
    folder = built.site / "generated" / "lifecycle"
    local = [s for s in scripts if not is_external(s)
             and (folder / s).resolve() == (built.site / "generated/assets/mermaid.min.js")
             .resolve()]
    assert local, f"the lifecycle page does not load the local mermaid: {scripts}"
    assert scripts.index(local[0]) > 0, "mermaid must load after Material's bundle"
    target = (folder / local[0]).resolve()
    assert target.stat().st_size > 100_000


# -- links ---------------------------------------------------------------------------------------


def _target(site: Path, page_path: Path, href: str) -> tuple[Path, str]:
    parts = urlsplit(href)
    path = unquote(parts.path)
    if not path:
        return page_path, unquote(parts.fragment)
    base = site if path.startswith("/") else page_path.parent
    target = (base / path.lstrip("/")).resolve()
    if target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


def test_internal_links_and_anchors_resolve(built: Built) -> None:
    site = built.site.resolve()
    ids: dict[Path, set[str]] = {}
    broken: list[str] = []
    reached: set[Path] = set()
    pages = [p.resolve() for p in html_pages(site)]
    for path in pages:
        ids[path] = scan(path.read_text(encoding="utf-8")).ids
    for path in pages:
        for href in scan(path.read_text(encoding="utf-8")).links:
            if is_external(href) or href.startswith(("mailto:", "javascript:")):
                continue
            target, fragment = _target(site, path, href)
            where = f"{path.relative_to(site)} -> {href}"
            if not target.exists():
                broken.append(f"{where}: no such file")
                continue
            reached.add(target)
            if fragment and target.suffix == ".html" and fragment not in ids.get(target, set()):
                broken.append(f"{where}: no anchor #{fragment}")
    assert not broken, "\n".join(broken[:30])
    unreachable = [p.relative_to(site).as_posix() for p in pages
                   if p not in reached and p.name == "index.html" and p.parent != site]
    assert not unreachable, f"pages nothing links to: {unreachable}"


# -- the hand-written pages and the configuration -----------------------------------------------


def test_home_page_shows_the_readme_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Two commands", 1)[1].split("\n## ", 1)[0]
    commands = bash_blocks(section)
    assert len(commands) == 2
    home = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    for block in commands:
        assert f"```bash\n{block}```" in home, f"docs/index.md lacks the README's {block!r}"


def _nav_pages(nav: Any) -> list[str]:
    if isinstance(nav, str):
        return [nav]
    if isinstance(nav, list):
        return [p for item in nav for p in _nav_pages(item)]
    if isinstance(nav, dict):
        return [p for value in nav.values() for p in _nav_pages(value)]
    return []


def test_every_hand_written_page_is_in_the_nav() -> None:
    config = load_yaml(REPO / "mkdocs.yml")
    nav = set(_nav_pages(config["nav"]))
    docs = REPO / "docs"
    hand = {p.relative_to(docs).as_posix() for p in docs.rglob("*.md")
            if p.relative_to(docs).parts[0] not in ("generated", "schemas", "vectors", "spec")
            and not p.relative_to(docs).parts[0].startswith("_")}  # _drafts/ is excluded
    assert hand <= nav, f"pages missing from the nav: {sorted(hand - nav)}"
    assert all((docs / p).exists() or p.startswith("generated/") for p in nav)


def test_config_stays_within_what_zensical_supports() -> None:
    config = load_yaml(REPO / "mkdocs.yml")
    assert config["theme"]["name"] == "material"
    assert config["theme"]["font"] is False
    plugins = [p if isinstance(p, str) else next(iter(p)) for p in config.get("plugins", [])]
    assert plugins == ["search"], "no plugins beyond the built-in search"
    assert "hooks" not in config
    for entry in config["markdown_extensions"]:
        name = entry if isinstance(entry, str) else next(iter(entry))
        assert name in ZENSICAL_EXTENSIONS or name.startswith("pymdownx."), name
    for script in config.get("extra_javascript", []) + config.get("extra_css", []):
        assert not is_external(str(script)), script
    fences = next(e["pymdownx.superfences"] for e in config["markdown_extensions"]
                  if isinstance(e, dict) and "pymdownx.superfences" in e)["custom_fences"]
    assert fences == [{"name": "mermaid", "class": "mermaid",
                       "format": "python/name:pymdownx.superfences.fence_code_format"}]


def _search_separator() -> str:
    config = load_yaml(REPO / "mkdocs.yml")
    search = next(p for p in config["plugins"] if not isinstance(p, str) and "search" in p)
    return str(search["search"]["separator"])


def test_search_keeps_requirement_ids_whole() -> None:
    # The same expression splits the index and the query (lunr's tokenizer, in the browser);
    # Python's re reads this one as JavaScript does.
    words = [w for w in re.split(_search_separator(), "see REC-5, PROTO-2 and X-AUD: an "
                                 "append-only store (SHA-256) at 18.2. &lt;b&gt;") if w]
    assert words == ["see", "REC-5", "PROTO-2", "and", "X", "AUD", "an", "append", "only",
                     "store", "SHA-256", "at", "18.2", "b"]


def test_search_index_finds_a_requirement_id(built: Built) -> None:
    index = json.loads((built.site / "search" / "search_index.json").read_text("utf-8"))
    assert index["config"]["separator"] == _search_separator()
    sections = [d for d in index["docs"] if "REC-5" in re.split(_search_separator(), d["text"])]
    assert any(d["location"].startswith("generated/spec/") for d in sections), (
        "no section of the spec page holds the search term REC-5")


def test_cli_reference_has_every_subcommand(built: Built) -> None:
    html = page(built.site, "generated/cli")
    ids = scan(html).ids
    for name in sorted(memspec_subcommands()):
        assert name in ids and f"memspec {name}" in html, f"no CLI reference for {name}"


def test_api_reference_has_every_public_name(built: Built) -> None:
    import memspec
    import memspec.report
    import memspec.strategies
    import memspec.testing

    ids = scan(page(built.site, "generated/api")).ids
    for module in (memspec, memspec.report, memspec.strategies, memspec.testing):
        missing = [n for n in module.__all__ if f"{module.__name__}.{n}" not in ids]
        assert not missing, f"{module.__name__}: {missing}"


# -- the CI gate workflow ------------------------------------------------------------------------


def _check_commands(commands: list[list[str]]) -> list[str]:
    """Parse each command with the real CLI parser; return the subcommands that do not exist."""
    from memspec.cli import build_parser

    known = memspec_subcommands()
    absent = sorted({c[1] for c in commands if len(c) > 1 and c[1] not in known})
    for words in commands:
        if len(words) > 1 and words[1] in absent:
            continue
        try:
            build_parser().parse_args(words[1:])
        except SystemExit as exc:
            raise AssertionError(f"`{shlex.join(words)}` is not a valid command line") from exc
    return absent


def test_workflow_parses_and_its_commands_are_valid() -> None:
    doc = load_yaml(REPO / ".github" / "workflows" / "conformance.yml")
    triggers = doc.get("on", doc.get(True))  # YAML 1.1 reads a bare `on` as True
    assert {"push", "pull_request"} <= set(triggers)
    steps = workflow_steps()
    assert any("actions/checkout" in str(s.get("uses", "")) for s in steps)
    commands = [c for s in steps for c in memspec_commands(str(s.get("run", "")))]
    assert [c[1] for c in commands] == ["certify", "report"]
    absent = _check_commands(commands)
    if absent:
        pytest.skip(f"the CLI has no {', '.join(absent)} subcommand yet; the others parse")


def test_workflow_commands_run(tmp_path_factory: pytest.TempPathFactory) -> None:
    if "certify" not in memspec_subcommands():
        pytest.skip("the CLI has no certify subcommand yet")
    report_path, how = conformance_report(tmp_path_factory.mktemp("wf"))
    assert "workflow" in how
    doc = json.loads(report_path.read_text(encoding="utf-8"))
    assert doc["engine"]["loaded_as"] == "reference"
    if "report" in memspec_subcommands():
        done = subprocess.run([str(Path(sys.executable).with_name("memspec")), "report",
                               str(report_path)], capture_output=True, text=True, check=False,
                              timeout=120)
        assert done.returncode in (0, 1) and done.stdout.strip(), done.stderr


def test_commands_shown_in_the_docs_are_valid() -> None:
    commands = []
    for path in sorted((REPO / "docs").rglob("*.md")):
        if path.relative_to(REPO / "docs").parts[0] in ("generated",):
            continue
        for block in bash_blocks(path.read_text(encoding="utf-8")):
            commands.extend(memspec_commands(block))
    assert commands
    absent = _check_commands(commands)
    if absent:
        pytest.skip(f"the CLI has no {', '.join(absent)} subcommand yet; the others parse")


# -- Zensical ------------------------------------------------------------------------------------


def _zensical() -> list[str] | None:
    if importlib.util.find_spec("zensical") is not None:
        return [sys.executable, "-m", "zensical"]
    exe = shutil.which("zensical") or os.environ.get("MEMSPEC_ZENSICAL")
    return [exe] if exe else None


def test_zensical_builds_the_same_config(built: Built, tmp_path: Path) -> None:
    command = _zensical()
    if command is None:
        pytest.skip("zensical is not installed (pip install zensical)")
    root = copy_sources(tmp_path / "src")
    for name in ("generated", "schemas", "vectors", "spec"):
        shutil.copytree(built.docs / name, root / "docs" / name)
    done = subprocess.run([*command, "build", "--strict", "-f", "mkdocs.yml"], cwd=root,
                          capture_output=True, text=True, timeout=900, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    site = root / "site"
    for key in KEY_PAGES:
        assert "<h1" in page(site, key), key
    for html_path in html_pages(site):
        external = [u for u in scan(html_path.read_text(encoding="utf-8")).resources
                    if is_external(u)]
        assert not external, f"{html_path}: {external}"
    assert (site / "schemas" / "record.json").read_bytes() == (
        REPO / "schemas" / "record.json").read_bytes()


# -- the generator's parts -----------------------------------------------------------------------


def test_suite_scan_reads_markers_statically(tmp_path: Path) -> None:
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "pytestmark = pytest.mark.requirement('A-1')\n"
        "@pytest.mark.requirement('B-1', 'B-2')\n"
        "def test_one():\n    '''Checks one.'''\n"
        "class TestGroup:\n"
        "    pytestmark = [pytest.mark.requirement('C-1')]\n"
        "    @pytest.mark.parametrize('x', [1])\n"
        "    def test_two(self, x):\n        pass\n"
        "def helper():\n    pass\n", encoding="utf-8")
    tests = tracing.scan_suites(tmp_path)
    assert [(t.nodeid, t.requirements, t.parametrized) for t in tests] == [
        ("suites/test_x.py::test_one", ("A-1", "B-1", "B-2"), False),
        ("suites/test_x.py::TestGroup::test_two", ("A-1", "C-1"), True),
    ]
    assert tests[0].doc == "Checks one."


def test_every_kit_test_in_the_repository_is_scanned() -> None:
    tests = tracing.scan_suites(REPO / "conformance" / "suites")
    for path in sorted((REPO / "conformance" / "suites").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)
                 and n.name.startswith("test")}
        scanned = {t.name for t in tests if t.module == path.name}
        assert names <= scanned, f"{path.name}: {sorted(names - scanned)}"


def test_id_linker_leaves_code_alone() -> None:
    linker = IdLinker(["REC-5", "REC-1"])
    assert linker.sub("see REC-5 and `REC-1`", "generated/x.md") == (
        "see [REC-5](spec.md#REC-5) and `REC-1`")
    assert linker.sub("REC-15 and XREC-5", "generated/x.md") == "REC-15 and XREC-5"


def _selftest_result(caught: bool) -> dict[str, Any]:
    row = {"fault": "rule-without-evidence", "profile": "format", "requirement": "RULE-1",
           "description": "accepts a rule without evidence", "mode": "in-process",
           "caught": caught, "reported": ["RULE-1"] if caught else [], "collateral": [],
           "message": "suites/test_vectors.py::test_vector[records/rule-no-evidence] failed"}
    return {"selftest_version": 1, "modes": ["in-process"], "full": False,
            "started_at": "2026-01-01T00:00:00.000Z", "finished_at": "2026-01-01T00:01:00.000Z",
            "faults": [row],
            "references": [{"engine": "reference", "mode": "in-process", "passed": True,
                            "failed": [], "errored": [], "verdict": "certified",
                            "message": ""}],
            "summary": {"faults": 1, "runs": 1, "caught": int(caught), "missed": int(not caught),
                        "with_collateral": 0, "reference_passed": True, "ok": caught}}


@pytest.mark.parametrize("caught", [True, False])
def test_kit_power_renders_a_selftest_result(caught: bool) -> None:
    md = kitpower.build(_selftest_result(caught), IdLinker(["RULE-1"]), {"format"})
    text = md["generated/kit-power.md"].decode()
    assert f"caught {int(caught)} of 1" in text and "`rule-without-evidence`" in text
    assert "spec.md#RULE-1" in text and "requirements.md#profile-format" in text
    assert ("## Missed faults" in text) is not caught


def test_kit_power_without_a_result_lists_the_catalogue() -> None:
    text = kitpower.build(None, IdLinker([]), set())["generated/kit-power.md"].decode()
    faults = kitpower.catalogue()
    if faults is None:
        assert "No selftest result" in text
    else:
        assert f"**{len(faults)} faulty engines**" in text
        assert all(f"`{f.name}`" in text for f in faults)


def test_kit_power_rejects_a_malformed_result() -> None:
    with pytest.raises(MemspecError, match="not a selftest result"):
        kitpower.build({"faults": [{"caught": True}]}, IdLinker([]), set())


def test_report_page_without_a_report_says_so() -> None:
    trace = tracing.Trace((), (), None)
    md = report.build(None, IdLinker([]), trace)["generated/reference-report.md"].decode()
    assert "No report given" in md and "memspec certify --engine reference" in md


def test_a_malformed_report_is_refused(tmp_path: Path) -> None:
    bad = tmp_path / "report.json"
    bad.write_text('{"report_version": 1}', encoding="utf-8")
    with pytest.raises(MalformedReport, match=r"does not match report\.json"):
        tracing.load_report(bad)
