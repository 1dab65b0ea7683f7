"""Key files: the private key ``memspec keygen`` writes, read back by everything that signs.

A key file is a small JSON object ``{"kind": "memspec-ed25519-seed", "seed_hex": ...,
"address": ...}`` with owner-only permissions. The command line (``memspec sign``,
``new --sign-key``, ``certify --sign-key``) and the reference's MCP server (``memspec-mcp
--key``) read it through :func:`load_key`; key material never travels on a command line.
"""

from __future__ import annotations

from memspec._canonical import parse_json
from memspec._errors import EncodingError, MemspecError
from memspec._safe_paths import PathError, read_regular
from memspec._signing import SigningKey

__all__ = ["KEY_KIND", "KeyFileNotFound", "load_key"]

KEY_KIND = "memspec-ed25519-seed"
#: A key file is a few hundred bytes; anything far larger is not one.
_KEY_FILE_LIMIT = 64 * 1024


class KeyFileNotFound(MemspecError):
    """The key file named does not exist (or is not a regular file): a usage error."""

    code = "usage"


def load_key(path: str) -> SigningKey:
    """Read a key file written by ``memspec keygen``.

    A missing file raises :class:`KeyFileNotFound`; one that is not a key file, or whose
    address does not match its seed, raises :class:`~memspec.EncodingError` naming the path.
    """
    try:
        raw = read_regular(path, limit=_KEY_FILE_LIMIT)
    except (FileNotFoundError, PathError):
        raise KeyFileNotFound(f"{path}: no such key file") from None
    except MemspecError as exc:
        raise EncodingError(f"{path}: {exc.message}") from exc
    try:
        data = parse_json(raw)
        if not isinstance(data, dict) or data.get("kind") != KEY_KIND:
            raise EncodingError(f"{path}: not a memspec key file (kind {KEY_KIND!r})")
        key = SigningKey.from_hex(data.get("seed_hex"))
    except MemspecError as exc:
        raise EncodingError(f"{path}: {exc.message}") from exc
    if data.get("address") not in (None, key.address):
        raise EncodingError(f"{path}: the address does not match the seed")
    return key
