"""The MCP server: ``memspec-mcp`` started for real over stdio and driven by the MCP SDK's
own client (``stdio_client`` + ``ClientSession``), plus the SDK-free parts in process.

The SDK tests skip when the optional extra is not installed (``pip install 'memspec[mcp]'``);
they run on either SDK line (mcp 1.x or 2.x), whose result objects spell fields differently.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tomllib
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from memspec import NotFoundError
from memspec.reference import Memory
from memspec.reference.mcp_server import (
    INSTALL_HINT,
    TOOL_NAMES,
    MemoryTools,
    ToolInputError,
    main,
)

POSTGRES = "The staging database is Postgres."
NOT_POSTGRES = "The staging database is not Postgres."
QUERY = "staging database"
SERVER_SCRIPT = Path(sys.executable).with_name("memspec-mcp")

HAS_SDK = importlib.util.find_spec("mcp") is not None
needs_sdk = pytest.mark.skipif(
    not HAS_SDK, reason=f"the MCP SDK is not installed ({INSTALL_HINT} to run these tests)")

# Makes every `import mcp...` fail in a child interpreter, as if the extra were not installed.
_NO_SDK = "import sys; sys.modules['mcp'] = None\n"


def _python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120)


def _memspec(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """The memspec command line in a subprocess."""
    return subprocess.run([sys.executable, "-m", "memspec", *map(str, args)],
                          capture_output=True, text=True, timeout=120)


# -- without the SDK -----------------------------------------------------------------------


def test_the_console_script_and_the_extra_are_declared() -> None:
    config = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert config["project"]["scripts"]["memspec-mcp"] == "memspec.reference.mcp_server:main"
    assert [r for r in config["project"]["optional-dependencies"]["mcp"] if r.startswith("mcp")]


def test_import_memspec_never_needs_the_sdk() -> None:
    proc = _python(_NO_SDK + "import memspec, memspec.cli, memspec.reference\n"
                   "import memspec.reference.mcp_server\n"
                   "assert sys.modules['mcp'] is None\nprint('ok')")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"


def test_without_the_sdk_the_server_says_how_to_install_it() -> None:
    proc = _python(_NO_SDK + "from memspec.reference.mcp_server import main\nsys.exit(main([]))")
    assert proc.returncode == 2
    assert INSTALL_HINT in proc.stderr
    assert "Traceback" not in proc.stderr


def test_help_needs_no_sdk() -> None:
    proc = _python(_NO_SDK + "from memspec.reference.mcp_server import main\n"
                   "sys.exit(main(['--help']))")
    assert proc.returncode == 0, proc.stderr
    assert "--path" in proc.stdout and "--key" in proc.stdout


def test_a_missing_key_file_is_a_usage_error(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--key", str(tmp_path / "absent.key")]) == 2
    assert "no such key file" in capsys.readouterr().err


def test_a_broken_key_file_is_an_encoding_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "agent.key"
    key.write_text('{"kind": "something-else"}', encoding="utf-8")
    assert main(["--key", str(key)]) == 1
    assert "encoding error" in capsys.readouterr().err


@needs_sdk
def test_a_path_that_is_a_file_is_a_usage_error(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    occupied = tmp_path / "memory"
    occupied.write_text("not a folder", encoding="utf-8")
    assert main(["--path", str(occupied)]) == 2
    assert "cannot open memory" in capsys.readouterr().err


# -- the tools in process ------------------------------------------------------------------


def test_tools_walk_the_ghost_memory_in_process() -> None:
    tools = MemoryTools(Memory(auto_consolidate=False))
    yes = tools.remember(POSTGRES, ["infra"])
    no = tools.remember(NOT_POSTGRES)
    assert tools.remember(POSTGRES) == {"record_id": yes["record_id"], "deduped": True,
                                        "consolidation": None}
    report = tools.consolidate()
    assert [a["pass"] for a in report["actions"]] == ["contradiction"]
    block, recalled = tools.recall(QUERY)
    assert block.count("[disputed:") == 2
    assert recalled["prompt_block"] == block
    assert {r["record"]["state"] for r in recalled["records"]} == {"transitional"}
    settled = tools.resolve(no["record_id"], yes["record_id"], "ops confirmed Postgres")
    assert (settled["winner"]["state"], settled["loser"]["state"]) == ("active", "superseded")
    block, _ = tools.recall(QUERY)
    assert block == f"- {POSTGRES}"
    with pytest.raises(NotFoundError):
        tools.redact("mem:00000000000000000000000000000000", "gone")


def test_export_refuses_to_overwrite_what_is_not_a_memory_file(tmp_path: Path) -> None:
    tools = MemoryTools(Memory(), export_dir=tmp_path)
    tools.remember(POSTGRES)
    precious = tmp_path / "notes.json"
    precious.write_text('{"keep": "me"}', encoding="utf-8")
    with pytest.raises(ToolInputError, match="overwrite=true"):
        tools.export("notes.json")
    with pytest.raises(ToolInputError, match="not a memory file"):
        tools.export("notes.json", overwrite=True)
    assert precious.read_text(encoding="utf-8") == '{"keep": "me"}'
    with pytest.raises(ToolInputError, match=r"\.json"):
        tools.export("memory.txt")
    with pytest.raises(ToolInputError, match="cannot write"):
        tools.export("missing-folder/memory.json")
    first = tools.export("memory.json")
    with pytest.raises(ToolInputError, match="exists"):
        tools.export("memory.json")
    again = tools.export("memory.json", overwrite=True)  # a memory file may be replaced
    assert first["records"] == again["records"] == 1
    assert first["signed"] is False
    assert first["path"] == str(tmp_path / "memory.json")


def test_an_in_memory_memory_without_an_export_dir_refuses_to_export(tmp_path: Path) -> None:
    tools = MemoryTools(Memory())
    tools.remember(POSTGRES)
    with pytest.raises(ToolInputError, match="--path"):
        tools.export("memory.json")


# -- over stdio with the SDK's client ------------------------------------------------------


def _field(result: Any, snake: str, camel: str) -> Any:
    """A result field under its mcp 2.x (snake_case) or mcp 1.x (camelCase) name."""
    return getattr(result, snake) if hasattr(result, snake) else getattr(result, camel)


def _text(result: Any) -> str:
    return "\n".join(block.text for block in result.content if block.type == "text")


class _Client:
    """A thin helper over ``ClientSession.call_tool`` that unwraps results."""

    def __init__(self, session: Any) -> None:
        self.session = session

    async def raw(self, name: str, arguments: dict[str, Any] | None = None) -> Any:
        return await self.session.call_tool(name, arguments or {})

    async def call(self, name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
        result = await self.raw(name, arguments)
        assert not _field(result, "is_error", "isError"), _text(result)
        structured = _field(result, "structured_content", "structuredContent")
        value = structured if structured is not None else json.loads(_text(result))
        assert isinstance(value, dict)
        return value

    async def error(self, name: str, arguments: dict[str, Any]) -> str:
        result = await self.raw(name, arguments)
        assert _field(result, "is_error", "isError"), _text(result)
        return _text(result)


def _serve(args: list[str], log: Path, scenario: Callable[[_Client], Awaitable[None]]) -> None:
    """Start ``memspec-mcp ARGS`` as a subprocess and run ``scenario`` against it."""
    import anyio
    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    env = {name: os.environ[name] for name in ("PYTHONPATH",) if name in os.environ}
    # The console script is what hosts run; `python -m` stands in before it is installed.
    command = ([str(SERVER_SCRIPT)] if SERVER_SCRIPT.exists()
               else [sys.executable, "-m", "memspec.reference.mcp_server"])
    params = StdioServerParameters(command=command[0], args=[*command[1:], *args],
                                   env=env or None)

    async def run() -> None:
        # Why a deadline: a wedged server must fail the test, never hang the suite.
        with anyio.fail_after(300), log.open("w", encoding="utf-8") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write), \
                    ClientSession(read, write) as session:
                await session.initialize()
                await scenario(_Client(session))

    anyio.run(run)
    assert "Traceback" not in log.read_text(encoding="utf-8")


@needs_sdk
def test_the_ghost_memory_over_stdio_signed(tmp_path: Path) -> None:
    key = tmp_path / "agent.key"
    made = _memspec("keygen", "-o", key)
    assert made.returncode == 0, made.stderr
    address = json.loads(key.read_text(encoding="utf-8"))["address"]
    store = tmp_path / "memory"
    exported = store / "export.json"
    seen: dict[str, Any] = {}

    async def scenario(client: _Client) -> None:
        listed = await client.session.list_tools()
        assert sorted(tool.name for tool in listed.tools) == sorted(TOOL_NAMES)

        yes = await client.call("remember", {"text": POSTGRES, "tags": ["infra"]})
        no = await client.call("remember", {"text": NOT_POSTGRES})
        assert yes["deduped"] is False and no["deduped"] is False
        assert yes["record_id"] != no["record_id"]
        repeat = await client.call("remember", {"text": POSTGRES})
        assert (repeat["record_id"], repeat["deduped"]) == (yes["record_id"], True)

        report = await client.call("consolidate")
        (action,) = report["actions"]
        assert action["pass"] == "contradiction"
        assert sorted(action["record_ids"]) == sorted([yes["record_id"], no["record_id"]])
        assert action["after"] == ["transitional", "transitional"]

        disputed = await client.raw("recall", {"query": QUERY})
        lines = _text(disputed).splitlines()
        assert sorted(lines) == sorted(f"- {body} [disputed: {action['reason']}]"
                                       for body in (POSTGRES, NOT_POSTGRES))
        records = _field(disputed, "structured_content", "structuredContent")["records"]
        assert {r["record"]["id"]: r["record"]["state"] for r in records} == {
            yes["record_id"]: "transitional", no["record_id"]: "transitional"}

        settled = await client.call("resolve", {"record_id": no["record_id"],
                                                "winner_id": yes["record_id"],
                                                "reason": "ops confirmed Postgres"})
        assert settled["winner"]["state"] == "active"
        assert settled["loser"]["superseded_by"] == yes["record_id"]

        current = await client.raw("recall", {"query": QUERY})
        assert _text(current) == f"- {POSTGRES}"
        history = await client.call("recall", {"query": QUERY, "include_history": True})
        assert [r["record"]["state"] for r in history["records"]] == ["active", "superseded"]

        tombstone = (await client.call("redact", {"record_id": no["record_id"],
                                                   "reason": "never true"}))["tombstone"]
        assert tombstone["redacted"] is True and NOT_POSTGRES not in json.dumps(tombstone)

        decayed = await client.call("decay")
        assert decayed["archived"] == []

        status = await client.call("status")
        assert status["records"] == 2 and status["open_contradictions"] == 0
        assert status["agent"] == address and status["path"] == str(store)

        written = await client.call("export", {"path": "export.json"})
        assert written == {"path": str(exported), "records": 2, "signed": True}
        escape = await client.error("export", {"path": str(tmp_path / "outside.json")})
        assert "absolute" in escape and not (tmp_path / "outside.json").exists()

        bogus = await client.error("resolve", {"record_id": "mem:bogus", "winner_id":
                                               yes["record_id"], "reason": "no such record"})
        assert "proposal error" in bogus and "Traceback" not in bogus
        assert "record error" in await client.error("remember", {"text": "   "})
        assert "limit error" in await client.error("recall", {"query": QUERY,
                                                              "budget_tokens": -1})
        seen["winner"] = yes["record_id"]

    _serve(["--path", str(store), "--key", str(key)], tmp_path / "server.log", scenario)

    verified = _memspec("verify", exported)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    memory_file = json.loads(exported.read_text(encoding="utf-8"))
    assert memory_file["agent"] == address
    memory_file["records"][0]["tags"] = ["tampered"]
    exported.write_text(json.dumps(memory_file), encoding="utf-8")
    assert _memspec("verify", exported).returncode == 1

    with Memory(store) as reopened:  # --path kept everything on disk
        assert reopened.status()["states"]["active"] == 1
        assert reopened.recall(QUERY).ids == (seen["winner"],)


@needs_sdk
def test_an_in_memory_server_exports_unsigned(tmp_path: Path) -> None:
    exported = tmp_path / "export.json"

    async def scenario(client: _Client) -> None:
        await client.call("remember", {"text": POSTGRES})
        status = await client.call("status")
        assert (status["path"], status["agent"], status["records"]) == (None, None, 1)
        written = await client.call("export", {"path": "export.json"})
        assert (written["records"], written["signed"]) == (1, False)
        refused = await client.error("export", {"path": "memory.txt"})
        assert ".json" in refused

    _serve(["--export-dir", str(tmp_path)], tmp_path / "server.log", scenario)
    assert _memspec("verify", exported).returncode == 1  # a signature is required by default
    assert _memspec("verify", exported, "--allow-unsigned").returncode == 0
