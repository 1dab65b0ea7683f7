"""Every subcommand's error paths through the real console script: exit 0 success, 1 an input
that failed a check, 2 a usage error; with --json, JSON on stdout on every path."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli.conftest import Run

MEMORY_FILE = "m.json"  # the published signed memory file, written by the fixture below
NOW = "2026-03-01T09:00:00Z"

# (argv, exit code, a word the error message must carry). Paths are relative to tmp_path;
# "{m}" is the published memory file, "{k}" a real key file, "{h}" the JSON text "hello",
# "{e}" the empty object.
CASES: list[tuple[list[str], int, str]] = [
    (["--bogus"], 2, "unrecognized"),
    (["validate"], 2, "required"),
    (["validate", "absent.json"], 2, "no such file"),
    (["validate", "{h}"], 1, "neither a record"),
    (["verify", "absent.json"], 2, "no such file"),
    (["verify", "{m}", "--expect-agent", "amp:key:0OIl"], 2, "not an agent address"),
    (["verify", "{h}"], 1, "REC-1"),
    (["id"], 2, "required"),
    (["id", "absent.json"], 2, "no such file"),
    (["id", "{e}"], 1, "neither a record"),
    (["canonicalize", "absent.json"], 2, "no such file"),
    (["canonicalize", "{m}", "-o", "no-such-dir/out.json"], 2, "No such file"),
    (["fingerprint", "{e}"], 1, "neither a record"),
    (["fingerprint", "{h}"], 1, "neither a record"),
    (["diff", "{m}"], 2, "required"),
    (["diff", "{m}", "{h}"], 1, "neither a record"),
    (["merge", "{m}", "--now", "yesterday"], 2, "not a timestamp"),
    (["merge", "{m}", "{m}", "-o", "out.json"], 2, "--now is required"),
    (["merge", "{m}", "--prefer", "middle"], 2, "invalid choice"),
    (["new", "fact"], 2, "required"),
    (["new", "opinion", "x"], 2, "invalid choice"),
    (["new", "fact", "x", "--now", "noon"], 2, "not a timestamp"),
    (["new", "fact", "x", "--confidence", "1.5"], 2, "not a confidence"),
    (["new", "fact", "", "--now", NOW], 2, "REC-5"),
    (["new", "rule", "x", "--now", NOW], 2, "RULE-1"),
    (["new", "fact", "x", "--extra", '{"body": 1}'], 2, "REC-12"),
    (["new", "fact", "x", "--sign-key", "absent.key"], 2, "no such key file"),
    (["keygen"], 2, "required"),
    (["keygen", "-o", "{k}"], 2, "refusing to overwrite"),
    (["keygen", "-o", "no-such-dir/agent.key"], 2, "No such file"),
    (["sign", "{m}"], 2, "required"),
    (["sign", "{m}", "--key", "absent.key"], 2, "no such key file"),
    (["sign", "{m}", "--key", "{k}", "--now", "soon"], 2, "not a timestamp"),
    (["sign", "{m}", "--key", "{m}"], 1, "not a memspec key file"),
    (["sign", "{h}", "--key", "{k}"], 1, "not a memory file"),
    (["certify"], 2, "required"),
    (["certify", "--engine", "no-such-engine", "--out-dir", "cert"], 2, "no-such-engine"),
    (["certify", "--engine", "reference", "--jobs", "0"], 2, "--jobs"),
    (["certify", "--engine-cmd", ""], 2, "empty"),
    (["smoke", "--engine", "no-such-engine"], 2, "no-such-engine"),
    (["compare"], 2, "required"),
    (["compare", "absent.json"], 2, "no such file"),
    (["compare", "{h}"], 1, "JSON object"),
    (["compare", "{e}"], 1, "does not match report.json at /: 'report_version'"),
    (["report", "absent.json"], 2, "no such file"),
    (["report", "{e}"], 1, "report_version"),
    (["report", "{h}"], 1, "JSON object"),
    (["vectors"], 2, "required"),
    (["vectors", "list", "--file", "nope"], 2, "no vectors file named 'nope'"),
    (["vectors", "list", "--group", "no-such-group"], 2, "no vector matches"),
    (["vectors", "check"], 2, "--engine"),
    (["audit", "absent.json"], 2, "no such file"),
    (["audit", "{h}"], 1, "JSON object"),
    (["selftest", "--fault", "no-such-fault"], 2, "no fault named"),
    (["selftest", "--jobs", "0"], 2, "--jobs"),
]


@pytest.fixture
def inputs(tmp_path: Path, memory_file: dict[str, Any], seed_a: str) -> dict[str, str]:
    (tmp_path / MEMORY_FILE).write_text(json.dumps(memory_file), encoding="utf-8")
    (tmp_path / "h.json").write_text('"hello"', encoding="utf-8")
    (tmp_path / "e.json").write_text("{}", encoding="utf-8")
    key = {"kind": "memspec-ed25519-seed", "seed_hex": seed_a}
    (tmp_path / "agent.key").write_text(json.dumps(key), encoding="utf-8")
    return {"m": MEMORY_FILE, "h": "h.json", "e": "e.json", "k": "agent.key"}


def _argv(argv: list[str], inputs: dict[str, str]) -> list[str]:
    return [word.format(**inputs) if "{" in word and not word.startswith("{\"") else word
            for word in argv]


@pytest.fixture
def run_in(tmp_path: Path, memspec: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
           ) -> Callable[..., Any]:
    monkeypatch.chdir(tmp_path)
    return memspec


@pytest.mark.parametrize(("argv", "code", "word"), CASES,
                         ids=[" ".join(case[0]) or "-" for case in CASES])
def test_error_paths_exit_as_documented(run_in: Callable[..., Run], inputs: dict[str, str],
                                        tmp_path: Path, argv: list[str], code: int,
                                        word: str) -> None:
    before = sorted(p.name for p in tmp_path.iterdir())
    run = run_in(*_argv(argv, inputs))
    assert run.code == code, (run.out, run.err)
    if code == 2:
        assert word in run.err, run.err
        if argv[0] != "certify":  # certify streams the kit's own progress to stdout
            assert run.out == ""  # a usage error is not mixed into the output a pipe reads
    else:  # validate and verify report each input on stdout; the rest say why on stderr
        assert word in run.out + run.err, (run.out, run.err)
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # nothing written


@pytest.mark.parametrize(("argv", "code", "word"),
                         [case for case in CASES if case[0][0] != "selftest"],
                         ids=[" ".join(case[0]) for case in CASES if case[0][0] != "selftest"])
def test_json_errors_are_json(run_in: Callable[..., Run], inputs: dict[str, str], argv: list[str],
                              code: int, word: str) -> None:
    run = run_in(*_argv(argv, inputs), "--json")
    assert run.code == code, (run.out, run.err)
    document = json.loads(run.out)
    if "error" in document and "ok" in document:
        assert document["ok"] is False
        assert document["error"]["code"] == ("usage" if code == 2 else document["error"]["code"])
        assert word in document["error"]["message"]
    else:  # validate and verify report per input
        assert document["valid"] is False
        assert word in json.dumps(document)


def test_no_command_is_a_usage_error(memspec: Callable[..., Run]) -> None:
    run = memspec()
    assert run.code == 2 and "COMMAND" in run.err


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0,
                    reason="root reads a file whatever its mode")
def test_unreadable_file_is_a_usage_error_like_a_missing_one(memspec: Callable[..., Run],
                                                             tmp_path: Path) -> None:
    locked = tmp_path / "locked.json"
    locked.write_text("{}", encoding="utf-8")
    locked.chmod(0)
    for command in ("validate", "verify", "id", "fingerprint"):
        run = memspec(command, locked)
        assert run.code == 2 and "ermission" in run.err, (command, run.err)


def test_certify_of_a_missing_engine_leaves_no_report_directory(run_in: Callable[..., Run],
                                                                tmp_path: Path) -> None:
    run = run_in("certify", "--engine", "no-such-engine")
    assert run.code == 2
    assert not (tmp_path / "memspec-report").exists()


def test_the_table_covers_every_subcommand() -> None:
    import argparse

    from memspec.cli import build_parser

    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert set(sub.choices) <= {case[0][0] for case in CASES}
