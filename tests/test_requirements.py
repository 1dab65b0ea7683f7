"""The requirement index: SPEC.md, its parser and the generated spec/requirements.json."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memspec import MemspecError, data
from memspec._requirements import (
    EXTENSION_FAMILIES,
    LEVELS,
    Requirement,
    SpecFormatError,
    load_extensions_text,
    load_requirements,
    parse_requirements,
    render_requirements_json,
    requirement_index,
    requirements_document,
)
from memspec.data import json_resource, resource_text

ROOT = Path(__file__).resolve().parent.parent

#: The requirement catalogue the specification was written against: id -> (level, profile).
CATALOGUE: dict[str, tuple[str, str]] = {
    "CJ-1": ("MUST", "format"),
    "CJ-2": ("MUST", "format"),
    "CJ-3": ("MUST", "format"),
    "CJ-4": ("MUST", "format"),
    "CJ-5": ("MUST", "format"),
    "CJ-6": ("MUST", "format"),
    "CJ-7": ("MUST", "format"),
    "CJ-8": ("MUST", "format"),
    "CJ-9": ("MUST", "format"),
    "CJ-10": ("MUST", "format"),
    "ENC-1": ("MUST", "format"),
    "ENC-2": ("MUST", "format"),
    "ENC-3": ("MUST", "format"),
    "ENC-4": ("MUST", "format"),
    "ENC-5": ("MUST", "format"),
    "SIG-1": ("MUST", "signing"),
    "SIG-2": ("MUST", "signing"),
    "SIG-3": ("MUST", "signing"),
    "SIG-4": ("MUST", "signing"),
    "SIG-5": ("MUST", "signing"),
    "SIG-6": ("MUST", "signing"),
    "SIG-7": ("MUST", "signing"),
    "SIG-8": ("MUST", "signing"),
    "SIG-9": ("MUST", "signing"),
    "SIG-10": ("MAY", "signing"),
    "REC-1": ("MUST", "format"),
    "REC-2": ("MUST", "format"),
    "REC-3": ("MUST", "format"),
    "REC-4": ("MUST", "format"),
    "REC-5": ("MUST", "format"),
    "REC-6": ("MUST", "format"),
    "REC-7": ("MUST", "format"),
    "REC-8": ("MUST", "format"),
    "REC-9": ("MUST", "format"),
    "REC-10": ("MUST", "format"),
    "REC-11": ("MUST", "format"),
    "REC-12": ("MUST", "format"),
    "REC-13": ("SHOULD", "format"),
    "REC-14": ("MUST", "format"),
    "ID-1": ("MUST", "format"),
    "ID-2": ("MUST", "format"),
    "ID-3": ("MUST", "format"),
    "CONF-1": ("MUST", "format"),
    "CONF-2": ("MUST", "format"),
    "LC-1": ("MUST", "lifecycle"),
    "LC-2": ("MUST", "lifecycle"),
    "LC-3": ("MUST", "lifecycle"),
    "LC-4": ("MUST", "lifecycle"),
    "LC-5": ("MUST", "lifecycle"),
    "SUP-1": ("MUST", "lifecycle"),
    "SUP-2": ("MUST", "lifecycle"),
    "SUP-3": ("MUST", "format"),
    "SUP-4": ("MUST", "format"),
    "SUP-5": ("MUST", "lifecycle"),
    "TRN-1": ("MUST", "format"),
    "TRN-2": ("MUST", "format"),
    "TRN-3": ("MUST", "lifecycle"),
    "TRN-4": ("MUST", "lifecycle"),
    "TRN-5": ("SHOULD", "recall"),
    "RES-1": ("MUST", "lifecycle"),
    "RES-2": ("MUST", "lifecycle"),
    "RES-3": ("MUST", "lifecycle"),
    "RULE-1": ("MUST", "format"),
    "RULE-2": ("MUST", "lifecycle"),
    "RULE-3": ("MUST", "lifecycle"),
    "RULE-4": ("MUST", "format"),
    "RULE-5": ("MUST", "lifecycle"),
    "RULE-6": ("MUST", "lifecycle"),
    "OP-1": ("MUST", "lifecycle"),
    "OP-2": ("MUST", "lifecycle"),
    "OP-3": ("MUST", "lifecycle"),
    "OP-4": ("MUST", "lifecycle"),
    "OP-5": ("MUST", "lifecycle"),
    "OP-6": ("MUST", "lifecycle"),
    "FILE-1": ("MUST", "format"),
    "FILE-2": ("MUST", "format"),
    "FILE-3": ("MUST", "signing"),
    "FILE-4": ("MUST", "format"),
    "FILE-5": ("MUST", "files"),
    "FILE-6": ("MUST", "files"),
    "FILE-7": ("MUST", "format"),
    "FILE-8": ("MUST", "files"),
    "FILE-9": ("MUST", "files"),
    "FILE-10": ("MUST", "files"),
    "STORE-1": ("MUST", "store"),
    "STORE-2": ("MUST", "store"),
    "STORE-3": ("MUST", "store"),
    "STORE-4": ("MUST", "store"),
    "STORE-5": ("MUST", "store"),
    "STORE-6": ("MUST NOT", "store"),
    "STORE-7": ("MUST", "store"),
    "STORE-8": ("MUST", "store"),
    "STORE-9": ("MUST", "store"),
    "STORE-10": ("MUST", "store"),
    "STORE-11": ("MUST", "store"),
    "STORE-12": ("MUST", "store"),
    "SRCH-1": ("MUST", "search"),
    "SRCH-2": ("MUST", "search"),
    "SRCH-3": ("MUST", "search"),
    "SRCH-4": ("MUST", "search"),
    "SRCH-5": ("MUST", "search"),
    "RCL-1": ("MUST", "recall"),
    "RCL-2": ("MUST", "recall"),
    "RCL-3": ("MUST", "recall"),
    "RCL-4": ("MUST", "recall"),
    "RCL-5": ("MUST", "recall"),
    "RCL-6": ("MUST", "recall"),
    "RCL-7": ("SHOULD", "recall"),
    "RCL-8": ("MUST", "recall"),
    "RCL-9": ("MUST", "recall"),
    "RCL-10": ("MUST", "recall"),
    "RCL-11": ("MUST", "recall"),
    "RCL-12": ("MUST", "recall"),
    "RCL-13": ("MUST", "recall"),
    "WR-1": ("MUST", "write"),
    "WR-2": ("MUST", "write"),
    "WR-3": ("MUST", "write"),
    "WR-4": ("MUST", "write"),
    "WR-5": ("MUST", "write"),
    "CONS-1": ("MUST", "consolidation"),
    "CONS-2": ("MUST", "consolidation"),
    "CONS-3": ("MUST", "consolidation"),
    "CONS-4": ("MUST", "consolidation"),
    "CONS-5": ("MUST", "consolidation"),
    "CONS-6": ("MUST", "consolidation"),
    "CONS-7": ("MUST", "consolidation"),
    "CONS-8": ("MUST", "consolidation"),
    "CONS-9": ("MUST", "consolidation"),
    "CONS-10": ("MUST", "consolidation"),
    "CONS-11": ("MUST", "consolidation"),
    "CONS-12": ("SHOULD", "consolidation"),
    "DEC-1": ("MUST", "decay"),
    "DEC-2": ("MUST NOT", "decay"),
    "DEC-3": ("MUST NOT", "decay"),
    "DEC-4": ("MUST NOT", "decay"),
    "DEC-5": ("MUST", "decay"),
    "DEC-6": ("SHOULD", "decay"),
    "DEC-7": ("MUST", "decay"),
    "RED-1": ("MUST", "redaction"),
    "RED-2": ("MUST", "redaction"),
    "RED-3": ("MUST", "format"),
    "RED-4": ("MUST", "format"),
    "RED-5": ("MUST", "format"),
    "RED-6": ("MUST NOT", "redaction"),
    "RED-7": ("MUST", "redaction"),
    "RED-8": ("MUST", "redaction"),
    "PROTO-1": ("MUST", "core"),
    "PROTO-2": ("MUST", "core"),
    "PROTO-3": ("MUST", "core"),
    "PROTO-4": ("MUST", "core"),
    "PROTO-5": ("MUST", "core"),
    "PROTO-6": ("MUST", "core"),
}

#: Requirements the specification added to the catalogue (same families, next numbers).
ADDED = {"SRCH-6", "CONS-13", "PROTO-7", "CJ-11", "PROTO-8", "PROTO-9", "FILE-11", "SIG-11",
         "FILE-12", "RCL-14", "RED-9", "CONS-14", "LC-6",
         "CONS-15", "CONS-16", "DEC-8", *(f"ROLL-{n}" for n in range(1, 8))}

KNOWN_UNTESTABLE = {"OP-4", "OP-5"}

_KEYWORD = re.compile(r"\b(MUST NOT|MUST|SHOULD NOT|SHOULD|MAY)\b")


@pytest.fixture(scope="module")
def spec_text() -> str:
    return data.spec_text()


@pytest.fixture(scope="module")
def reqs(spec_text: str) -> list[Requirement]:
    return parse_requirements(spec_text)


@pytest.fixture(scope="module")
def by_id(reqs: list[Requirement]) -> dict[str, Requirement]:
    return {req.id: req for req in reqs}


@pytest.fixture(scope="module")
def extension_reqs() -> list[Requirement]:
    return parse_requirements(load_extensions_text())


def test_requirements_json_is_what_the_generator_produces(spec_text: str) -> None:
    shipped = resource_text("spec", "requirements.json")
    assert shipped == render_requirements_json(spec_text, None, load_extensions_text()), (
        "spec/requirements.json is stale: run python tools/gen_requirements.py"
    )


def test_generator_check_mode_passes() -> None:
    tool = ROOT / "tools" / "gen_requirements.py"
    if not tool.exists():
        pytest.skip("not running from a source checkout")
    done = subprocess.run([sys.executable, str(tool), "--check"], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr


def test_ids_are_unique(reqs: list[Requirement], extension_reqs: list[Requirement]) -> None:
    ids = [req.id for req in (*reqs, *extension_reqs)]
    assert len(ids) == len(set(ids))
    document = json_resource("spec", "requirements.json")
    assert document["count"] == len(document["requirements"]) == len(ids)


@pytest.mark.parametrize("rid", sorted(CATALOGUE))
def test_catalogue_requirement_is_defined_as_catalogued(rid: str,
                                                        by_id: dict[str, Requirement]) -> None:
    assert rid in by_id, f"{rid} has no definition site in SPEC.md"
    level, profile = CATALOGUE[rid]
    assert (by_id[rid].level, by_id[rid].profile) == (level, profile)


def test_no_requirement_outside_the_catalogue_and_its_additions(
        by_id: dict[str, Requirement]) -> None:
    assert set(by_id) - set(CATALOGUE) == ADDED


def test_levels_and_profiles_are_known(reqs: list[Requirement]) -> None:
    profiles = set(json_resource("spec", "operations.json")["profiles"])
    for req in reqs:
        assert req.level in LEVELS, req
        assert req.profile in profiles, req
        assert req.level in req.summary, req
        assert re.match(r"(\d+(\.\d+)* |Appendix )", req.section), req


def _outside_code(text: str) -> str:
    """The running text of ``text``: no fences, code spans or HTML comments."""
    text = re.sub(r"^(```|~~~).*?^\1[^\n]*$", "", text, flags=re.M | re.S)
    paragraphs = [" ".join(p.split()) for p in re.split(r"\n\s*\n", text)]
    paragraphs = [re.sub(r"(`+).+?\1", "", p) for p in paragraphs]
    return re.sub(r"<!--.*?-->", "", "\n".join(paragraphs))


def test_every_keyword_belongs_to_an_identified_sentence(spec_text: str,
                                                         reqs: list[Requirement]) -> None:
    in_text = _KEYWORD.findall(_outside_code(spec_text))
    in_requirements = [k for req in reqs for k in _KEYWORD.findall(req.summary)]
    assert sorted(in_text) == sorted(in_requirements)
    assert len(re.findall(r"\[[A-Z]+-\d+\]", _outside_code(spec_text))) == len(reqs)


def test_untestable_requirements_carry_reasons(by_id: dict[str, Requirement]) -> None:
    untestable = {rid for rid, req in by_id.items() if req.untestable is not None}
    assert KNOWN_UNTESTABLE <= untestable
    assert all(by_id[rid].untestable for rid in untestable)


def test_load_requirements_matches_the_text(reqs: list[Requirement],
                                           extension_reqs: list[Requirement]) -> None:
    both = [*reqs, *extension_reqs]
    assert sorted(load_requirements(), key=Requirement.sort_key) == sorted(
        both, key=Requirement.sort_key)
    assert set(requirement_index()) == {req.id for req in both}


def test_extension_requirements_stay_in_their_families(
        reqs: list[Requirement], extension_reqs: list[Requirement]) -> None:
    assert extension_reqs
    assert all(req.family in EXTENSION_FAMILIES for req in extension_reqs)
    assert not any(req.family in EXTENSION_FAMILIES for req in reqs)
    extension_profiles = set(json_resource("spec", "extensions.json")["profiles"])
    assert {req.profile for req in extension_reqs} - {"format"} <= extension_profiles
    for req in extension_reqs:
        assert req.level in req.summary, req
        assert re.match(r"(X\d+(\.\d+)* |Appendix )", req.section), req


def test_an_id_in_both_documents_is_refused() -> None:
    core = "## 1. A\n<!-- profile: format -->\nX MUST be. [REC-1]\n"
    with pytest.raises(SpecFormatError):
        render_requirements_json(core, PROFILES, core)
    wrong = "## X1. A\n<!-- profile: format -->\nX MUST be. [REC-2]\n"
    with pytest.raises(SpecFormatError):
        render_requirements_json(core, PROFILES, wrong)


def test_document_order_is_family_then_number(reqs: list[Requirement]) -> None:
    ids = [item["id"] for item in requirements_document(reqs)["requirements"]]
    assert ids[:3] == ["CJ-1", "CJ-2", "CJ-3"]
    assert ids.index("CJ-9") < ids.index("CJ-10") < ids.index("ENC-1")
    assert ids[-1] == "PROTO-9"


# The legality, operation and profile tables are generated: tests/test_spec_tables.py.


PROFILES = ["format", "lifecycle"]


def _parse(text: str) -> list[Requirement]:
    return parse_requirements(text, PROFILES)


def test_a_small_spec_parses() -> None:
    text = (
        "# Title\n\n## 3. Things\n\n<!-- profile: format -->\n"
        "A thing MUST be round. [REC-1]\nIt MAY be red, e.g. `MUST` is code. [REC-2]\n"
        "Plain text with no keyword.\n\n"
        "### 3.2 Transition\n\n<!-- profile: lifecycle -->\n"
        "- A change MUST NOT be silent;\n  it is logged. [LC-1]\n\n"
        "## Appendix A. Untestable requirements\n\n- **REC-2**: cannot be seen.\n"
    )
    reqs = {req.id: req for req in _parse(text)}
    assert reqs["REC-1"] == Requirement("REC-1", "3 Things", "MUST", "format",
                                        "A thing MUST be round.")
    assert reqs["REC-2"].level == "MAY"
    assert reqs["REC-2"].summary == "It MAY be red, e.g. MUST is code."
    assert reqs["REC-2"].untestable == "cannot be seen."
    assert reqs["LC-1"] == Requirement("LC-1", "3.2 Transition", "MUST NOT", "lifecycle",
                                       "A change MUST NOT be silent; it is logged.")


MALFORMED = {
    "duplicate-id": "## 1. A\n<!-- profile: format -->\nX MUST be. [REC-1]\nY MUST be. [REC-1]\n",
    "id-without-keyword": "## 1. A\n<!-- profile: format -->\nX is nice. [REC-1]\n",
    "keyword-without-id": "## 1. A\n<!-- profile: format -->\nX MUST be.\n",
    "keyword-before-tagged-sentence":
        "## 1. A\n<!-- profile: format -->\nX MUST be. Y MUST be. [REC-1]\n",
    "unknown-profile": "## 1. A\n<!-- profile: teleportation -->\nX MUST be. [REC-1]\n",
    "no-profile": "## 1. A\nX MUST be. [REC-1]\n",
    "profile-reset-by-heading":
        "## 1. A\n<!-- profile: format -->\n### 1.1 B\nX MUST be. [REC-1]\n",
    "unknown-family": "## 1. A\n<!-- profile: format -->\nX MUST be. [ZZ-1]\n",
    "other-bcp14-word": "## 1. A\n<!-- profile: format -->\nX SHALL be. [REC-1]\n",
    "untestable-unknown-id":
        "## 1. A\n<!-- profile: format -->\nX MUST be. [REC-1]\n"
        "## Appendix A. Untestable requirements\n- **REC-9**: no.\n",
    "unterminated-fence": "## 1. A\n```\ncode\n",
}


@pytest.mark.parametrize("case", sorted(MALFORMED))
def test_malformed_spec_raises_a_typed_error(case: str) -> None:
    with pytest.raises(SpecFormatError) as info:
        _parse(MALFORMED[case])
    assert isinstance(info.value, MemspecError)
    assert info.value.message


def test_malformed_requirements_document_raises() -> None:
    from memspec._requirements import requirements_from_document

    bad: list[Any] = [None, {"requirements": [{"id": "REC-1"}]},
                      {"requirements": [{"id": "REC-1", "section": "s", "level": "MUSTN'T",
                                         "summary": "x", "profile": "format"}]}]
    for document in bad:
        with pytest.raises(SpecFormatError):
            requirements_from_document(document)
