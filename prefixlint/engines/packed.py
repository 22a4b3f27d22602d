"""Token sequences packed as bytes (4 bytes an id), the form every cache model here compares:
slices and `==` run in C, and memory grows with the bytes held, not with Python ints.

A `cache_salt` becomes a pseudo token ahead of the sequence, so salted requests share nothing with
other salts' or unsalted ones.
"""

from __future__ import annotations

import hashlib
from array import array

WIDTH = 4  # bytes per packed token id
_SALT_BIT = 0x80000000  # salt pseudo tokens: ids no tokenizer has


def salt_token(salt: str) -> int:
    """The pseudo token id that stands for one `cache_salt` value ahead of a salted sequence (a
    hash: memory stays flat with a salt per request; two salts sharing an id is a 1 in 2^31 chance)."""
    digest = hashlib.blake2b(salt.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return _SALT_BIT | (int.from_bytes(digest, "big") & 0x7FFFFFFF)


def salted(seq: bytes, salt: str | None) -> bytes:
    """`seq` keyed by its salt: salted sequences share nothing with unsalted or other salts' ones."""
    return seq if salt is None else pack([salt_token(salt)]) + seq


def pack(ids: list[int]) -> bytes:
    return array("I", ids).tobytes()


def unpack(data: bytes) -> list[int]:
    out = array("I")
    out.frombytes(data)
    return out.tolist()


def common_bytes_prefix(a: bytes, b: bytes, start: int = 0) -> int:
    """Whole tokens `a` shares with `b[start:]`, by binary search over C-level slice comparisons."""
    n = min(len(a), len(b) - start) // WIDTH
    if a[: n * WIDTH] == b[start : start + n * WIDTH]:
        return n
    lo, hi = 0, n  # invariant: lo tokens match, hi do not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[: mid * WIDTH] == b[start : start + mid * WIDTH]:
            lo = mid
        else:
            hi = mid
    return lo
