"""Lazy public names (PEP 562) whose one list is a module's own ``if TYPE_CHECKING:`` imports.

A package that wants ``import package`` to cost nothing writes its public
imports under ``if TYPE_CHECKING:`` (so type checkers and readers see them)
and hands its module ``__getattr__`` to :func:`lazy_getattr`, which reads that
block from the module's source once and imports a name on its first use.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from functools import cache
from importlib import import_module
from pathlib import Path
from typing import Any

__all__ = ["homes", "lazy_getattr"]


@cache
def homes(source: str) -> dict[str, tuple[str, str]]:
    """Public name -> (module, attribute), from the ``if TYPE_CHECKING:`` imports of the file
    ``source``."""
    tree = ast.parse(Path(source).read_text(encoding="utf-8"))
    guard = next(node for node in tree.body if isinstance(node, ast.If)
                 and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
    return {alias.asname or alias.name: (node.module or "", alias.name)
            for node in guard.body if isinstance(node, ast.ImportFrom)
            for alias in node.names}


def lazy_getattr(module_name: str, source: str,
                 namespace: dict[str, Any]) -> Callable[[str], Any]:
    """A module ``__getattr__`` that imports each name of ``source``'s TYPE_CHECKING block on
    first use and caches it in ``namespace`` (the module's globals)."""

    def __getattr__(name: str) -> Any:
        home = homes(source).get(name)
        if home is None:
            raise AttributeError(f"module {module_name!r} has no attribute {name!r}")
        value = getattr(import_module(home[0]), home[1])
        namespace[name] = value  # the next access is a plain lookup
        return value

    return __getattr__
