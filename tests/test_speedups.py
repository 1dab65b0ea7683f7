"""memspec._speedups, the accelerator's type walk in C, judges every value as the Python
walk (memspec._canonical_fast.plain) does, and memspec uses it only where it is built."""

from __future__ import annotations

import collections
import datetime
import enum
import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memspec import _canonical, _canonical_fast


def _speedups() -> Callable[[Any, int], bool]:
    try:
        from memspec._speedups import plain
    except ImportError:
        if os.environ.get("CI"):
            raise  # CI builds the package with a compiler: the C walk must be tested there
        pytest.skip("memspec._speedups is not built here (no compiler at install); "
                    "memspec uses the Python walk")
    return plain


class _Colour(enum.Enum):
    RED = 1


class _Level(enum.IntEnum):
    LOW = 1


class _Name(str):
    pass


class _Items(list[Any]):
    pass


#: Every kind of leaf the walk must tell apart: exact JSON scalars, and what orjson would
#: encode although canonical JSON refuses it (floats, enums, UUIDs, dates, subclasses).
_LEAVES = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(min_value=2**60), st.text(max_size=3),
    st.floats(allow_nan=True), st.just(_Colour.RED), st.just(_Level.LOW),
    st.just(_Name("x")), st.just(uuid.UUID(int=7)), st.just(datetime.date(2026, 1, 1)),
    st.just(b"x"), st.just(object()),
)


def _containers(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    keys = st.text(max_size=2) | st.integers(0, 3)
    return st.one_of(
        st.lists(children, max_size=4), st.lists(children, max_size=4).map(tuple),
        st.dictionaries(keys, children, max_size=4),
        st.lists(children, max_size=2).map(_Items),
        st.dictionaries(st.text(max_size=2), children, max_size=2).map(collections.OrderedDict),
    )


_VALUES = st.recursive(_LEAVES, _containers, max_leaves=24)


@settings(max_examples=1500, deadline=None)
@given(_VALUES, st.integers(1, 7))
def test_the_c_walk_judges_every_value_as_the_python_walk(value: Any, max_depth: int) -> None:
    fast = _speedups()
    assert fast(value, max_depth) is _canonical_fast.plain(value, max_depth)


@pytest.mark.parametrize(("value", "max_depth", "expected"), [
    ({}, 1, True), ([], 1, True), ((), 1, True), ({"a": {}}, 1, False), ({"a": {}}, 2, True),
    ([[[[]]]], 4, True), ([[[[]]]], 3, False), ({"a": [1, "x", None, False]}, 2, True),
    ({"a": 1.0}, 64, False), ({"a": float("nan")}, 64, False), ({"a": _Level.LOW}, 64, False),
    ({"a": _Name("x")}, 64, False), (_Items(), 64, False), ("x", 64, False), (None, 64, False),
    ({1: "x", "b": 2**80}, 64, True),
])
def test_the_c_walk_on_chosen_values(value: Any, max_depth: int, expected: bool) -> None:
    fast = _speedups()
    assert fast(value, max_depth) is expected
    assert _canonical_fast.plain(value, max_depth) is expected


@pytest.mark.parametrize(("args", "error"), [
    (({},), TypeError), (({}, 1, 2), TypeError), (({}, "1"), TypeError), (({}, 1.0), TypeError),
    (({}, 0), ValueError), (({}, 1001), ValueError), (({}, 2**80), OverflowError),
])
def test_the_c_walk_refuses_bad_arguments(args: tuple[Any, ...], error: type[Exception]) -> None:
    fast = _speedups()
    with pytest.raises(error):
        fast(*args)


def test_a_deep_value_stops_the_c_walk_at_its_limit() -> None:
    fast = _speedups()
    value: list[Any] = []
    for _ in range(100_000):
        value = [value]
    assert fast(value, 1000) is False
    assert fast([[[]]], 1000) is True


def test_canonical_json_uses_the_c_walk_where_it_is_built() -> None:
    fast = _speedups()
    if os.environ.get("MEMSPEC_NO_ACCELERATOR"):
        assert _canonical._PLAIN is _canonical_fast.plain
    else:
        assert _canonical._PLAIN is fast
    assert _canonical_fast.load_plain() is _canonical._PLAIN


def test_memspec_uses_the_python_walk_when_the_accelerator_is_off() -> None:
    script = ("from memspec import _canonical, _canonical_fast\n"
              "assert _canonical._PLAIN is _canonical_fast.plain\n")
    env = {**os.environ, "MEMSPEC_NO_ACCELERATOR": "1"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
