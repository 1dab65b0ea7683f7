"""Finding the engine under test: an entry point name, ``module:callable``, or a command.

In-process engines are published under the ``memspec.engines`` entry point
group (the callable returns an :class:`~memspec.Engine`); any other engine is
a command speaking the process protocol (:class:`memspec.protocol.ProcessEngine`).
"""

from __future__ import annotations

import importlib
import shlex
from collections.abc import Callable, Sequence
from importlib.metadata import entry_points
from typing import Any

from memspec._errors import MemspecError
from memspec.engine import Engine
from memspec.protocol import ProcessEngine

__all__ = [
    "ENTRY_POINT_GROUP",
    "EngineLoadError",
    "available_engines",
    "load_engine",
    "process_engine",
]

ENTRY_POINT_GROUP = "memspec.engines"


class EngineLoadError(MemspecError):
    """The engine named on the command line cannot be found, imported or built."""

    code = "usage"


def available_engines() -> dict[str, str]:
    """Installed in-process engines: entry point name -> ``module:callable``."""
    return {ep.name: ep.value for ep in entry_points(group=ENTRY_POINT_GROUP)}


def _listing() -> str:
    found = available_engines()
    if not found:
        return f"no engines are installed under the {ENTRY_POINT_GROUP!r} entry point group"
    return "installed engines: " + ", ".join(f"{k} ({v})" for k, v in sorted(found.items()))


def _resolve(spec: str) -> Callable[..., Any]:
    if ":" in spec:
        module_name, _, attr = spec.partition(":")
        try:
            target: Any = importlib.import_module(module_name)
        except Exception as exc:
            raise EngineLoadError(
                f"cannot import {module_name!r} for engine {spec!r}: {type(exc).__name__}: {exc}"
            ) from exc
        for part in attr.split("."):
            try:
                target = getattr(target, part)
            except AttributeError:
                raise EngineLoadError(f"{module_name!r} has no attribute {attr!r}") from None
        if not callable(target):
            raise EngineLoadError(f"engine factory {spec!r} is not callable")
        return target  # type: ignore[no-any-return]
    matches = [ep for ep in entry_points(group=ENTRY_POINT_GROUP) if ep.name == spec]
    if not matches:
        raise EngineLoadError(
            f"no engine named {spec!r}; {_listing()}. Use NAME, module:callable, or "
            "--memspec-engine-cmd for a process engine"
        )
    try:
        loaded: Callable[..., Any] = matches[0].load()
    except Exception as exc:
        raise EngineLoadError(
            f"engine entry point {spec!r} ({matches[0].value}) failed to import: "
            f"{type(exc).__name__}: {exc}"
        ) from exc
    return loaded


def load_engine(spec: str) -> Engine:
    """Build an in-process engine from an entry point name or ``module:callable``."""
    if not spec or not spec.strip():
        raise EngineLoadError(f"empty engine name; {_listing()}")
    factory = _resolve(spec.strip())
    try:
        engine = factory()
    except Exception as exc:
        raise EngineLoadError(
            f"engine factory {spec!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    if not isinstance(engine, Engine):
        raise EngineLoadError(
            f"engine factory {spec!r} returned {type(engine).__name__}, which lacks the "
            "memspec.Engine methods describe(), call(operation, arguments) and close()"
        )
    return engine


def process_engine(
    command: str | Sequence[str], *, timeout: float = 10.0, cwd: str | None = None
) -> ProcessEngine:
    """A process engine from a command line (a string is shlex-split)."""
    try:
        argv = shlex.split(command) if isinstance(command, str) else list(command)
    except ValueError as exc:  # unbalanced quotes
        raise EngineLoadError(f"cannot split the engine command {command!r}: {exc}") from None
    if not argv:
        raise EngineLoadError("empty engine command")
    try:
        return ProcessEngine(argv, timeout=timeout, cwd=cwd)
    except ValueError as exc:
        raise EngineLoadError(str(exc)) from exc
