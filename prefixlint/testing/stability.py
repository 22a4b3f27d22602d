"""`check_prefix_stable` / `assert_prefix_stable`: call the user's build in several worlds, compare
the prompts token by token, and name the call that made them differ."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from prefixlint.testing.building import build_in
from prefixlint.testing.compare import Divergence, Prompt, cause_at, diverge, load_renderer, prompt_of
from prefixlint.testing.record import Call
from prefixlint.testing.worlds import (
    BASE_WORLD,
    KIND_LABELS,
    KINDS,
    REPLAY_WORLD,
    VARIED_WORLDS,
    World,
)

UNVARIED = "changed without a varied cause"


@dataclass(frozen=True)
class Cause:
    """What made the prompts differ: the varied kind (None: nothing under `vary`), the call
    (as the user wrote it) and the user's source line that made it, when found."""

    kind: str | None
    call: str | None
    path: str | None
    line: int | None
    world: str  # the world whose prompt differs first: "a second later", "the same world again", …
    differs_in: tuple[str, ...]  # every world whose prompt differs from the base world's
    values: tuple[str, str] | None = None  # what the call returned in the base world and in that one

    @property
    def where(self) -> str | None:
        return f"{self.path}:{self.line}" if self.path else None


@dataclass(frozen=True)
class Stability:
    """The outcome; `message` says it in one paragraph (the AssertionError's text on failure)."""

    stable: bool
    engine: str
    tokens: int
    token_index: int | None  # the first divergent token; None when every world built the same prompt
    static_tokens_lost: int
    engine_tokens_lost: int  # of those, what the engine really recomputes (its blocks and minimums)
    cause: Cause | None
    message: str


class PrefixUnstableError(AssertionError):
    """The prompt's prefix changes between calls; `.result` holds the Stability."""

    def __init__(self, result: Stability) -> None:
        super().__init__(result.message)
        self.result = result


PrefixUnstableError.__module__ = "prefixlint.testing"  # where users import it from, as pytest shows it


def _validated(vary: Iterable[str], engine: str) -> tuple[str, ...]:
    from prefixlint.engines import load_engines

    kinds = (vary,) if isinstance(vary, str) else tuple(vary)
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"vary: unknown {unknown[0]!r}; choose from {', '.join(KINDS)}")
    if engine not in load_engines():
        raise ValueError(f"engine: unknown {engine!r}; known: {', '.join(sorted(load_engines()))}")
    return tuple(k for k in KINDS if k in kinds)


def _prompt_in(
    build: Callable[[], Any], world: World, vary: tuple[str, ...], renderer: Any
) -> tuple[Prompt, list[Call]]:
    """The prompt built in `world`, and the calls that built it (the chat template's clock reads
    last: its `strftime_now` reads the world's clock too)."""
    value, calls = build_in(build, world, vary)
    prompt = prompt_of(value, renderer, world.moment_now() if "clock" in vary else None)
    return prompt, calls + list(prompt.template_calls)


def _shown_path(path: str) -> str:
    """Relative to the working directory (the project, under pytest) when inside it."""
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive (Windows)
        return path
    return path if rel.startswith(os.pardir) else rel


def _short(value: Any) -> str:
    text = str(value)
    return text if len(text) <= 40 else text[:37] + "…"


def _cause(
    call: Call | None,
    kind: str | None,
    world: World,
    base_calls: list[Call],
    vary: tuple[str, ...],
    differs_in: tuple[str, ...],
) -> Cause:
    if call is not None and call.kind not in vary:
        kind = None  # a clock, id, … not varied here that changed all the same (not frozen)
    path, line = call.site if call is not None and call.site else (None, None)
    values = None
    if call is not None and world is not REPLAY_WORLD:
        before = next((c for c in base_calls if c.name == call.name and c.site == call.site), None)
        if before is not None and before.value is not None and call.value is not None:
            values = (_short(before.value), _short(call.value))
    return Cause(
        kind=kind,
        call=call.name if call else None,
        path=_shown_path(path) if path else None,
        line=line,
        world=world.label,
        differs_in=differs_in,
        values=values,
    )


def _isolate(
    build: Callable[[], Any],
    world: World,
    vary: tuple[str, ...],
    base: Prompt,
    found: Divergence,
    renderer: Any,
    tokenizer: Any,
) -> tuple[str | None, Call | None]:
    """When no recorded value's text is where the prompts differ (a date printed in a format not
    recognised, `random.random()`): vary one kind at a time; the kind that alone reproduces the
    difference at the same character is the cause, its first recorded call the likely site."""
    for kind in vary:
        prompt, calls = _prompt_in(build, world.narrowed(kind), vary, renderer)
        alone = diverge(base, prompt, tokenizer)
        if alone is not None and alone.char == found.char:
            call = next((c for c in calls if c.kind == kind and c.site is not None), None)
            return kind, call
    return None, None


def _message(
    cause: Cause, found: Divergence, engine: str, engine_lost: int, threshold: int, stable: bool
) -> str:
    what = cause.call or (KIND_LABELS[cause.kind] if cause.kind else "something")
    where = cause.where or "(call site not found)"
    headline = (
        f"{where} {what} → token {found.token:,} of {found.tokens:,}; "
        f"{engine_lost:,} static tokens recomputed per request on {engine}"
    )
    if cause.kind is None and cause.world == REPLAY_WORLD.label:
        why = f"{UNVARIED} (it differs when built twice in the same world: network, files, a counter?)"
    elif cause.kind is None:
        why = f"{UNVARIED} (it differs {cause.world}, but no one varied kind alone changes it there)"
    else:
        why = f"{KIND_LABELS[cause.kind]} (the prompt differs {', '.join(cause.differs_in)})"
        if cause.call is None:
            why += "; its call site was not found"
    if cause.values:
        why += f"; {cause.call} returned {cause.values[0]!r}, then {cause.values[1]!r}"
    lines = [
        headline,
        f"  cause: {why}",
        f"  first divergent token {found.token:,}: {found.token_a!r} vs {found.token_b!r}",
        f"  {found.static_lost:,} static tokens follow it before the last message; the test fails at "
        f"{threshold:,} or more (min_static_tokens, else one {engine} cache unit)",
    ]
    if not stable and cause.kind == "hash-seed":
        lines.append("  fix: sort it before it is printed (`sorted(names)`, tools `sorted(..., key=name)`)")
    elif not stable:
        lines.append("  fix: move the varying value after the static content (e.g. into the last message)")
    return "\n".join(lines)


def check_prefix_stable(
    build: Callable[[], Any],
    *,
    vary: Iterable[str] = KINDS,
    template: str | None = None,
    tokenizer: str | None = None,
    engine: str = "vllm",
    min_static_tokens: int | None = None,
    processes: int = 1,
) -> Stability:
    """Call `build` in a base world, once more in the same world, and in worlds where the clock,
    ids, randomness and the environment answer differently; say whether its prompt keeps a
    cacheable prefix, and if not, why. Never raises for an unstable prompt (see
    `assert_prefix_stable`); raises what `build` raises, and ValueError/TypeError for bad input.

    `processes` > 1: when every world of this process builds the same prompt, build it also in that
    many fresh interpreters, each with its own PYTHONHASHSEED (`build` must then be a module-level
    function: each imports it), so that set order varies as it does between server processes."""
    from prefixlint.engines import load_engines
    from prefixlint.engines.loss import cost_unit, engine_losses

    kinds = _validated(vary, engine)
    profile = load_engines()[engine]
    renderer, loaded = load_renderer(template, tokenizer)
    threshold = min_static_tokens if min_static_tokens is not None else cost_unit(profile)
    base, base_calls = _prompt_in(build, BASE_WORLD, kinds, renderer)
    worlds = (REPLAY_WORLD, *(VARIED_WORLDS if kinds else ()))
    earliest: tuple[Divergence, World, str, list[Call]] | None = None
    differs: list[str] = []
    for world in worlds:
        prompt, calls = _prompt_in(build, world, kinds, renderer)
        found = diverge(base, prompt, loaded)
        if found is not None:
            differs.append(world.label)
            if earliest is None or found.char < earliest[0].char:
                earliest = (found, world, prompt.text, calls)
    if not isinstance(processes, int) or processes < 1:
        raise ValueError(f"processes: a number of fresh interpreters, 1 or more, not {processes!r}")
    if earliest is None and processes > 1:
        earliest = _across_processes(build, processes, kinds, renderer, loaded)
        if earliest is not None:
            differs = [earliest[1].label]
    if earliest is None:
        tokens = len(loaded.encode_many([base.text])[0].ids)
        message = f"the prompt ({tokens:,} tokens) is the same in every world"
        return Stability(True, engine, tokens, None, 0, 0, None, message)
    found, world, text, calls = earliest
    call = cause_at(found.char, text, calls) or cause_at(found.char, base.text, base_calls)
    kind = call.kind if call is not None else None
    if world.label.startswith(_PROCESS_LABEL):
        call, kind = None, "hash-seed"  # no call is recorded across processes
    elif call is None and world is not REPLAY_WORLD:
        kind, call = _isolate(build, world, kinds, base, found, renderer, loaded)
    if world is REPLAY_WORLD:
        kind = None
    cause = _cause(call, kind, world, base_calls, kinds, tuple(differs))
    # What the engine would have served from cache past the divergence, at most the static tokens.
    engine_lost = min(found.static_lost, engine_losses(found.token, found.static_lost, found.tokens)[engine])
    stable = found.static_lost < threshold
    message = _message(cause, found, engine, engine_lost, threshold, stable)
    return Stability(
        stable, engine, found.tokens, found.token, found.static_lost, engine_lost, cause, message
    )


_PROCESS_LABEL = "in another process"


def _across_processes(
    build: Callable[[], Any], processes: int, kinds: tuple[str, ...], renderer: Any, loaded: Any
) -> tuple[Divergence, World, str, list[Call]] | None:
    """The earliest divergence between the prompts `build` gives in fresh interpreters with
    different hash seeds (the first one's prompt the base), as a world of its own; None if none."""
    from prefixlint.testing.processes import build_in_processes

    built = [
        (seed, prompt_of(value, renderer)) for seed, value in build_in_processes(build, processes, kinds)
    ]
    (first_seed, first), earliest = built[0], None
    for seed, prompt in built[1:]:
        found = diverge(first, prompt, loaded)
        if found is not None and (earliest is None or found.char < earliest[0].char):
            label = f"{_PROCESS_LABEL} (PYTHONHASHSEED={seed}, not {first_seed})"
            earliest = (found, World(label, 0, BASE_WORLD.moment), prompt.text, [])
    return earliest


def assert_prefix_stable(
    build: Callable[[], Any],
    *,
    vary: Iterable[str] = KINDS,
    template: str | None = None,
    tokenizer: str | None = None,
    engine: str = "vllm",
    min_static_tokens: int | None = None,
    processes: int = 1,
) -> Stability:
    """`check_prefix_stable`, raising PrefixUnstableError (an AssertionError) when the prompt is
    not stable; returns the Stability otherwise."""
    __tracebackhide__ = True  # pytest shows the user's test line, not prefixlint's
    result = check_prefix_stable(
        build,
        vary=vary,
        template=template,
        tokenizer=tokenizer,
        engine=engine,
        min_static_tokens=min_static_tokens,
        processes=processes,
    )
    if not result.stable:
        raise PrefixUnstableError(result)
    return result
