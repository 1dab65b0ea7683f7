"""Layers point downward: the rules of the package's import graph, checked on the source.

Every import statement counts, a lazy one inside a function too: a lazy import
of the reference engine from the kit is still the kit depending on the
reference. The graph is read from the source with ``ast``, so no module runs.
"""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: Source folders and the package each one is (pyproject.toml's package-dir).
FOLDERS = {"src/memspec": "memspec", "conformance": "memspec.conformance",
           "reference": "memspec.reference"}
#: Modules that are the format's primitives: they import nothing above themselves.
PRIMITIVES = ("memspec._canonical", "memspec._encoding", "memspec._unicode", "memspec._errors",
              "memspec._signing", "memspec._record", "memspec._data", "memspec._data_vectors",
              "memspec.data", "memspec._display")
ABOVE_PRIMITIVES = ("memspec.cli", "memspec.conformance", "memspec.reference",
                    "memspec.selftest", "memspec.protocol")
#: The places where the core package deliberately runs the reference engine, and why.
REFERENCE_SEAMS = {
    "memspec.selftest.engines": "the self-test proves the kit by wrapping the reference engine "
                                "in faults; this module is the one place that builds it",
}


@cache
def _modules() -> dict[str, Path]:
    found: dict[str, Path] = {}
    for folder, package in FOLDERS.items():
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT / folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            found[".".join([package, *parts])] = path
    return found


@cache
def _imports(module: str) -> frozenset[str]:
    path = _modules()[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    is_package = path.name == "__init__.py"
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base if is_package else base[:-1]
                base = base[: len(base) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names.add(target)
            # "from memspec import reference" imports a submodule, not a name.
            names.update(f"{target}.{alias.name}" for alias in node.names
                         if f"{target}.{alias.name}" in _modules())
    return frozenset(n for n in names if n == "memspec" or n.startswith("memspec."))


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _reaches(start: str, target: str, *, stop: frozenset[str] = frozenset()) -> list[str] | None:
    """An import path from ``start`` to a module under ``target`` (None if there is none)."""
    seen = {start}
    queue: list[list[str]] = [[start]]
    while queue:
        path = queue.pop(0)
        for name in sorted(_imports(path[-1])):
            if _under(name, target):
                return [*path, name]
            # "import memspec" runs memspec/__init__ only; a module imports its package's too.
            for step in {name, *(p for p in _parents(name))}:
                if step in _modules() and step not in seen and step not in stop:
                    seen.add(step)
                    queue.append([*path, step])
    return None


def _parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def test_the_source_tree_is_read() -> None:
    assert {"memspec.conformance.plugin", "memspec.reference.engine", "memspec._canonical",
            "memspec.selftest.engines"} <= set(_modules())


@pytest.mark.parametrize("module", sorted(m for m in _modules()
                                          if _under(m, "memspec.conformance")))
def test_the_kit_never_reaches_the_reference(module: str) -> None:
    path = _reaches(module, "memspec.reference")
    assert path is None, f"the kit reaches the reference engine: {' -> '.join(path or [])}"


@pytest.mark.parametrize("module", PRIMITIVES)
def test_primitives_import_nothing_above_them(module: str) -> None:
    above = sorted(n for n in _imports(module) if any(_under(n, p) for p in ABOVE_PRIMITIVES))
    assert not above, f"{module} imports {above}"


@pytest.mark.parametrize("module", sorted(m for m in _modules() if _under(m, "memspec")
                                          and not _under(m, "memspec.reference")
                                          and not _under(m, "memspec.conformance")))
def test_the_core_reaches_the_reference_only_through_its_seams(module: str) -> None:
    if module in REFERENCE_SEAMS:
        return
    path = _reaches(module, "memspec.reference", stop=frozenset(REFERENCE_SEAMS))
    assert path is None, (
        f"{module} reaches the reference engine outside the named seams "
        f"({', '.join(REFERENCE_SEAMS)}): {' -> '.join(path or [])}")


@pytest.mark.parametrize("module", sorted(m for m in _modules()
                                          if _under(m, "memspec.reference")))
def test_the_reference_never_reaches_the_command_line(module: str) -> None:
    # The reference's own programs (memspec-mcp, the process engine) take what they share
    # with the command line (key files, say) from the core, never from memspec.cli.
    path = _reaches(module, "memspec.cli")
    assert path is None, f"the reference reaches the command line: {' -> '.join(path or [])}"


def test_the_seams_are_real() -> None:
    for seam in REFERENCE_SEAMS:
        assert any(_under(n, "memspec.reference") for n in _imports(seam)), (
            f"{seam} no longer imports the reference: drop it from REFERENCE_SEAMS")


def test_the_detector_finds_a_real_path() -> None:
    # The seam itself reaches the reference: proof that _reaches can say yes.
    assert _reaches("memspec.selftest.engines", "memspec.reference") is not None
    assert _reaches("memspec.cli", "memspec.reference") is not None  # through the seams


#: The public door to the package data, and its private parts: the loader and the vectors.
DATA_DOOR = "memspec.data"
PRIVATE_DATA = ("memspec._data", "memspec._data_vectors")
#: Who may import each private part: the door, and the vectors part the loader.
DATA_IMPORTERS = {"memspec._data": {DATA_DOOR, "memspec._data_vectors"},
                  "memspec._data_vectors": {DATA_DOOR}}
#: Folders of the repository with Python that is not the package itself.
PROGRAMS = ("tests", "tools", "benchmarks", "fuzz", "examples")


_PRIVATE_LOADER = re.compile(r"\b(?:import memspec\.(_data(?:_vectors)?)"
                             r"|from memspec\.(_data(?:_vectors)?) import"
                             r"|from memspec import ([_]data(?:_vectors)?))\b")


def _imports_of_file(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and not node.level:
            names.add(node.module or "")
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            # Code run in a child interpreter (python -c) counts as well.
            for found in _PRIVATE_LOADER.finditer(node.value):
                names.add("memspec." + next(g for g in found.groups() if g))
    return names


def test_only_memspec_data_loads_the_package_data() -> None:
    offenders = sorted(f"{m} imports {part}" for part in PRIVATE_DATA for m in _modules()
                       if m not in DATA_IMPORTERS[part] and m != part
                       and part in _imports(m))
    offenders += sorted(f"{p.relative_to(ROOT)} imports {part}" for folder in PROGRAMS
                        for p in sorted((ROOT / folder).rglob("*.py")) for part in PRIVATE_DATA
                        if part in _imports_of_file(p))
    assert not offenders, (f"{', '.join(offenders)}: the package data is loaded through its "
                           "private parts; use the public, typed memspec.data")
    assert {"memspec._data", "memspec._data_vectors"} <= _imports(DATA_DOOR)


def test_the_data_door_check_sees_an_offender(tmp_path: Path) -> None:
    probe = tmp_path / "probe.py"
    # Spelt in parts so that this file is no offender itself.
    probe.write_text("def f() -> None:\n    from memspec import " + "_data\n", encoding="utf-8")
    assert "memspec._data" in _imports_of_file(probe)
    private = "memspec." + "_data"
    probe.write_text(f'CODE = "import {private}"\n', encoding="utf-8")
    assert "memspec._data" in _imports_of_file(probe)
    probe.write_text(f"from {private}_vectors import vectors\n", encoding="utf-8")
    assert "memspec._data_vectors" in _imports_of_file(probe)
    probe.write_text(f'CODE = "from {private}_vectors import vectors"\n', encoding="utf-8")
    assert "memspec._data_vectors" in _imports_of_file(probe)


#: The reference's porcelain: it re-exports names of its parts for its users, but the
#: reference's own modules import each name from the module that defines it.
PORCELAIN = "memspec.reference.memory"


def _top_level_imports(module: str) -> set[str]:
    tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
    return {alias.asname or alias.name for node in tree.body
            if isinstance(node, ast.ImportFrom) for alias in node.names}


def test_the_reference_never_reaches_through_its_porcelain() -> None:
    borrowed = _top_level_imports(PORCELAIN)
    offenders = []
    for module in sorted(m for m in _modules() if _under(m, "memspec")):
        if module == "memspec.reference":  # the package re-exports the porcelain's names
            continue
        tree = ast.parse(_modules()[module].read_text(encoding="utf-8"))
        offenders += [f"{module} imports {alias.name} from {PORCELAIN}"
                      for node in ast.walk(tree)
                      if isinstance(node, ast.ImportFrom) and node.module == PORCELAIN
                      for alias in node.names if alias.name in borrowed]
    assert not offenders, "; ".join(offenders)
    assert {"export_file", "load_file"} <= borrowed  # the check sees the re-exported names
