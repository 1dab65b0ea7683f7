"""The MCP server's ``export`` stays inside ``--path``, and a slow tool wedges nothing.

A model drives the MCP tools, so every argument is hostile: absolute paths, ``~``,
``..``, paths through planted symlinks, names of the memory's own files (a version
file under ``records/`` would brick the memory), a FIFO or a ``/dev/zero`` link named
``*.json``, another agent's signed memory file to overwrite. Each is refused with a
tool error and nothing outside the export directory (or of the memory's own) is
written. Tool bodies run in worker threads one at a time: the event loop stays free
while one blocks, and a call that waits too long for it is refused as busy.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from pathlib import Path

import pytest

from memspec import SigningKey
from memspec.reference import Memory
from memspec.reference.mcp_server import MemoryTools, ToolInputError

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX paths and FIFOs")

KEY = SigningKey(bytes(range(3, 35)))
needs_sdk = pytest.mark.skipif(importlib.util.find_spec("mcp") is None,
                               reason="the MCP SDK (memspec[mcp]) is not installed")


@pytest.fixture
def tools(tmp_path: Path) -> MemoryTools:
    memory = Memory(tmp_path / "memory", identity=KEY, auto_consolidate=False)
    memory.remember("Wren flies kites on the downs.")
    return MemoryTools(memory)


def _everything(root: Path) -> dict[str, bytes | str]:
    found: dict[str, bytes | str] = {}
    for p in sorted(root.rglob("*")):
        key = str(p.relative_to(root))
        if p.is_symlink():
            found[key] = "-> " + os.readlink(p)
        elif p.is_file():
            found[key] = p.read_bytes()
    return found


@pytest.mark.parametrize("path", [
    "/tmp/escaped.json", "~/escaped.json", "../escaped.json", "sub/../../escaped.json",
    "records/escaped.json", "index.sqlite", "salience.json", "witness.json",
    "pending/x.json", ".hidden.json", "memory.txt", "", "a\x00b.json",
])
def test_export_refuses_every_path_that_leaves_the_directory(tools: MemoryTools,
                                                             tmp_path: Path, path: str) -> None:
    (tmp_path / "memory" / "sub").mkdir()
    before = _everything(tmp_path)
    with pytest.raises(ToolInputError):
        tools.export(path)
    assert _everything(tmp_path) == before


def test_export_into_a_record_directory_cannot_brick_the_memory(tools: MemoryTools,
                                                                tmp_path: Path) -> None:
    (hexdir,) = [p.name for p in (tmp_path / "memory" / "records").iterdir()]
    with pytest.raises(ToolInputError, match="belongs to the memory"):
        tools.export(f"records/{hexdir}/000003.json")
    assert tools.status()["records"] == 1
    assert tools.export("ok.json")["records"] == 1


def test_export_follows_no_symlink_at_any_component(tools: MemoryTools, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    memory_dir = tmp_path / "memory"
    (memory_dir / "dangling.json").symlink_to(outside / "created.json")
    (memory_dir / "via").symlink_to(outside, target_is_directory=True)
    for path in ("dangling.json", "via/x.json"):
        with pytest.raises(ToolInputError):
            tools.export(path)
        with pytest.raises(ToolInputError):
            tools.export(path, overwrite=True)
    assert list(outside.iterdir()) == []


def test_export_never_overwrites_without_the_flag_nor_what_is_not_a_memory_file(
        tools: MemoryTools, tmp_path: Path) -> None:
    other = Memory(identity=SigningKey(bytes(range(4, 36))))
    other.remember("Another agent's memory.")
    theirs = tmp_path / "memory" / "theirs.json"
    other.export(theirs)
    signed = theirs.read_bytes()
    with pytest.raises(ToolInputError, match="overwrite"):
        tools.export("theirs.json")
    assert theirs.read_bytes() == signed
    notes = tmp_path / "memory" / "notes.json"
    notes.write_text('{"keep": "me"}', encoding="utf-8")
    with pytest.raises(ToolInputError, match="not a memory file"):
        tools.export("notes.json", overwrite=True)
    assert notes.read_text(encoding="utf-8") == '{"keep": "me"}'
    assert tools.export("theirs.json", overwrite=True)["signed"] is True


def test_a_fifo_or_a_device_named_json_neither_hangs_nor_exhausts_export(
        tools: MemoryTools, tmp_path: Path) -> None:
    memory_dir = tmp_path / "memory"
    os.mkfifo(memory_dir / "fifo.json")
    (memory_dir / "zero.json").symlink_to("/dev/zero")
    errors: list[str] = []

    def attempt() -> None:
        for name in ("fifo.json", "zero.json"):
            for overwrite in (False, True):
                try:
                    tools.export(name, overwrite=overwrite)
                except ToolInputError as exc:
                    errors.append(str(exc))

    # Why a thread: an export that blocked on the FIFO must fail this test, not hang it.
    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "export blocked on a FIFO"
    assert len(errors) == 4
    assert os.readlink(memory_dir / "zero.json") == "/dev/zero"


def test_a_call_waiting_behind_a_stuck_one_is_refused_as_busy(
        tools: MemoryTools, monkeypatch: pytest.MonkeyPatch) -> None:
    import memspec.reference.mcp_tools as tools_module

    monkeypatch.setattr(tools_module, "BUSY_SECONDS", 0.05)
    held, release = threading.Event(), threading.Event()

    def stuck() -> None:
        with tools.serialized():
            held.set()
            release.wait(60)

    blocker = threading.Thread(target=stuck, daemon=True)
    blocker.start()
    assert held.wait(60)
    try:
        with pytest.raises(ToolInputError, match="busy"), tools.serialized():
            pass
    finally:
        release.set()
        blocker.join(60)
    with tools.serialized():
        assert tools.status()["records"] == 1


@needs_sdk
def test_a_blocking_tool_body_leaves_the_event_loop_free(tools: MemoryTools) -> None:
    import anyio

    from memspec.reference.mcp_server import _in_thread, load_sdk

    sdk = load_sdk()
    release = threading.Event()
    results: list[object] = []

    async def body() -> None:
        async with anyio.create_task_group() as group:
            async def blocked() -> None:
                results.append(await _in_thread(sdk, tools, lambda: release.wait(60)))

            group.start_soon(blocked)
            await anyio.sleep(0)
            # Were the tool run on the loop, this line would only run after it timed out.
            release.set()
            results.append("loop ran")

    anyio.run(body)
    assert results == ["loop ran", True]


def test_load_reads_only_regular_files_inside_the_directory(tools: MemoryTools,
                                                            tmp_path: Path) -> None:
    source = Memory(identity=KEY, auto_consolidate=False)
    source.remember("Xena sails a dinghy on the reservoir.")
    memory_dir = tmp_path / "memory"
    source.export(memory_dir / "incoming.json")
    outside = tmp_path / "outside.json"
    source.export(outside)
    os.mkfifo(memory_dir / "fifo.json")
    (memory_dir / "zero.json").symlink_to("/dev/zero")
    (memory_dir / "link.json").symlink_to(outside)
    errors: list[str] = []

    def attempt() -> None:
        for path in (str(outside), "../outside.json", "link.json", "fifo.json", "zero.json",
                     "missing.json", "records/x.json"):
            try:
                tools.load(path)
            except ToolInputError as exc:
                errors.append(str(exc))

    # Why a thread: a load that blocked on the FIFO must fail this test, not hang it.
    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(timeout=120)
    assert not worker.is_alive(), "load blocked on a FIFO"
    assert len(errors) == 7, errors
    assert tools.status()["records"] == 1
    loaded = tools.load("incoming.json")
    assert len(loaded["loaded"]) == 1 and loaded["skipped"] == []
    assert tools.status()["records"] == 2


def test_no_spelling_of_the_export_dir_reaches_the_memory_own_files(tmp_path: Path) -> None:
    memory = Memory(tmp_path / "memory", auto_consolidate=False)
    memory.remember("Yara rings the bells at noon.")
    (hexdir,) = [p.name for p in (tmp_path / "memory" / "records").iterdir()]
    (tmp_path / "alias").symlink_to(tmp_path / "memory", target_is_directory=True)
    before = _everything(tmp_path / "memory")
    for export_dir, path in ((tmp_path, f"memory/records/{hexdir}/000002.json"),
                             (tmp_path, "memory/records/x.json"),
                             (tmp_path, "memory/witness.json"),
                             (tmp_path / "alias", "records/x.json"),
                             (tmp_path / "alias", "salience.json"),
                             (Path(str(tmp_path / "memory") + "/"), "witness.json")):
        tools = MemoryTools(memory, export_dir=export_dir)
        with pytest.raises(ToolInputError, match="belongs to the memory"):
            tools.export(path)
    assert _everything(tmp_path / "memory") == before
    assert MemoryTools(memory, export_dir=tmp_path).export("memory/fine.json")["records"] == 1
