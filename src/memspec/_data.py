"""Loading memspec's package data (schemas, vectors, spec tables) from the installed package."""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from typing import Any

__all__ = ["data_path", "load_json", "load_spec_text", "load_vectors", "vector_files"]


def data_path(package: str, name: str) -> Traversable:
    """The resource ``name`` inside ``memspec.<package>`` (schemas, spec or vectors)."""
    return files(f"memspec.{package}").joinpath(name)


@cache
def load_json(package: str, name: str) -> Any:
    """Parse a JSON resource once; callers must not mutate the result."""
    return json.loads(data_path(package, name).read_text(encoding="utf-8"))


def load_vectors(name: str) -> Any:
    """A vectors file by file name, e.g. ``load_vectors("canonical-json.json")``."""
    return load_json("vectors", name)


def vector_files() -> list[str]:
    """Names of every memspec vectors file, sorted."""
    root = files("memspec.vectors")
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".json"))


def load_spec_text() -> str:
    """The normative specification text (SPEC.md)."""
    return data_path("spec", "SPEC.md").read_text(encoding="utf-8")
