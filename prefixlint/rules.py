"""The rule catalog (contract: codes and names never change, only new ones are added).

Each rule's page lives in `rules/<CODE>.md` (shipped as `prefixlint.rule_pages`): what it finds,
why it busts the cache, and a bad and a good example that the tests run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from importlib import resources

from prefixlint.engines import Engine
from prefixlint.model import Severity


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str
    default_severity: Severity

    @property
    def severities(self) -> tuple[Severity, ...]:
        """Every severity a finding of this rule can have: a cache-busting rule's is lowered to
        info when it loses less than one cache block (loss_severity); PFX002 is an error when
        no input renders, a warning for an accidental raise and info for a deliberate one."""
        if self.code == "PFX002":
            return (Severity.INFO, Severity.WARNING, Severity.ERROR)
        if self.code[3] in "12345" and self.default_severity > Severity.INFO:
            return tuple(s for s in Severity if s <= self.default_severity)
        return (self.default_severity,)

    def page(self) -> str:
        """The rule's Markdown page, as the tests read it (each example's fence carries what it
        must find: ```jinja {"expect": "PFX101", "line": 1})."""
        return resources.files("prefixlint.rule_pages").joinpath(f"{self.code}.md").read_text("utf-8")

    def page_for_reading(self) -> str:
        """The page as `prefixlint rule` prints it: the examples' test metadata left out."""
        return _TEST_METADATA.sub(r"\1", self.page())


# The JSON after a fence's language: what the tests expect of the example, not for the reader.
_TEST_METADATA = re.compile(r"^(```\w+) \{.*\}$", re.MULTILINE)


def find_rule(key: str) -> Rule | None:
    """A rule by its code (`PFX101`, any case) or its name (`clock-in-prefix`, `clock_in_prefix`)."""
    found = RULES.get(key.upper())
    if found is not None:
        return found
    name = key.lower().replace("_", "-")
    return next((r for r in RULES.values() if r.name == name), None)


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

RULES: dict[str, Rule] = {
    r.code: r
    for r in [
        Rule("PFX001", "template-syntax-error", "the template does not parse", _E),
        Rule("PFX002", "template-render-error", "the template raises for the inputs tried", _W),
        Rule("PFX003", "python-syntax-error", "a Python source does not parse", _E),
        Rule("PFX004", "unused-suppression", "a suppression comment that suppresses nothing", _W),
        Rule("PFX101", "clock-in-prefix", "the current date or time ahead of static content", _E),
        Rule("PFX102", "id-in-prefix", "request, session, trace or user ids ahead of static content", _E),
        Rule("PFX103", "random-in-prefix", "randomness ahead of static content", _E),
        Rule(
            "PFX104", "environment-in-prefix", "per-machine or per-process values ahead of static content", _E
        ),
        Rule("PFX105", "request-input-in-prefix", "per-request user data ahead of static content", _W),
        Rule("PFX201", "unordered-serialization", "unordered iteration or JSON ahead of static content", _W),
        Rule(
            "PFX301",
            "unstable-whitespace",
            "whitespace that changes with the inputs ahead of static content",
            _W,
        ),
        Rule("PFX302", "token-boundary-merge", "the static prefix's last tokens merge with what follows", _I),
        Rule("PFX401", "history-rewrite", "turn N+1's prompt is not a token extension of turn N's", _E),
        Rule("PFX402", "system-relocated", "the system prompt or tools move with the conversation", _E),
        Rule(
            "PFX403", "generation-prompt-mismatch", "the generation prompt renders differently as history", _W
        ),
        Rule("PFX501", "prefix-diverges-early", "rendered variants diverge before static content ends", _E),
        Rule(
            "PFX502", "prefix-below-engine-minimum", "the cacheable prefix is below the engine's minimum", _I
        ),
        Rule(
            "PFX503",
            "unread-cache-breakpoint",
            "a cache_control breakpoint (in a request log or written in code) that can never be read",
            _W,
        ),
    ]
}


def resolve_selector(selector: str) -> list[str]:
    """Codes matched by a ruff-style prefix selector (`PFX1`, `PFX101`, `ALL`); empty if none."""
    selector = selector.strip().upper()
    if selector == "ALL":
        return sorted(RULES)
    return sorted(code for code in RULES if code.startswith(selector))


# No engine chosen: every token a block of its own.
_EVERY_TOKEN = Engine("every-token", 1, 0, 1, False)


def cost_unit(engine: Engine | None) -> int:
    """The smallest loss the engine can notice: one cache block (vLLM 16 tokens), one caching
    step above a minimum (OpenAI 128), else one token."""
    if engine is None:
        return 1
    step = engine.increment if engine.minimum_tokens else 1
    return max(engine.block_size, step, 1)


def aligned_loss(before: int, lost: int, engine: Engine, prompt_tokens: int | None = None) -> int:
    """What `engine` would serve from cache of `lost` tokens that follow a shared prefix of
    `before` tokens, had they been shared too: cacheable(before + lost) - cacheable(before), its
    whole blocks, minimum length, steps and the last-token recompute applied (`prompt_tokens`: the
    request's length, whose last token is recomputed, never served; None: more follows)."""
    whole = max(prompt_tokens if prompt_tokens is not None else before + lost + 1, before + lost)
    return max(0, engine.cacheable(before + lost, whole) - engine.cacheable(before, whole))


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
    (`prefixlint.controls.markup_suffix`): they cost nothing shareable. `engine` None: every token
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
    profile = engine if engine is not None else _EVERY_TOKEN
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


def engine_losses(common: int, lost: int, prompt_tokens: int, chosen: Engine | None = None) -> dict[str, int]:
    """aligned_loss for every engine (`chosen`: the run's engine profile, its `--block-size`)."""
    from prefixlint.engines import profiles

    return {name: aligned_loss(common, lost, e, prompt_tokens) for name, e in profiles(chosen).items()}
