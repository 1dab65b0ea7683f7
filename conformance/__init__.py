"""The memspec conformance kit: certify any engine against fg-agent-memory/0.1.

Run it with pytest (the plugin is installed with memspec)::

    pytest --pyargs memspec.conformance --memspec-engine=reference
    pytest --pyargs memspec.conformance --memspec-engine-cmd="./my-engine --stdio" \\
        --memspec-report=report.json

The kit talks to engines only through :class:`memspec.Engine` (in-process) or
the NDJSON process protocol (:mod:`memspec.protocol`); it never imports the
reference engine. The names below are loaded on first use, so that merely
having the plugin installed costs a pytest run nothing.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = [
    "Connection",
    "EngineLoadError",
    "EngineSession",
    "KitClock",
    "SmokeResult",
    "available_engines",
    "build_report",
    "catalogue",
    "check_report",
    "load_engine",
    "process_engine",
    "render_summary",
    "sign_report",
    "smoke",
    "verify_report",
]

_HOMES = {
    "Connection": "_session",
    "EngineSession": "_session",
    "SmokeResult": "_session",
    "smoke": "_session",
    "EngineLoadError": "_loading",
    "available_engines": "_loading",
    "load_engine": "_loading",
    "process_engine": "_loading",
    "KitClock": "_clock",
    "build_report": "_report",
    "check_report": "_report",
    "render_summary": "_report",
    "sign_report": "_report",
    "verify_report": "_report",
    "catalogue": "_outcomes",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'memspec.conformance' has no attribute {name!r}")
    return getattr(import_module(f"memspec.conformance.{home}"), name)
