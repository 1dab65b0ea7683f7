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

from typing import TYPE_CHECKING

from memspec._lazy import lazy_getattr

# Imported on first use, so that merely having the plugin installed costs a pytest run
# nothing; this block is the one list of homes (memspec._lazy reads it).
if TYPE_CHECKING:
    from memspec.conformance._clock import KitClock
    from memspec.conformance._loading import (
        EngineLoadError,
        available_engines,
        load_engine,
        process_engine,
    )
    from memspec.conformance._outcomes import catalogue
    from memspec.conformance._report import (
        build_report,
        check_report,
        sign_report,
        verify_report,
    )
    from memspec.conformance._session import Connection, EngineSession
    from memspec.conformance._smoke import SmokeResult, smoke
    from memspec.conformance._summary import render_summary

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

__getattr__ = lazy_getattr(__name__, __file__, globals())
