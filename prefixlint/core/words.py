"""How a count reads in a message: `1 finding`, `2 findings`, `1,024 static tokens`."""

from __future__ import annotations


def counted(n: int, noun: str, plural: str | None = None) -> str:
    """`n` and its noun, singular for one (`plural` for nouns that do not take an s)."""
    return f"{n:,} {noun if n == 1 else plural or noun + 's'}"
