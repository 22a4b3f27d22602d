"""The severity of a finding from what it costs (loss_severity: THE severity rule, one for check,
diff and explain), and that cost measured on rendered text with a tokenizer (cost_severity): for a
chat template's variants and multi-turn analyses and for app prompt templates alike; Python prompts
call loss_severity directly. What an engine loses is engines/loss.py's arithmetic.

Measured with the embedded stand-in tokenizer, a cost is counted a second time with the
template's control strings as single tokens, as the model's own tokenizer holds them, and judged
at every alignment of the engine's blocks (its boundaries are the model tokenizer's to place):
where that verdict is lower, it is kept and the finding says the verdict depends on the tokenizer
(issue 23, point 5).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from prefixlint.core.controls import control_strings
from prefixlint.core.findings import Severity
from prefixlint.engines.loss import EVERY_TOKEN, aligned_loss, cost_unit
from prefixlint.engines.profiles import Engine
from prefixlint.models.tokens import EMBEDDED_NAME, LoadedTokenizer, encode_isolating


def loss_severity(
    severity: Severity,
    before: int,
    static_after: int,
    engine: Engine | None,
    *,
    reply_lost: int = 0,
    prompt_tokens: int | None = None,
    last_token_only: bool = False,
    any_alignment: bool = False,
) -> Severity:
    """THE severity rule (issue 23, point 5), one for check, diff and explain, for every code that
    costs cache (a template's variants and multi-turn breaks, a Python prompt's values): a finding
    costs the aligned blocks of static text that would be shared if the value were not where it
    is: `before` tokens shared, then `static_after` static tokens the cache loses (aligned_loss:
    for vLLM whole 16-token blocks, for OpenAI nothing below 1,024 tokens, then 128-token steps).

    - it loses a block or more of the static prompt: `severity`, the rule's own;
    - it loses only generated tokens (`reply_lost`, which follow the static ones) worth a block or
      more: at most a warning;
    - else info: less than one block, or only the prompt's last token (`last_token_only`, a
      multi-turn break at turn N's last token, which engines recompute anyway).

    Callers count `static_after` without the turn markers in front of per-request text
    (`prefixlint.core.controls.markup_suffix`): they cost nothing shareable. `engine` None: every token
    counts (a 1-token block).

    `any_alignment`: the block boundaries are not known (the embedded stand-in tokenizer's are not
    the model's): the lowest verdict over every position of the value within one cache unit. A
    loss of a block or more keeps its verdict at any position; a shorter one costs a block or
    nothing depending on where the boundaries fall, which only the model's own tokenizer tells.
    The stand-in's verdict is never above it (counted with the template's control strings as
    single tokens, `prefixlint.models.tokens.encode_isolating`), and the finding says so when that is
    lower (TOKENIZER_DEPENDS_NOTE)."""
    if any_alignment:
        return min(
            loss_severity(
                severity,
                max(0, before - shift),
                static_after,
                engine,
                reply_lost=reply_lost,
                prompt_tokens=None if prompt_tokens is None else max(0, prompt_tokens - shift),
                last_token_only=last_token_only,
            )
            for shift in range(cost_unit(engine))
        )
    profile = engine if engine is not None else EVERY_TOKEN
    static = 0 if last_token_only and static_after <= 1 else static_after
    prompt = aligned_loss(before, static, profile, prompt_tokens)
    if prompt > 0:
        return severity
    if reply_lost and aligned_loss(before, static + reply_lost, profile, prompt_tokens) > 0:
        return min(severity, Severity.WARNING)
    return Severity.INFO


TOKENIZER_DEPENDS_NOTE = (
    "with the embedded stand-in tokenizer this would be a finding at {measured}; whether it costs a whole "
    "cache block depends on the model's own tokenizer: pass `--tokenizer` with its tokenizer.json to decide"
)


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
