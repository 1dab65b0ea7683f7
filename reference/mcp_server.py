"""``memspec-mcp``: the reference engine's memory as a Model Context Protocol server.

An MCP host (an agent, an IDE, a desktop assistant) starts ``memspec-mcp`` and
speaks MCP with it over the process's stdin and stdout. The server holds one
:class:`memspec.reference.Memory` (on disk with ``--path DIR``, in memory
otherwise) and offers its porcelain as tools: ``remember``, ``recall``,
``consolidate``, ``decay``, ``resolve``, ``redact``, ``export``, ``load`` and
``status``. With ``--key KEYFILE`` (from ``memspec keygen``) records and
exports are signed by that identity.

``export`` writes and ``load`` reads only inside the memory directory (or
``--export-dir``): a
relative path, no ``~``, no ``..``, no symlink at any component, never into the
memory's own files (``records/``, ``index.sqlite``, ...), and an existing file is
replaced only with ``overwrite`` and only when it is a memory file. Tool bodies run
in worker threads, one at a time, and a call that waits too long for the one before
it is refused as busy: a slow call never wedges the server.

A memspec error (a broken rule, an unknown id, a value over a limit) comes
back as an MCP tool error whose text starts with the error class, e.g.
``proposal error: loser_id 'x' is not a record id [RES-1]``; nothing the
caller got wrong ends as a traceback.

The MCP SDK is the optional extra ``memspec[mcp]``: this module imports it
only when the server starts, so ``import memspec`` never needs it. Both SDK
lines are supported: mcp 2.x (``MCPServer``) and mcp 1.x (``FastMCP``).
"""

from __future__ import annotations

import argparse
import functools
import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from memspec import __version__
from memspec._errors import MemspecError
from memspec._keyfile import load_key
from memspec._safe_paths import PathError
from memspec.reference.mcp_tools import MemoryTools, ToolInputError, describe_error
from memspec.reference.memory import Memory

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = [
    "INSTALL_HINT",
    "TOOL_NAMES",
    "MemoryTools",
    "SDKMissingError",
    "ToolInputError",
    "build_parser",
    "build_server",
    "describe_error",
    "load_sdk",
    "main",
]

PROG = "memspec-mcp"
INSTALL_HINT = "pip install 'memspec[mcp]'"
TOOL_NAMES = ("remember", "recall", "consolidate", "decay", "resolve", "redact", "export",
              "load", "status")
INSTRUCTIONS = (
    "Long-term memory in the fg-agent-memory/0.1 format. Call `remember` with one fact per call "
    "and `recall` before answering from memory. Recalled lines marked [disputed: ...] are two "
    "sides of an open contradiction: ask which is right, then `resolve` it. Never treat a "
    "superseded or archived line as current."
)

_T = TypeVar("_T")


# -- the MCP layer ------------------------------------------------------------------------


class SDKMissingError(ImportError):
    """The MCP SDK (the ``mcp`` package) is not importable."""


@dataclass(frozen=True)
class _SDK:
    """The few SDK names the server uses, from whichever SDK line is installed."""

    server_class: Callable[..., MCPServer[Any]]
    tool_error: type[Exception]
    call_tool_result: Any
    tool_annotations: Any
    major: int


def load_sdk() -> _SDK:
    """The installed MCP SDK (2.x preferred, 1.x accepted); :class:`SDKMissingError` if none."""
    try:
        types = importlib.import_module("mcp.types")
    except ImportError as exc:
        raise SDKMissingError(str(exc)) from None
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError:
        pass
    else:
        return _SDK(MCPServer, ToolError, types.CallToolResult, types.ToolAnnotations, 2)
    try:
        # Why importlib: these names exist only in mcp 1.x, which type checkers never see.
        legacy = importlib.import_module("mcp.server.fastmcp")
        errors = importlib.import_module("mcp.server.fastmcp.exceptions")
    except ImportError as exc:
        raise SDKMissingError(f"unsupported mcp SDK: {exc}") from None
    return _SDK(legacy.FastMCP, errors.ToolError, types.CallToolResult, types.ToolAnnotations, 1)


def _guarded(sdk: _SDK, tools: MemoryTools, run: Callable[[], _T]) -> _T:
    """Run one tool body, alone; a caller's mistake becomes the SDK's tool error."""
    try:
        with tools.serialized():
            return run()
    except MemspecError as exc:
        raise sdk.tool_error(describe_error(exc)) from None
    except ToolInputError as exc:
        raise sdk.tool_error(str(exc)) from None


async def _in_thread(sdk: _SDK, tools: MemoryTools, run: Callable[[], _T]) -> _T:
    """Run one tool body in a worker thread, so the event loop never waits on the disk."""
    import anyio.to_thread

    return await anyio.to_thread.run_sync(functools.partial(_guarded, sdk, tools, run))


def build_server(tools: MemoryTools, sdk: _SDK | None = None) -> MCPServer[Any]:
    """An MCP server (not yet running) offering ``tools``."""
    sdk = sdk or load_sdk()
    options: dict[str, Any] = {"instructions": INSTRUCTIONS, "log_level": "WARNING"}
    if sdk.major >= 2:
        options["version"] = __version__
    server = sdk.server_class("memspec", **options)

    def hints(**values: bool) -> Any:
        return sdk.tool_annotations.model_validate(values)

    # Why async with explicit threads: every SDK line then runs tool bodies off the event
    # loop the same way, one at a time (the stores' connections allow any thread).
    async def remember(text: str, tags: list[str] | None = None) -> dict[str, Any]:
        """Remember one statement (a fact, preference or event) in long-term memory.

        Args:
            text: the statement, in one sentence.
            tags: optional labels to file it under.

        Returns {record_id, deduped, consolidation}: deduped is true when the
        memory already held exactly this statement (it is reinforced, not stored
        twice); consolidation is the report of an automatic pass, when one ran.
        """
        return await _in_thread(sdk, tools, lambda: tools.remember(text, tags))

    async def recall(query: str, budget_tokens: int = 2000, include_history: bool = False,
                     include_archived: bool = False) -> object:
        """Recall what memory holds about a query, as lines ready for a prompt.

        Args:
            query: what to look for.
            budget_tokens: the most tokens the recalled lines may take (default 2000).
            include_history: also show superseded versions, marked as history.
            include_archived: also search archived records.

        Lines marked [disputed: ...] are the two sides of an open contradiction.
        The structured result carries every record with its score and reasons.
        """
        block, payload = await _in_thread(sdk, tools, lambda: tools.recall(
            query, budget_tokens, include_history, include_archived))
        text = block or "(nothing recalled)"
        return sdk.call_tool_result.model_validate(
            {"content": [{"type": "text", "text": text}], "structuredContent": payload})

    async def consolidate() -> dict[str, Any]:
        """Run one consolidation pass: merge duplicates, mark contradictions, promote rules.

        Returns the report {actions, rejections, deferred}.
        """
        return await _in_thread(sdk, tools, tools.consolidate)

    async def decay() -> dict[str, Any]:
        """Run one decay pass: archive records that have faded; disputed ones are protected.

        Returns the report {archived, protected, saliences}.
        """
        return await _in_thread(sdk, tools, tools.decay)

    async def resolve(record_id: str, winner_id: str, reason: str) -> dict[str, Any]:
        """Settle an open contradiction: winner_id becomes current, record_id is superseded.

        Args:
            record_id: the side that is wrong (it is kept, as history).
            winner_id: the side that is right.
            reason: why, in a few words (required).
        """
        return await _in_thread(sdk, tools, lambda: tools.resolve(record_id, winner_id, reason))

    async def redact(record_id: str, reason: str) -> dict[str, Any]:
        """Destroy a record's content for good (every version); a tombstone remains.

        Args:
            record_id: the record to redact.
            reason: why (required).
        """
        return await _in_thread(sdk, tools, lambda: tools.redact(record_id, reason))

    async def export(path: str, overwrite: bool = False) -> dict[str, Any]:
        """Write the whole memory as one canonical memory file (signed when the server has a key).

        Args:
            path: where to write: a .json file name, relative to the memory folder
                (no absolute path, no "..", no symlinks).
            overwrite: replace an existing file of that name (only a memory file).

        Returns {path, records, signed}.
        """
        return await _in_thread(sdk, tools, lambda: tools.export(path, overwrite))

    async def load(path: str, verify: bool = True) -> dict[str, Any]:
        """Load a memory file (from `export`, or another agent's) into this memory.

        Args:
            path: a .json file name, relative to the memory folder (no absolute path,
                no "..", no symlinks).
            verify: require the file's signature (default true).

        Returns {loaded, skipped}: record ids written, and ids already held.
        """
        return await _in_thread(sdk, tools, lambda: tools.load(path, verify))

    async def status() -> dict[str, Any]:
        """Counts of records by state and type, open contradictions and flagged rules."""
        return await _in_thread(sdk, tools, tools.status)

    def add(fn: Callable[..., Any], **options: Any) -> None:
        server.add_tool(fn, name=fn.__name__, description=inspect.cleandoc(fn.__doc__ or ""),
                        **options)

    add(remember)
    add(recall, structured_output=False)  # it builds its own result: prompt text + records
    add(consolidate)
    add(decay)
    add(resolve)
    add(redact, annotations=hints(destructiveHint=True))
    add(export)
    add(load)
    add(status, annotations=hints(readOnlyHint=True))
    return server


# -- the console script -------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The ``memspec-mcp`` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Serve memspec's reference memory to an MCP client over stdio.",
        epilog="examples:\n  memspec-mcp --path ~/.agent-memory\n"
               "  memspec-mcp --path ~/.agent-memory --key agent.key\n"
               f"(needs the MCP SDK: {INSTALL_HINT})",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--path", metavar="DIR",
                        help="keep the memory in this directory (default: in memory only, "
                             "gone when the server stops)")
    parser.add_argument("--export-dir", metavar="DIR",
                        help="where `export` may write (default: the --path directory; "
                             "without either, export is refused)")
    parser.add_argument("--key", metavar="KEYFILE",
                        help="a key file from `memspec keygen`: sign records and exports")
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return parser


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: {message}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the server until the client closes stdin; return the exit code."""
    args = build_parser().parse_args(argv)
    try:
        identity = load_key(args.key) if args.key else None
    except MemspecError as exc:
        if exc.code == "usage":
            return _fail(f"error: {exc}", 2)
        return _fail(describe_error(exc), 1)
    try:
        sdk = load_sdk()
    except SDKMissingError as exc:
        return _fail(f"error: the MCP server needs the MCP SDK ({exc}); install it with: "
                     f"{INSTALL_HINT}", 2)
    if args.export_dir is not None and not os.path.isdir(args.export_dir):
        return _fail(f"error: --export-dir {args.export_dir} is not a directory", 2)
    try:
        memory = Memory(args.path, identity=identity)
    except PathError as exc:
        return _fail(f"error: cannot open memory at {args.path}: {exc.message}", 2)
    except MemspecError as exc:
        return _fail(describe_error(exc), 1)
    except OSError as exc:
        return _fail(f"error: cannot open memory at {args.path}: {exc.strerror or exc}", 2)
    try:
        build_server(MemoryTools(memory, args.export_dir), sdk).run("stdio")
    except KeyboardInterrupt:
        return 130
    finally:
        memory.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
