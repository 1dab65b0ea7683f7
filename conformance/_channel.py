"""The report channel: how a kit run hands its report to ``memspec certify``, out of the engine's
reach.

``memspec certify`` runs the kit in a pytest child process, and the engine under test runs
below that child (a process engine is its child, an in-process engine lives in it). The
report must reach certify as the kit made it, whatever the engine does to files on disk.
So certify (the parent) makes a random one-time key and two pipes before anything starts:
the child reads the key from the first pipe at configure time, before any engine is
loaded, and at the very end, after the engine is closed, writes its report to the second
pipe with an HMAC-SHA256 under that key. The parent accepts only a report whose MAC
verifies (anything else in the pipe is ignored, with a warning); it signs it (with the
user's key, which never leaves the parent) and writes every file from that in-memory
report. Process engines are started with ``close_fds``, so they inherit neither pipe; the
key is never on a command line, in the environment or on disk. An in-process engine is
code in the kit's own process and is trusted; an engine that can ptrace the kit is out of
scope (docs/tamper.md).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
from collections.abc import Mapping
from typing import Any

from memspec._errors import MemspecError

__all__ = ["ChannelError", "ReportChannel", "read_key", "send_report"]

_PREFIX = b"memspec-report "
_KEY_BYTES = 32
#: The most the parent reads from the report pipe: far above any report, and a bound
#: on what anyone writing into the pipe can make it hold.
MAX_CHANNEL_BYTES = 256 * 1024 * 1024


class ChannelError(MemspecError):
    """The child's end of the report channel is not usable (no key came over its pipe)."""


def _mac(key: bytes, body: bytes) -> str:
    return hmac.new(key, body, hashlib.sha256).hexdigest()


def read_key(fd: int) -> bytes:
    """The one-time key the parent put in the pipe ``fd`` (the child's side); closes ``fd``."""
    data = b""
    try:
        while len(data) < 2 * _KEY_BYTES + 1 and (chunk := os.read(fd, 128)):
            data += chunk
    finally:
        os.close(fd)
    text = data.strip()
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        key = b""
    if len(key) != _KEY_BYTES:
        raise ChannelError("the report channel's key pipe did not carry a key")
    return key


def send_report(fd: int, key: bytes, report: Mapping[str, Any] | None) -> None:
    """Write ``report`` with its MAC to the pipe ``fd`` (nothing when None); closes ``fd``."""
    try:
        if report is not None:
            body = json.dumps(report, ensure_ascii=True, allow_nan=False,
                              separators=(",", ":")).encode("ascii")
            frame = _PREFIX + _mac(key, body).encode("ascii") + b" " + body + b"\n"
            view = memoryview(frame)
            while view:
                view = view[os.write(fd, view):]
    finally:
        os.close(fd)


class ReportChannel:
    """The parent's side: the key pipe, the report pipe, and what came back.

    Use :attr:`child_fds` as ``pass_fds`` and :attr:`option` on the child's command line,
    call :meth:`started` once the child runs and :meth:`receive` once it has exited.
    """

    def __init__(self) -> None:
        self._key = secrets.token_bytes(_KEY_BYTES)
        key_read, key_write = os.pipe()
        try:
            os.write(key_write, self._key.hex().encode("ascii") + b"\n")
        finally:
            os.close(key_write)
        self._report_read, report_write = os.pipe()
        self.child_fds = (key_read, report_write)
        self._data = bytearray()
        self._overflow = False
        #: Whether the pipe carried anything but the kit's own report (set by receive).
        self.tampered = False
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    @property
    def option(self) -> str:
        """The kit option that tells the child where its ends of the pipes are."""
        return f"--memspec-report-channel={self.child_fds[0]},{self.child_fds[1]}"

    def _drain(self) -> None:
        # Read while the child runs, so a large report never blocks it on a full pipe.
        try:
            while chunk := os.read(self._report_read, 1 << 16):
                if len(self._data) + len(chunk) > MAX_CHANNEL_BYTES:
                    self._overflow = True
                    continue
                self._data += chunk
        finally:
            os.close(self._report_read)

    def started(self) -> None:
        """Close the parent's copies of the child's ends (the child has its own now)."""
        for fd in self.child_fds:
            try:
                os.close(fd)
            except OSError:
                pass

    def close(self) -> None:
        """Release everything (after :meth:`receive`, or when the child never ran)."""
        self.started()
        self._reader.join(timeout=5)

    def receive(self) -> dict[str, Any] | None:
        """The report the child sent under the key, None if it sent none.

        Anything else in the pipe (written by someone who is not the kit) is ignored and
        sets :attr:`tampered`.
        """
        self._reader.join()
        data = bytes(self._data)
        report: dict[str, Any] | None = None
        others = self._overflow
        for line in data.split(b"\n"):
            mac, _, body = line.removeprefix(_PREFIX).partition(b" ")
            if (line.startswith(_PREFIX) and report is None
                    and hmac.compare_digest(mac, _mac(self._key, body).encode("ascii"))):
                value = json.loads(body)
                if isinstance(value, dict):
                    report = value
                    continue
            others = others or bool(line)
        self.tampered = others
        return report
