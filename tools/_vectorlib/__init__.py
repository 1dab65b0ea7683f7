"""Helpers for tools/gen_vectors.py: independent primitives, fixtures and the case tables.

Nothing here imports ``memspec``: expected values are derived from the spec's
definitions so that the vectors can check memspec's own code (and any engine)
rather than restate it.
"""
