"""Relocation fixes for chat templates: a volatile value printed ahead of static content is moved
to where nothing static follows it.

For a finding whose printing place is known (`Diagnostic.origin`: the `{{ … }}` that renders the
date, the id, the per-request value), the candidates, best first, move that line (the sentence
around the value: `Today is {{ today }}.`), or the tag alone when its line holds more:

1. to the end of the generation prompt (`{% if add_generation_prompt %}…`), after its text;
2. to the start of the generation prompt;
3. after the conversation, just before the generation prompt (or after the message loop).

For a generation prompt that ends with whitespace no assistant turn of the history has (PFX403),
the candidate drops it: `{%- endif %}`, or the last `\\n` of its string.

A template variable the caller passes instead is no candidate: without the caller's value the
moved value would no longer render, which the verifier refuses; that advice stays in words.
Each candidate is verified by prefixlint.fixes.verify; `preserves` adds the template's own condition: for
the base request (with and without a system message) the fixed template renders byte-identically
to the original apart from the moved text, which still renders, and is no turn marker or special
token. A template inside a tokenizer_config.json is edited in its JSON string literal.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from prefixlint.core.edits import EditError, apply_edits, edit_between, offset_of
from prefixlint.core.findings import Diagnostic, Edit, Fix
from prefixlint.fixes.kinds import register
from prefixlint.jinja.layout import OPAQUE, Block, Layout, Tag

if TYPE_CHECKING:
    from prefixlint.plan import FixPart, TemplatePart
    from prefixlint.run.sources import Source

# The codes whose finding is a value printed too early (the variants analysis).
RELOCATABLE = frozenset({"PFX101", "PFX102", "PFX103", "PFX104", "PFX105", "PFX201", "PFX301", "PFX501"})
MAX_MOVED_CHARS = 300  # a sentence around a value, not a section of the prompt

# A value the template prints itself is rendered anew at every turn: wherever it goes, the turns
# after it are rendered otherwise than the reply they were (printed at the end of the generation
# prompt, the previous reply is recomputed on every turn). The caller's last user message is where
# a request differs anyway.
ADVICE = {
    "PFX101": "leave the date or time to the caller's last user message, where each request differs "
    "anyway (printed at the end of the generation prompt, it costs the previous reply on every turn)",
    "PFX102": "send ids as request metadata, or leave them to the caller's last user message",
    "PFX103": "make the choice stable (a fixed order or a seed)",
    "PFX104": "leave per-machine values out, or to the caller's last user message",
    "PFX105": "leave per-request values to the caller's last user message",
    "PFX201": "sort it before printing (`dictsort`, `sort`)",
    "PFX301": "make this whitespace the same for every request",
    "PFX302": "end the static text before the user's turn on a token boundary (a newline, not a space)",
    "PFX501": "print what varies per request after the static text",
    "PFX502": "only a longer static prefix (system prompt, tools) reaches the engine's minimum",
}


PROMPT_ADVICE = "print it at the end of the template, after all static text, or send it in the user message"


def advice(finding: Diagnostic, kind: str = "jinja") -> str:
    """What to do, in words, for a template finding that has no hint of its own; an app prompt
    template (`kind` prompt_template) has no conversation to put a value after."""
    if kind == "prompt_template" and finding.code in RELOCATABLE:
        return PROMPT_ADVICE
    return ADVICE.get(finding.code, "")


# A template-level edit: source[start:end] becomes the text.
Change = tuple[int, int, str]


@dataclass(frozen=True)
class Move:
    """A template-level candidate: source[start:end] becomes `keep` (empty: cut out) and `moved` is
    inserted at offset `to` of the original."""

    start: int
    end: int
    keep: str
    moved: str
    shown: str  # what the message names
    to: int
    where: str  # "to the end of the generation prompt"
    before_line: int  # the line `to` is on

    @property
    def changes(self) -> list[Change]:
        return [(self.start, self.end, self.keep), (self.to, self.to, self.moved)]


@dataclass(frozen=True)
class TemplateMove(Fix):
    """A relocation candidate: its first edit cuts the value out (what stays there in its place),
    the second inserts it; the render check reads which template of the file it moves (never
    attached as such: prefixlint.fixes.verify attaches a plain Fix)."""

    template: str | None = None  # the named template of a tokenizer_config.json ("": its only one)
    prompt: bool = False  # an app prompt template (rendered with its variables, not a conversation)


@dataclass(frozen=True)
class TrailingWhitespace(Fix):
    """A candidate that drops whitespace the generation prompt ends with (checked: the prompt with
    the generation prompt renders as before less trailing whitespace, the one without as before)."""

    template: str | None = None


def _line(source: str, offset: int) -> int:
    return source.count("\n", 0, offset) + 1


@dataclass(frozen=True)
class Cut:
    """What a relocation takes out of the source: [start, end) becomes `keep`, `moved` goes."""

    start: int
    end: int
    keep: str
    moved: str
    shown: str = ""  # how a fix's message names what moves (default: `moved`)


def moved_span(layout: Layout, offset: int) -> Cut | None:
    """What to move for the value printed by the `{{ … }}` at `offset`: its line, when that line
    holds only text and printed values (the sentence around the value, with its `{% if %}` when it
    is all that block's body); else, of a `{{ 'Header\\nDate: ' + date + '\\n' }}`, the part
    that prints the value (`split_concatenation`), else the tag alone. None when no `{{ … }}`
    starts there or it sits in a body printed elsewhere (a macro, a `set` block)."""
    tag = layout.tag_at(offset)
    if tag is None or tag.kind != "variable" or tag.start != offset:
        return None
    block = layout.block_of(offset)
    if block is not None and block.inside(OPAQUE):
        return None
    source = layout.source
    start, end = layout.line_bounds(offset)
    on_line = [t for t in layout.tags if t.start < end and t.end > start]
    whole_line = (
        source[start:end].endswith("\n")
        and all(t.kind in ("variable", "comment") and start <= t.start and t.end <= end for t in on_line)
        and end - start <= MAX_MOVED_CHARS
    )
    split = split_concatenation(source, tag)
    if split is not None and (not whole_line or len(on_line) == 1):
        keep, moved = split
        return Cut(tag.start, tag.end, keep, moved + ("\n" if whole_line else ""))
    if not whole_line:
        return Cut(tag.start, tag.end, "", source[tag.start : tag.end])
    guarded = _guarded(layout, block, start, end)
    if guarded is not None:
        shown = f"{_shown(source[start:end])}` with its `{{% if %}}"
        return Cut(*guarded, "", source[guarded[0] : guarded[1]], shown)
    return Cut(start, end, "", source[start:end])


_QUOTED = re.compile(r"""(['"])((?:\\.|(?!\1).)*)\1\Z""", re.S)


def split_concatenation(source: str, tag: Tag) -> tuple[str, str] | None:
    """A `{{ … }}` whose expression is a `+`/`~` chain with one value that is no string literal, as
    (the tag printing what stays, the tag printing the value's sentence): the literal text around
    the value back to the last newline before it and up to the first one after it. None when the
    expression is no such chain, or nothing of it would stay."""
    operands: list[list[tuple[int, str, str]]] = [[]]
    depth = 0
    for token in tag.tokens:
        _, kind, value = token
        if kind == "operator" and value in "([{":
            depth += 1
        elif kind == "operator" and value in ")]}":
            depth -= 1
        elif depth == 0 and kind == "operator" and value in ("+", "~"):
            operands.append([])
            continue
        elif depth == 0 and kind == "name" and value in ("if", "else", "and", "or", "not", "in", "is"):
            return None
        operands[-1].append(token)
    if len(operands) < 2 or any(not o for o in operands):
        return None
    texts = [source[o[0][0] : o[-1][0] + len(o[-1][2])] for o in operands]
    literal = [len(o) == 1 and o[0][1] == "string" for o in operands]
    values = [i for i, lit in enumerate(literal) if not lit]
    if len(values) != 1:
        return None
    k = values[0]
    stay_left, moved_left = texts[:k], []
    if k > 0:
        head, tail = _split_literal(texts[k - 1], last=True)
        stay_left = texts[: k - 1] + ([head] if head else [])
        moved_left = [tail] if tail else []
    stay_right, moved_right = texts[k + 1 :], []
    if k + 1 < len(texts):
        head, tail = _split_literal(texts[k + 1], last=False)
        moved_right = [head] if head else []
        stay_right = ([tail] if tail else []) + texts[k + 2 :]
    stay = stay_left + stay_right
    if all(_blank(t) for t in stay):
        return None  # nothing but whitespace would stay: the whole tag moves
    opening = source[tag.start : tag.tokens[0][0]].rstrip()
    closing = source[tag.tokens[-1][0] + len(tag.tokens[-1][2]) : tag.end].lstrip()
    kept = f"{opening} {' + '.join(stay)} {closing}"
    moved = f"{opening} {' + '.join([*moved_left, texts[k], *moved_right])} {closing}"
    return kept, moved


def _blank(literal: str) -> bool:
    """Whether a string literal prints only whitespace (`'\\n\\n'`)."""
    m = _QUOTED.match(literal)
    return m is not None and not re.sub(r"\\[ntr]", "", m.group(2)).strip()


def _split_literal(text: str, last: bool) -> tuple[str, str]:
    """A quoted string literal split after its last (`last`) or first `\\n` escape, as two
    literals with the same quotes ("" for an empty side); without one, all of it goes with the
    value: ("", text) on the left, (text, "") on the right."""
    m = _QUOTED.match(text)
    newlines = [e.end() for e in re.finditer(r"\\.", m.group(2)) if e.group() == "\\n"] if m else []
    if m is None or not newlines:
        return ("", text) if last else (text, "")
    quote, body = m.group(1), m.group(2)
    cut = newlines[-1] if last else newlines[0]
    head, tail = body[:cut], body[cut:]
    return (f"{quote}{head}{quote}" if head else "", f"{quote}{tail}{quote}" if tail else "")


def _guarded(layout: Layout, block: Block | None, start: int, end: int) -> tuple[int, int] | None:
    """The lines of the `{% if %}` block around the line [start, end) when that line is all its
    body (`{% if user_name is defined %}` + the line + `{% endif %}`): moved with its condition."""
    if block is None or block.opener.keyword != "if" or block.middles or block.closer is None:
        return None
    source = layout.source
    if source[block.opener.end : block.closer.start].strip() != source[start:end].strip():
        return None
    first = layout.line_start_before(block.opener)
    last = layout.line_bounds(block.closer.end - 1)[1]
    if first != source.rfind("\n", 0, block.opener.start) + 1 or source[block.closer.end : last].strip():
        return None
    return first, last


def moves(source: str, origin_line: int, origin_column: int, prompt: bool = False) -> Iterator[Move]:
    """The relocations of the value printed at (origin_line, origin_column), best first; `prompt`:
    an app prompt template, whose only place after all static text is its end."""
    try:
        layout = Layout(source)
        offset = offset_of(source, origin_line, origin_column)
    except Exception:  # a template that does not lex, a place outside it: nothing to move
        return
    cut = moved_span(layout, offset)
    if cut is None:
        return
    start, end = cut.start, cut.end
    targets: list[tuple[int, str]] = []
    if prompt and source.endswith("\n") and cut.moved.endswith("\n"):
        targets.append((len(source), "to the end of the template"))
    gen = None if prompt else layout.generation_block()
    if gen is not None:
        closer = gen.middles[0] if gen.middles else gen.closer
        assert closer is not None
        targets.append((layout.line_start_before(closer), "to the end of the generation prompt"))
        targets.append((gen.opener.end, "to the start of the generation prompt"))
    loop = None if prompt else layout.message_loop()
    if gen is not None and not gen.inside(frozenset({"for"})):
        targets.append((layout.line_start_before(gen.opener), "after the conversation"))
    elif loop is not None and loop.closer is not None:
        targets.append((loop.closer.end, "after the conversation"))
    seen: set[int] = set()
    for to, where in targets:
        if start <= to <= end or to in seen:
            continue
        seen.add(to)
        yield Move(
            start, end, cut.keep, cut.moved, cut.shown or _shown(cut.moved), to, where, _line(source, to)
        )


def _shown(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= 60 else text[:57] + "..."


def _candidates_for(
    template: str,
    finding: Diagnostic,
    edits_for: Callable[[list[Change]], tuple[Edit, ...]],
    line_of: Callable[[int], int],
    line_word: str = "line",
    prompt: bool = False,
    name: str | None = None,
) -> Iterator[Fix]:
    if "\r" in template:
        return
    if finding.code == "PFX403" and not prompt:
        for changes, what in trailing_whitespace(template):
            message = f"{what} ({line_word} {line_of(changes[0][0])}), which history never has"
            yield TrailingWhitespace("unsafe", message, edits_for(changes), template=name)
    if finding.code not in RELOCATABLE:
        return
    origin = finding.origin or finding.span
    for move in moves(template, origin.line, origin.column, prompt):
        message = (
            f"Move `{move.shown}` ({line_word} {line_of(move.start)}) {move.where} "
            f"(before {line_word} {move.before_line})"
        )
        yield TemplateMove("unsafe", message, edits_for(move.changes), template=name, prompt=prompt)


def _file_edits(path: str, text: str) -> Callable[[list[Change]], tuple[Edit, ...]]:
    def edits_for(changes: list[Change]) -> tuple[Edit, ...]:
        return tuple(edit_between(path, text, a, b, new) for a, b, new in changes)

    return edits_for


def candidates(path: str, text: str, finding: Diagnostic) -> Iterator[Fix]:
    """Candidates for a finding of a chat template file (unverified, best first)."""
    return _candidates_for(text, finding, _file_edits(path, text), lambda at: _line(text, at))


def prompt_candidates(path: str, text: str, finding: Diagnostic) -> Iterator[Fix]:
    """Relocation candidates for a finding of an app prompt template: its line, to the end."""
    if finding.span.path != path:
        return iter(())  # printed in an included file: that file's own check moves it
    edits_for = _file_edits(path, text)
    return _candidates_for(text, finding, edits_for, lambda at: _line(text, at), prompt=True)


_TRAILING_NEWLINE = re.compile(r"(['\"])((?:\\.|(?!\1).)*?)((?:\\n)+)\1\Z", re.S)


def trailing_whitespace(source: str) -> Iterator[tuple[list[Change], str]]:
    """Edits that end the generation prompt where an assistant turn of the history goes on: its
    closing tag strips the whitespace before it (`{%- endif %}`), or the newline its last string
    ends with is dropped (`'<|im_start|>assistant\\n\\n'`)."""
    try:
        layout = Layout(source)
    except Exception:  # a template that does not lex has no fix
        return
    gen = layout.generation_block()
    if gen is None:
        return
    closer = gen.middles[0] if gen.middles else gen.closer
    assert closer is not None
    body = source[gen.opener.end : closer.start]
    last = [t for t in layout.tags if gen.opener.end <= t.start and t.end <= closer.start]
    after = source[last[-1].end : closer.start] if last else body
    if (
        after
        and not after.strip()
        and source.startswith("{%", closer.start)
        and source[closer.start + 2] not in "-+"
    ):
        yield [(closer.start + 2, closer.start + 2, "-")], "Strip the whitespace after the generation prompt"
    if last and last[-1].kind == "variable" and last[-1].tokens and last[-1].tokens[-1][1] == "string":
        at, _, literal = last[-1].tokens[-1]
        m = _TRAILING_NEWLINE.match(literal)
        if m is not None and (m.group(2) or len(m.group(3)) > 2):
            end = at + len(literal) - 1  # the closing quote
            yield [(end - 2, end, "")], "Drop the last `\\n` of the generation prompt's string"


def config_candidates(path: str, text: str, finding: Diagnostic) -> Iterator[Fix]:
    """Relocation candidates for a template inside a tokenizer_config.json: the same moves, as edits
    of its JSON string literal (escaped as the file escapes it)."""
    from prefixlint.run.sources import ConfigError, template_literals

    origin = finding.origin  # a multi-turn finding has none: then the file's only template
    if origin is not None and not origin.path.endswith("]"):
        return iter(())
    name = origin.path[origin.path.rfind("[") + 1 : -1] if origin is not None else ""
    try:
        literals = template_literals(text)
    except ConfigError:
        return iter(())
    chosen = (
        [lit for lit in literals if lit.name == name] if name else literals[:1] if len(literals) == 1 else []
    )
    if not chosen:
        return iter(())
    literal = text[chosen[0].start : chosen[0].end]
    template = json.loads(literal)
    index = _literal_offsets(literal)
    at = chosen[0].start

    def encode(part: str) -> str:
        return json.dumps(part, ensure_ascii=literal.isascii())[1:-1]

    def edits_for(changes: list[Change]) -> tuple[Edit, ...]:
        return tuple(
            edit_between(path, text, at + index[a], at + index[b], encode(new)) for a, b, new in changes
        )

    return _candidates_for(
        template, finding, edits_for, lambda offset: _line(template, offset), "template line", name=name
    )


def _literal_offsets(literal: str) -> list[int]:
    """For each character of the JSON string `literal` (quotes included) once decoded, its offset in
    `literal`; one more entry for the closing quote."""
    out, i = [], 1
    while i < len(literal) - 1:
        out.append(i)
        if literal[i] != "\\":
            i += 1
        elif literal[i + 1] != "u":
            i += 2
        else:
            code = int(literal[i + 2 : i + 6], 16)
            i += 6
            if 0xD800 <= code < 0xDC00 and literal[i : i + 2] == "\\u":  # a surrogate pair: one character
                i += 6
    out.append(len(literal) - 1)
    return out


# -- the render check ------------------------------------------------------------------------------

_VARIED = re.compile(r"varied: template variable `([A-Za-z_]\w*)`")
_MARKER = re.compile(r"<\|[^|<>\s]{1,40}\|>|<｜[^｜<>]{1,40}｜>|\[/?INST\]|<(?:start|end)_of_turn>|</?s>")


MAX_INSERTION_PLACES = 256  # a repetitive render (`aaaa…`) has as many: then no move is told apart


def _insertions(longer: str, shorter: str) -> set[str]:
    """Every text M with `longer` == shorter[:p] + M + shorter[p:] for some p (empty: none). The
    places p are those up to the common prefix and from the common suffix on, so no text is
    compared twice."""
    m = len(longer) - len(shorter)
    if m < 0:
        return set()
    from prefixlint.models.tokens import common_prefix_len

    head = common_prefix_len(longer, shorter)
    tail = common_prefix_len(longer[::-1], shorter[::-1])
    low, high = max(0, len(shorter) - tail), min(head, len(shorter))
    if high - low > MAX_INSERTION_PLACES:
        return set()
    return {longer[p : p + m] for p in range(low, high + 1)}


def _renders(
    source: str,
    path: str,
    special: dict[str, str],
    part: TemplatePart,
    finding: Diagnostic,
    generation: bool = True,
) -> dict[bool, str | None]:
    """The base request rendered with and without a system message (None: it raises), with the
    generation prompt unless not `generation`; a template variable the finding varied is passed,
    with its first sample value."""
    from prefixlint.jinja.inputs import USER_TURNS, conversation
    from prefixlint.jinja.template import ChatTemplate
    from prefixlint.jinja.variables import sample_values

    template = ChatTemplate(source, path, special_tokens=special, limits=part.limits)
    template.extra_kwargs.update(part.template_vars)
    varied = _VARIED.search(finding.evidence.inputs if finding.evidence is not None else "")
    if varied is not None:
        template.extra_kwargs.setdefault(varied.group(1), sample_values(varied.group(1))[0])
    out: dict[bool, str | None] = {}
    for system in (True, False):
        messages = conversation(USER_TURNS[0], system=system)
        template.supply_required_variables(messages, None)
        try:
            out[system] = template.render(messages, add_generation_prompt=generation).text
        except Exception:  # an untrusted template's error is a PFX002 of the analysis, not ours
            out[system] = None
    return out


def _prompt_renders(
    source: str, path: str, special: dict[str, str], part: TemplatePart, finding: Diagnostic
) -> dict[bool, str | None]:
    """An app prompt template rendered with the values its analysis gives every variable."""
    from prefixlint.jinja.loader import project_root
    from prefixlint.jinja.prompt import PromptTemplate, sample_inputs

    search = (project_root(path, part.project_root), *part.search_path)
    template = PromptTemplate(source, path, limits=part.limits, search_path=search)
    try:
        template.load_includes()
        return {True: template.render_values(sample_inputs(template, part)).text}
    except Exception:  # an untrusted template's error is a PFX002 of the analysis, not ours
        return {True: None}


def _template_in(text: str, name: str | None) -> str:
    """The template of a file's text: the text itself, or a tokenizer_config.json's named one."""
    if name is None:
        return text
    from prefixlint.run.sources import templates_in_tokenizer_config

    named = templates_in_tokenizer_config(text)
    found = next((t.source for t in named if t.name == name or (not name and len(named) == 1)), None)
    if found is None:
        raise ValueError(f"no chat template named {name!r}")
    return found


def preserves(
    candidate: Fix, source: Source, text: str, fixed: str, finding: Diagnostic, fix: FixPart
) -> str | None:
    """None when the fixed template renders the base request as the original does apart from the
    moved text, which still renders and holds no turn marker or special token; else why not."""
    if not isinstance(candidate, (TemplateMove, TrailingWhitespace)):
        return None
    from prefixlint.models.tokens import choose_tokenizer, special_tokens_for

    part = fix.template
    special = special_tokens_for(source.path, choose_tokenizer(source.path, part.tokenizer)[0])
    if isinstance(candidate, TrailingWhitespace):
        return _only_trailing_whitespace(candidate, source.path, text, fixed, special, part, finding)
    render = _prompt_renders if candidate.prompt else _renders
    try:
        cut = apply_edits(text, candidate.edits[:1])  # the original without the moved text
        sources = [_template_in(t, candidate.template) for t in (text, cut, fixed)]
    except (EditError, ValueError):
        return "the fixed file holds no such template"
    before, removed, after = (render(t, source.path, special, part, finding) for t in sources)
    shown = False
    for system, original in before.items():
        if original is None:
            continue
        if removed[system] is None or after[system] is None:
            return "the fixed template raises for the base request"
        # The same text, give or take the whitespace at its ends (a template's last newline is dropped).
        was = {(len(m), m.strip()): m for m in _insertions(original, removed[system])}
        moved = [m for m in _insertions(after[system], removed[system]) if (len(m), m.strip()) in was]
        if not moved:
            return "the rest of the base request renders differently"
        if any(m.strip() for m in moved):
            shown = True
        tokens = [v for v in special.values() if v]
        if any(_MARKER.search(m) or any(t in m for t in tokens) for m in moved):
            return "it would move a turn marker"
    return None if shown else "the moved text renders nothing for the base request"


def _only_trailing_whitespace(
    candidate: TrailingWhitespace,
    path: str,
    text: str,
    fixed: str,
    special: dict[str, str],
    part: TemplatePart,
    finding: Diagnostic,
) -> str | None:
    """None when the fixed template renders the base request as before less whitespace at its end
    (with the generation prompt), and exactly as before without it; else why not."""
    try:
        original, changed = (_template_in(t, candidate.template) for t in (text, fixed))
    except ValueError:
        return "the fixed file holds no such template"
    for generation in (True, False):
        before = _renders(original, path, special, part, finding, generation)
        after = _renders(changed, path, special, part, finding, generation)
        for system, was in before.items():
            now = after[system]
            if was is None:
                continue
            if now is None:
                return "the fixed template raises for the base request"
            trailing = was[len(now) :] if was.startswith(now) else None
            if generation and (not trailing or trailing.strip()):
                return "it changes more than the whitespace the generation prompt ends with"
            if not generation and now != was:
                return "it changes the prompt without a generation prompt"
    return None


register("jinja", candidates, preserves)
register("prompt_template", prompt_candidates, preserves)
register("tokenizer_config", config_candidates, preserves)
