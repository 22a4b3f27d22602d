"""What-ifs: the prompt with a cause's volatile span moved to the end of its message, after the
static content it was holding back, and each top cause's log simulated so (WhatIfs)."""

from __future__ import annotations

import re
from functools import cache

from prefixlint.engines.profiles import Engine
from prefixlint.engines.simulate import Simulation
from prefixlint.explain.causes import Cause
from prefixlint.explain.replies import batch_replies
from prefixlint.explain.requests import Rendered
from prefixlint.explain.segments import Encodes


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


def movable_causes(causes: list[Cause], what_ifs: int) -> list[Cause]:
    """The top causes that lose tokens and have a span that can be found in any prompt."""
    return [c for c in causes if c.tokens_lost > 0 and c.span and c.span.pattern()][:what_ifs]


def patterns_of(causes: list[Cause]) -> list[str]:
    """The span patterns of `causes` (movable ones: each has a span with a pattern)."""
    return [c.span.pattern() for c in causes]  # type: ignore[misc, union-attr]


class WhatIfs:
    """Each span pattern's what-if: every prompt with that cause's span moved to the end of its
    message, simulated. The moved prompts share their segments with the originals: few are
    encoded again."""

    def __init__(self, engines: list[Engine], patterns: list[str]) -> None:
        self.patterns = list(dict.fromkeys(patterns))
        self.sims = [Simulation(engines) for _ in self.patterns]

    def feed(self, encoder: Encodes, prompts: list[Rendered], replies: list[bytes] | None = None) -> None:
        """The next prompts of the log, in order; one pattern's worth of text encoded at a time.
        `replies`: their computed reply tokens where the caller has them already."""
        if not self.patterns or not prompts:
            return
        if replies is None:
            replies = batch_replies(encoder, prompts)
        moved = [moved_ids(encoder, prompts, pattern) for pattern in self.patterns]
        self.feed_moved(prompts, replies, moved)

    def feed_moved(self, prompts: list[Rendered], replies: list[bytes], moved: list[list[bytes]]) -> None:
        """The next prompts of the log with, for each pattern, their moved prompts' packed ids (as
        `moved_ids` gives them, here or on a Dask worker)."""
        for ids, sim in zip(moved, self.sims, strict=True):
            for seq, reply, r in zip(ids, replies, prompts, strict=True):
                sim.feed(seq, reply=reply, salt=r.request.cache_salt, cache_key=r.request.cache_key)

    def rates(self) -> dict[str, dict[str, float]]:
        return {
            pattern: {name: float(v["hit_rate"]) for name, v in sim.summary().items()}  # type: ignore[arg-type]
            for pattern, sim in zip(self.patterns, self.sims, strict=True)
        }


def moved_ids(encoder: Encodes, prompts: list[Rendered], pattern: str) -> list[bytes]:
    """The packed token ids of each prompt with `pattern`'s span moved (see move_span)."""
    return [t.ids for t in encoder.encode([move_span(r, pattern) for r in prompts])]
