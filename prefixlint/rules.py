"""The rule catalog (contract: codes and names never change, only new ones are added).

Each rule's page lives in `rules/<CODE>.md` (shipped as `prefixlint.rule_pages`): what it finds,
why it busts the cache, and a bad and a good example that the tests run.
"""

from __future__ import annotations

from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING

from prefixlint.model import Severity

if TYPE_CHECKING:
    from prefixlint.engines import Engine


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str
    default_severity: Severity

    @property
    def severities(self) -> tuple[Severity, ...]:
        """Every severity a finding of this rule can have: a cache-busting rule's is lowered to
        info when it loses less than one cache block (severity_from_cost); PFX002 is an error when
        no input renders, a warning for an accidental raise and info for a deliberate one."""
        if self.code == "PFX002":
            return (Severity.INFO, Severity.WARNING, Severity.ERROR)
        if self.code[3] in "12345" and self.default_severity > Severity.INFO:
            return tuple(s for s in Severity if s <= self.default_severity)
        return (self.default_severity,)

    def page(self) -> str:
        """The rule's Markdown page."""
        return resources.files("prefixlint.rule_pages").joinpath(f"{self.code}.md").read_text("utf-8")


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
    ]
}


def resolve_selector(selector: str) -> list[str]:
    """Codes matched by a ruff-style prefix selector (`PFX1`, `PFX101`, `ALL`); empty if none."""
    selector = selector.strip().upper()
    if selector == "ALL":
        return sorted(RULES)
    return sorted(code for code in RULES if code.startswith(selector))


def cost_unit(engine: Engine | None) -> int:
    """The smallest loss the engine can notice: one cache block (vLLM 16 tokens), one caching
    step above a minimum (OpenAI 128), else one token."""
    if engine is None:
        return 1
    step = engine.increment if engine.minimum_tokens else 1
    return max(engine.block_size, step, 1)


def severity_from_cost(
    severity: Severity,
    static_lost: int,
    reply_lost: int,
    engine: Engine | None,
    last_token_only: bool = False,
) -> Severity:
    """One rule for every code (issue 14): a loss of less than one cache block of the engine, or
    only the prompt's last token (recomputed by engines anyway), is info; a loss of generated
    tokens only is at most a warning; a prompt-prefix loss of a block or more keeps `severity`."""
    unit = cost_unit(engine)
    prompt_counts = static_lost >= unit and not (last_token_only and static_lost <= 1)
    if prompt_counts:
        return severity
    if reply_lost >= unit:
        return min(severity, Severity.WARNING)
    return Severity.INFO


def engine_losses(common: int, lost: int, prompt_tokens: int, chosen: Engine | None = None) -> dict[str, int]:
    """What each engine really loses of `lost` tokens after a shared prefix of `common` tokens:
    what it would serve from cache had they matched, less what it serves now (whole blocks,
    minimums, 128-token steps and the last-token recompute included); `chosen`: the run's engine
    profile (its `--block-size`)."""
    from prefixlint.engines import profiles

    whole = max(prompt_tokens, common + lost)
    return {
        name: max(0, e.cacheable(common + lost, whole) - e.cacheable(common, whole))
        for name, e in profiles(chosen).items()
    }
