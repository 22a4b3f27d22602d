"""The severity of a finding from what it costs, measured on rendered text with a tokenizer
(prefixlint.rules.loss_severity): for a chat template's variants and multi-turn analyses and for
app prompt templates alike.

Measured with the embedded stand-in tokenizer, a cost is counted a second time with the
template's control strings as single tokens, as the model's own tokenizer holds them, and judged
at every alignment of the engine's blocks (its boundaries are the model tokenizer's to place):
where that verdict is lower, it is kept and the finding says the verdict depends on the tokenizer
(issue 23, point 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefixlint.controls import control_strings
from prefixlint.engines import Engine
from prefixlint.model import Severity
from prefixlint.models.tokens import EMBEDDED_NAME, LoadedTokenizer, encode_isolating
from prefixlint.rules import TOKENIZER_DEPENDS_NOTE, loss_severity


@dataclass(frozen=True)
class Cost:
    """What a finding costs: `before` tokens shared, then `static` static tokens lost (and
    `reply` generated ones), in a prompt of `prompt` tokens; `texts` are the same three parts as
    text (the prompt up to the divergence, the static text lost, the whole prompt)."""

    before: int
    static: int
    prompt: int
    texts: tuple[str, str, str]
    reply: int = 0
    last_token_only: bool = False


def cost_severity(
    severity: Severity,
    cost: Cost,
    engine: Engine | None,
    tokenizer: LoadedTokenizer,
    controls: Sequence[str] = (),
) -> tuple[Severity, str]:
    """The finding's severity, and a note for its message ("" unless the verdict depends on the
    tokenizer). `controls`: the template's control strings (ChatTemplate.controls); those the
    prompt renders are found in it."""
    options = {"reply_lost": cost.reply, "last_token_only": cost.last_token_only}
    measured = loss_severity(severity, cost.before, cost.static, engine, prompt_tokens=cost.prompt, **options)
    if tokenizer.name != EMBEDDED_NAME:
        return measured, ""
    before, static, prompt = cost.before, cost.static, cost.prompt
    controls = control_strings(cost.texts[2], special=controls)  # `<|user|>` is rendered, not written
    if controls:
        before, static, prompt = (len(e.ids) for e in encode_isolating(tokenizer, list(cost.texts), controls))
    anywhere = loss_severity(
        severity, before, static, engine, prompt_tokens=prompt, any_alignment=True, **options
    )
    if anywhere >= measured:
        return measured, ""
    return anywhere, TOKENIZER_DEPENDS_NOTE.format(measured=measured.label)
