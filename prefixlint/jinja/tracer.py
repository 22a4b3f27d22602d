"""Map every character of a rendered template back to the template span that produced it.

The technique follows sqlfluff's Jinja tracer, done on the parsed AST instead of on source text:

1. Lex the template with the real environment and walk the tokens with a running offset, so every
   literal (`data` token) and every `{{ … }}` knows its exact place in the source, even where
   `trim_blocks`, `lstrip_blocks` or `-` dropped whitespace.
2. Parse the same source; in every `Output` node, put a marker `\\0<id>\\1` in front of each child
   (a literal or an expression). The markers are constants, so control flow and every expression's
   value are untouched.
3. Render that instrumented AST once; the text between marker k and the next marker was produced
   by piece k. Stripping the markers gives the real output.

Bodies of `{% macro %}`, `{% call %}`, `{% set %}…{% endset %}` and `{% filter %}` are left
uninstrumented (their output may be compared, trimmed or measured), so what they produce is
attributed to the `{{ … }}` that prints it, as in sqlfluff.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2 import nodes

from prefixlint.jinja.environment import Limits, render_limited

_MARKER = re.compile("\x00(\\d+)\x01")
_OPAQUE = (nodes.Macro, nodes.CallBlock, nodes.AssignBlock, nodes.FilterBlock)


def normalize_newlines(source: str) -> str:
    return source.replace("\r\n", "\n").replace("\r", "\n")


@dataclass(frozen=True)
class Origin:
    """Where an output character came from: a literal's exact character or a `{{ … }}`'s start."""

    line: int
    column: int
    kind: str  # "literal" or "expression"


@dataclass(frozen=True)
class _Piece:
    kind: str
    offset: int  # source offset of the literal's first char, or of the expression's `{{`
    line: int  # from the AST, used when the offset is unknown (-1)


def _is_generation_block(node: nodes.Node) -> bool:
    call = getattr(node, "call", None)
    return isinstance(node, nodes.CallBlock) and isinstance(
        getattr(call, "node", None), nodes.ExtensionAttribute
    )


def _outputs(node: nodes.Node, opaque: bool = False) -> Iterator[tuple[nodes.Output, bool]]:
    """Every Output node in source order, with whether it sits in an opaque body."""
    for child in node.iter_child_nodes():
        if isinstance(child, nodes.Output):
            yield child, opaque
            continue
        inner = opaque or (isinstance(child, _OPAQUE) and not _is_generation_block(child))
        yield from _outputs(child, inner)


def _token_offsets(env: jinja2.Environment, source: str) -> tuple[list[tuple[int, str]], list[int]]:
    """Source offsets of the data tokens (with their text) and of each `{{`."""
    data: list[tuple[int, str]] = []
    variables: list[int] = []
    cursor = 0
    for _lineno, kind, value in env.lexer.tokeniter(source, None):
        if not value:
            continue
        at = source.find(value, cursor)
        if at < 0:
            continue
        cursor = at + len(value)
        if kind == "data":
            data.append((at, value))
        elif kind == "variable_begin":
            variables.append(at)
    return data, variables


def _compile_tracking(env: jinja2.Environment, ast: nodes.Template) -> tuple[jinja2.Template, frozenset[str]]:
    """Compile `ast` and collect the variables it reads from the context (what
    `jinja2.meta.find_undeclared_variables` finds) in the same code-generation pass: parsing and
    code generation are most of a template's cost, so they run once, not once per question."""
    found: set[str] = set()

    class Tracking(env.code_generator_class):  # type: ignore[name-defined,misc]
        def enter_frame(self, frame: Any) -> None:
            super().enter_frame(frame)
            for action, param in frame.symbols.loads.values():
                if action == "resolve" and param not in self.environment.globals:
                    found.add(param)

    previous = env.code_generator_class
    env.code_generator_class = Tracking
    try:
        template = env.from_string(ast)
    finally:
        env.code_generator_class = previous
    return template, frozenset(found)


class TracedTemplate:
    """A compiled template that renders with a per-character map back to its source."""

    def __init__(self, env: jinja2.Environment, source: str) -> None:
        self.source = normalize_newlines(source)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.source)]
        ast = env.parse(self.source)
        data_tokens, variable_starts = _token_offsets(env, self.source)
        self._pieces: list[_Piece] = []
        data_i = var_i = 0
        for output, opaque in list(_outputs(ast)):
            children: list[nodes.Node] = []
            for child in output.nodes:
                if isinstance(child, nodes.TemplateData):
                    offset = -1
                    if data_i < len(data_tokens) and data_tokens[data_i][1] == child.data:
                        offset = data_tokens[data_i][0]
                    data_i += 1
                    piece = _Piece("literal", offset, child.lineno)
                else:
                    offset = variable_starts[var_i] if var_i < len(variable_starts) else -1
                    if offset >= 0 and self.line_col(offset)[0] != child.lineno:
                        offset = -1  # alignment lost: fall back to the AST's line
                    var_i += 1
                    piece = _Piece("expression", offset, child.lineno)
                if not opaque:
                    marker = f"\x00{len(self._pieces)}\x01"
                    self._pieces.append(piece)
                    children.append(nodes.TemplateData(marker, lineno=child.lineno))
                children.append(child)
            output.nodes = children
        self.template, self.undeclared = _compile_tracking(env, ast)

    def line_col(self, offset: int) -> tuple[int, int]:
        line = bisect.bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1] + 1

    def line_text(self, line: int) -> str:
        lines = self.source.split("\n")
        return lines[line - 1] if 0 < line <= len(lines) else ""

    def render(self, context: dict[str, Any], limits: Limits) -> TracedRender:
        raw = render_limited(self.template, context, limits)
        text_parts: list[str] = []
        starts: list[int] = []
        piece_ids: list[int] = []
        size = 0
        last = 0
        for m in _MARKER.finditer(raw):
            chunk = raw[last : m.start()]
            text_parts.append(chunk)
            size += len(chunk)
            starts.append(size)
            piece_ids.append(int(m.group(1)))
            last = m.end()
        text_parts.append(raw[last:])
        return TracedRender(self, "".join(text_parts), starts, piece_ids)


@dataclass(frozen=True)
class TracedRender:
    """A rendered prompt and, for any character, the template span behind it."""

    traced: TracedTemplate
    text: str
    _starts: list[int]
    _piece_ids: list[int]

    def origin_at(self, pos: int) -> Origin:
        """The source of output character `pos` (the last piece starting at or before it)."""
        # bisect_right skips empty pieces that start where the emitting piece starts.
        i = bisect.bisect_right(self._starts, pos) - 1
        if i < 0:
            return Origin(1, 1, "literal")
        piece = self.traced._pieces[self._piece_ids[i]]
        if piece.offset < 0:
            return Origin(piece.line, 1, piece.kind)
        if piece.kind == "literal":
            line, col = self.traced.line_col(piece.offset + (pos - self._starts[i]))
            return Origin(line, col, "literal")
        line, col = self.traced.line_col(piece.offset)
        return Origin(line, col, "expression")

    def piece_range(self, pos: int) -> tuple[int, int]:
        """The output range [start, end) emitted by the piece that produced `pos`."""
        i = bisect.bisect_right(self._starts, pos) - 1
        if i < 0:
            return 0, self._starts[0] if self._starts else len(self.text)
        end = self._starts[i + 1] if i + 1 < len(self._starts) else len(self.text)
        return self._starts[i], end
