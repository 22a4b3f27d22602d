"""PFX503 in Python: a `cache_control` breakpoint written in a request that the provider can never
read, judged where the request is built (explain judges the ones in a log: explain/breakpoints.py).

A provider that reads its cache only at breakpoints (Anthropic: its `[anthropic]` engine) writes
the prefix up to each one and reads it back when a later request carries the same prefix up to a
breakpoint. Seen in the code of one call (`client.messages.create(tools=…, system=[…, {"type":
"text", "text": …, "cache_control": {"type": "ephemeral"}}], messages=…)`):
- `after-volatile`: a clock, an id or a random choice made on every request stands before the
  breakpoint, so no later request has its prefix: it is written (at a premium) and never read;
- `below-minimum`: everything before it is static text shorter than the model's minimum (the
  `model=` literal, the engine's `minimum_by_model`): it is never written;
- `too-many`: the request carries more breakpoints than the provider takes: the API refuses it.
What is not written in the call (a spliced history, a list built elsewhere) is unseen: a
breakpoint after it is judged only by what is seen before it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import libcst as cst

from prefixlint.core.findings import Diagnostic, Severity, Span
from prefixlint.python.evaluate import Env, Evaluator
from prefixlint.python.frameworks import PARTS, SinkModel
from prefixlint.python.scopes import ModuleIndex, string_value
from prefixlint.python.segments import Provenance, Value, concat, holes, is_static, static_text

# Values that differ on every request (a per-process or per-day value is read back within it).
_PER_REQUEST = (Provenance.CLOCK, Provenance.ID, Provenance.RANDOM)


@dataclass(frozen=True)
class _Block:
    """One content block of the request, in the order the provider caches them; `node` None for
    content the call does not show (a spliced history)."""

    node: cst.BaseExpression | None
    marker: cst.CSTNode | None = None  # its `"cache_control"` entry: a breakpoint


def breakpoint_diagnostics(
    path: str, index: ModuleIndex, ev: Evaluator, count: Callable[[str], int]
) -> list[Diagnostic]:
    """PFX503 for the breakpoints written in this module's calls of a breakpoint provider."""
    from prefixlint.engines import load_engines

    engines = load_engines()
    out: list[Diagnostic] = []
    for entering, node in index.events:
        if not entering or type(node) is not cst.Call:
            continue
        row = ev.project.frameworks.match_call(index, node)
        if not isinstance(row, SinkModel) or not row.breakpoints or row.breakpoints not in engines:
            continue
        engine = engines[row.breakpoints]
        blocks = _blocks(index, node, row)
        marked = [i for i, b in enumerate(blocks) if b.marker is not None]
        if not marked:
            continue
        limit = engine.breakpoints.max_breakpoints if engine.breakpoints is not None else len(marked)
        if len(marked) > limit:
            extra = blocks[marked[limit]].marker
            assert extra is not None
            out.append(
                _diagnostic(
                    path,
                    index,
                    extra,
                    f"this request carries {len(marked)} `cache_control` breakpoints, more than the "
                    f"{limit} the provider takes: the API refuses it",
                    Severity.ERROR,
                    f"keep at most {limit} breakpoints: the last block of the tools, of the system "
                    "prompt and of the conversation so far",
                )
            )
        model = _model(index, node)
        minimum = engine.minimum_for(model)
        values: list[Value] = []
        for i, block in enumerate(blocks):
            values.append(ev.value(block.node, Env()) if block.node is not None else ())
            if block.marker is None:
                continue
            prefix = concat(*values)
            unseen = any(b.node is None for b in blocks[: i + 1])
            volatile = next(
                (
                    h
                    for h in holes(prefix)
                    if h.provenance in _PER_REQUEST
                    and h.timing == "call"
                    and not (h.by_name or h.weak or h.daily)
                ),
                None,
            )
            if volatile is not None:
                out.append(
                    _diagnostic(
                        path,
                        index,
                        block.marker,
                        f"this cache breakpoint follows `{volatile.label}` (line {volatile.line}), which "
                        "changes on every request: the prefix it marks is written to the cache on every "
                        "request, at a premium, and never read",
                        Severity.WARNING,
                        f"move `{volatile.label}` after the breakpoint (into the last user message), or "
                        "put the breakpoint before it",
                    )
                )
            elif not unseen and is_static(prefix) and model is not None:
                tokens = count(static_text(prefix))
                if tokens < minimum:
                    out.append(
                        _diagnostic(
                            path,
                            index,
                            block.marker,
                            f"the prefix up to this cache breakpoint is about {tokens:,} tokens, under "
                            f"{model}'s minimum of {minimum:,}: it is never written, so nothing is cached",
                            Severity.INFO,
                            "leave the breakpoint out until the prefix before it reaches the minimum, or "
                            "move it where the prefix is long enough (after the tools and a longer system "
                            "prompt)",
                        )
                    )
    return out


def _diagnostic(
    path: str, index: ModuleIndex, at: cst.CSTNode, message: str, severity: Severity, hint: str
) -> Diagnostic:
    line, column = index.pos(at)
    return Diagnostic("PFX503", Span(path, line, column), message, severity, hint=hint)


def _blocks(index: ModuleIndex, call: cst.Call, row: SinkModel) -> list[_Block]:
    """The call's content blocks in the order the provider caches them (the row's parts in
    `PARTS` order: tools, system, messages)."""
    parts: list[tuple[int, cst.BaseExpression]] = []
    for arg in call.args:
        if arg.keyword is None or arg.star:
            continue
        part = row.part_of(arg.keyword.value, -1)
        if part in PARTS:
            parts.append((PARTS.index(part), arg.value))
    out: list[_Block] = []
    for part, value in sorted(parts, key=lambda p: p[0]):
        if PARTS[part] == "messages":
            for message in _elements(index, value):
                content = _entry(index, message, "content") if message is not None else None
                out += _content_blocks(index, content) if content is not None else [_Block(None)]
        else:
            out += _content_blocks(index, value)
    return out


def _content_blocks(index: ModuleIndex, node: cst.BaseExpression) -> list[_Block]:
    """The blocks of a `system` or message `content`: a string is one, a list one per element."""
    shown = _resolved(index, node)
    if isinstance(shown, (cst.List, cst.Tuple)):
        return [
            _Block(e, _marker(index, e)) if e is not None else _Block(None) for e in _elements(index, shown)
        ]
    return [_Block(node, _marker(index, node))]


def _elements(index: ModuleIndex, node: cst.BaseExpression) -> list[cst.BaseExpression | None]:
    """A list's elements as written (None for a starred one: content the call does not show), or
    one unseen element when the list is not written here."""
    shown = _resolved(index, node)
    if not isinstance(shown, (cst.List, cst.Tuple)):
        return [None]
    return [e.value if isinstance(e, cst.Element) else None for e in shown.elements]


def _marker(index: ModuleIndex, node: cst.BaseExpression) -> cst.CSTNode | None:
    """The `"cache_control"` entry of a block written as a dict, if it has one."""
    return _element(index, node, "cache_control")


def _entry(index: ModuleIndex, node: cst.BaseExpression, key: str) -> cst.BaseExpression | None:
    """The value of a dict's `key` entry, when the dict is written here."""
    element = _element(index, node, key)
    return element.value if element is not None else None


def _element(index: ModuleIndex, node: cst.BaseExpression, key: str) -> cst.DictElement | None:
    shown = _resolved(index, node)
    if not isinstance(shown, cst.Dict):
        return None
    for e in shown.elements:
        if (
            isinstance(e, cst.DictElement)
            and isinstance(e.key, cst.SimpleString)
            and string_value(e.key) == key
        ):
            return e
    return None


def _resolved(index: ModuleIndex, node: cst.BaseExpression) -> cst.BaseExpression:
    """What a name assigned once stands for (`SYSTEM = [...]`), through a few assignments."""
    for _ in range(4):
        if not isinstance(node, (cst.Name, cst.Attribute)):
            break
        assigned = index.assigned(node)
        if assigned is None:
            break
        node = assigned
    return node


def _model(index: ModuleIndex, call: cst.Call) -> str | None:
    """The `model=` of the call, when it is written as a string (or a name assigned one)."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == "model":
            shown = _resolved(index, arg.value)
            if isinstance(shown, cst.SimpleString) and isinstance(value := string_value(shown), str):
                return value
    return None
