"""The golden vectors of memspec's package data, typed (the vectors part of :mod:`memspec.data`).

``memspec.data`` re-exports every public name here; import them from there. A vectors file
is parsed once into frozen :class:`VectorFile` / :class:`VectorGroup` / :class:`VectorCase`
values; the published fg-agent-memory and fg-agent-id files are read-only JSON, verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from types import MappingProxyType
from typing import Any

from memspec._data import DataNotFound, data_path, frozen_json, load_json
from memspec._data import vector_files as all_json_files

__all__ = ["VectorCase", "VectorFile", "VectorGroup", "published", "vector_files", "vectors"]


@dataclass(frozen=True)
class VectorCase:
    """One golden vector: run ``operation`` with ``args`` after putting ``setup``."""

    file: str
    group: str
    operation: str
    profile: str
    id: str
    comment: str
    valid: bool
    args: Mapping[str, Any]
    requirements: tuple[str, ...] = ()
    #: Of several requirements, the one a wrong answer breaks (None: it lists one).
    decides: str | None = None
    flags: tuple[str, ...] = ()
    #: The expected result members of a valid case.
    expected: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    #: The error class of an invalid case.
    error: str | None = None
    setup: tuple[Mapping[str, Any], ...] = ()
    #: The case exactly as the file has it (every member, including ones this type does not name).
    raw: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}), repr=False)


@dataclass(frozen=True)
class VectorGroup:
    """A group of cases sharing one operation and profile."""

    id: str
    comment: str
    operation: str
    profile: str
    cases: tuple[VectorCase, ...]
    #: Per result key, the members each entry of that result list is compared on.
    project: Mapping[str, tuple[str, ...]] = field(
        default_factory=lambda: MappingProxyType({}))


@dataclass(frozen=True)
class VectorFile:
    """One of memspec's vectors files."""

    name: str
    description: str
    groups: tuple[VectorGroup, ...]
    notes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def cases(self) -> Iterator[VectorCase]:
        """Every case of every group, in file order."""
        for group in self.groups:
            yield from group.cases

    def case(self, case_id: str) -> VectorCase:
        """One case by id; DataNotFound if the file has none such."""
        for case in self.cases():
            if case.id == case_id:
                return case
        raise DataNotFound(f"vector case in {self.name}", case_id)


def vector_files() -> tuple[str, ...]:
    """The names of memspec's operation vectors files (those made of groups), sorted."""
    return tuple(n for n in all_json_files() if "groups" in load_json("vectors", n))


def _case(file: str, group: dict[str, Any], raw: dict[str, Any]) -> VectorCase:
    valid = raw["result"] == "valid"
    return VectorCase(
        file=file, group=group["id"], operation=group["operation"], profile=group["profile"],
        id=raw["id"], comment=raw.get("comment", ""), valid=valid,
        args=frozen_json(raw.get("args", {})), requirements=tuple(raw.get("requirements", ())),
        decides=raw.get("decides"),
        flags=tuple(raw.get("flags", ())), expected=frozen_json(raw.get("expected", {})),
        error=raw.get("error"), setup=frozen_json(raw.get("setup", [])), raw=frozen_json(raw),
    )


@cache
def vectors(name: str) -> VectorFile:
    """A vectors file by name (``"records.json"``; the ``.json`` may be left out)."""
    file = name if name.endswith(".json") else f"{name}.json"
    known = vector_files()
    if file not in known:
        raise DataNotFound("vectors file", name, known)
    raw = load_json("vectors", file)
    groups = tuple(
        VectorGroup(g["id"], g.get("comment", ""), g["operation"], g["profile"],
                    tuple(_case(file, g, c) for c in g["tests"]),
                    MappingProxyType({k: tuple(v) for k, v in g.get("project", {}).items()}))
        for g in raw["groups"]
    )
    return VectorFile(file, raw.get("description", ""), groups,
                      MappingProxyType(dict(raw.get("notes", {}))))


@cache
def published(name: str) -> Mapping[str, Any]:
    """A verbatim published vectors file (``vectors/published``), read-only, by file name
    (``"fg-agent-memory-0.1.json"``, ``"fg-agent-id-0.2.json"``)."""
    root = data_path("vectors", "published")
    known = tuple(sorted(p.name for p in root.iterdir() if p.name.endswith(".json")))
    if name not in known:
        raise DataNotFound("published vectors file", name, known)
    value: Mapping[str, Any] = frozen_json(load_json("vectors", f"published/{name}"))
    return value
