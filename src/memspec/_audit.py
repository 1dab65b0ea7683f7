"""The audit report of the x-audit extension profile (spec/EXTENSIONS.md section X7).

A report is built from record histories (every version of every record, oldest
first) and says what happened, never what was remembered: lifecycle history
with reasons, the supersession changelog, redactions (that and why) and,
when the caller knows them, consolidation rejections. Its ``digest`` is the
SHA-256 of its canonical JSON, so the same input always reproduces the same
report and digest. ``render_markdown`` gives the same report for people.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from memspec._canonical import canonical_json, parse_json
from memspec._errors import FileError, RecordError, StoreError
from memspec._file import validate_file
from memspec._record import validate_record

__all__ = [
    "AUDIT_FORMAT",
    "audit_digest",
    "audit_path",
    "build_report",
    "render_markdown",
]

AUDIT_FORMAT = "memspec-audit/1"
_REJECTION_KEYS = ("pass", "detail", "code")


def _versions_of(record_id: str, versions: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    if not versions:
        raise RecordError(f"record {record_id} has no versions")
    out = []
    for version in versions:
        if not isinstance(version, Mapping) or version.get("id") != record_id:
            raise RecordError(f"a version listed under {record_id} is not a version of it")
        out.append({"updated_at": version["updated_at"], "state": version["state"],
                    "state_reason": version["state_reason"]})
    return out


def build_report(histories: Mapping[str, Sequence[Mapping[str, Any]]],
                 rejections: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any]:
    """The audit report of ``histories`` (record id -> versions, oldest first).

    Every version must be a valid record (RecordError otherwise). ``rejections``
    are consolidation rejections ``{pass, detail, code}``, kept in the given order.
    """
    records: list[dict[str, Any]] = []
    supersessions: list[dict[str, Any]] = []
    redactions: list[dict[str, Any]] = []
    for record_id in sorted(histories):
        versions = list(histories[record_id])
        for version in versions:
            validate_record(dict(version))
        latest = versions[-1] if versions else {}
        tombstone = bool(latest.get("redacted"))
        records.append({"id": record_id, "type": latest.get("type"), "redacted": tombstone,
                        "versions": _versions_of(record_id, versions)})
        first = next((v for v in versions if v["state"] == "superseded"), None)
        if first is not None:
            supersessions.append({"id": record_id, "successor": first["superseded_by"],
                                  "at": first["updated_at"], "reason": first["state_reason"]})
        if tombstone:
            redactions.append({"id": record_id, "at": latest["updated_at"],
                               "reason": latest["redaction_reason"]})
    supersessions.sort(key=lambda s: (s["at"], s["id"]))
    kept: list[dict[str, Any]] = []
    for item in rejections:
        if not isinstance(item, Mapping) or not all(
                isinstance(item.get(k), str) for k in _REJECTION_KEYS):
            raise RecordError("a consolidation rejection is {pass, detail, code} strings")
        kept.append({k: item[k] for k in _REJECTION_KEYS})
    return {"format": AUDIT_FORMAT, "records": records, "supersessions": supersessions,
            "redactions": redactions, "rejections": kept}


def audit_digest(report: Mapping[str, Any]) -> str:
    """``sha256:`` + the hex SHA-256 of the report's canonical JSON (XAUD-4)."""
    return "sha256:" + hashlib.sha256(canonical_json(dict(report))).hexdigest()


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(report: Mapping[str, Any]) -> str:
    """The report as Markdown: its digest, then one section per part."""
    lines = ["# Memory audit", "", f"Digest: `{audit_digest(report)}`", "",
             f"{len(report['records'])} records, {len(report['supersessions'])} supersessions, "
             f"{len(report['redactions'])} redactions, {len(report['rejections'])} "
             "consolidation rejections.", "", "## Lifecycle history", ""]
    for record in report["records"]:
        mark = " (redacted)" if record["redacted"] else ""
        lines += [f"### `{record['id']}` {record['type']}{mark}", "",
                  "| updated_at | state | reason |", "|---|---|---|"]
        lines += [f"| {_cell(v['updated_at'])} | {_cell(v['state'])} | "
                  f"{_cell(v['state_reason'])} |" for v in record["versions"]]
        lines.append("")
    sections: list[tuple[str, str, list[str]]] = [
        ("Supersessions", "| record | successor | at | reason |",
         [f"| `{s['id']}` | `{s['successor']}` | {_cell(s['at'])} | {_cell(s['reason'])} |"
          for s in report["supersessions"]]),
        ("Redactions", "| record | at | reason |",
         [f"| `{r['id']}` | {_cell(r['at'])} | {_cell(r['reason'])} |"
          for r in report["redactions"]]),
        ("Consolidation rejections", "| pass | code | detail |",
         [f"| {_cell(r['pass'])} | {_cell(r['code'])} | {_cell(r['detail'])} |"
          for r in report["rejections"]]),
    ]
    for title, header, rows in sections:
        lines += [f"## {title}", ""]
        if rows:
            lines += [header, "|" + "---|" * header.count(" | ") + "---|", *rows]
        else:
            lines.append("None.")
        lines.append("")
    return "\n".join(lines)


def _file_store_histories(root: Path) -> dict[str, list[dict[str, Any]]]:
    histories: dict[str, list[dict[str, Any]]] = {}
    for path in sorted(root.glob("*/" + "[0-9]" * 6 + ".json")):
        try:
            version = parse_json(path.read_bytes())
        except (OSError, ValueError) as exc:
            raise StoreError(f"cannot read {path}: {exc}") from exc
        if not isinstance(version, dict) or not isinstance(version.get("id"), str):
            raise StoreError(f"{path} does not hold a record version")
        histories.setdefault(version["id"], []).append(version)
    return histories


def audit_path(path: str | Path) -> dict[str, Any]:
    """The report of a memory file (one version per record) or a file-store directory.

    A file-store directory (SPEC.md section 12: ``<root>/<hex id>/NNNNNN.json``,
    or a directory holding ``records/`` in that layout) is read version by version.
    """
    target = Path(path)
    if target.is_dir():
        records_dir = target / "records" if (target / "records").is_dir() else target
        return build_report(_file_store_histories(records_dir))
    try:
        raw = target.read_bytes()
    except OSError as exc:
        raise FileError(f"cannot read {target}: {exc}") from exc
    memory_file = validate_file(parse_json(raw))
    return build_report({r["id"]: [r] for r in memory_file["records"]})
