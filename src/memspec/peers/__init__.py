"""Adapters that put engines other people wrote behind memspec's engine interface.

Each adapter only translates: wire JSON in, the engine's own parsers and functions, wire JSON
out, and the engine's exceptions mapped to the error classes of SPEC.md section 18.4. What the
kit then finds is the engine's behaviour, and ``spec/peers/`` classifies every difference.

- :mod:`memspec.peers.fg_agent_memory`: fg-agent-memory 0.2.0 with fg-agent-id 0.2.0, the
  original engine of the format (``pip install "memspec[peers]"``).
"""

from __future__ import annotations

from typing import Any

from memspec.data import json_resource

__all__ = ["CLASSIFICATIONS", "classification", "expected_outcome"]

#: The classification data files of spec/peers/, by engine: name -> file name.
CLASSIFICATIONS = {"fg-agent-memory": "fg-agent-memory-0.2.0.json"}


def classification(engine: str = "fg-agent-memory") -> dict[str, Any]:
    """The committed classification of ``engine`` (schemas/peer-classification.json)."""
    data: dict[str, Any] = dict(json_resource("spec", f"peers/{CLASSIFICATIONS[engine]}"))
    return data


def expected_outcome(entry: dict[str, Any], mode: str) -> str | None:
    """The outcome a classification ``entry`` expects in ``mode`` (``in-process`` or ``process``).

    ``None``: the requirement is not expected to be listed in that mode.
    """
    outcome = entry["outcome"]
    if isinstance(outcome, str):
        return outcome
    found: str | None = outcome.get(mode)
    return found
