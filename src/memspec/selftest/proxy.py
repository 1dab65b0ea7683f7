"""``python -m memspec.selftest.proxy --fault NAME``: a faulty engine process.

It starts ``memspec-reference-engine`` (the console script next to this
Python, or ``python -m memspec.reference`` when there is none), speaks to it
over the process protocol and serves it, with the fault applied, on its own
stdin/stdout: a proxy that alters the reference engine's answers.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main", "reference_command"]


def reference_command() -> list[str]:
    """The command that runs the reference engine process for this Python."""
    here = Path(sys.executable).parent
    for name in ("memspec-reference-engine", "memspec-reference-engine.exe"):
        candidate = here / name
        if candidate.is_file():
            return [str(candidate)]
    found = shutil.which("memspec-reference-engine")
    if found and Path(found).parent == here:
        return [found]
    return [sys.executable, "-m", "memspec.reference"]


def main(argv: Sequence[str] | None = None) -> int:
    """Serve the reference engine behind one fault over stdin/stdout."""
    from memspec.selftest.faults import UnknownFaultError, all_faults, fault_named

    parser = argparse.ArgumentParser(
        prog="python -m memspec.selftest.proxy",
        description="serve memspec-reference-engine with one fault applied")
    parser.add_argument("--fault", required=True, metavar="NAME",
                        help="the fault to apply (see `memspec selftest --list`)")
    parser.add_argument("--narrow", action="store_true",
                        help="claim only the fault's profile and the profiles it requires")
    parser.add_argument("--timeout", type=float, default=30.0, metavar="SECONDS",
                        help="per-request timeout towards the reference engine (default 30)")
    options = parser.parse_args(argv)
    try:
        fault = fault_named(options.fault)
    except UnknownFaultError:
        parser.error(f"unknown fault {options.fault!r}; known: "
                     + ", ".join(f.name for f in all_faults()))
    from memspec.protocol import ProcessEngine, serve
    from memspec.selftest.engines import FaultyEngine, narrow_claim

    inner = ProcessEngine(reference_command(), timeout=options.timeout)
    return serve(FaultyEngine(inner, fault, narrow_claim(fault) if options.narrow else None))


if __name__ == "__main__":
    raise SystemExit(main())
