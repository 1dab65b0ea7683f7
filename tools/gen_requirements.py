"""Regenerate spec/requirements.json from spec/SPEC.md and spec/EXTENSIONS.md.

Usage (from anywhere; paths are relative to this repository):

    python tools/gen_requirements.py          # rewrite spec/requirements.json
    python tools/gen_requirements.py --check  # exit 1 if it is stale

The output is deterministic: requirements sorted by family order then number,
``json.dumps(indent=2, ensure_ascii=False)`` plus a final newline.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "spec" / "SPEC.md"
OUTPUT = ROOT / "spec" / "requirements.json"
EXTENSIONS = ROOT / "spec" / "EXTENSIONS.md"
OPERATIONS = ROOT / "spec" / "operations.json"
EXTENSION_TABLE = ROOT / "spec" / "extensions.json"

try:
    from memspec._requirements import render_requirements_json
except ImportError:  # run from a checkout without an installed memspec
    sys.path.insert(0, str(ROOT / "src"))
    from memspec._requirements import render_requirements_json


def render() -> str:
    """The text requirements.json must have for the current SPEC.md and EXTENSIONS.md."""
    profiles = [*json.loads(OPERATIONS.read_text(encoding="utf-8"))["profiles"],
                *json.loads(EXTENSION_TABLE.read_text(encoding="utf-8"))["profiles"]]
    return render_requirements_json(SPEC.read_text(encoding="utf-8"), profiles,
                                    EXTENSIONS.read_text(encoding="utf-8"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if spec/requirements.json is not up to date")
    options = parser.parse_args(argv)
    text = render()
    current = OUTPUT.read_text(encoding="utf-8") if OUTPUT.exists() else None
    if options.check:
        if current != text:
            print(f"{OUTPUT.relative_to(ROOT)} is stale: run python tools/gen_requirements.py",
                  file=sys.stderr)
            return 1
        return 0
    if current != text:
        OUTPUT.write_text(text, encoding="utf-8", newline="\n")
        print(f"wrote {OUTPUT.relative_to(ROOT)} ({json.loads(text)['count']} requirements)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
