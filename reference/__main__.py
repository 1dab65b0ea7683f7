"""``python -m memspec.reference``: serve the reference engine over the process protocol."""

from __future__ import annotations

from memspec.reference.engine import serve_main

if __name__ == "__main__":
    raise SystemExit(serve_main())
