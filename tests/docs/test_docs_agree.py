"""The docs and the schemas say what the spec says: the sections the schemas cite are this
spec's, and the guides' and the JavaScript example's protocol rules are SPEC 18.2's."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.docs import REPO

CITATION = re.compile(r"(?:(\S+)\s+)?[Ss]ections?\s+([0-9]+(?:\.[0-9]+)*|X[0-9]+(?:\.[0-9]+)*)")
DOCUMENTS = {"SPEC.md": REPO / "spec" / "SPEC.md", "EXTENSIONS.md": REPO / "spec" / "EXTENSIONS.md"}


def _sections(path: Path) -> set[str]:
    """The numbers of a document's headings ("18.2", "X7", ...)."""
    return {m.group(1) for m in re.finditer(r"^#{2,6} ((?:[0-9]+|X[0-9]+)(?:\.[0-9]+)*)\.? ",
                                            path.read_text(encoding="utf-8"), re.M)}


def _descriptions(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, member in value.items():
            if key == "description" and isinstance(member, str):
                yield member
            else:
                yield from _descriptions(member)
    elif isinstance(value, list):
        for member in value:
            yield from _descriptions(member)


def _citations() -> list[tuple[str, str, str]]:
    found = []
    for path in sorted((REPO / "schemas").rglob("*.json")):
        for text in _descriptions(json.loads(path.read_text(encoding="utf-8"))):
            for match in CITATION.finditer(text):
                found.append((path.relative_to(REPO).as_posix(), match.group(1) or "",
                              match.group(2)))
    return found


def test_schemas_cite_sections_of_this_spec_by_document_and_number() -> None:
    sections = {name: _sections(path) for name, path in DOCUMENTS.items()}
    citations = _citations()
    assert citations, "the schemas cite no section at all: the pattern is wrong"
    wrong = []
    for where, document, number in citations:
        name = document.removeprefix("spec/").strip("(;,")
        if name not in sections or number not in sections[name]:
            wrong.append(f"{where}: {document} section {number}")
    assert not wrong, ("schema descriptions cite sections that are not SPEC.md's or "
                       f"EXTENSIONS.md's (write 'SPEC.md section N'): {wrong}")


def test_the_section_finder_knows_the_spec() -> None:
    assert {"4", "10", "10.1", "17", "18.2"} <= _sections(DOCUMENTS["SPEC.md"])
    assert "X7" in _sections(DOCUMENTS["EXTENSIONS.md"])


def test_guide_says_a_version_mismatch_answers_protocol() -> None:
    guide = (REPO / "docs" / "guide" / "certify-other-language.md").read_text(encoding="utf-8")
    hello = guide[guide.index("**`hello` comes first**"):].split("\n- ", 1)[0]
    assert "class `protocol`" in hello
    assert "section 18.2" in hello


def _exchange(lines: list[str]) -> list[dict[str, Any]]:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    done = subprocess.run([node, str(REPO / "examples" / "js-engine" / "engine.js")],
                          input="".join(line + "\n" for line in lines), capture_output=True,
                          text=True, timeout=60, check=False)
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_js_example_follows_spec_18_2_on_versions_and_ids() -> None:
    hello = {"protocol": "memspec-engine/1", "spec_version": "fg-agent-memory/0.1"}
    answers = _exchange([
        json.dumps({"id": 1, "op": "hello", "args": {**hello, "protocol": "memspec-engine/9"}}),
        json.dumps({"id": 2, "op": "hello", "args": {"protocol": "memspec-engine/1"}}),
        json.dumps({"id": "3", "op": "hello", "args": hello}),
        json.dumps({"id": -4, "op": "hello", "args": hello}),
        '{"id": 5.0, "op": "hello", "args": {}}',
        json.dumps({"id": 9007199254740992, "op": "hello", "args": hello}),
        json.dumps({"id": 9007199254740991, "op": "hello", "args": hello}),
        json.dumps({"id": 8, "op": "bye", "args": {}}),
    ])
    assert [(a["id"], a["ok"] or a["error"]["code"]) for a in answers] == [
        (1, "protocol"), (2, "protocol"), (None, "protocol"), (None, "protocol"),
        (None, "protocol"), (None, "protocol"), (9007199254740991, True), (8, True)]
    readme = (REPO / "examples" / "js-engine" / "README.md").read_text(encoding="utf-8")
    assert "integers or strings" not in readme
    assert "Request ids are integers from 0 to 2^53 \N{MINUS SIGN} 1" in readme


def test_ci_gate_guide_works_from_another_repository(tmp_path: Path) -> None:
    import tomllib

    from tests.docs import load_yaml

    version = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["version"]
    guide = (REPO / "docs" / "guide" / "ci-gate.md").read_text(encoding="utf-8")
    own = guide[guide.index("## Gate your own engine"):]
    assert "<owner>" not in own and not re.search(r"<[a-z-]+>", own), "a placeholder is left"
    wheel = f"memspec-{version}-py3-none-any.whl"
    assert f"dist/{wheel}" in own
    block = own.split("```yaml\n", 1)[1].split("\n```", 1)[0]
    path = tmp_path / "conformance.yml"
    path.write_text(block, encoding="utf-8")
    steps = load_yaml(path)["jobs"]["certify"]["steps"]
    runs = {step.get("name"): str(step.get("run", "")) for step in steps}
    assert runs["Install"] == f"python -m pip install ci/{wheel} ."
    assert runs["Certify"].startswith("memspec certify --engine ")
    # every version the guide names is the one the wheel carries
    assert set(re.findall(r"memspec-(\d+\.\d+\.\d+)-py3", guide)) == {version}
