"""What pyproject.toml cannot say: the optional C speedups.

memspec._speedups (src/memspec/_speedups.c) is the C form of one pure-Python function,
memspec._canonical_fast.plain. Where it cannot be built (no compiler, or not CPython) the
install goes on without it, and memspec works the same, only slower to canonicalize.
"""

import platform

from setuptools import Extension, setup

setup(ext_modules=[
    Extension("memspec._speedups", ["src/memspec/_speedups.c"], optional=True)
] if platform.python_implementation() == "CPython" else [])
