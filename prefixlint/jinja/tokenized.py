"""A traced render with its tokens; all renders of a template are tokenized in one batch."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from prefixlint.jinja.tracer import TracedRender
from prefixlint.models.tokens import LoadedTokenizer


@dataclass
class TokenizedRender:
    traced: TracedRender
    ids: list[int] = field(default_factory=list)
    offsets: list[tuple[int, int]] = field(default_factory=list)

    @property
    def text(self) -> str:
        return self.traced.text


def tokenize_renders(renders: Sequence[TokenizedRender], tokenizer: LoadedTokenizer) -> None:
    """Fill `ids` and `offsets` of every render with one batched encode."""
    for render, encoding in zip(renders, tokenizer.encode_many([r.text for r in renders]), strict=True):
        render.ids, render.offsets = encoding.ids, encoding.offsets
