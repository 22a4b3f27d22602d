"""Why a request shares less with the cache than it could: find where it leaves an earlier request,
whether static content follows (the tokens lost), and cluster those points into ranked causes.

A divergence costs tokens when the two prompts fall back into step after a short differing span (a
timestamp, an id, a name): everything shared after it is what the cache loses. Where they never
fall back into step, the requests simply differ from there on (their own content): no loss.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from prefixlint.engines.packed import WIDTH, common_bytes_prefix, unpack
from prefixlint.engines.radix import RadixCache

MAX_SKIP = 48  # tokens a volatile span may take before the prompts fall back into step
RESYNC = 4  # tokens that must agree again to call it falling back into step
MIN_LOST = 32  # below this, what agrees again is template glue (role tags), not static content
WINDOW = 16384  # tokens of the earlier request's continuation to compare
MAX_CLUSTERS = 512

_DIGITS = re.compile(r"\d+")
_TIMESTAMP = re.compile(r"\d{1,4}[-/.:]\d{1,2}|\d{1,2}:\d{2}|\b(19|20)\d{2}\b")
_HEX_ID = re.compile(r"\b[0-9a-fA-F-]{8,}\b")
_TRAILING = "#-:./ ,+\t"


@dataclass
class Divergence:
    """Where a request leaves the longest prefix it shares with an earlier one."""

    token_index: int
    skip_a: int | None  # tokens of the differing span in this request (None: never back in step)
    skip_b: int | None
    lost: int  # tokens shared again after the span: static content the cache cannot reuse
    other: bytes  # the earlier request's tokens from the divergence on (packed)


def diverge(seq: bytes, shared: int, cache: RadixCache, found: Any) -> Divergence | None:
    """The divergence of packed `seq` given its match `found` in `cache` (None: nothing differs)."""
    n = len(seq) // WIDTH
    if shared >= n:
        return None
    other = cache.continuation(found, min(n - shared + MAX_SKIP, WINDOW))
    if not other:
        return None  # an earlier request was a prefix of this one: a plain extension
    rest = seq[shared * WIDTH :]
    grams: dict[bytes, int] = {}
    for j in range(min(MAX_SKIP, len(other) // WIDTH - RESYNC) + 1):
        grams.setdefault(other[j * WIDTH : (j + RESYNC) * WIDTH], j)
    for i in range(min(MAX_SKIP, len(rest) // WIDTH - RESYNC) + 1):
        j = grams.get(rest[i * WIDTH : (i + RESYNC) * WIDTH])
        if j is not None and (i or j):
            lost = common_bytes_prefix(rest[i * WIDTH :], other, j * WIDTH)
            if lost >= MIN_LOST:
                return Divergence(shared, i, j, lost, other)
            break
    return Divergence(shared, None, None, 0, other)


# Volatile values, most specific first; a span is the union of the matches covering the differing
# characters, so a timestamp moves whole, not only its changing seconds.
_SHAPES = {
    "datetime": r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?",
    "uuid": r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}",
    "time": r"\d{1,2}:\d{2}(?::\d{2})?(?:[.,]\d+)?",
    "hex": r"\b(?=[0-9a-fA-F]*\d)[0-9a-fA-F]{8,}\b",
    "id": r"\b(?=[\w-]*\d)[A-Za-z0-9][\w-]*[A-Za-z0-9]\b",
    "number": r"\d+(?:\.\d+)?",
}
_VOLATILE = re.compile("|".join(f"(?P<{name}>{rx})" for name, rx in _SHAPES.items()))
_ANY_VALUE = "|".join(f"(?:{rx})" for rx in _SHAPES.values())
_SHAPES["word"] = r"\w[\w-]*"
_WORD = re.compile(_SHAPES["word"])
_WORD_CHAR = re.compile(r"[\w-]")
SPAN_WINDOW = 400  # characters either side of the divergence searched for the volatile value
ANCHOR_CHARS = 40  # of the line before a span that opens its line


@dataclass(frozen=True)
class Span:
    """The smallest volatile span at a divergence: its characters in the prompt, its shape (a
    `_SHAPES` name, or "text"), and the normalised text before it on its line, or of the line
    before when it opens its line (the cluster key)."""

    start: int
    end: int
    text: str
    shape: str
    anchor: str
    values: int = 1  # volatile values in the span ("values" shape: "17 at 23:59:10" has two)

    def pattern(self) -> str | None:
        """A regex finding the same span in any prompt: the anchor at a line start (or the line
        before, or the prompt's start, when the span opens its line), the separators after it, then
        a value of the same shape. None when nothing anchors it (moving the first such value
        anywhere could move the wrong one)."""
        value = _SHAPES.get(self.shape, r"[^\n]+")
        if self.shape == "values":  # as many values as the example's, with the text between
            value = rf"(?:{_ANY_VALUE})(?:[^\n]*?(?:{_ANY_VALUE})){{{self.values - 1}}}"
        if self.anchor.endswith("\n"):  # the line before the span's
            body = r"\d+".join(re.escape(part) for part in self.anchor.split("#"))
            return rf"{body}[{re.escape(_TRAILING)}]*?(?P<span>{value})"
        if self.anchor.strip():
            body = r"\d+".join(re.escape(part) for part in self.anchor.split("#"))
            return rf"(?m)^{body}[{re.escape(_TRAILING)}]*?(?P<span>{value})"
        if self.start == 0:
            return rf"\A(?P<span>{value})"
        return None


def volatile_span(text: str, start: int, end: int) -> Span:
    """The span of `text` that differs from the earlier request at characters [start, end): the
    volatile values (dates, uuids, hex ids, numbers) covering them, else the whole words covering
    them, within one line."""
    line_start = text.rfind("\n", 0, start) + 1
    line_end = text.find("\n", start)
    line_end = len(text) if line_end < 0 else line_end
    end = min(max(end, start + 1), line_end)
    lo = max(line_start, start - SPAN_WINDOW)
    hi = min(line_end, end + SPAN_WINDOW)
    covering = [m for m in _VOLATILE.finditer(text, lo, hi) if m.start() < end and m.end() > start]
    if covering:
        s, e = covering[0].start(), covering[-1].end()
        shape = (covering[0].lastgroup or "values") if len(covering) == 1 else "values"
    else:  # words: widened to whole words, so an id of letters only moves whole
        s, e = start, end
        while s > line_start and _WORD_CHAR.match(text[s - 1]):
            s -= 1
        while e < line_end and _WORD_CHAR.match(text[e]):
            e += 1
        shape = "word" if _WORD.fullmatch(text, s, e) else "text"
    anchor = line_anchor(text, s)
    if not anchor.strip() and line_start > 0:
        # The span opens its line: the line before it (with its newline) anchors it instead.
        before = text.rfind("\n", 0, line_start - 1) + 1
        anchor = _DIGITS.sub("#", text[before:line_start])[-ANCHOR_CHARS:]
    return Span(s, e, text[s:e], shape, anchor, max(len(covering), 1))


def divergence_span(text: str, char_at: Callable[[int], int], tokens: int, div: Divergence) -> Span:
    """The volatile span of a request's prompt at its divergence (`char_at(i)`: where token `i` of
    the prompt's `tokens` starts)."""
    start = char_at(div.token_index)
    back = div.token_index + div.skip_a if div.skip_a is not None else None
    end = char_at(back) if back is not None and back < tokens else start + 1
    return volatile_span(text, start, end)


def line_anchor(text: str, char: int) -> str:
    """The text of the divergence's line before it, digits as `#`, volatile-looking tail removed:
    "Current time: 2025-03-31 23:59:" and "Current time: " both give "Current time:"."""
    start = text.rfind("\n", 0, char) + 1
    return _DIGITS.sub("#", text[start:char]).rstrip(_TRAILING)[-80:]


def anchor_pattern(anchor: str) -> re.Pattern[str] | None:
    """A regex finding the anchor at a line start in any prompt (`#` matches any digits); the rest
    of that line is the volatile span."""
    if not anchor.strip():
        return None
    body = r"\d+".join(re.escape(part) for part in anchor.split("#"))
    return re.compile(rf"(?m)^({body})([^\n]*)")


def classify(a: str, b: str) -> str:
    """What the differing text looks like."""
    if _TIMESTAMP.search(a) and _TIMESTAMP.search(b):
        return "timestamp"
    if _HEX_ID.search(a) and _HEX_ID.search(b):
        return "identifier"
    if _DIGITS.sub("#", a) == _DIGITS.sub("#", b):
        return "number"
    return "text"


@dataclass
class Cause:
    """A cluster of divergence points: same template line (or section) and same line anchor."""

    key: tuple[Any, ...]
    anchor: str
    section: str
    template_line: int | None
    template_text: str
    token_index: int
    char_offset: int
    example_a: str
    example_b: str
    kind: str
    request: int  # line number of the example request in the log (or 1/2 for a pair)
    span: Span | None = None  # the example request's volatile span
    ttft_ms_saved_per_request: float | None = None
    example_ids: list[int] = field(default_factory=list)  # the example request's tokens (for the page)
    count: int = 0
    tokens_lost: int = 0
    what_if: dict[str, float] = field(default_factory=dict)

    def to_json(self, requests: int, primary: str) -> dict[str, Any]:
        return {
            "section": self.section,
            "token_index": self.token_index,
            "char_offset": self.char_offset,
            "share": round(self.count / requests, 6) if requests else 0.0,
            "requests": self.count,
            "tokens_lost": self.tokens_lost,
            "kind": self.kind,
            "anchor": self.anchor,
            "example": {"a": self.example_a, "b": self.example_b, "request": self.request},
            "template_line": self.template_line,
            "template_text": self.template_text or None,
            "what_if_hit_rate": self.what_if.get(primary),
            "what_if": dict(self.what_if),
            "span": None
            if self.span is None
            else {"char_start": self.span.start, "char_end": self.span.end, "text": self.span.text},
            "ttft_ms_saved_per_request": self.ttft_ms_saved_per_request,
        }


class Clusters:
    """Causes keyed by (template line or section, anchor); bounded: past MAX_CLUSTERS the half that
    lost the fewest tokens is dropped, so memory does not grow with the log."""

    def __init__(self) -> None:
        self.causes: dict[tuple[Any, ...], Cause] = {}

    def add(self, key: tuple[Any, ...], lost: int, make: Any) -> None:
        cause = self.causes.get(key)
        if cause is None:
            if len(self.causes) >= MAX_CLUSTERS:
                keep = sorted(self.causes.values(), key=lambda c: (c.tokens_lost, c.count), reverse=True)
                self.causes = {c.key: c for c in keep[: MAX_CLUSTERS // 2]}
            cause = self.causes[key] = make()
        cause.count += 1
        cause.tokens_lost += lost

    def ranked(self) -> list[Cause]:
        return sorted(self.causes.values(), key=lambda c: (-c.tokens_lost, -c.count, c.token_index))


def example_texts(decode: Any, seq: bytes, div: Divergence, before: int = 6) -> tuple[str, str]:
    """The two prompts around the divergence: a few shared tokens, the differing span, a few more."""
    start = max(0, div.token_index - before)
    head = unpack(seq[start * WIDTH : div.token_index * WIDTH])
    span_a = div.skip_a + RESYNC if div.skip_a is not None else 12
    span_b = div.skip_b + RESYNC if div.skip_b is not None else 12
    a = head + unpack(seq[div.token_index * WIDTH : (div.token_index + span_a) * WIDTH])
    b = head + unpack(div.other[: span_b * WIDTH])
    return decode(a), decode(b)
