"""What-ifs: the prompt with a cause's volatile span moved to the end of its message, after the
static content it was holding back."""

from __future__ import annotations

import re
from functools import cache

from prefixlint.explain.requests import Rendered


@cache
def _compiled(pattern: str) -> re.Pattern[str]:
    return re.compile(pattern)


def move_span(rendered: Rendered, pattern: str) -> str:
    """The prompt with the first span `pattern` finds (its `span` group: the timestamp after
    "Current time: ", the id after "[req ") moved to the end of the message it is in (of the prompt,
    for a plain prompt), where it no longer shifts what follows it."""
    text = rendered.text
    m = _compiled(pattern).search(text)
    if m is None or not m.group("span"):
        return text
    start, end = m.span("span")
    stop = max(rendered.message_end(start), end)
    return text[:start] + text[end:stop] + "\n" + text[start:end] + text[stop:]
