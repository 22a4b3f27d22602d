"""A prompt (or a piece of one) found in a module: its symbolic value and where it is built."""

from __future__ import annotations

from dataclasses import dataclass

from prefixlint.python.segments import Value


@dataclass(frozen=True)
class Prompt:
    """A prompt built at `line`. `open_tail`: more text, possibly static, is appended to it
    elsewhere (e.g. it is stored on another module's object). `reached`: it is what a modelled,
    derived or declared sink sends (prefixlint/python/sinks.py), not a shape only."""

    value: Value
    line: int
    what: str
    open_tail: bool = False
    reached: bool = False
