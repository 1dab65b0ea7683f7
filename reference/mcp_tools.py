"""The tools of ``memspec-mcp`` as plain methods over one reference memory, free of the MCP SDK.

:class:`MemoryTools` is what :mod:`memspec.reference.mcp_server` adapts to the SDK: each
tool takes plain arguments and returns a JSON-ready dictionary; bad input raises a memspec
error or :class:`ToolInputError`, never anything else a caller could turn into a traceback.

``export`` writes and ``load`` reads only inside the export directory (the memory
directory unless ``--export-dir`` says otherwise): a relative path, no ``~``, no ``..``,
no symlink at any component, never into the memory's own files, and an existing file is
replaced only with ``overwrite`` and only when it is a memory file. Calls run one at a
time; one that waits longer than :data:`BUSY_SECONDS` for the call before it is refused.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from memspec._canonical import DEFAULT_LIMITS, parse_json
from memspec._errors import MemspecError
from memspec._safe_paths import (
    PathError,
    closing_fd,
    inside,
    lstat_at,
    open_dir,
    read_regular_at,
    walk,
)
from memspec.reference.memory import Memory

__all__ = ["BUSY_SECONDS", "MemoryTools", "ToolInputError", "describe_error"]

#: How long a tool call waits for the call before it to finish before it is refused as busy.
BUSY_SECONDS = 30.0
#: The most bytes read of an existing file to tell whether it is a memory file.
_PROBE_LIMIT = 64 * 1024 * 1024
#: Names inside the memory directory that belong to the memory itself.
_RESERVED = frozenset({"records", "pending", "index.sqlite", "index.sqlite-wal",
                       "index.sqlite-shm", "index.sqlite-journal", "salience.json",
                       "witness.json", "witness.json.lock"})


class ToolInputError(Exception):
    """A caller's mistake outside memspec's error classes (say, an unwritable export path)."""


def describe_error(exc: MemspecError) -> str:
    """The tool-error text for a memspec error: its class, then its message."""
    return f"{exc.code} error: {exc}"


class MemoryTools:
    """The server's tools as plain methods over one :class:`Memory`.

    Results are JSON-ready dictionaries; bad input raises a memspec error or
    :class:`ToolInputError`. The MCP layer only adapts these to the SDK.
    """

    def __init__(self, memory: Memory, export_dir: str | Path | None = None) -> None:
        self._memory = memory
        chosen = export_dir if export_dir is not None else memory.path
        self._export_dir = None if chosen is None else Path(chosen)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def serialized(self) -> Iterator[None]:
        """Hold the memory for one call; refuse as busy after :data:`BUSY_SECONDS`."""
        if not self._lock.acquire(timeout=BUSY_SECONDS):
            raise ToolInputError("the memory is busy with another call; try again")
        try:
            yield
        finally:
            self._lock.release()

    @property
    def memory(self) -> Memory:
        """The memory behind the tools."""
        return self._memory

    def remember(self, text: str, tags: Sequence[str] | None = None) -> dict[str, Any]:
        """Store ``text``; a repeat reinforces the stored record instead (``deduped``)."""
        result = self._memory.remember(text, tags=tags)
        consolidation = result.consolidation
        return {"record_id": result.record_id, "deduped": result.deduped,
                "consolidation": None if consolidation is None else consolidation.model_dump()}

    def recall(self, query: str, budget_tokens: int = 2000, include_history: bool = False,
               include_archived: bool = False) -> tuple[str, dict[str, Any]]:
        """The prompt block (one line per record, disputes marked) and the structured result."""
        result = self._memory.recall(query, budget_tokens=budget_tokens,
                                     include_history=include_history,
                                     include_archived=include_archived)
        block = result.as_prompt_block()
        return block, {"prompt_block": block, **result.block.model_dump()}

    def consolidate(self) -> dict[str, Any]:
        """One consolidation pass: ``{actions, rejections, deferred}``."""
        return self._memory.consolidate().model_dump()

    def decay(self) -> dict[str, Any]:
        """One decay pass: ``{archived, protected, saliences}``."""
        return self._memory.decay().model_dump()

    def resolve(self, record_id: str, winner_id: str, reason: str) -> dict[str, Any]:
        """Settle the contradiction ``record_id`` is in: ``winner_id`` wins, ``record_id`` loses."""
        winner, loser = self._memory.resolve(record_id, winner_id, reason)
        return {"winner": winner.model_dump(), "loser": loser.model_dump()}

    def redact(self, record_id: str, reason: str) -> dict[str, Any]:
        """Destroy a record's content in every version; returns its tombstone."""
        return {"tombstone": self._memory.redact(record_id, reason).model_dump()}

    def export(self, path: str, overwrite: bool = False) -> dict[str, Any]:
        """Write the memory as one canonical MemoryFile at ``path`` (a ``.json`` file).

        ``path`` is relative to the export directory (the memory directory unless
        ``--export-dir`` says otherwise) and must stay inside it: no absolute path,
        ``~`` or ``..``, no symlink at any component, none of the memory's own
        names. An existing file is replaced only with ``overwrite``, and only when
        it is a regular file holding a memory file: a model driving this tool must
        not be able to overwrite anything else.
        """
        parts = self._inside("export", path)
        name = parts[-1]
        assert self._export_dir is not None
        try:
            with closing_fd(open_dir(self._export_dir)) as root, \
                    closing_fd(walk(root, parts[:-1])) as directory:
                self._check_not_the_memory("export", directory, name)
                existing = lstat_at(directory, name)
                if existing is not None:
                    if not overwrite:
                        raise ToolInputError(f"{path} exists; pass overwrite=true to replace "
                                             "it")
                    if not _is_memory_file(directory, name):
                        raise ToolInputError(f"{path} exists and is not a memory file; "
                                             "refusing to overwrite")
                memory_file = self._memory.export_at(directory, name, overwrite=overwrite)
        except PathError as exc:
            raise ToolInputError(f"cannot write {path}: {exc.message}") from None
        return {"path": str(self._export_dir.joinpath(*parts)),
                "records": len(memory_file["records"]), "signed": bool(memory_file["signature"])}

    def load(self, path: str, verify: bool = True) -> dict[str, Any]:
        """Load the memory file at ``path`` (inside the export directory, as for ``export``).

        Only a regular file is read (a FIFO or a device is refused), at most the
        text-size limit of it; the file is checked whole before anything is written
        and ids already held are skipped. ``verify`` requires a file signature.
        """
        parts = self._inside("load", path)
        assert self._export_dir is not None
        try:
            with closing_fd(open_dir(self._export_dir)) as root, \
                    closing_fd(walk(root, parts[:-1])) as directory:
                self._check_not_the_memory("load", directory, parts[-1])
                data = read_regular_at(directory, parts[-1],
                                       limit=DEFAULT_LIMITS.max_text_bytes, label=path)
        except FileNotFoundError:
            raise ToolInputError(f"load: no file {path}") from None
        except PathError as exc:
            raise ToolInputError(f"cannot read {path}: {exc.message}") from None
        report = self._memory.merge(parse_json(data), verify=verify)
        return report.model_dump()

    def _inside(self, tool: str, path: str) -> tuple[str, ...]:
        """The components of a tool's ``path``, refused unless it stays in the export dir."""
        if self._export_dir is None:
            raise ToolInputError(f"{tool} needs a directory: start the server with --path DIR "
                                 "(or --export-dir DIR)")
        try:
            parts = inside(path)
        except PathError as exc:
            raise ToolInputError(f"{tool}: {exc.message}") from None
        name = parts[-1]
        if not name.endswith(".json") or name == ".json":
            raise ToolInputError(f"{tool} takes a .json file, not {path!r}")
        if any(part.startswith(".") for part in parts):
            raise ToolInputError(f"{tool}: {path!r} names a hidden file or folder")
        return parts

    def _check_not_the_memory(self, tool: str, directory: int, name: str) -> None:
        """Refuse ``name`` in ``directory`` when it is one of the memory's own files.

        Compared by device and inode, so no spelling of ``--export-dir`` (the memory
        folder, a parent of it, a link to it) reaches ``records/`` or ``pending/``.
        """
        if self._memory.path is None:
            return
        here = os.fstat(directory)
        parent = os.stat("..", dir_fd=directory)

        def same(info: os.stat_result, path: Path) -> bool:
            try:
                other = os.stat(path)
            except OSError:
                return False
            return (info.st_dev, info.st_ino) == (other.st_dev, other.st_ino)

        root = self._memory.path
        inside_own = any(same(here, root / sub) or same(parent, root / sub)
                         for sub in ("records", "pending"))
        if inside_own or (same(here, root) and name in _RESERVED):
            raise ToolInputError(f"{tool}: {name!r} belongs to the memory itself; choose "
                                 "another name")

    def status(self) -> dict[str, Any]:
        """Counts by state and type, open contradictions, flagged rules, path and agent,
        and what opening the memory repaired."""
        return {**self._memory.status(), "repaired": self._memory.repair_report.model_dump()}


def _is_memory_file(directory: int, name: str) -> bool:
    """Whether ``name`` is a regular file (not a link, FIFO or device) holding a memory file."""
    try:
        value = parse_json(read_regular_at(directory, name, limit=_PROBE_LIMIT))
    except (OSError, MemspecError):
        return False
    return isinstance(value, dict) and "format" in value and "records" in value
