"""Which requirements a vector may name: only those its own profile can judge (SPEC 19.2).

A vector of a group whose operation belongs to profile P (and that needs the store for
its setup, or the extension profiles whose requirements it names, which it lists in
``requires_profiles``) judges a requirement
of profile Q only when claiming Q is enough to run it: P and the other profiles it needs
all lie in Q's closure. Naming any other requirement would leave that requirement
partial for every engine that claims Q alone, so such ids are dropped from the vector;
the requirement is judged by vectors and tests of its own profile instead.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from _vectorlib.fixtures import ROOT

__all__ = ["own_profile_only"]


@cache
def _profiles() -> dict[str, tuple[str, ...]]:
    out: dict[str, tuple[str, ...]] = {}
    for name in ("operations.json", "extensions.json"):
        data = json.loads((ROOT / "spec" / name).read_text(encoding="utf-8"))
        for profile, spec in data.get("profiles", {}).items():
            out.setdefault(profile, tuple(spec.get("requires", ())))
    return out


@cache
def _requirement_profiles() -> dict[str, str]:
    path = ROOT / "spec" / "requirements.json"
    data = json.loads(path.read_text(encoding="utf-8"))
    out = {r["id"]: r["profile"] for r in data["requirements"]}
    return out


@cache
def closure(profile: str) -> frozenset[str]:
    """``profile`` and every profile it requires, transitively."""
    out = {profile}
    for required in _profiles().get(profile, ()):
        out |= closure(required)
    return frozenset(out)


def own_profile_only(group: dict[str, Any]) -> list[str]:
    """Drop, in place, the requirement ids of ``group``'s tests that another profile's
    operations would have to judge. A test that would be left with none keeps its list
    (its data names no requirement of the group's own profile); their ids are returned."""
    known = _requirement_profiles()
    stranded: list[str] = []
    for test in group["tests"]:
        beyond = sorted({known[r] for r in test["requirements"] if r in known
                         and known[r].startswith("x-") and known[r] != group["profile"]})
        if beyond:
            test["requires_profiles"] = beyond
        needs = {group["profile"], *group.get("requires_profiles", ()), *beyond}
        if test.get("setup"):
            needs.add("store")
        reach = frozenset().union(*(closure(n) for n in needs))
        kept = [r for r in test["requirements"]
                if r not in known or known[r] in ("core", group["profile"])
                or (needs <= closure(known[r]) and known[r] in reach)]
        if not kept:
            stranded.append(test["id"])
            continue
        test["requirements"] = kept
    return stranded
