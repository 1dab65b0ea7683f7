"""Subcommands over memory files and records: validate, verify, id, canonicalize,
fingerprint, diff, merge."""

from __future__ import annotations

import argparse
from typing import Any

from memspec._bundle import diff_records, fingerprint, merge_records
from memspec._canonical import canonical_json
from memspec._errors import FileError, MemspecError, RecordError, SignatureError
from memspec._file import FORMAT_VERSION, validate_file, verify_file
from memspec._graph import Problem, first_problems
from memspec._record import birth_digest, record_id, verify_record
from memspec.cli import _args
from memspec.cli._io import Input, UsageError, emit, read_input, write_output

__all__ = ["register"]


_NOT_RECORDS = ("input is neither a record, a list of records nor a memory file (JSONL is read "
                "with --jsonl)")


def record_set(loaded: Input) -> tuple[dict[str, Any], ...]:
    """The records of an input that documents a set of records; MemspecError for anything else.

    A memory file whose ``records`` is not an array, a value that is neither a record
    nor a memory file, or a list with a member that is not an object is refused here,
    never read as an empty or partial set.
    """
    if loaded.kind == "value":
        raise RecordError(f"{loaded.path}: {_NOT_RECORDS}", requirement="REC-1")
    if loaded.kind == "file" and not isinstance(loaded.value["records"], list):
        raise FileError(f"{loaded.path}: records must be an array", pointer="/records",
                        requirement="FILE-1")
    for index, record in enumerate(loaded.records):
        if not isinstance(record, dict):
            raise RecordError(f"{loaded.path}: record {index} is a JSON "
                              f"{_json_type(record)}, not an object", requirement="REC-1")
    return loaded.records


def _json_type(value: object) -> str:
    names = {bool: "boolean", int: "number", float: "number", str: "string", list: "array",
             type(None): "null"}
    return names.get(type(value), type(value).__name__)


#: The subcommands that read JSONL when --jsonl asks them to (never by guessing).
_READS_JSONL = frozenset({"validate", "verify", "id", "canonicalize", "fingerprint", "diff",
                          "merge"})

#: Problems reported per input unless --max-problems says otherwise; the rest are counted.
MAX_PROBLEMS = 100


def _problem_limit(text: str) -> int:
    """A --max-problems value: an integer from 0 up, else a usage error."""
    if not text.isascii() or not text.isdigit():
        raise argparse.ArgumentTypeError(f"not a count of problems: {text!r}")
    return int(text)


def _problems_for(loaded: Input, limit: int) -> tuple[list[Problem], int]:
    """The first ``limit`` problems of an input and how many it has in all."""
    if loaded.kind == "value":
        return [Problem(0, None, "", "REC-1", _NOT_RECORDS)], 1
    header: list[Problem] = []
    if loaded.kind == "file":
        if not isinstance(loaded.value["records"], list):
            return [Problem(-1, None, "/records", "FILE-1", "records must be an array, not a "
                            f"JSON {_json_type(loaded.value['records'])}")], 1
        try:
            validate_file({**loaded.value, "records": []})
        except MemspecError as exc:
            header.append(Problem(-1, None, exc.pointer or "", exc.requirement, exc.message))
    problems, total = first_problems(loaded.records, limit=max(limit - len(header), 0))
    return [*header, *problems][:limit], total + len(header)


def _where(loaded: Input, problem: Problem) -> str:
    base = "/records" if loaded.kind == "file" else ""
    if problem.index < 0 or loaded.kind in ("record", "value"):
        pointer = problem.pointer
    elif loaded.kind == "jsonl":
        return f"{loaded.path}:{problem.index + 1}{problem.pointer or ''}"
    else:
        pointer = f"{base}/{problem.index}{problem.pointer}"
    return f"{loaded.path}#{pointer or '/'}"


def cmd_validate(args: argparse.Namespace) -> int:
    reports: list[dict[str, Any]] = []
    failed = False
    lines: list[str] = []
    for path in args.paths:
        try:
            loaded = read_input(path, jsonl=args.jsonl)
            problems, total = _problems_for(loaded, args.max_problems)
        except MemspecError as exc:
            loaded = Input(path, "value", None, ())
            problems = [Problem(0, None, exc.pointer or "", exc.requirement, exc.message)]
            total = 1
        failed = failed or total > 0
        reports.append({"path": path, "kind": loaded.kind, "records": len(loaded.records),
                        "valid": total == 0, "problem_count": total,
                        "problems": [{**p.to_json(), "where": _where(loaded, p)}
                                     for p in problems]})
        lines.extend(
            f"{_where(loaded, p)}: {p.message}"
            + (f" (record {p.record_id})" if p.record_id else "")
            + (f" [{p.requirement}]" if p.requirement else "")
            for p in problems
        )
        if total > len(problems):
            lines.append(f"{path}: {total - len(problems)} more problems not shown ({total} in "
                         f"all; --max-problems N shows more)")
        elif not total:
            lines.append(f"{path}: ok ({loaded.kind}, {len(loaded.records)} records)")
        del loaded, problems  # one input's records at a time
    emit(args.json, {"valid": not failed, "inputs": reports}, "\n".join(lines))
    return 1 if failed else 0


def _verify_path(path: str, allow_unsigned: bool, expected_agent: str | None = None,
                 jobs: int | None = None, *, jsonl: bool = False
                 ) -> tuple[dict[str, Any], str, bool]:
    loaded = read_input(path, jsonl=jsonl)
    result: dict[str, Any] = {"path": path, "kind": loaded.kind}
    try:
        record_set(loaded)
        if loaded.kind == "file":
            verify_file(loaded.value, require_signature=not allow_unsigned,
                        expected_agent=expected_agent, jobs=jobs)
            signed = sum(1 for r in loaded.records if r.get("signed_by"))
            result.update(valid=True, file_signed=bool(loaded.value["signature"]),
                          signed_records=signed)
            text = (f"{path}: ok (file signature "
                    f"{'valid' if loaded.value['signature'] else 'absent, allowed'}; "
                    f"{signed} signed records verified)")
        elif loaded.kind in ("record", "records", "jsonl"):
            unsigned = [r.get("id") for r in loaded.records if not _verify_one(r)]
            if expected_agent is not None:
                others = [r.get("id") for r in loaded.records
                          if r.get("signed_by") != expected_agent]
                if others:
                    raise SignatureError(f"{len(others)} records are not signed by "
                                         f"{expected_agent}: {others[:5]}")
            if unsigned and not allow_unsigned:
                raise MemspecError(f"{len(unsigned)} records are unsigned: {unsigned[:5]}",
                                   requirement="SIG-8")
            result.update(valid=True, unsigned=unsigned)
            text = f"{path}: ok ({len(loaded.records) - len(unsigned)} signatures valid)"
        else:
            raise MemspecError(f"{path}: not a record or memory file", requirement="REC-1")
    except MemspecError as exc:
        result.update(valid=False, error=exc.to_wire(), pointer=exc.pointer)
        return result, f"{path}#{exc.pointer or '/'}: {exc}", False
    return result, text, True


def _jobs(text: str) -> int:
    """``--jobs``: a positive number of processes."""
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"--jobs takes a positive integer, not {text!r}")
    return int(text)


def cmd_verify(args: argparse.Namespace) -> int:
    results, lines, ok = [], [], True
    for path in args.paths:
        try:
            result, text, valid = _verify_path(path, args.allow_unsigned, args.expect_agent,
                                               args.jobs, jsonl=args.jsonl)
        except MemspecError as exc:
            result, text, valid = ({"path": path, "valid": False, "error": exc.to_wire()},
                                   f"{path}: {exc}", False)
        results.append(result)
        lines.append(text)
        ok = ok and valid
    emit(args.json, {"valid": ok, "inputs": results}, "\n".join(lines))
    return 0 if ok else 1


def _verify_one(record: Any) -> bool:
    if not isinstance(record, dict):
        raise MemspecError("a record is a JSON object")
    try:
        return verify_record(record)
    except MemspecError as exc:
        raise type(exc)(f"record {record.get('id')}: {exc.message}",
                        requirement=exc.requirement) from exc


def cmd_id(args: argparse.Namespace) -> int:
    loaded = read_input(args.path, jsonl=args.jsonl)
    rows: list[dict[str, Any]] = []
    for record in record_set(loaded):
        rid = record_id(record)
        rows.append({"id": rid, "birth_digest": birth_digest(record),
                     "matches": record.get("id") == rid if "id" in record else None})
    mismatched = [r for r in rows if r["matches"] is False]
    emit(args.json, {"records": rows}, "\n".join(
        str(r["id"]) + ("" if r["matches"] is not False else "  (differs from the record's id)")
        for r in rows))
    return 1 if mismatched else 0


def cmd_canonicalize(args: argparse.Namespace) -> int:
    loaded = read_input(args.path, jsonl=args.jsonl)
    if loaded.kind == "jsonl":
        # Canonical JSONL: each line's canonical bytes, one per line.
        data = b"".join(canonical_json(value) + b"\n" for value in loaded.records)
        if args.hex and not args.json:
            print("\n".join(canonical_json(value).hex() for value in loaded.records))
            return 0
        if args.json:
            if args.output:
                write_output(args.output, data)
            emit(True, {"hex": data.hex(), "length": len(data), "lines": len(loaded.records),
                        "output": args.output}, "")
        else:
            write_output(args.output, data)
        return 0
    data = canonical_json(loaded.value)
    if args.json:
        if args.output:
            write_output(args.output, data)
        emit(True, {"hex": data.hex(), "length": len(data), "output": args.output}, "")
    elif args.hex:
        print(data.hex())
    else:
        write_output(args.output, data + (b"" if args.output else b"\n"))
    return 0


def cmd_fingerprint(args: argparse.Namespace) -> int:
    records = record_set(read_input(args.path, jsonl=args.jsonl))
    digest = fingerprint(records)
    emit(args.json, {"fingerprint": digest, "records": len(records)}, digest)
    return 0


def cmd_diff(args: argparse.Namespace) -> int:
    diff = diff_records(record_set(read_input(args.a, jsonl=args.jsonl)),
                        record_set(read_input(args.b, jsonl=args.jsonl)))
    lines = [f"{len(diff.added)} added, {len(diff.removed)} removed, "
             f"{len(diff.changed)} changed, {diff.unchanged} unchanged"]
    lines += [f"+ {i}" for i in diff.added] + [f"- {i}" for i in diff.removed]
    lines += [f"~ {a['id']}: {a.get('state')} @ {a.get('updated_at')} -> "
              f"{b.get('state')} @ {b.get('updated_at')}" for a, b in diff.changed]
    emit(args.json, diff.to_json(), "\n".join(lines))
    return 0 if diff.empty else 1


def cmd_merge(args: argparse.Namespace) -> int:
    merge = merge_records([record_set(read_input(p, jsonl=args.jsonl)) for p in args.paths],
                          prefer=args.prefer)
    now: str | None = args.now
    lines = [f"{len(merge.records)} records, {len(merge.conflicts)} conflicts"]
    lines += [f"! {rid}: {len(versions)} differing versions" for rid, versions in merge.conflicts]
    if merge.conflicts and args.prefer is None:
        lines.append("conflicts are not resolved silently: re-run with --prefer first|last "
                     "to choose, or resolve them in the inputs")
        emit(args.json, merge.to_json(), "\n".join(lines))
        return 1
    if args.output:
        if now is None:
            raise UsageError("--now is required with --output (the merged file's created_at)")
        merged = {"format": FORMAT_VERSION, "agent": None, "created_at": now,
                  "records": list(merge.records), "signature": ""}
        validate_file(merged)
        write_output(args.output, canonical_json(merged))
    emit(args.json, merge.to_json(), "\n".join(lines))
    return 0


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser],
             common: argparse.ArgumentParser) -> None:
    """Add this module's subcommands to the parser."""
    def add(name: str, func: Any, help_text: str, examples: str) -> argparse.ArgumentParser:
        parser = sub.add_parser(name, parents=[common], help=help_text, description=help_text,
                                epilog="examples:\n" + examples,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.set_defaults(func=func)
        if name in _READS_JSONL:
            parser.add_argument("--jsonl", action="store_true",
                                help="read the input as JSONL: one JSON text per non-blank "
                                     "line (a path ending in .jsonl always is; anything else "
                                     "is one JSON text)")
        return parser

    p = add("validate", cmd_validate, "Check records or memory files against the format: schema "
            "and semantic rules, each problem with its place and requirement id.",
            "  memspec validate memory.json\n  memspec validate records.jsonl --json\n"
            "  cat records.jsonl | memspec validate --jsonl -\n"
            "  cat record.json | memspec validate -")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a file, or - for stdin")
    p.add_argument("--max-problems", type=_problem_limit, default=MAX_PROBLEMS,
                   metavar="N", help=f"report at most N problems per input, counting the rest "
                                     f"(default {MAX_PROBLEMS})")
    p = add("verify", cmd_verify, "Verify the signatures of a memory file and every signed record "
            "in it (a file signature is required unless --allow-unsigned).",
            "  memspec verify memory.json\n  memspec verify memory.json --allow-unsigned\n"
            "  memspec verify memory.json --expect-agent amp:key:...\n"
            "  memspec verify a.json b.json --json")
    p.add_argument("paths", nargs="+", metavar="PATH", help="a file, or - for stdin")
    p.add_argument("--allow-unsigned", action="store_true",
                   help="accept an unsigned file or record (explicit opt-out)")
    p.add_argument("--expect-agent", type=_args.address, metavar="ADDRESS",
                   help="require the file (or every record) to be signed by this agent: "
                        "a file re-signed by anyone else is refused (FILE-11)")
    p.add_argument("--jobs", type=_jobs, metavar="N",
                   help="processes that verify a file's records (default: every CPU for a "
                        "file of 2,000 records or more, else 1); same verdict either way")
    p = add("id", cmd_id, "Print the content address of each record (and whether it matches).",
            "  memspec id record.json\n  memspec id memory.json --json")
    p.add_argument("path", metavar="PATH")
    p = add("canonicalize", cmd_canonicalize, "Print the canonical JSON bytes of a JSON value.",
            "  memspec canonicalize value.json\n  memspec canonicalize value.json --hex\n"
            "  echo '{\"b\":1,\"a\":2}' | memspec canonicalize -\n"
            "  memspec canonicalize records.jsonl --jsonl   (one canonical line per line)")
    p.add_argument("path", metavar="PATH")
    p.add_argument("--hex", action="store_true", help="print the bytes as hex")
    p.add_argument("-o", "--output", help="write the bytes to a file")
    p = add("fingerprint", cmd_fingerprint, "Order-insensitive digest of a set of records.",
            "  memspec fingerprint memory.json")
    p.add_argument("path", metavar="PATH")
    p = add("diff", cmd_diff, "Set-semantic diff of two record sets by id (exit 1 if they differ).",
            "  memspec diff old.json new.json")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    p = add("merge", cmd_merge, "Union of record sets by id; differing versions of one id are "
            "reported as conflicts, never picked silently.",
            "  memspec merge a.json b.json --now 2026-01-01T00:00:00Z -o merged.json\n"
            "  memspec merge a.json b.json --prefer last --now 2026-01-01T00:00:00Z -o m.json")
    p.add_argument("paths", nargs="+", metavar="PATH")
    p.add_argument("--prefer", choices=("first", "last"),
                   help="resolve conflicts explicitly by input order")
    p.add_argument("--now", type=_args.timestamp,
                   help="created_at of the merged file (RFC 3339)")
    p.add_argument("-o", "--output", help="write the merged memory file here")
