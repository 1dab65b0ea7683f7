"""Id placeholders in vector expectations (a group's ``"placeholders": true``).

Some ids a pass writes are the engine's to choose: a promoted rule's id follows
from a body the engine words, and the order of a detected transition's sides is
the engine's. A vector names such an id by a placeholder object instead of a
literal: ``{"bind": NAME}`` is an id the setup does not hold (a record the call
created), ``{"bind": NAME, "among": [ID, ...]}`` one of the listed ids. The first
answered value that fits binds NAME; every later placeholder of NAME must then
be that same id, and two names never bind the same id. What is not a
placeholder is compared as it is (JSON equality), so an unbound or misfitting
placeholder simply fails the comparison.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

__all__ = ["bind_placeholders", "is_placeholder"]


def is_placeholder(value: Any) -> bool:
    """Whether ``value`` is an id placeholder object."""
    if not (isinstance(value, dict) and isinstance(value.get("bind"), str)
            and set(value) <= {"bind", "among"}):
        return False
    among = value.get("among", [])
    return isinstance(among, list) and all(isinstance(i, str) for i in among)


def bind_placeholders(expected: Any, answered: Any, held: Collection[str],
                      bound: dict[str, str]) -> Any:
    """``expected`` with every placeholder the ``answered`` value fits replaced by that value.

    ``held`` are the ids the store held before the call; ``bound`` (updated in place)
    carries the bindings across the keys of one case. A placeholder that does not fit
    is left in place, so the comparison that follows fails on it.
    """
    if is_placeholder(expected):
        name = expected["bind"]
        if name in bound:
            return bound[name]
        among = expected.get("among")
        fits = isinstance(answered, str) and (
            answered in among if among is not None else answered not in held)
        if fits and answered not in bound.values():
            bound[name] = answered
            return answered
        return expected
    if isinstance(expected, dict):
        given = answered if isinstance(answered, dict) else {}
        return {k: bind_placeholders(v, given.get(k), held, bound) for k, v in expected.items()}
    if isinstance(expected, list):
        items = answered if isinstance(answered, list) else []
        return [bind_placeholders(v, items[i] if i < len(items) else None, held, bound)
                for i, v in enumerate(expected)]
    return expected
