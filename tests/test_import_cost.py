"""Having memspec installed costs an unrelated pytest run nothing.

The pytest plugin is loaded by every pytest run in an environment where memspec
is installed (entry point pytest11). Until a memspec option is used it must not
pull in the schema registry, the validator or the crypto backend.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("jsonschema", "referencing", "cryptography", "hypothesis")


def _loaded_after(code: str) -> list[str]:
    report = f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    probe = f"import sys, json\n{code}\n{report}"
    run = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    loaded: list[str] = json.loads(run.stdout.strip().splitlines()[-1])
    return loaded


@pytest.mark.parametrize("code", [
    "import memspec.conformance.plugin",
    "import memspec",
    "import memspec._errors, memspec.data",
    "import memspec.report",
])
def test_importing_leaves_the_heavy_dependencies_out(code: str) -> None:
    assert _loaded_after(code) == []


def test_using_a_name_loads_what_it_needs() -> None:
    assert "cryptography" in _loaded_after("from memspec import SigningKey")


def test_every_public_name_resolves() -> None:
    import memspec

    missing = [name for name in memspec.__all__ if not hasattr(memspec, name)]
    assert missing == []
    assert set(memspec.__all__) - {"__version__"} == set(memspec._homes())
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        memspec.nope  # noqa: B018


def test_the_kit_package_names_resolve_from_its_one_list() -> None:
    import memspec.conformance as kit
    from memspec._lazy import homes

    assert set(kit.__all__) == set(homes(kit.__file__))
    assert all(hasattr(kit, name) for name in kit.__all__)
