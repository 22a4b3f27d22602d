"""Edits of a source's text: where a (line, column) is, applying a fix's edits, and where each line
lands once they are applied. The primitives that fixes, the fix generators, `--fix` and `--add-noqa`
share; they know nothing of findings' analyses."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from prefixlint.core.findings import Edit


class EditError(ValueError):
    """Edits that cannot be applied: out of the text, or overlapping; the message says which."""


def _line_starts(text: str) -> list[int]:
    return [0] + [m.end() for m in re.finditer("\n", text)]


def offset_of(text: str, line: int, column: int, starts: list[int] | None = None) -> int:
    """The offset of a 1-based (line, column) in `text`; column len(line)+1 is the line's end."""
    starts = starts if starts is not None else _line_starts(text)
    if not 1 <= line <= len(starts):
        raise EditError(f"line {line} is outside the text ({len(starts)} lines)")
    end = starts[line] - 1 if line < len(starts) else len(text)
    at = starts[line - 1] + column - 1
    if column < 1 or at > end:
        raise EditError(f"column {column} is outside line {line}")
    return at


def position_of(text: str, offset: int) -> tuple[int, int]:
    """The 1-based (line, column) of an offset of `text`."""
    line = text.count("\n", 0, offset) + 1
    return line, offset - (text.rfind("\n", 0, offset) + 1) + 1


def edit_between(path: str, text: str, start: int, end: int, replacement: str) -> Edit:
    """The Edit replacing text[start:end] with `replacement`."""
    return Edit(path, *position_of(text, start), *position_of(text, end), replacement)


def _spans(text: str, edits: Iterable[Edit]) -> list[tuple[int, int, str]]:
    """(start, end, replacement) offsets of `edits`, in order; EditError for ones that overlap (two
    insertions at one place are kept in the order given)."""
    starts = _line_starts(text)
    spans = []
    for e in edits:
        a = offset_of(text, e.start_line, e.start_column, starts)
        b = offset_of(text, e.end_line, e.end_column, starts)
        if b < a:
            raise EditError(f"edit ends before it starts (line {e.start_line})")
        spans.append((a, b, e.replacement))
    spans.sort(key=lambda s: (s[0], s[1]))  # stable: insertions at one place keep their order
    for (a1, b1, _), (a2, b2, _) in zip(spans, spans[1:], strict=False):
        if a2 < b1 or (a1 == a2 and a1 < b1 and a2 < b2):
            raise EditError(f"edits overlap at line {position_of(text, a2)[0]}")
    return spans


def apply_edits(text: str, edits: Iterable[Edit]) -> str:
    """`text` with `edits` applied (positions are the original text's); EditError when they
    overlap or fall outside it."""
    out, cursor = [], 0
    for a, b, replacement in _spans(text, edits):
        out += [text[cursor:a], replacement]
        cursor = b
    out.append(text[cursor:])
    return "".join(out)


def line_mapping(text: str, edits: Iterable[Edit]) -> tuple[Callable[[int], int | None], set[int]]:
    """Where each line of `text` is once `edits` are applied (None: its start was replaced), and the
    lines of the fixed text that edits wrote (where moved text landed)."""
    spans = _spans(text, edits)
    starts = _line_starts(text)
    fixed = apply_edits(text, edits)
    written: set[int] = set()
    shift = 0
    for a, b, replacement in spans:
        if replacement.strip():
            first = position_of(fixed, a + shift)[0]
            written.update(range(first, first + replacement.count("\n") + 1))
        shift += len(replacement) - (b - a)

    def new_line(line: int) -> int | None:
        if not 1 <= line <= len(starts):
            return None
        at, delta = starts[line - 1], 0
        for a, b, replacement in spans:
            if b <= at:  # before the line, or inserted at its start: the line's text follows it
                delta += len(replacement) - (b - a)
            elif a <= at < b:
                return None
        return position_of(fixed, at + delta)[0]

    return new_line, written
