"""The one loader tests use for vectors files: each test case becomes a ``pytest.param``."""

from __future__ import annotations

from typing import Any

import pytest

from memspec.data import json_resource


def load_vector_cases(name: str) -> list[Any]:
    """Every test of ``vectors/<name>.json`` as ``pytest.param(case, id=<test id>)``.

    ``case`` is the test object plus its group's ``operation``, ``profile`` and ``group``.
    """
    doc = json_resource("vectors", name if name.endswith(".json") else f"{name}.json")
    return [
        pytest.param({**test, "operation": grp["operation"], "profile": grp["profile"],
                      "group": grp["id"]}, id=test["id"])
        for grp in doc["groups"]
        for test in grp["tests"]
    ]
