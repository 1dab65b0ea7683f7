"""Generate memspec's normative vectors: vectors/<name>.json.

    python tools/gen_vectors.py            write every file
    python tools/gen_vectors.py --check    exit 1 if any file would change
    python tools/gen_vectors.py --out DIR  write into DIR instead of vectors/

Every expected value is computed here from the spec's definitions (see
tools/_vectorlib/primitives.py), never by memspec's code or an engine, and
the primitives are checked against the published golden vectors first. The
output is deterministic: fixed seeds, fixed timestamps, no clock, no
randomness.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _vectorlib import (
    canonical,
    consolidation,
    encodings,
    extension_ops,
    extensions,
    lifecycle,
    recall,
    records,
    signing,
)
from _vectorlib.attribution import own_profile_only
from _vectorlib.decides import assign_decides
from _vectorlib.fixtures import ROOT, self_check

#: Order in which files are generated (and listed by --check).
BUILDERS = (canonical.build, encodings.build_all, records.build_all, signing.build_all,
            lifecycle.build_all, extensions.build_all, extension_ops.build_all,
            recall.build, consolidation.build)


def build() -> dict[str, bytes]:
    """Every vectors file as the exact bytes to write, keyed by file name."""
    self_check()
    docs: list[dict[str, Any]] = []
    for builder in BUILDERS:
        made = builder()
        docs.extend(made if isinstance(made, list) else [made])
    out: dict[str, bytes] = {}
    ids: set[str] = set()
    for doc in docs:
        name = f"{doc['name']}.json"
        assert name not in out, f"two builders made {name}"
        for grp in doc["groups"]:
            own_profile_only(grp)
            assign_decides(grp)
            for test in grp["tests"]:
                assert test["id"] not in ids, test["id"]
                ids.add(test["id"])
        text = json.dumps(doc, indent=2, ensure_ascii=False) + "\n"
        out[name] = text.encode("utf-8")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if any file would change")
    parser.add_argument("--out", type=Path, default=ROOT / "vectors",
                        help="output folder (default: vectors/)")
    args = parser.parse_args(argv)
    files = build()
    if args.check:
        stale = [name for name, data in files.items()
                 if not (args.out / name).is_file() or (args.out / name).read_bytes() != data]
        for name in stale:
            print(f"out of date: {args.out / name}", file=sys.stderr)
        if not stale:
            print(f"{len(files)} vector files up to date")
        return 1 if stale else 0
    args.out.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (args.out / name).write_bytes(data)
    total = sum(json.loads(d)["number_of_tests"] for d in files.values())
    print(f"wrote {len(files)} files, {total} tests, to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
