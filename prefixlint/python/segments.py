"""The Python frontend's prompt model: a string is a tuple of segments, static text or holes."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class Provenance(Enum):
    """Where a hole's text comes from; the volatile ones map to a rule code."""

    CLOCK = "PFX101"
    ID = "PFX102"
    RANDOM = "PFX103"
    ENVIRONMENT = "PFX104"
    REQUEST = "PFX105"
    UNORDERED = "PFX201"
    UNKNOWN = ""

    @property
    def volatile(self) -> bool:
        return self is not Provenance.UNKNOWN


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Hole:
    """Text not known before the request; `line`/`column` point at the expression it comes from."""

    provenance: Provenance
    line: int
    column: int
    label: str
    by_name: bool = (
        False  # guessed from an input's name, not a library call: attributes of it are not volatile
    )


@dataclass(frozen=True)
class Break:
    """A message boundary (the next message's role header is static, but short)."""

    role: str


@dataclass(frozen=True)
class Open:
    """Content we cannot see that is likely static (a prompt part from another module, or the rest
    of a text this code only appends to): what follows a hole is unknown, not known to be dynamic."""

    line: int


Segment = Text | Hole | Break | Open
Value = tuple[Segment, ...]

EMPTY: Value = ()


def text(s: str) -> Value:
    return (Text(s),) if s else EMPTY


def concat(*values: Value) -> Value:
    """Join values, merging neighbouring static text."""
    out: list[Segment] = []
    for value in values:
        for seg in value:
            if isinstance(seg, Text) and out and isinstance(out[-1], Text):
                out[-1] = Text(out[-1].text + seg.text)
            elif not (isinstance(seg, Text) and not seg.text):
                out.append(seg)
    return tuple(out)


def join(sep: Value, items: list[Value]) -> Value:
    parts: list[Value] = []
    for i, item in enumerate(items):
        if i:
            parts.append(sep)
        parts.append(item)
    return concat(*parts)


def first_volatile(value: Value) -> Hole | None:
    return next((s for s in value if isinstance(s, Hole) and s.provenance.volatile), None)


def is_static(value: Value) -> bool:
    return all(isinstance(s, Text) for s in value)


def static_text(value: Value) -> str:
    return "".join(s.text for s in value if isinstance(s, Text))


def map_text(value: Value, fn) -> Value:  # noqa: ANN001 - a str -> str function
    return concat(*((Text(fn(s.text)),) if isinstance(s, Text) else (s,) for s in value))


def strip_edges(value: Value, chars: str | None = None, left: bool = True, right: bool = True) -> Value:
    """`str.strip` on the static ends of a value (holes keep their place)."""
    segs = list(value)
    if left and segs and isinstance(segs[0], Text):
        segs[0] = Text(segs[0].text.lstrip(chars))
    if right and segs and isinstance(segs[-1], Text):
        segs[-1] = Text(segs[-1].text.rstrip(chars))
    return concat(tuple(segs))


def without(value: Value, provenance: Provenance) -> Value:
    """The value with holes of one provenance made unknown (e.g. `sorted()` orders a set)."""
    return tuple(
        Hole(Provenance.UNKNOWN, s.line, s.column, s.label, s.by_name)
        if isinstance(s, Hole) and s.provenance is provenance
        else s
        for s in value
    )
