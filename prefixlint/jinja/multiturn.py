"""Placeholder until the multi-turn analysis lands (being written now)."""

from __future__ import annotations

from dataclasses import dataclass

from prefixlint.model import Diagnostic


@dataclass
class MultiTurnResult:
    diagnostics: list[Diagnostic]
    reuse: float | None


def analyze_multiturn(template, tokenizer) -> MultiTurnResult:  # noqa: ANN001
    return MultiTurnResult([], None)
