"""The tags and blocks of a Jinja template source, with their offsets: where a fix can cut and
insert text (prefixlint/jinja/fixes.py). The lexer is the environment's own, so whitespace control
and `lstrip_blocks` are the renderer's."""

from __future__ import annotations

from dataclasses import dataclass, field

# Block tags that open a body closed by `end<name>`.
_OPENERS = frozenset({"if", "for", "macro", "call", "filter", "with", "autoescape", "block", "generation"})
# Bodies whose output is not printed where they stand: nothing is moved into or out of them.
OPAQUE = frozenset({"macro", "call", "filter", "set"})


@dataclass(frozen=True)
class Tag:
    """A `{% … %}`, `{{ … }}`, `{# … #}` or raw block in the source: [start, end), its words."""

    kind: str  # "block", "variable", "comment", "raw"
    start: int
    end: int
    words: tuple[str, ...] = ()
    tokens: tuple[tuple[int, str, str], ...] = ()  # (offset, kind, text) inside, whitespace left out

    @property
    def keyword(self) -> str:
        return self.words[0] if self.words else ""


@dataclass
class Block:
    """An opener tag, its `elif`/`else` tags, its closer and the block it sits in."""

    opener: Tag
    parent: Block | None
    middles: list[Tag] = field(default_factory=list)
    closer: Tag | None = None

    def inside(self, keywords: frozenset[str]) -> bool:
        block: Block | None = self
        while block is not None:
            if block.opener.keyword in keywords:
                return True
            block = block.parent
        return False


class Layout:
    """The tags and blocks of a template source, with their offsets."""

    def __init__(self, source: str) -> None:
        from prefixlint.jinja.environment import RenderClock, make_environment
        from prefixlint.jinja.inputs import BASE_TIME
        from prefixlint.jinja.tracer import source_tokens

        self.source = source
        self.tags: list[Tag] = []
        self.blocks: list[Block] = []
        begin: tuple[str, int] | None = None
        inside: list[tuple[int, str, str]] = []
        kinds = {"block_begin": "block", "variable_begin": "variable", "comment_begin": "comment"}
        for at, kind, value in source_tokens(make_environment(RenderClock(BASE_TIME)), source):
            if kind in kinds:
                begin, inside = (kinds[kind], at), []
            elif kind in ("raw_begin", "raw_end"):
                self.tags.append(Tag("raw", at, at + len(value)))
            elif kind.endswith("_end") and begin is not None:
                words = tuple(v for _, _, v in inside)
                self.tags.append(Tag(begin[0], begin[1], at + len(value), words, tuple(inside)))
                begin = None
            elif begin is not None and kind not in ("whitespace", "comment"):
                inside.append((at, kind, value))
        self._nest()

    def _nest(self) -> None:
        open_blocks: list[Block] = []
        for tag in self.tags:
            if tag.kind != "block":
                continue
            word = tag.keyword
            if word in _OPENERS or (word == "set" and "=" not in tag.words):
                block = Block(tag, open_blocks[-1] if open_blocks else None)
                self.blocks.append(block)
                open_blocks.append(block)
            elif word in ("elif", "else") and open_blocks:
                open_blocks[-1].middles.append(tag)
            elif word.startswith("end") and open_blocks:
                open_blocks.pop().closer = tag

    def tag_at(self, offset: int) -> Tag | None:
        return next((t for t in self.tags if t.start <= offset < t.end), None)

    def block_of(self, offset: int) -> Block | None:
        """The innermost block whose body holds `offset`."""
        inner = None
        for b in self.blocks:
            if b.closer is not None and b.opener.end <= offset < b.closer.start:
                inner = b  # blocks are in source order: a later match is nested deeper
        return inner

    def line_bounds(self, offset: int) -> tuple[int, int]:
        """[start, end) of the line holding `offset`, its newline included."""
        start = self.source.rfind("\n", 0, offset) + 1
        end = self.source.find("\n", offset)
        return start, len(self.source) if end < 0 else end + 1

    def line_start_before(self, tag: Tag) -> int:
        """Where to insert in front of `tag`: its line's start when only indentation precedes it
        there (text put after that indentation would render it), else the tag itself."""
        start = self.source.rfind("\n", 0, tag.start) + 1
        return start if not self.source[start : tag.start].strip() else tag.start

    def generation_block(self) -> Block | None:
        """The last `{% if add_generation_prompt … %}` block outside macros."""
        found = None
        for b in self.blocks:
            words = b.opener.words
            if b.opener.keyword != "if" or b.closer is None or "add_generation_prompt" not in words:
                continue
            at = words.index("add_generation_prompt")
            if words[at - 1] != "not" and not b.inside(OPAQUE):
                found = b
        return found

    def message_loop(self) -> Block | None:
        """The last `{% for … in …messages… %}` block outside macros."""
        found = None
        for b in self.blocks:
            words = b.opener.words
            iterable = words[words.index("in") + 1 :] if "in" in words else ()
            loop = b.opener.keyword == "for" and any("message" in w for w in iterable)
            if loop and b.closer is not None and not b.inside(OPAQUE):
                found = b
        return found
