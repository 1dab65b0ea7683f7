"""Input that is not what it claims: files that look signed, tombstones that look authentic,
texts that look like one document.

Each test builds the attack from its definition and drives it through the public surface
(the command line, :class:`memspec.reference.Memory`, the library), so the defence is
checked where a user meets it.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from memspec import SignatureError, address_from_public_key, ed25519_verify, verify_file
from memspec.cli import main as cli_main
from memspec.conformance import _builders as build
from memspec.reference import Memory

#: The neutral element's encoding: y = 1, x = 0.
IDENTITY = bytes([1]) + bytes(31)
#: R = the neutral element, S = 0: verifies any message under the neutral element as key
#: when the small-order checks are missing.
NOBODY_SIGNED = base64.b64encode(IDENTITY + bytes(32)).decode("ascii")


def _forged_file(records: list[dict[str, Any]]) -> dict[str, Any]:
    return {"format": "fg-agent-memory/0.1", "agent": address_from_public_key(IDENTITY),
            "created_at": "2026-03-04T05:06:07.089Z", "records": records,
            "signature": NOBODY_SIGNED}


def _records() -> list[dict[str, Any]]:
    return [build.record(body=f"Forged fact {n}.", created_at=f"2026-02-0{n}T00:00:00.000Z")
            for n in range(1, 4)]


def test_the_small_order_forgery_verifies_nothing() -> None:
    assert not ed25519_verify(IDENTITY, b"any message at all", IDENTITY + bytes(32))
    for records in ([], _records()):
        with pytest.raises(SignatureError) as info:
            verify_file(_forged_file(records))
        assert info.value.requirement == "SIG-11"


def test_memspec_verify_refuses_the_forged_file(tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "forged.json"
    target.write_text(json.dumps(_forged_file(_records())), encoding="utf-8")
    assert cli_main(["verify", str(target)]) == 1
    out = capsys.readouterr()
    assert "SIG-11" in out.out + out.err
    assert "valid" not in out.out


def test_memory_load_with_verify_refuses_the_forged_file(tmp_path: Path) -> None:
    target = tmp_path / "forged.json"
    target.write_text(json.dumps(_forged_file(_records())), encoding="utf-8")
    with pytest.raises(SignatureError) as info:
        Memory.load(target, verify=True)
    assert info.value.requirement == "SIG-11"
