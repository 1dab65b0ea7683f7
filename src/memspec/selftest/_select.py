"""pytest plugin the selftest loads (``-p memspec.selftest._select``) to pick kit tests.

``--selftest-index=PATH`` writes every collected kit test (its kit id, the
requirement ids it checks and the profiles it needs) to PATH as JSON.
``--selftest-only=PATH`` keeps only the kit tests whose kit ids PATH lists
(a JSON array) and deselects the rest, which the kit reports as not run.

The selftest only needs to know *whether* the kit catches a fault, so this
plugin also turns off hypothesis's shrinking (finding the smallest failing
example), which would otherwise dominate the time of every caught fault.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

__all__: list[str] = []


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("memspec-selftest", "memspec selftest (kit test selection)")
    group.addoption("--selftest-index", dest="selftest_index", metavar="PATH", default=None,
                    help="write the collected kit tests with their requirements to PATH")
    group.addoption("--selftest-only", dest="selftest_only", metavar="PATH", default=None,
                    help="run only the kit tests whose ids the JSON array in PATH lists")


@pytest.hookimpl(trylast=True)
def pytest_configure(config: pytest.Config) -> None:
    from hypothesis import Phase, settings

    # After the kit loaded its own profile: the same settings, minus shrinking.
    settings.register_profile("memspec-selftest", parent=settings.default,
                              phases=[Phase.explicit, Phase.reuse, Phase.generate])
    settings.load_profile("memspec-selftest")


def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    from memspec.conformance._outcomes import KitItem
    from memspec.conformance.plugin import kit_id

    index_path = config.getoption("selftest_index")
    only_path = config.getoption("selftest_only")
    if index_path:
        entries: list[dict[str, Any]] = []
        for item in items:
            ident = kit_id(item)
            if ident is not None:
                marked = KitItem.of(item, ident)
                entries.append({"id": ident, "module": item.path.stem,
                                "requirements": list(marked.requirements),
                                "profiles": list(marked.profiles)})
        Path(index_path).write_text(json.dumps(entries), encoding="utf-8")
    if only_path:
        wanted = set(json.loads(Path(only_path).read_text(encoding="utf-8")))
        keep: list[pytest.Item] = []
        drop: list[pytest.Item] = []
        for item in items:
            ident = kit_id(item)
            (keep if ident is None or ident in wanted else drop).append(item)
        if drop:
            config.hook.pytest_deselected(items=drop)
            items[:] = keep
