"""Rendering a conformance report for people: Markdown, HTML and an SVG badge."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import Any

__all__ = ["badge_svg", "report_html", "report_markdown"]

_COLOURS = {"certified": "#2e7d32", "failed": "#c62828", "errored": "#ef6c00",
            "incomplete": "#9e9d24", "partial": "#9e9d24", "not-claimed": "#757575"}


def _profiles(report: Mapping[str, Any]) -> list[tuple[str, str, str]]:
    rows = []
    for name, entry in report["profiles"].items():
        claimed = "always" if entry.get("always") else ("yes" if entry["claimed"] else "no")
        rows.append((name, claimed, entry["verdict"] if entry["claimed"] or
                     entry.get("always") else "not claimed"))
    return rows


def _problems(report: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [r for r in report["requirements"]
            if r["outcome"] in ("failed", "errored") or (r["outcome"] == "partial"
                                                          and r["binding"])]


def _first_message(entry: Mapping[str, Any]) -> tuple[str, str]:
    for test in entry["tests"]:
        if test["outcome"] in ("failed", "errored"):
            message = (test.get("message") or "").strip().splitlines()
            return test["nodeid"], message[0] if message else ""
    return "", entry.get("note", "")


def report_markdown(report: Mapping[str, Any]) -> str:
    """A Markdown summary: engine, verdict, profiles, and every failing requirement."""
    engine = report["engine"]
    counts = report["summary"]["requirements"]
    lines = [
        f"# Conformance report: {engine['name']} {engine.get('version') or ''}".rstrip(),
        "",
        f"- **Verdict:** {report['verdict']}",
        f"- **Spec:** {report['spec_version']} · **kit:** memspec {report['kit']['version']} · "
        f"**mode:** {report['mode']}",
        f"- **Suite digest:** `{report['suite_digest']}`",
        "- **Requirements:** " + ", ".join(f"{n} {k}" for k, n in counts.items()),
        "",
        "## Profiles",
        "",
        "| profile | claimed | verdict | note |",
        "|---|---|---|---|",
    ]
    lines += [f"| {name} | {claimed} | {verdict} | "
              f"{'; '.join(report['profiles'][name].get('notes', []))} |"
              for name, claimed, verdict in _profiles(report)]
    problems = _problems(report)
    lines += ["", "## Requirements not met", ""]
    if not problems:
        lines.append("None: every requirement of every claimed profile passed or is untestable.")
    else:
        lines += ["| requirement | level | profile | outcome | first failing test | message |",
                  "|---|---|---|---|---|---|"]
        for entry in problems:
            nodeid, message = _first_message(entry)
            cells = [entry["id"], entry["level"], entry["profile"], entry["outcome"],
                     f"`{nodeid}`" if nodeid else "", message.replace("|", "\\|")[:200]]
            lines.append("| " + " | ".join(cells) + " |")
    if "signature" in report:
        lines += ["", f"Signed by `{report['signature']['signed_by']}` "
                  "(context conformance-report)."]
    return "\n".join(lines) + "\n"


def report_html(report: Mapping[str, Any]) -> str:
    """A self-contained HTML page of the same summary (no external resources)."""
    engine = report["engine"]
    esc = html.escape
    rows = "".join(
        f"<tr><td>{esc(n)}</td><td>{esc(c)}</td><td class=\"{esc(v)}\">{esc(v)}</td></tr>"
        for n, c, v in _profiles(report))
    problems = ""
    for entry in _problems(report):
        nodeid, message = _first_message(entry)
        problems += (f"<tr><td>{esc(entry['id'])}</td><td>{esc(entry['level'])}</td>"
                     f"<td>{esc(entry['profile'])}</td><td>{esc(entry['outcome'])}</td>"
                     f"<td><code>{esc(nodeid)}</code></td><td>{esc(message[:300])}</td></tr>")
    failing = (f"<table><tr><th>requirement</th><th>level</th><th>profile</th><th>outcome</th>"
               f"<th>test</th><th>message</th></tr>{problems}</table>" if problems
               else "<p>None: every requirement of every claimed profile passed.</p>")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Conformance report: {esc(engine['name'])}</title>
<style>body{{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem}}
table{{border-collapse:collapse;width:100%}}td,th{{border:1px solid #ccc;padding:.3rem .5rem;
text-align:left;vertical-align:top}}.certified{{color:#2e7d32}}.failed{{color:#c62828}}
.errored{{color:#ef6c00}}</style></head><body>
<h1>Conformance report: {esc(engine['name'])} {esc(engine.get('version') or '')}</h1>
<p><strong>Verdict: <span class="{esc(report['verdict'])}">{esc(report['verdict'])}</span></strong>
 · spec {esc(report['spec_version'])} · memspec {esc(report['kit']['version'])} ·
 {esc(report['mode'])}</p>
<h2>Profiles</h2><table><tr><th>profile</th><th>claimed</th><th>verdict</th></tr>{rows}</table>
<h2>Requirements not met</h2>{failing}
</body></html>
"""


def badge_svg(report: Mapping[str, Any]) -> str:
    """A flat badge: "fg-agent-memory/0.1 | <verdict>: <profiles>"."""
    verdict = str(report["verdict"])
    certified = [n for n, e in report["profiles"].items()
                 if e["claimed"] and e["verdict"] == "certified" and not e.get("always")]
    label = "fg-agent-memory/0.1"
    value = f"{verdict}: {len(certified)} profiles" if verdict == "certified" else verdict
    left, right = 7 * len(label) + 12, 7 * len(value) + 12
    colour = _COLOURS.get(verdict, "#757575")
    esc = html.escape
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{left + right}" height="20" '
        f'role="img" aria-label="{esc(label)}: {esc(value)}">'
        f"<title>{esc(label)}: {esc(value)} ({esc(', '.join(certified))})</title>"
        f'<rect width="{left}" height="20" fill="#555"/>'
        f'<rect x="{left}" width="{right}" height="20" fill="{colour}"/>'
        f'<g fill="#fff" font-family="Verdana,DejaVu Sans,sans-serif" font-size="11">'
        f'<text x="6" y="14">{esc(label)}</text>'
        f'<text x="{left + 6}" y="14">{esc(value)}</text></g></svg>\n'
    )
