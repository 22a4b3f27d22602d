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
    path: str | None = None  # the included file it came from (None: the template itself)


@dataclass(frozen=True)
class _Piece:
    kind: str
    offset: int  # source offset of the literal's first char, or of the expression's `{{`
    line: int  # from the AST, used when the offset is unknown (-1)
    file: int = 0  # 0: the template; k: its k-th included file (TracedTemplate.files)


def _line_col(line_starts: list[int], offset: int) -> tuple[int, int]:
    line = bisect.bisect_right(line_starts, offset)
    return line, offset - line_starts[line - 1] + 1


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


def source_tokens(env: jinja2.Environment, source: str) -> list[tuple[int, str, str]]:
    """Every lexer token of `source` as (source offset, kind, text), in order; the lexer gives
    lines only, so each token is found from where the previous one ended."""
    out: list[tuple[int, str, str]] = []
    cursor = 0
    for _lineno, kind, value in env.lexer.tokeniter(source, None):
        if not value:
            continue
        at = source.find(value, cursor)
        if at < 0:
            continue
        cursor = at + len(value)
        out.append((at, kind, value))
    return out


def _token_offsets(env: jinja2.Environment, source: str) -> tuple[list[tuple[int, str]], list[int]]:
    """Source offsets of the data tokens (with their text) and of each `{{`."""
    tokens = source_tokens(env, source)
    data = [(at, value) for at, kind, value in tokens if kind == "data"]
    return data, [at for at, kind, _ in tokens if kind == "variable_begin"]


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
    """A compiled template that renders with a per-character map back to its source, and back to
    the files it includes when it is given a `TracingLoader`."""

    def __init__(self, env: jinja2.Environment, source: str) -> None:
        self.source = normalize_newlines(source)
        self._line_starts = [0] + [m.end() for m in re.finditer("\n", self.source)]
        # Included files: (path, line starts); pieces of file k > 0 are in files[k - 1].
        self.files: list[tuple[str, list[int]]] = []
        self.fragment_undeclared: set[str] = set()  # variables the included files read
        self.fragment_references: list[str | None] = []  # templates the included files name
        self._pieces: list[_Piece] = []
        ast = env.parse(self.source)
        self._instrument(env, ast, self.source, 0)
        self.template, self.undeclared = _compile_tracking(env, ast)

    def _instrument(self, env: jinja2.Environment, ast: nodes.Template, source: str, file: int) -> None:
        """Put a marker before every piece of output of `ast` (from `source`, file number `file`)."""
        data_tokens, variable_starts = _token_offsets(env, source)
        starts = self._line_starts if file == 0 else self.files[file - 1][1]
        data_i = var_i = 0
        for output, opaque in list(_outputs(ast)):
            children: list[nodes.Node] = []
            for child in output.nodes:
                if isinstance(child, nodes.TemplateData):
                    offset = -1
                    if data_i < len(data_tokens) and data_tokens[data_i][1] == child.data:
                        offset = data_tokens[data_i][0]
                    data_i += 1
                    piece = _Piece("literal", offset, child.lineno, file)
                else:
                    offset = variable_starts[var_i] if var_i < len(variable_starts) else -1
                    if offset >= 0 and _line_col(starts, offset)[0] != child.lineno:
                        offset = -1  # alignment lost: fall back to the AST's line
                    var_i += 1
                    piece = _Piece("expression", offset, child.lineno, file)
                if not opaque:
                    marker = f"\x00{len(self._pieces)}\x01"
                    self._pieces.append(piece)
                    children.append(nodes.TemplateData(marker, lineno=child.lineno))
                children.append(child)
            output.nodes = children

    def add_fragment(self, env: jinja2.Environment, source: str, name: str, path: str) -> nodes.Template:
        """The instrumented AST of an included file, whose pieces map back to `path`."""
        from jinja2 import meta

        source = normalize_newlines(source)
        ast = env.parse(source, name, path)
        self.fragment_undeclared |= meta.find_undeclared_variables(ast)
        self.fragment_references += meta.find_referenced_templates(ast)
        self.files.append((path, [0] + [m.end() for m in re.finditer("\n", source)]))
        self._instrument(env, ast, source, len(self.files))
        return ast

    def line_col(self, offset: int, file: int = 0) -> tuple[int, int]:
        return _line_col(self._line_starts if file == 0 else self.files[file - 1][1], offset)

    def file_path(self, file: int) -> str | None:
        """The path of included file number `file` (None: the template itself)."""
        return self.files[file - 1][0] if file else None

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
        path = self.traced.file_path(piece.file)
        if piece.offset < 0:
            return Origin(piece.line, 1, piece.kind, path)
        if piece.kind == "literal":
            line, col = self.traced.line_col(piece.offset + (pos - self._starts[i]), piece.file)
            return Origin(line, col, "literal", path)
        line, col = self.traced.line_col(piece.offset, piece.file)
        return Origin(line, col, "expression", path)

    def piece_range(self, pos: int) -> tuple[int, int]:
        """The output range [start, end) emitted by the piece that produced `pos`."""
        i = bisect.bisect_right(self._starts, pos) - 1
        if i < 0:
            return 0, self._starts[0] if self._starts else len(self.text)
        end = self._starts[i + 1] if i + 1 < len(self._starts) else len(self.text)
        return self._starts[i], end


class TracingLoader(jinja2.BaseLoader):
    """Wraps a loader so that every file it loads is instrumented like the template that
    includes it: output from an included file traces back to that file's path and line."""

    def __init__(self, inner: jinja2.BaseLoader) -> None:
        self.inner = inner
        self.traced: TracedTemplate | None = None  # set once the including template is compiled

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str | None, Any]:
        return self.inner.get_source(environment, template)

    def load(self, environment: jinja2.Environment, name: str, globals: Any = None) -> jinja2.Template:
        source, filename, uptodate = self.inner.get_source(environment, name)
        path = filename or name
        if self.traced is None:
            return environment.from_string(source, globals)
        ast = self.traced.add_fragment(environment, source, name, path)
        code = environment.compile(ast, name, path)
        return environment.template_class.from_code(
            environment, code, environment.make_globals(globals), uptodate
        )
