"""The benchmarks page: the latest committed ``benchmarks/results.json`` as a table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _docgen._common import GEN, cell, code, front, text

PAGE = f"{GEN}/benchmarks.md"


def _figure(side: dict[str, Any] | None) -> str:
    if not side or side.get("value") is None:
        return ""
    return f"{side['value']:,} {side.get('unit', '')}".strip()


def build(results: dict[str, Any] | None) -> dict[str, bytes]:
    """The page, from a results document (shape ``schemas/benchmark-results.json``)."""
    lines = [front("Benchmarks", "memspec's speed as ratios against baselines in the same run.")]
    if results is None:
        lines.append("No `benchmarks/results.json` was found: run `python -m benchmarks.run`.")
        return {PAGE: ("\n".join(lines) + "\n").encode()}
    lines += [
        f"Mode **{results.get('mode', '?')}**, measured {results.get('created_at', '?')}. "
        "Each ratio is memspec against a baseline measured in the same run (medians of "
        "paired repeats); goals not met carry their gap and cause. Run "
        "`python -m benchmarks.run` (add `--quick` for a short run) to measure again.",
        "",
        "| benchmark | memspec | baseline | ratio | goal | status |",
        "|---|---|---|---|---|---|",
    ]
    notes: list[str] = []
    for entry in results.get("results", []):
        ratio = entry.get("ratio")
        lines.append("| " + " | ".join(cell(v) for v in (
            code(entry["name"]), _figure(entry.get("subject")), _figure(entry.get("baseline")),
            f"{ratio:.3f}" if isinstance(ratio, int | float) else "",
            text(entry.get("goal", {}).get("text", "")), entry.get("status", ""))) + " |")
        if entry.get("status") not in ("met", None):
            why = " ".join(str(entry.get(k, "")) for k in ("gap", "cause") if entry.get(k))
            notes.append(f"- {code(entry['name'])}: {text(why)}")
    if notes:
        lines += ["", "## Goals not met, and why", "", *notes]
    return {PAGE: ("\n".join(lines) + "\n").encode()}


def load(root: Path) -> dict[str, Any] | None:
    """The committed results, if any."""
    import json

    path = root / "benchmarks" / "results.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None
