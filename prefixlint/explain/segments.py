"""Encode a stream of prompts that share most of their text, each distinct segment once.

Hugging Face tokenizers cut the text at added tokens (`<|im_start|>`, …) before normalizing and
pre-tokenizing, so the pieces between them tokenize independently: the ids of a prompt are the ids
of its pieces, joined. Inside a piece, a regex pre-tokenizer (GPT-2, Llama 3, Qwen, DeepSeek, OLMo)
always ends a pre-token at a newline that sits between two non-space characters, and a pre-token
is encoded on its own, so such a line start is a cut too. A request log repeats the same system
prompt, tools and few-shot lines in every request: those lines are encoded once and reused.

Not every tokenizer allows the second cut (a normalizer that prepends `▁` to every piece, as
Mistral's does, would add one per line), nor, in principle, the first. So each cut is checked on
probe texts when the encoder is built, and the joined ids are compared with whole-prompt
encodings on a sample of the real prompts as they stream by: a mismatch raises `SegmentMismatch`
and the caller starts over encoding whole prompts. A wrong count is never returned.
"""

from __future__ import annotations

import re
from array import array
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from prefixlint.engines.packed import WIDTH, pack, unpack

if TYPE_CHECKING:
    from tokenizers import Tokenizer

_NEWLINE_BEFORE_TEXT = re.compile(r"\n(?=\S)")  # a cut after it if the character before is not a space
# Texts whose pieces and lines must encode as they do whole: line starts after letters, digits,
# punctuation, quotes and non-ASCII text, numbers across lines, indentation, blank lines.
_PROBE_LINES = (
    "Current time: 2025-03-31 23:59:59\nYou are a helpful assistant.\n- Item 1: tent\n- Item 2: stove",
    "Hello world.\n(see below)\n'quoted' text\n\"double\"\n12345\n67890 units\nend",
    "Prix: 12,50 €\nÉté à Paris\n日本語のテキスト\n中文内容\nmixed日本\nnaïve café",
    "def f(x):\n    return x\n\nclass A:\n\tpass\n}\n{\n[1, 2]\n<tag>\n#heading\n* bullet",
    "a\nb\nc\n\nd  \ne\r\nf\n's\n're\nI'm\nDon't\nx\n",
)
SAMPLE_EVERY = 997  # one prompt in this many is also encoded whole and compared
SAMPLE_FIRST = 16  # ... and all of the first ones


class SegmentMismatch(Exception):
    """Joined segment ids differ from the whole prompt's: this tokenizer cannot be cut that way."""


@dataclass(frozen=True, slots=True)
class _Entry:
    ids: bytes  # packed token ids
    starts: bytes  # packed start offset (in the segment) of each token


@dataclass(slots=True)
class Tokens:
    """One prompt's token ids (packed) and where each token starts in its text."""

    ids: bytes
    parts: tuple[tuple[int, _Entry], ...]  # (the segment's char offset in the prompt, its entry)
    chars: int  # the prompt's length

    def __len__(self) -> int:
        return len(self.ids) // WIDTH

    def id_list(self) -> list[int]:
        return unpack(self.ids)

    def char_at(self, token: int) -> int:
        """The character where token `token` starts (the prompt's length past the last token)."""
        for offset, entry in self.parts:
            count = len(entry.ids) // WIDTH
            if token < count:
                return offset + array("I", entry.starts)[token]
            token -= count
        return self.chars


def _entry(ids: list[int], offsets: list[tuple[int, int]]) -> _Entry:
    return _Entry(pack(ids), pack([s for s, _ in offsets]))


class Encodes(Protocol):
    """What encodes prompts for the simulation: a SegmentEncoder here, or one on Dask workers."""

    def encode(self, texts: list[str]) -> list[Tokens]: ...


class SegmentEncoder:
    """Encodes prompts through a bounded LRU cache of segment encodings.

    `mode` is "lines" (cut at added tokens and line starts), "special" (at added tokens only) or
    "whole" (no cut: every prompt encoded in full); the strongest mode the probes allow is chosen
    unless one is given."""

    def __init__(
        self, tokenizer: Tokenizer, mode: str | None = None, capacity_tokens: int = 4_000_000
    ) -> None:
        self.tokenizer = tokenizer
        self.capacity_tokens = capacity_tokens
        self._cache: OrderedDict[str, _Entry] = OrderedDict()
        self._held = 0  # tokens held by the cache
        self._seen = 0  # prompts encoded
        self.encoded_chars = 0  # characters the tokenizer was given (the work done)
        self._special = _special_pattern(tokenizer)
        self.mode = mode or self._probe()

    def _probe(self) -> str:
        """The strongest mode whose cuts give the whole texts' ids on the probe texts."""
        specials = sorted(self._special.tokens)[:8] if self._special is not None else []
        joined = [f"{s}system\nYou are kind.{s}\n{s}user\nHi there{s} x {s}" for s in specials]
        for mode in ("lines", "special"):
            texts = list(_PROBE_LINES) + joined if mode == "lines" else joined
            if mode == "special" and not texts:
                break
            if all(self._cut_ids(t, mode) == self._whole_ids(t) for t in texts):
                return mode
        return "whole"

    def _whole_ids(self, text: str) -> list[int]:
        return self.tokenizer.encode(text, add_special_tokens=False).ids

    def _cut_ids(self, text: str, mode: str) -> list[int]:
        segments = self.split(text, mode)
        encodings = self.tokenizer.encode_batch([s for _, s in segments], add_special_tokens=False)
        return [i for e in encodings for i in e.ids]

    def split(self, text: str, mode: str | None = None) -> list[tuple[int, str]]:
        """(char offset, segment) pieces of `text` that tokenize independently in `mode`."""
        mode = mode or self.mode
        if mode == "whole" or not text:
            return [(0, text)] if text else []
        pieces: list[tuple[int, str]] = []
        cut = 0
        if self._special is not None:
            for start, end in self._special.matches(text):
                if start > cut:
                    pieces.append((cut, text[cut:start]))
                pieces.append((start, text[start:end]))
                cut = end
        if cut < len(text):
            pieces.append((cut, text[cut:]))
        if mode != "lines":
            return pieces
        out: list[tuple[int, str]] = []
        for offset, piece in pieces:
            start = 0
            for m in _NEWLINE_BEFORE_TEXT.finditer(piece):
                at = m.end()
                if m.start() and not piece[m.start() - 1].isspace():
                    out.append((offset + start, piece[start:at]))
                    start = at
            out.append((offset + start, piece[start:]))
        return out

    def encode(self, texts: list[str]) -> list[Tokens]:
        """Each text's tokens; segments not in the cache are encoded in one batch (on every core)."""
        split = [self.split(t) for t in texts]
        missing: dict[str, None] = {}
        cache = self._cache
        for segments in split:
            for _, seg in segments:
                if seg in cache:
                    cache.move_to_end(seg)
                else:
                    missing[seg] = None
        fresh: dict[str, _Entry] = {}
        if missing:
            todo = list(missing)
            self.encoded_chars += sum(map(len, todo))
            encodings = self.tokenizer.encode_batch(todo, add_special_tokens=False)
            for seg, enc in zip(todo, encodings, strict=True):
                fresh[seg] = _entry(enc.ids, enc.offsets)
        out = []
        for text, segments in zip(texts, split, strict=True):
            parts = tuple((offset, cache.get(seg) or fresh[seg]) for offset, seg in segments)
            tokens = Tokens(b"".join(e.ids for _, e in parts), parts, len(text))
            self._check(text, tokens)
            out.append(tokens)
        for seg, entry in fresh.items():
            self._remember(seg, entry)
        return out

    def _check(self, text: str, tokens: Tokens) -> None:
        self._seen += 1
        if self.mode == "whole" or (self._seen > SAMPLE_FIRST and self._seen % SAMPLE_EVERY):
            return
        if pack(self._whole_ids(text)) != tokens.ids:
            raise SegmentMismatch(f"cutting at {self.mode} changes the tokens of prompt {self._seen}")

    def _remember(self, seg: str, entry: _Entry) -> None:
        cache = self._cache
        cache[seg] = entry
        self._held += len(entry.ids) // WIDTH
        while self._held > self.capacity_tokens and cache:
            _, old = cache.popitem(last=False)
            self._held -= len(old.ids) // WIDTH


def _safe(token: object) -> bool:
    """An added token that is matched on the raw text and takes no whitespace or word boundary
    from its neighbours: cutting the text around it changes nothing."""
    return not (
        getattr(token, "lstrip", True)
        or getattr(token, "rstrip", True)
        or getattr(token, "single_word", True)
        or getattr(token, "normalized", True)
    ) and bool(getattr(token, "content", ""))


class _AddedTokens:
    """Finds added tokens in a text as the tokenizer does (leftmost, then longest), by the few
    characters they start with: far faster than a regex of a thousand alternatives."""

    def __init__(self, tokens: list[str]) -> None:
        self.tokens = frozenset(tokens)
        lengths: dict[str, set[int]] = {}
        for t in tokens:
            lengths.setdefault(t[0], set()).add(len(t))
        self.lengths = {c: sorted(ls, reverse=True) for c, ls in lengths.items()}

    def matches(self, text: str) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        for first, lengths in self.lengths.items():
            pos = text.find(first)
            while pos >= 0:
                for n in lengths:
                    if text[pos : pos + n] in self.tokens:
                        found.append((pos, pos + n))
                        break
                pos = text.find(first, pos + 1)
        if len(self.lengths) > 1:
            found.sort()
        out: list[tuple[int, int]] = []
        for start, end in found:
            if not out or start >= out[-1][1]:
                out.append((start, end))
        return out


def _special_pattern(tokenizer: Tokenizer) -> _AddedTokens | None:
    """The added tokens that are cut points."""
    tokens = [t.content for t in tokenizer.get_added_tokens_decoder().values() if _safe(t)]
    return _AddedTokens(tokens) if tokens else None
