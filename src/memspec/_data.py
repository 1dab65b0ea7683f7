"""Loading memspec's package data (schemas, vectors, spec tables) from the installed package.

The private layer under :mod:`memspec.data`: where a resource is, its parsed JSON (once),
the error for something not there, and the read-only view of parsed JSON. Only
``memspec.data`` and its vectors part (``memspec._data_vectors``) import it.
"""

from __future__ import annotations

import json
from functools import cache
from importlib.resources import files
from importlib.resources.abc import Traversable
from types import MappingProxyType
from typing import Any

from memspec._errors import MemspecError

__all__ = ["DataNotFound", "data_path", "frozen_json", "load_json", "vector_files"]


class DataNotFound(MemspecError, LookupError):
    """Something asked of the package data is not there: a vectors file, a requirement id, a
    state, an operation. ``what`` names the kind, ``name`` what was asked for."""

    __module__ = "memspec.data"  # its public home, as tracebacks and the docs name it
    code = "usage"

    def __init__(self, what: str, name: str, known: tuple[str, ...] = ()) -> None:
        more = " ..." if len(known) > 12 else ""
        hint = f"; known: {', '.join(known[:12])}{more}" if known else ""
        super().__init__(f"no {what} named {name!r} in memspec's package data{hint}")
        self.what = what
        self.name = name


def frozen_json(value: Any) -> Any:
    """A read-only view of parsed JSON (mappings become proxies, lists tuples)."""
    if isinstance(value, dict):
        return MappingProxyType({k: frozen_json(v) for k, v in value.items()})
    if isinstance(value, list):
        return tuple(frozen_json(v) for v in value)
    return value


def data_path(package: str, name: str) -> Traversable:
    """The resource ``name`` inside ``memspec.<package>`` (schemas, spec or vectors)."""
    return files(f"memspec.{package}").joinpath(name)


@cache
def load_json(package: str, name: str) -> Any:
    """Parse a JSON resource once; callers must not mutate the result."""
    return json.loads(data_path(package, name).read_text(encoding="utf-8"))


def vector_files() -> list[str]:
    """Names of every memspec vectors file, sorted."""
    root = files("memspec.vectors")
    return sorted(p.name for p in root.iterdir() if p.name.endswith(".json"))
