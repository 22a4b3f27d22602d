"""What-ifs: the prompt with a cause's volatile span moved after the static content."""

from __future__ import annotations

from functools import cache

from prefixlint.explain.causes import anchor_pattern


@cache
def _pattern(anchor: str):  # noqa: ANN202 - re.Pattern | None, cached per cause
    return anchor_pattern(anchor)


def move_span(text: str, anchor: str) -> str:
    """`text` with the rest of the first line starting with `anchor` (e.g. the time after
    "Current time:") moved to the end, where it no longer shifts what follows it."""
    pattern = _pattern(anchor)
    m = pattern.search(text) if pattern else None
    if m is None or not m.group(2):
        return text
    start, end = m.span(2)
    return text[:start] + text[end:] + "\n" + text[start:end]
