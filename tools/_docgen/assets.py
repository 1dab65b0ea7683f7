"""A local copy of mermaid, so diagrams render with no network when the site is viewed.

Material for MkDocs loads mermaid from a CDN unless a global ``mermaid`` is
already defined; the site defines one by loading this file first (mkdocs.yml,
``extra_javascript``). The build fetches the pinned npm package once with
``npm pack`` into a cache outside the repository and checks its integrity.
"""

from __future__ import annotations

import base64
import hashlib
import io
import os
import shutil
import subprocess
import tarfile
import tempfile
from pathlib import Path

from _docgen._common import GEN, MERMAID_ASSET, DocgenError

MERMAID_VERSION = "11.17.2"
#: npm's integrity string (sha512 of the package tarball) of the pinned version.
MERMAID_INTEGRITY = (
    "sha512-V6K3C8EBdEsPFZXSKMJe6ppQOENxuHARr9GvHX4hh47lAbhMRD9qf4oEK7LoaRQxULMa80/qt5gHO73aCleBBg=="
)
TARBALL = f"mermaid-{MERMAID_VERSION}.tgz"
LICENSE_ASSET = f"{GEN}/assets/mermaid-LICENSE.txt"


def default_cache() -> Path:
    """``$MEMSPEC_DOCS_CACHE``, else ``$XDG_CACHE_HOME/memspec-docs``, else ``~/.cache/...``."""
    if os.environ.get("MEMSPEC_DOCS_CACHE"):
        return Path(os.environ["MEMSPEC_DOCS_CACHE"])
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "memspec-docs"


def _integrity(data: bytes) -> str:
    return "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()


def _fetch(cache: Path) -> Path:
    npm = shutil.which("npm")
    if npm is None:
        raise DocgenError(
            f"mermaid {MERMAID_VERSION} is not cached in {cache} and npm is not installed: "
            f"install npm, or put {TARBALL} there (npm pack mermaid@{MERMAID_VERSION}), "
            "or pass --mermaid PATH/TO/mermaid.min.js")
    cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=cache) as tmp:
        done = subprocess.run(
            [npm, "pack", f"mermaid@{MERMAID_VERSION}", "--pack-destination", tmp,
             "--silent"],
            capture_output=True, text=True, timeout=600, check=False)
        made = Path(tmp) / TARBALL
        if done.returncode != 0 or not made.is_file():
            raise DocgenError(f"npm pack mermaid@{MERMAID_VERSION} failed: "
                              f"{(done.stderr or done.stdout).strip()[-500:]}")
        target = cache / TARBALL
        made.replace(target)
    return target


def mermaid_files(cache: Path | None = None) -> dict[str, bytes]:
    """``mermaid.min.js`` and its licence from the pinned, integrity-checked npm package."""
    cache = cache or default_cache()
    tarball = cache / TARBALL
    if not tarball.is_file():
        tarball = _fetch(cache)
    data = tarball.read_bytes()
    if _integrity(data) != MERMAID_INTEGRITY:
        raise DocgenError(f"{tarball} does not match the pinned integrity of mermaid "
                          f"{MERMAID_VERSION}; delete it to fetch it again")
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
            script = archive.extractfile("package/dist/mermaid.min.js")
            licence = archive.extractfile("package/LICENSE")
            if script is None or licence is None:
                raise KeyError("not regular files")
            return {MERMAID_ASSET: script.read(), LICENSE_ASSET: licence.read()}
    except (KeyError, tarfile.TarError) as exc:
        raise DocgenError(f"{tarball}: no dist/mermaid.min.js or LICENSE ({exc})") from exc


def mermaid_from_file(path: Path) -> dict[str, bytes]:
    """A mermaid build given by hand (``--mermaid``), used as it is."""
    try:
        return {MERMAID_ASSET: path.read_bytes()}
    except OSError as exc:
        raise DocgenError(f"cannot read {path}: {exc}") from exc
