"""``python -m memspec.selftest``: run the selftest (the same as ``memspec selftest``)."""

from __future__ import annotations

from memspec.cli._selftest import main

if __name__ == "__main__":
    raise SystemExit(main())
