"""Edwards25519 point arithmetic from RFC 8032 section 5.1, for the weak-key vectors.

Written from the RFC's definitions (extended coordinates, section 5.1.4; decoding,
section 5.1.3), independently of memspec, which recognizes weak points by a list of
encodings (as libsodium does). Here a point is small-order when eight times it is the
neutral element, computed, so the two ways of knowing check each other.
"""

from __future__ import annotations

import hashlib

P = 2**255 - 19
#: The order of the prime-order subgroup (RFC 8032 section 5.1).
L = 2**252 + 27742317777372353535851937790883648493
D = (-121665 * pow(121666, P - 2, P)) % P
SQRT_M1 = pow(2, (P - 1) // 4, P)

Point = tuple[int, int, int, int]
IDENTITY: Point = (0, 1, 1, 0)


def _recover_x(y: int, sign: int) -> int | None:
    """The x of the point with this y and x's low bit ``sign``, or None (section 5.1.3)."""
    if y >= P:
        return None
    x2 = (y * y - 1) * pow(D * y * y + 1, P - 2, P) % P
    if x2 == 0:
        return None if sign else 0
    x = pow(x2, (P + 3) // 8, P)
    if (x * x - x2) % P != 0:
        x = x * SQRT_M1 % P
    if (x * x - x2) % P != 0:
        return None
    if x & 1 != sign:
        x = P - x
    return x


def decode(encoding: bytes, *, lenient: bool = False) -> Point | None:
    """The point an encoding names, None when it names none.

    Strict decoding is RFC 8032's: y at least p, or x = 0 with the sign bit set,
    fails. ``lenient`` reduces y modulo p and ignores such a sign bit, as a verifier
    that accepts non-canonical encodings does.
    """
    assert len(encoding) == 32
    number = int.from_bytes(encoding, "little")
    y, sign = number & ((1 << 255) - 1), number >> 255
    if lenient:
        y %= P
        x = _recover_x(y, sign)
        if x is None:
            x = _recover_x(y, 0)
    else:
        x = _recover_x(y, sign)
    if x is None:
        return None
    return (x, y, 1, x * y % P)


def encode(point: Point) -> bytes:
    """The canonical 32-byte encoding of a point."""
    x, y, z, _ = point
    zi = pow(z, P - 2, P)
    x, y = x * zi % P, y * zi % P
    return (y | ((x & 1) << 255)).to_bytes(32, "little")


def add(a: Point, b: Point) -> Point:
    """Point addition in extended coordinates (RFC 8032 section 5.1.4)."""
    x1, y1, z1, t1 = a
    x2, y2, z2, t2 = b
    aa = (y1 - x1) * (y2 - x2) % P
    bb = (y1 + x1) * (y2 + x2) % P
    cc = t1 * 2 * D * t2 % P
    dd = z1 * 2 * z2 % P
    e, f, g, h = bb - aa, dd - cc, dd + cc, bb + aa
    return (e * f % P, g * h % P, f * g % P, e * h % P)


def multiply(scalar: int, point: Point) -> Point:
    """``scalar`` times ``point`` by double-and-add."""
    out = IDENTITY
    while scalar > 0:
        if scalar & 1:
            out = add(out, point)
        point = add(point, point)
        scalar >>= 1
    return out


def negate(point: Point) -> Point:
    x, y, z, t = point
    return (-x % P, y, z, -t % P)


def equal(a: Point, b: Point) -> bool:
    return (a[0] * b[2] - b[0] * a[2]) % P == 0 and (a[1] * b[2] - b[1] * a[2]) % P == 0


def is_small_order(point: Point) -> bool:
    """True when the point's order divides the cofactor 8."""
    return equal(multiply(8, point), IDENTITY)


def small_order_points() -> list[Point]:
    """The eight points of order dividing 8: the multiples of one point of order 8.

    That point is [L]Q for the first curve point Q (by its y) whose [L]Q has order 8.
    """
    for y in range(2, 1000):
        point = decode(y.to_bytes(32, "little"))
        if point is None:
            continue
        torsion = multiply(L, point)
        if not equal(multiply(4, torsion), IDENTITY):
            points = [multiply(k, torsion) for k in range(8)]
            assert all(is_small_order(p) for p in points)
            assert len({encode(p) for p in points}) == 8
            return points
    raise AssertionError("no point with an order-8 component below y = 1000")


def secret_scalar(seed: bytes) -> int:
    """The clamped scalar of an RFC 8032 seed (section 5.1.5)."""
    digest = bytearray(hashlib.sha512(seed).digest()[:32])
    digest[0] &= 248
    digest[31] &= 127
    digest[31] |= 64
    return int.from_bytes(digest, "little")


def challenge(r: bytes, public: bytes, message: bytes) -> int:
    """h = SHA-512(R || A || M) mod L."""
    return int.from_bytes(hashlib.sha512(r + public + message).digest(), "little") % L


def cofactorless_verify(public: bytes, message: bytes, signature: bytes) -> bool:
    """[S]B == R + [h]A with lenient decoding and no weak-point checks: what a verifier
    accepting every RFC 8032-shaped signature computes."""
    a = decode(public, lenient=True)
    r = decode(signature[:32], lenient=True)
    s = int.from_bytes(signature[32:], "little")
    if a is None or r is None or s >= L:
        return False
    h = challenge(signature[:32], public, message)
    return equal(multiply(s, BASE), add(r, multiply(h, a)))


def _base() -> Point:
    """B: y = 4/5, x even (RFC 8032 section 5.1)."""
    point = decode((4 * pow(5, P - 2, P) % P).to_bytes(32, "little"))
    assert point is not None
    return point


BASE = _base()
