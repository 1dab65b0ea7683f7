"""spec/SPEC.md's data tables are generated from spec/*.json and current."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_spec_tables",
                                                  ROOT / "tools" / "gen_spec_tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["gen_spec_tables"] = module
    spec.loader.exec_module(module)
    return module


def test_spec_tables_are_current() -> None:
    assert _tool().main(["--check"]) == 0, "run python tools/gen_spec_tables.py"


def test_a_hand_edit_is_caught_and_a_lost_marker_is_an_error() -> None:
    tool = _tool()
    text = (ROOT / "spec" / "SPEC.md").read_text(encoding="utf-8")
    edited = text.replace("| `archived` | `active` | no |", "| `archived` | `active` | yes |")
    assert edited != text and tool.render(edited) == text
    with pytest.raises(ValueError, match="generated operations table"):
        tool.render(text.replace(tool.BEGIN.format(name="operations"), ""))
