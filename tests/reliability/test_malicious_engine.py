"""A malicious engine under `memspec certify --sign-key` must not be able to forge its certificate.

The engine (a small Python script written here, run as a process engine) does what a hostile
engine can do from inside the run: it reads its ancestors' command lines and environments for
key material, rewrites the report file on disk while the kit runs and signs the forgery with a
key of its own, writes a forged report into the kit's report channel, puts terminal escapes,
HTML and Markdown in its name, its error messages and its standard error, and answers with a
line nested 200,000 levels deep and with a line far longer than the kit reads. Each attack must
fail: the report certify writes is what the kit saw, signed by the user's key; report.md, the
badge, the printed verdict and the exit code agree with it; nothing the engine said acts on a
terminal or on a page.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(sys.executable).with_name("memspec")

NAME = "evil\x1b[2J\x1b]0;pwned\x07<script>alert(1)</script>\n# Verdict: certified"

ENGINE = textwrap.dedent(r'''
    import json, os, re, sys

    HERE = os.getcwd()
    NAME = NAME_LITERAL
    SEED = re.compile(rb"(?<![0-9a-fA-F])[0-9a-fA-F]{64}(?![0-9a-fA-F])")
    loot = {"seeds": [], "read": [], "rewrote": [], "channel": []}

    def read(path):
        try:
            with open(path, "rb") as f:
                return f.read()
        except OSError:
            return b""

    def ancestors():
        pid = os.getppid()
        while pid > 1:
            yield pid
            status = read(f"/proc/{pid}/status").decode(errors="replace")
            m = re.search(r"PPid:\s*(\d+)", status)
            pid = int(m.group(1)) if m else 0

    def save():
        with open(os.path.join(HERE, "loot.json"), "w") as f:
            json.dump(loot, f)

    def forged_report():
        from memspec.conformance._report import sign_report
        from memspec._signing import SigningKey
        body = {"verdict": "certified", "engine": {"name": "evil"}, "forged": True}
        return sign_report(body, SigningKey.from_hex("11" * 32))

    def attack():
        for pid in ancestors():
            argv = read(f"/proc/{pid}/cmdline").split(b"\0")
            env = read(f"/proc/{pid}/environ")
            loot["read"].append(pid)
            for blob in (*argv, env):
                loot["seeds"] += [s.decode() for s in SEED.findall(blob)]
            args = [a.decode(errors="replace") for a in argv]
            for n, arg in enumerate(args):
                path = None
                if arg == "--report" and n + 1 < len(args):
                    path = args[n + 1]
                elif arg.startswith("--memspec-report="):
                    path = arg.split("=", 1)[1]
                if path:
                    path = path if os.path.isabs(path) else os.path.join(HERE, path)
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "w") as f:
                        json.dump(forged_report(), f)
                    loot["rewrote"].append(path)
                if arg.startswith("--memspec-report-channel="):
                    fds = arg.split("=", 1)[1].split(",")
                    for fd in fds:
                        try:
                            with open(f"/proc/{pid}/fd/{fd}", "wb") as pipe:
                                body = json.dumps(forged_report()).encode()
                                pipe.write(b"memspec-report " + b"0" * 64 + b" " + body + b"\n")
                            loot["channel"].append(f"{pid}/{fd}")
                        except OSError as exc:
                            loot["channel"].append(f"{pid}/{fd}: {exc}")
        save()

    def answer(message):
        sys.stdout.write(json.dumps(message) + "\n")
        sys.stdout.flush()

    sys.stderr.write("\x1b[2J\x1b]0;owned\x07 engine starting\n")
    sys.stderr.flush()
    for raw in sys.stdin:
        request = json.loads(raw)
        rid, op, args = request["id"], request["op"], request["args"]
        if op == "hello":
            attack()
            answer({"id": rid, "ok": True, "result": {
                "name": NAME, "version": "6.6.6\x1b[32m", "spec_version": "fg-agent-memory/0.1",
                "protocol": "memspec-engine/1", "profiles": ["format"]}})
        elif op == "bye":
            answer({"id": rid, "ok": True, "result": {}})
            break
        elif op == "reset":
            answer({"id": rid, "ok": True, "result": {}})
        elif op == "canonical_timestamp" and not os.path.exists(os.path.join(HERE, "deep-done")):
            open(os.path.join(HERE, "deep-done"), "w").close()
            sys.stdout.write('{"id": %d, "ok": true, "result": {"hex": ' % rid
                             + "[" * 200000 + "]" * 200000 + "}}\n")
            sys.stdout.flush()
        elif op == "address" and not os.path.exists(os.path.join(HERE, "huge-done")):
            open(os.path.join(HERE, "huge-done"), "w").close()
            sys.stdout.write("x" * (80 * 1024 * 1024))
            sys.stdout.flush()
        else:
            sys.stderr.write("\x1b[31mVERDICT: CERTIFIED\x1b[0m\n")
            sys.stderr.flush()
            answer({"id": rid, "ok": False, "error": {
                "code": "record",
                "message": "```\n</pre><img src=x onerror=alert(1)>\x1b[2J\n!!! success "
                           "\"Verdict: certified\"\n```"}})
''').replace("NAME_LITERAL", repr(NAME))


@pytest.fixture(scope="module")
def attacked(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One certify run of the malicious engine, signed with a key of the user's."""
    work = tmp_path_factory.mktemp("malicious")
    (work / "evil.py").write_text(ENGINE, encoding="utf-8")
    key = work / "key.json"
    made = subprocess.run([str(SCRIPT), "keygen", "-o", str(key)], capture_output=True,
                          text=True, timeout=60, check=False)
    assert made.returncode == 0, made.stderr
    run = subprocess.run(
        [str(SCRIPT), "certify", "--engine-cmd", f"{sys.executable} evil.py",
         "--sign-key", "key.json", "--report", "out/report.json"],
        cwd=work, capture_output=True, text=True, timeout=900, check=False)
    loot = json.loads((work / "loot.json").read_text(encoding="utf-8"))
    return {"work": work, "run": run, "loot": loot, "key": json.loads(key.read_text())}


def test_no_key_material_in_reach(attacked: dict[str, Any]) -> None:
    loot = attacked["loot"]
    assert len(loot["read"]) >= 2, "the engine read its parent's and grandparent's argv"
    seed = attacked["key"].get("seed_hex") or attacked["key"].get("seed")
    assert isinstance(seed, str) and len(seed) == 64
    assert seed.lower() not in [s.lower() for s in loot["seeds"]]


def test_the_certificate_is_what_the_kit_saw(attacked: dict[str, Any]) -> None:
    from memspec.conformance import check_report, verify_report

    run, work = attacked["run"], attacked["work"]
    assert attacked["loot"]["rewrote"], "the engine did rewrite the report file during the run"
    assert attacked["loot"]["channel"], "the engine did write into the report channel"
    assert "wrote into the kit's report channel" in run.stderr
    report = json.loads((work / "out" / "report.json").read_text(encoding="utf-8"))
    check_report(report)
    assert "forged" not in report and report["engine"]["name"] == NAME
    assert verify_report(report) is True
    assert report["signature"]["signed_by"] == attacked["key"]["address"]
    assert report["verdict"] != "certified"
    assert report["profiles"]["format"]["verdict"] != "certified"
    # exit code, printed verdict and report agree
    assert run.returncode == 1, run.stdout[-3000:] + run.stderr[-3000:]
    assert f"verdict: {report['verdict']}" in run.stdout
    verified = subprocess.run([str(SCRIPT), "report", "out/report.json", "--verify", "--json"],
                              cwd=work, capture_output=True, text=True, timeout=120, check=False)
    assert verified.returncode == 0, verified.stderr
    assert json.loads(verified.stdout) == {"signed": True, "verdict": report["verdict"]}


def test_deep_and_huge_answers_are_protocol_faults(attacked: dict[str, Any]) -> None:
    report = json.loads((attacked["work"] / "out" / "report.json").read_text(encoding="utf-8"))
    messages = [t.get("message", "") for r in report["requirements"] for t in r["tests"]
                if t["outcome"] == "errored"]
    assert any("deeper than 128 levels" in m for m in messages)
    assert any("longer than" in m and "bytes" in m for m in messages)
    output = attacked["run"].stdout + attacked["run"].stderr
    assert "RecursionError" not in output and "MemoryError" not in output


def test_nothing_the_engine_said_acts_on_a_terminal_or_a_page(attacked: dict[str, Any]) -> None:
    run, work = attacked["run"], attacked["work"]
    for stream in (run.stdout, run.stderr):
        assert "\x1b" not in stream and "\x07" not in stream
    markdown = (work / "out" / "report.md").read_text(encoding="utf-8")
    assert "\x1b" not in markdown and "<script>" not in markdown
    assert "<img src=x" not in markdown
    assert "\n# Verdict: certified" not in markdown
    badge = (work / "out" / "report-badge.svg").read_text(encoding="utf-8")
    assert "<script>" not in badge and ">failed<" in badge and ">certified<" not in badge
    assert os.path.exists(work / "huge-done") and os.path.exists(work / "deep-done")
