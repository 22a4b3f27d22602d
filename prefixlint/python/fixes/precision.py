"""An unsafe fix for a clock: the date kept, the time of day dropped (`datetime.now()` to
`datetime.now().date()`, `"%Y-%m-%d %H:%M"` to `"%Y-%m-%d"`), so that the text changes once a day
instead of every second. Offered after the moves: it still changes, only less often."""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from prefixlint.python.fixes.source import Source
from prefixlint.python.fixes.text import Change

_DATETIME = {"datetime.datetime.now", "datetime.datetime.utcnow", "datetime.datetime.today"}
_STRFTIME = {"time.strftime"}
# strftime directives that say the time of day (`%c` is the locale's date and time: `%x` its date).
_TIME = set("HIMSfpXTRrkl")
_DIRECTIVE = re.compile(r"%[-_0^#]?[A-Za-z%]")
_TOKEN = re.compile(r"%[-_0^#]?[A-Za-z%]|[^%]+|%")
_SEPARATORS = set(" :.,T-")


def candidates(src: Source, anchor: cst.CSTNode, label: str) -> Iterator[tuple[str, list[Change]]]:
    if not isinstance(anchor, cst.Call):
        return
    names = src.qualified(anchor.func)
    if names & _STRFTIME and anchor.args:
        change = _format_change(src, anchor.args[0].value)
        if change is not None:
            yield f"keep only the date of `{label}`: {change[1]}", [change[0]]
        return
    if not names & _DATETIME:
        return
    uses: list[cst.CSTNode] = list(src.reads_of(anchor) or [anchor])
    changes: list[Change] = []
    said: list[str] = []
    dated = False
    for use in uses:
        found = _use_change(src, use)
        if found is None:
            return
        if found == "date":
            dated = True
        else:
            changes.append(found[0])
            said.append(found[1])
    if dated:
        end = src.span(anchor)[1]
        changes.append((end, end, ".date()"))
        said.append(f"`{label}.date()`")
    if changes:
        yield f"keep only the date of `{label}`: {', '.join(said)}", changes


def _use_change(src: Source, use: cst.CSTNode) -> tuple[Change, str] | str | None:
    """How the use of a datetime keeps only its date: "date" (call `.date()` on it), a change to
    the format it is written with, or None when neither is known to be right."""
    parent = src.parent(use)
    if isinstance(parent, cst.FormattedStringExpression) and parent.expression is use:
        spec = parent.format_spec
        if not spec:
            return "date" if parent.conversion is None else None
        if len(spec) == 1 and isinstance(spec[0], cst.FormattedStringText):
            reduced = day_format(spec[0].value)
            if reduced is None:
                return None
            start, end = src.inner(spec[0])
            return (start, end, reduced), f"`:{reduced}`"
        return None
    if isinstance(parent, cst.Attribute) and parent.value is use:
        call = src.parent(parent)
        if not (isinstance(call, cst.Call) and call.func is parent):
            return None
        if parent.attr.value == "isoformat" and not call.args:
            return "date"
        if parent.attr.value == "strftime" and call.args:
            return _format_change(src, call.args[0].value)
        return None
    if isinstance(parent, cst.Arg) and isinstance(call := src.parent(parent), cst.Call):
        func = call.func
        return "date" if isinstance(func, cst.Name) and func.value == "str" and len(call.args) == 1 else None
    return None


def _format_change(src: Source, fmt: cst.CSTNode) -> tuple[Change, str] | None:
    """The format literal `fmt` without its time of day."""
    if not isinstance(fmt, cst.SimpleString) or "\\" in fmt.raw_value or "r" in fmt.prefix.lower():
        return None
    reduced = day_format(fmt.raw_value)
    if reduced is None:
        return None
    start, end = src.inner(fmt)
    written = fmt.prefix + fmt.quote + reduced + fmt.quote
    return (start, end, written), f"`{written}`"


def day_format(fmt: str) -> str | None:
    """`fmt` without the directives of the time of day and the separators that go with them; None
    when it has none, or when what is left would not read well (`%Y-%m-%d at`)."""
    reduced = fmt.replace("%c", "%x")
    tokens = _TOKEN.findall(reduced)
    timed = [t[:1] == "%" and t[-1] in _TIME for t in tokens]
    if not any(timed):
        return reduced if reduced != fmt else None
    keep = [True] * len(tokens)
    i = 0
    while i < len(tokens):
        if not timed[i]:
            i += 1
            continue
        first = i - 1 if i > 0 and _separator(tokens[i - 1]) else i
        last = i
        while last + 1 < len(tokens) and (
            timed[last + 1] or (_separator(tokens[last + 1]) and last + 2 < len(tokens) and timed[last + 2])
        ):
            last += 1
        before = tokens[first - 1] if first > 0 else "%"
        after = tokens[last + 1] if last + 1 < len(tokens) else "%"
        if not (before[:1] == "%" or _separator(before)) or not (after[:1] == "%" or _separator(after)):
            return None  # words that go with the time (`at %H:%M`) would be left alone
        for k in range(first, last + 1):
            keep[k] = False
        i = last + 1
    out = "".join(t for t, k in zip(tokens, keep, strict=True) if k).strip("".join(_SEPARATORS))
    return out if _DIRECTIVE.search(out) else None


def _separator(token: str) -> bool:
    return token[:1] != "%" and set(token) <= _SEPARATORS
