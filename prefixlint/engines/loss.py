"""What an engine loses of tokens that are not shared: the arithmetic the severity rule
(prefixlint/engines/severity.py) and the findings' per-engine evidence rest on, in each engine's own units
(its blocks, minimum length, steps and the last-token recompute)."""

from __future__ import annotations

from prefixlint.engines.profiles import Engine, profiles

# No engine chosen: every token a block of its own.
EVERY_TOKEN = Engine("every-token", 1, 0, 1, False)


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


def engine_losses(common: int, lost: int, prompt_tokens: int, chosen: Engine | None = None) -> dict[str, int]:
    """aligned_loss for every engine (`chosen`: the run's engine profile, its `--block-size`)."""
    return {name: aligned_loss(common, lost, e, prompt_tokens) for name, e in profiles(chosen).items()}
