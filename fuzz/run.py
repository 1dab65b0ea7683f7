"""Run one memspec fuzz target under atheris (libFuzzer, coverage-guided).

    python fuzz/run.py TARGET [CORPUS_DIR] [libFuzzer options...]
    python fuzz/run.py --list
    python fuzz/run.py --seed TARGET CORPUS_DIR     # write the seed corpus, then exit

Targets are defined in fuzz/targets.py. See fuzz/README.md for the long runs.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _write_seeds(target: str, folder: Path) -> int:
    sys.path.insert(0, str(HERE))
    from targets import seeds

    folder.mkdir(parents=True, exist_ok=True)
    corpus = seeds(target)
    for data in corpus:
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    print(f"wrote {len(corpus)} seeds for {target} to {folder}")
    return 0


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__)
        return 2
    if argv[0] == "--list":
        sys.path.insert(0, str(HERE))
        from targets import TARGETS

        print("\n".join(sorted(TARGETS)))
        return 0
    if argv[0] == "--seed":
        if len(argv) != 3:
            print(__doc__, file=sys.stderr)
            return 2
        return _write_seeds(argv[1], Path(argv[2]))
    try:
        import atheris
    except ImportError:
        print("atheris is not installed: pip install atheris", file=sys.stderr)
        return 2
    target_name = argv[0]
    sys.path.insert(0, str(HERE))
    with atheris.instrument_imports(include=["memspec"]):
        # Imported inside the block so that memspec's bytecode is instrumented for coverage.
        from targets import TARGETS

        import memspec.protocol
        import memspec.reference.engine

        assert memspec.protocol.serve and memspec.reference.engine.create_engine
    if target_name not in TARGETS:
        print(f"unknown target {target_name!r}; one of {sorted(TARGETS)}", file=sys.stderr)
        return 2
    target = TARGETS[target_name]
    atheris.Setup([sys.argv[0], *argv[1:]], target)
    atheris.Fuzz()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
