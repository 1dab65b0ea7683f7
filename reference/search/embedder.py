"""The deterministic, model-free default embedder (SRCH-2)."""

from __future__ import annotations

import hashlib
import math

from memspec import LimitError
from memspec.reference.ports import Embedder
from memspec.reference.text import tokenize

__all__ = ["DEFAULT_DIMENSIONS", "HashEmbedder"]

DEFAULT_DIMENSIONS = 256


class HashEmbedder(Embedder):
    """Token-hash bag of words, L2-normalized. No model, no state, same vector everywhere.

    The vector of a text is pinned so that any implementation can reproduce it:

    1. ``tokens = tokenize(text)`` (:func:`memspec.reference.text.tokenize`: NFC,
       lowercase, maximal runs of ``str.isalnum()`` characters; repeats kept);
    2. start from ``dimensions`` zeros; for each token, ``digest =
       sha256(token.encode("utf-8")).digest()``, ``bucket =
       int.from_bytes(digest[:4], "big") % dimensions``, ``sign = +1`` if
       ``digest[4] & 1 == 0`` else ``-1``, and add ``sign`` to ``vector[bucket]``;
    3. when the signed counts cancel out to all zeros although there are tokens
       (two tokens in one bucket with opposite signs), count every token ``+1``
       instead, so that only a text with no tokens has the zero vector (SRCH-2);
    4. divide every component by the Euclidean norm (``math.sqrt`` of the sum of
       squares, summed in index order). A text with no tokens gives the all-zero
       vector, which stays all zero.
    """

    def __init__(self, dimensions: int = DEFAULT_DIMENSIONS) -> None:
        if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
            raise LimitError(f"dimensions must be a positive integer, not {dimensions!r}")
        self._dimensions = dimensions

    @property
    def dimensions(self) -> int:
        """Length of every vector this embedder returns."""
        return self._dimensions

    def embed(self, text: str) -> tuple[float, ...]:
        """The L2-normalized hash vector of ``text`` (see the class docstring)."""
        counts = [0] * self._dimensions
        unsigned = [0] * self._dimensions
        for token in tokenize(text):
            digest = hashlib.sha256(token.encode("utf-8")).digest()
            bucket = int.from_bytes(digest[:4], "big") % self._dimensions
            counts[bucket] += 1 if digest[4] & 1 == 0 else -1
            unsigned[bucket] += 1
        if not any(counts):
            counts = unsigned  # cancelled signs: still a unit vector for a text with tokens
        norm = math.sqrt(sum(c * c for c in counts))
        if norm == 0.0:
            return tuple(0.0 for _ in counts)
        return tuple(c / norm for c in counts)

    def __repr__(self) -> str:
        return f"HashEmbedder(dimensions={self._dimensions})"
