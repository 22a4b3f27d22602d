"""The multi-turn analysis (DESIGN.md: analyses → multi-turn; PFX401–PFX403).

An engine that served turn N holds the KV cache of turn N's prompt and of the reply it generated.
Turn N+1 reuses it only if its prompt starts with those exact tokens. For each conversation
scenario this renders every turn with the generation prompt, tokenizes all renders in one batch
and checks, for each step N → N+1:

1. turn N's tokens are a prefix of turn N+1's;
2. turn N + the reply as the model emitted it (its tokens, then the end-of-turn token) is too.

A break is classified by where it happens: the reasoning of the reply is gone from turn N+1
(PFX401), a block of turn N's history reappears further on in turn N+1 (PFX402), the break lies
in turn N's generation prompt or at the reply's boundary (PFX403), or an earlier turn is rendered
differently (PFX401). Switch-like template variables (`enable_thinking`, `preserve_thinking`) are
then tried to say which setting, if any, keeps the prefix stable: each is applied as a user applies
it, `--var` on every render (the caller's `--var`s win over every mode a scenario runs in, as
vLLM's `chat_template_kwargs` would), and shown only once the check, run again with it, no longer
finds the break.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from prefixlint.controls import control_strings
from prefixlint.engines import Engine, cacheable_per_engine
from prefixlint.engines.loss import engine_losses
from prefixlint.jinja.inputs import SYSTEM_PROMPT, TOOLS
from prefixlint.jinja.multiturn_scenarios import (
    TOOL_CALL_SHAPES,
    USERS,
    Scenario,
    Step,
    agentic,
    chat_scenarios,
)
from prefixlint.jinja.reasoning import ReasoningFormat, reasoning_format
from prefixlint.jinja.switches import as_vars, caller_switches, switch_values
from prefixlint.jinja.template import ChatTemplate, describe_error, error_line
from prefixlint.jinja.tokenized import TokenizedRender as _Render
from prefixlint.model import Diagnostic, Evidence, Severity
from prefixlint.rules import RULES
from prefixlint.severity import Cost, cost_severity
from prefixlint.tokens import EMBEDDED_NAME, LoadedTokenizer, common_prefix_len, encode_isolating

CONTEXT_CHARS = 20  # each side of the divergence: ~40 characters of context
MOVED_MIN_CHARS = 24  # a shorter run of history text reappearing later is not a moved block
# Point 8 of issue 14: where the text agrees and only the tokens differ, the embedded default
# tokenizer may split where the model's own does not.
STAND_IN_NOTE = (
    "the texts agree and only the token boundary differs, measured with the embedded stand-in "
    "tokenizer: pass `--tokenizer` with the model's own tokenizer.json to confirm"
)
_CAUSE_ORDER = {"PFX401": 0, "PFX402": 1, "PFX403": 2}


@dataclass
class MultiTurnResult:
    diagnostics: list[Diagnostic]
    reuse: (
        float | None
    )  # fraction of turn N's tokens that turn N+1 reuses (worst over scenarios); None if nothing rendered
    # The template line each diagnostic's divergence is printed by (a tokenizer_config.json reports
    # them all at one JSON line): what one cause, one finding compares.
    origin_lines: list[int] = field(default_factory=list)


@dataclass
class _Break:
    """One step N → N+1 whose prompt is not an extension of the one before."""

    code: str
    cause: str  # what a message says happened
    scenario: Scenario
    turn: int  # N
    a: _Render
    b: _Render
    char_a: int  # where turn N (or N + reply) diverges
    char_b: int  # the same place in turn N+1
    token_index: int
    reused: int
    total: int
    held_text: str = ""  # turn N + the generated reply, when that is what breaks (no template line)
    static_lost: int = 0  # turn N's prompt tokens turn N+1 recomputes
    reply_lost: int = 0  # generated tokens of the reply whose cache turn N+1 does not reuse

    @property
    def reuse(self) -> float:
        return self.reused / self.total if self.total else 1.0


class _Renderer:
    """Renders each distinct request once; a request the template raises for gives None."""

    def __init__(self, template: ChatTemplate) -> None:
        self.template = template
        self.cache: dict[str, _Render | None] = {}
        self.errors: dict[str, tuple[int, str]] = {}  # (template line, error) of a request that raised

    def render(
        self,
        messages: list[dict[str, Any]],
        tools: list | None,
        gen: bool = True,
        kwargs: dict[str, Any] | None = None,
    ) -> _Render | None:
        # The caller's `--var`s (the template's extra_kwargs) win over a scenario's mode.
        kwargs = {k: v for k, v in (kwargs or {}).items() if k not in self.template.extra_kwargs} or None
        key = self._key(messages, tools, gen, kwargs)
        if key not in self.cache:
            try:
                traced = self.template.render(
                    messages, tools=tools, add_generation_prompt=gen, **(kwargs or {})
                )
                self.cache[key] = _Render(traced)
            except Exception as exc:  # an untrusted template raises anything: PFX002 for the scenario
                self.cache[key] = None
                self.errors[key] = (error_line(exc), describe_error(exc))
        return self.cache[key]

    @staticmethod
    def _key(
        messages: list[dict[str, Any]], tools: list | None, gen: bool, kwargs: dict[str, Any] | None
    ) -> str:
        return json.dumps([messages, tools is not None, gen, kwargs or {}], sort_keys=True, default=str)

    def failure(self, scenario: Scenario) -> tuple[int, str, str] | None:
        """(line, error, where) of the first turn of `scenario` the template raises for, if any."""
        for k, render in enumerate(self.turns(scenario), 1):
            if render is None:
                mode = {k: v for k, v in scenario.kwargs if k not in self.template.extra_kwargs} or None
                line, error = self.errors[self._key(scenario.turn(k), scenario.tools, True, mode)]
                return line, error, f"in the multi-turn scenario «{scenario.label}» at turn {k}"
        return None

    def turns(self, scenario: Scenario) -> list[_Render | None]:
        mode = dict(scenario.kwargs) or None
        return [
            self.render(scenario.turn(k), scenario.tools, True, mode) for k in range(1, scenario.turns + 1)
        ]

    def texts(self, tools: list | None, kwargs: dict[str, Any] | None) -> Callable[[list, bool], str | None]:
        """render() as reasoning_format wants it: messages and add_generation_prompt → text."""

        def text(messages: list[dict[str, Any]], gen: bool) -> str | None:
            render = self.render(messages, tools, gen, kwargs)
            return render.text if render is not None else None

        return text


def _reasoning_modes(
    template: ChatTemplate, renderer: _Renderer, scenarios: list[Scenario], fmt: ReasoningFormat
) -> tuple[list[Scenario], ReasoningFormat]:
    """Reasoning replies match the mode tried (issue 14, point 4): where the generation prompt
    closes the think block (thinking off) the model writes no reasoning, so reasoning scenarios run
    with the switch that opens it (`enable_thinking=true`), or not at all. A switch the caller
    fixed with `--var` is never overridden. The format is read again in the mode found."""
    reasoning = {s.name for s in scenarios if any(step.reasoning for step in s.steps)}
    if not reasoning:
        return scenarios, fmt
    probe = next(s for s in scenarios if s.name in reasoning)
    mode = _thinking_mode(template, renderer, probe, fmt)
    if mode is None:  # thinking is off and no switch turns it on: no reasoning to keep
        return [s for s in scenarios if s.name not in reasoning], fmt
    if mode:
        fmt = reasoning_format(template, renderer.texts(probe.tools, mode), USERS[0]) or fmt
    out = []
    for scenario in scenarios:
        if scenario.name in reasoning:
            scenario = scenario.with_kwargs(mode) if mode else scenario
            scenario = scenario.with_reasoning_field(fmt.field) if fmt.field else scenario
        out.append(scenario)
    return out, fmt


def _thinking_mode(
    template: ChatTemplate, renderer: _Renderer, scenario: Scenario, fmt: ReasoningFormat
) -> dict[str, Any] | None:
    """{} when the generation prompt leaves thinking open; else the first setting of a switch the
    caller did not fix that opens it; None when none does."""
    first = renderer.render(scenario.turn(1), scenario.tools)
    if first is None or not fmt.closes(first.text):
        return {}
    for name in caller_switches(template):
        if name in template.extra_kwargs:
            continue
        for value in switch_values(template, name):
            render = renderer.render(scenario.turn(1), scenario.tools, True, {name: value})
            if render is not None and not fmt.closes(render.text):
                return {name: value}
    return None


def _reads(template: ChatTemplate) -> frozenset[str]:
    return template.traced.undeclared


def _scenarios(
    template: ChatTemplate, renderer: _Renderer, failures: list[tuple[int, str, str]] | None = None
) -> tuple[list[Scenario], ReasoningFormat | None]:
    """The scenarios that apply to this template, each rendering at least its first turn, and its
    reasoning format (None: not a reasoning model's template); an agent loop no tool-call shape
    renders goes to `failures` (with the first shape's error)."""
    source = template.traced.source
    reads_tools = "tools" in _reads(template)
    first = chat_scenarios(reads_tools=False, tools_required=False)[0]
    tools_required = (
        reads_tools
        and renderer.render(first.turn(1), None) is None
        and renderer.render(first.turn(1), TOOLS) is not None
    )
    fmt = reasoning_format(template, renderer.texts(TOOLS if tools_required else None, None), USERS[0])
    scenarios = chat_scenarios(reads_tools=reads_tools, tools_required=tools_required, reasoning=fmt)
    if reads_tools and "tool_calls" in source:
        # Reasoning in a tool call's message goes in the field the template reads (none: no such loop).
        for reasoning in (None, fmt) if fmt is not None and fmt.field else (None,):
            tried = [agentic(arguments_as, content, reasoning) for arguments_as, content in TOOL_CALL_SHAPES]
            working = next((c for c in tried if all(r is not None for r in renderer.turns(c))), None)
            if working is not None:
                scenarios.append(working)
            elif failures is not None:
                failed = renderer.failure(tried[0])
                if failed is not None:
                    failures.append(failed)
    if fmt is None:
        return scenarios, None
    return _reasoning_modes(template, renderer, scenarios, fmt)


def _special_strings(tokenizer: LoadedTokenizer, template: ChatTemplate) -> list[str]:
    """Texts that encode to one special token (longest first): end-of-turn candidates."""
    added = set(tokenizer.added_texts)
    added |= {v for v in template.special_tokens.values() if v and v in added}
    return sorted(added, key=len, reverse=True)


@dataclass
class _Emitted:
    """Turn N + the reply as the model generated it, to compare with turn N+1."""

    text: str  # what the model generated after turn N's prompt, up to the end-of-turn token
    eot: str  # the end-of-turn token's text ("" when none follows: the last token is not compared)
    ids: list[int] = field(default_factory=list)


def _generated_text(a: _Render, step: Step, fmt: ReasoningFormat | None) -> str | None:
    """The reply as a reasoning model writes it after turn N's prompt; None for a plain reply."""
    if not (step.reasoning and fmt is not None):
        return None
    if fmt.closes(a.text):
        return step.reply_text  # the prompt closed the think block: the model answers directly
    full = fmt.written(step.reasoning, step.reply_text)
    # The generation prompt may already open the think block ("<think>\n") or print its header.
    overlap = next((n for n in range(min(len(full), len(a.text)), 0, -1) if a.text.endswith(full[:n])), 0)
    return full[overlap:]


def _emitted(
    a: _Render, b: _Render, step: Step, specials: list[str], fmt: ReasoningFormat | None
) -> _Emitted | None:
    """What the model generated after turn N's prompt: for plain replies, and for reasoning replies
    turn N+1 keeps right after turn N's prompt, the text turn N+1 renders up to the end-of-turn
    token (the template's own rendering of the reply: how the model writes it); for reasoning
    replies turn N+1 drops, the think block and the answer as the format says."""
    if not step.reply_text:
        return None
    generated = _generated_text(a, step, fmt)
    at = b.text.find(step.reply_text, len(a.text))
    if (
        generated is not None
        and at >= 0
        and b.text.startswith(a.text)
        and step.reasoning in b.text[len(a.text) : at]
    ):
        generated = None  # turn N+1 keeps it where the model wrote it
    if generated is None and not b.text.startswith(a.text):
        return None
    if at < 0:
        return _Emitted(generated, "") if generated is not None else None
    end = at + len(step.reply_text)
    rest = b.text[end:]
    skipped = len(rest) - len(rest.lstrip())
    eot = next((special for special in specials if rest.startswith(special, skipped)), "")
    if generated is not None:
        return _Emitted(generated + (rest[:skipped] if eot else ""), eot)
    return _Emitted(b.text[len(a.text) : end + skipped] if eot else b.text[len(a.text) : end], eot)


def _has_word(render: _Render, index: int) -> bool:
    start, end = render.offsets[index]
    return any(c.isalnum() for c in render.text[start:end])


def _check(
    scenario: Scenario, k: int, a: _Render, b: _Render, emitted: _Emitted | None, eot_ids: dict[str, int]
) -> _Break | None:
    """The break between turn k and turn k+1, unclassified (code ""), or None if the prefix holds."""
    common = common_prefix_len(a.ids, b.ids)
    same_text = b.text.startswith(a.text)
    # Turn N's last token merging with markup or whitespace that follows is tolerated: engines
    # recompute the last prompt token anyway, and such merges are the tokenizer's more than the
    # template's. A merge into the reply's first word (a trailing space) is not.
    merged_last = same_text and common == len(a.ids) - 1 and not _has_word(b, common)
    reply = len(emitted.ids) + (1 if emitted.eot else 0) if emitted is not None else 0
    if common < len(a.ids) and not merged_last:
        char_a = a.offsets[common][0] if same_text else common_prefix_len(a.text, b.text)
        brk = _Break("", "", scenario, k, a, b, char_a, char_a, common, common, len(a.ids))
        brk.static_lost, brk.reply_lost = len(a.ids) - common, reply  # the reply came after the break
        return brk
    if emitted is None:
        return None
    held = a.ids + emitted.ids
    compared = len(held)
    if emitted.eot:
        held.append(eot_ids[emitted.eot])
        compared += 1
    elif emitted.ids:
        compared -= 1  # without a special end-of-turn token the last token may merge with what follows
    same = common_prefix_len(held, b.ids)
    expected = a.text + emitted.text
    if b.text.startswith(expected) and (same >= compared or merged_last):
        return None
    # Where what the engine holds (turn N + the generated reply) and turn N+1 part.
    if b.text.startswith(expected):
        char, code = (b.offsets[same][0] if same < len(b.offsets) else len(b.text)), "PFX403"
    else:
        char, code = common_prefix_len(expected, b.text), ""
    brk = _Break(code, "boundary" if code else "", scenario, k, a, b, char, char, same, same, compared)
    brk.held_text = expected + emitted.eot
    brk.static_lost = max(0, len(a.ids) - same)
    brk.reply_lost = max(0, compared - max(same, len(a.ids)))
    return brk


def _moved_block(a: _Render, b: _Render, char: int, end: int, step: Step) -> str | None:
    """The text of turn N's history at the divergence, if it reappears in turn N+1 after the reply."""
    block = a.text[char:end][:60]
    if len(block.strip()) < MOVED_MIN_CHARS:
        return None
    marker = step.reply_text or "Paris"
    after = b.text.find(marker, char)
    found = b.text.find(block, char + 1)
    return block if found >= 0 and after >= 0 and found > after else None


def _classify(brk: _Break, step: Step, renderer: _Renderer) -> _Break:
    if brk.code:
        return brk
    if step.reasoning and step.reasoning not in brk.b.text:
        brk.code, brk.cause = "PFX401", "reasoning"
        return brk
    if brk.held_text:  # turn N+1 renders the reply other than the model wrote it
        brk.code, brk.cause = "PFX401", "reply-re-rendered"
        return brk
    if brk.b.text.startswith(brk.a.text):  # same text, other tokens
        brk.code, brk.cause = "PFX403", "boundary"
        return brk
    history = renderer.render(
        brk.scenario.turn(brk.turn), brk.scenario.tools, False, dict(brk.scenario.kwargs) or None
    )
    gen_start = common_prefix_len(history.text, brk.a.text) if history else len(brk.a.text)
    # In what turn N renders after its last message (the generation prompt, a closing tag, text
    # after the loop): the opening of the reply differs from its rendering as history.
    last = str(brk.scenario.turn(brk.turn)[-1].get("content") or "")
    at = brk.a.text.rfind(last) if last else -1
    tail_start = min(gen_start, at + len(last)) if at >= 0 else gen_start
    if brk.char_a >= tail_start and _opens_reply(brk, tail_start, step):
        # Past the header turn N+1 opens the reply with: text the generation prompt adds there,
        # even one the template prints without add_generation_prompt ("Here are my reasoning
        # steps:"), which would otherwise look like a block that moves with the conversation.
        brk.code, brk.cause = "PFX403", "generation-prompt"
        return brk
    block = _moved_block(brk.a, brk.b, brk.char_a, gen_start, step)
    if block is not None:
        brk.code = "PFX402"
        if SYSTEM_PROMPT[:30] in block:
            brk.cause = "system"
        elif any(t["function"]["name"] in block for t in TOOLS):
            brk.cause = "tools"
        else:
            brk.cause = "block"
        return brk
    if brk.char_a >= tail_start:
        brk.code, brk.cause = "PFX403", "generation-prompt"
        return brk
    brk.code, brk.cause = "PFX401", "re-rendered"
    return brk


def _opens_reply(brk: _Break, tail_start: int, step: Step) -> bool:
    """Whether turn N, after its last message, starts with the header turn N+1 puts between that
    message and the reply (`<|begin_assistant|>\n`): what differs comes after it."""
    reply = step.reply_text or "Paris"
    at = brk.b.text.find(reply, tail_start)
    return at > tail_start and brk.a.text.startswith(brk.b.text[tail_start:at], tail_start)


def _pairs(
    renderer: _Renderer,
    scenarios: list[Scenario],
    fmt: ReasoningFormat | None,
    tokenizer: LoadedTokenizer,
    specials: list[str],
) -> list[tuple[Scenario, int, _Render, _Render, _Emitted | None]]:
    """Every renderable step of every scenario, tokenized in one batch."""
    pairs = []
    for scenario in scenarios:
        turns = renderer.turns(scenario)
        for k in range(1, scenario.turns):
            a, b = turns[k - 1], turns[k]
            if a is not None and b is not None:
                pairs.append((scenario, k, a, b, _emitted(a, b, scenario.steps[k - 1], specials, fmt)))
    renders = {id(r): r for _, _, a, b, _ in pairs for r in (a, b) if not r.ids and r.text}
    # The generated reply is tokenized after turn N's text, as the model saw it (a standalone
    # encoding would add SentencePiece's leading "▁"); standalone only if that merges with turn N.
    generated = {a.text + e.text: e.text for _, _, a, _, e in pairs if e is not None and e.text}
    texts = sorted({r.text for r in renders.values()} | set(generated) | set(generated.values()))
    if texts:
        encoded = dict(zip(texts, tokenizer.encode_many(texts), strict=True))
        for r in renders.values():
            r.ids, r.offsets = encoded[r.text].ids, encoded[r.text].offsets
        for _, _, a, _, e in pairs:
            if e is not None and e.text:
                together = encoded[a.text + e.text].ids
                clean = together[: len(a.ids)] == a.ids
                e.ids = list(together[len(a.ids) :] if clean else encoded[e.text].ids)
    return pairs


def _breaks(
    renderer: _Renderer,
    scenarios: list[Scenario],
    tokenizer: LoadedTokenizer,
    specials: list[str],
    fmt: ReasoningFormat | None,
) -> tuple[list[_Break], float | None]:
    pairs = _pairs(renderer, scenarios, fmt, tokenizer, specials)
    eot_ids = {s: tokenizer.token_to_id(s) for s in {e.eot for *_, e in pairs if e and e.eot}}
    breaks, reuse = [], []
    for scenario, k, a, b, emitted in pairs:
        brk = _check(scenario, k, a, b, emitted, eot_ids)
        if (
            brk is not None
            and tokenizer.name == EMBEDDED_NAME
            and _stand_in_artefact(brk, emitted, renderer, tokenizer)
        ):
            brk = None
        if brk is None:
            reuse.append(1.0)
            continue
        step = scenario.steps[k - 1]
        if emitted is None and step.reply_text:  # the break is in turn N: the whole reply is lost too
            brk.reply_lost = len(tokenizer.encode_many([step.reply_text])[0].ids)
        breaks.append(_classify(brk, scenario.steps[k - 1], renderer))
        reuse.append(brk.reuse)
    return breaks, (min(reuse) if reuse else None)


def _stand_in_artefact(
    brk: _Break, emitted: _Emitted | None, renderer: _Renderer, tokenizer: LoadedTokenizer
) -> bool:
    """A break where the texts agree and only the embedded stand-in's tokens differ, that is gone
    once the template's control strings are single tokens, as the model's own tokenizer holds
    them (issue 23, point 6): the stand-in's artefact, not the template's."""
    if not brk.b.text.startswith(brk.held_text or brk.a.text):
        return False
    controls = control_strings(brk.b.text, special=renderer.template.controls)  # `<|user|>` is rendered
    if not controls:
        return False
    texts = [brk.a.text, brk.b.text, *([emitted.text] if emitted is not None and emitted.text else [])]
    a, b, *reply = encode_isolating(tokenizer, texts, controls)
    a_iso = replace(brk.a, ids=a.ids, offsets=a.offsets)
    b_iso = replace(brk.b, ids=b.ids, offsets=b.offsets)
    held = None
    if emitted is not None:
        held = _Emitted(emitted.text, emitted.eot, reply[0].ids if reply else [])
    eot_ids = {}
    if held is not None and held.eot:
        alone = encode_isolating(tokenizer, [held.eot], controls)[0].ids
        eot_ids[held.eot] = alone[0] if len(alone) == 1 else tokenizer.token_to_id(held.eot)
    return _check(brk.scenario, brk.turn, a_iso, b_iso, held, eot_ids) is None


def _context(text: str, at: int) -> str:
    return text[max(0, at - CONTEXT_CHARS) : at] + "‖" + text[at : at + CONTEXT_CHARS]


def _shown(text: str) -> str:
    return text.replace("\n", "\\n")


def _origin(render: _Render, char: int) -> tuple[int, int]:
    if not render.text:
        return 1, 1
    origin = render.traced.origin_at(min(char, len(render.text) - 1))
    return origin.line, origin.column


_WHAT = {
    "reasoning": "the reasoning of turn {k}'s reply is dropped from turn {k1}'s prompt",
    "reply-re-rendered": "turn {k1} renders turn {k}'s reply other than the model wrote it",
    "re-rendered": "an earlier turn renders differently in turn {k1}'s prompt than in turn {k}'s",
    "system": "the system prompt moves with the conversation: it is rendered after the newest messages",
    "tools": "the tool list moves with the conversation: it is rendered next to the newest messages",
    "block": "a block of instructions moves with the conversation: it is rendered after the newest messages",
    "generation-prompt": "the end of turn {k} (its generation prompt and what follows its last message) "
    "renders differently once it is history in turn {k1}",
    "boundary": "the reply's boundary re-tokenizes: the tokens the model generated after turn {k}'s prompt "
    "are not the tokens turn {k1} renders there",
}

_HINTS = {
    "PFX401": "render every earlier turn exactly as it was rendered when it was the newest "
    "(keep reasoning in history, or never show it); make history independent of what comes after",
    "PFX402": "render the system prompt and the tools once, at the start of the prompt, never next to the "
    "last message",
    "PFX403": "make the generation prompt the exact text that opens an assistant turn in history, "
    "with nothing that merges with the reply's first token",
}


def _tokens(n: int) -> str:
    return f"{n:,} token" if n == 1 else f"{n:,} tokens"


def _cost(brk: _Break) -> str:
    reply = f" and {_tokens(brk.reply_lost)} the model generated" if brk.reply_lost else ""
    return f"each turn recomputes {_tokens(brk.static_lost)} of the prompt{reply}"


def _template_line(brk: _Break) -> int:
    """The template line a break is reported at: turn N+1's when turn N's side is the model's output."""
    return _origin(brk.b, brk.char_b)[0] if brk.held_text else _origin(brk.a, brk.char_a)[0]


def _severity(
    template: ChatTemplate, brk: _Break, engine: Engine | None, tokenizer: LoadedTokenizer
) -> tuple[Severity, str]:
    """What the break costs in the engine's blocks (prefixlint/severity.py): turn N's last token
    alone is recomputed by engines anyway."""
    text_a = brk.held_text or brk.a.text
    static_text = brk.a.text[brk.char_a :] if brk.static_lost else ""
    cost = Cost(
        brk.reused,
        brk.static_lost,
        len(brk.b.ids),
        (text_a[: brk.char_a], static_text, brk.b.text),
        reply=brk.reply_lost,
        last_token_only=True,
    )
    return cost_severity(RULES[brk.code].default_severity, cost, engine, tokenizer, template.controls)


def _diagnostic(
    template: ChatTemplate,
    group: list[_Break],
    setting: str,
    engine: Engine | None,
    tokenizer: LoadedTokenizer,
) -> Diagnostic:
    brk = group[0]  # the costliest, else the first scenario and step: the simplest to reproduce
    k, k1 = brk.turn, brk.turn + 1
    text_a = brk.held_text or brk.a.text
    line_b, col_b = _origin(brk.b, brk.char_b)
    context_a, context_b = _context(text_a, brk.char_a), _context(brk.b.text, brk.char_b)
    if brk.held_text:  # turn N's side is the model's own output: report turn N+1's line
        line, col = line_b, col_b
        side_a = f"turn {k} + the reply as generated has «{_shown(context_a)}»"
    else:
        line, col = _origin(brk.a, brk.char_a)
        side_a = f"turn {k} renders «{_shown(context_a)}» here"
    what = _WHAT[brk.cause].format(k=k, k1=k1)
    message = (
        f"{what} ({brk.scenario.label}): turn {k1} diverges at token {brk.token_index} (char {brk.char_a}); "
        f"{side_a}, turn {k1} «{_shown(context_b)}» from {template.where(line_b)}; "
        f"turn {k1} reuses {brk.reused:,} of {brk.total:,} tokens ({brk.reuse:.0%}); {_cost(brk)}"
    )
    others = len(group) - 1
    if others:
        worst = min(b.reuse for b in group)
        steps = "steps break" if others > 1 else "step breaks"
        message += f"; {others} more {steps} the same way (worst reuse {worst:.0%})"
    if setting:
        message += f"; {setting}"
    stand_in = tokenizer.name == EMBEDDED_NAME
    if stand_in and (brk.cause == "boundary" or brk.b.text.startswith(brk.held_text or brk.a.text)):
        message += f"; {STAND_IN_NOTE}"
    severity, note = _severity(template, brk, engine, tokenizer)
    if note:
        message += f"; {note}"
    evidence = Evidence(
        token_index=brk.token_index,
        char_offset=brk.char_a,
        cacheable_tokens=brk.reused,
        context_a=context_a,
        context_b=context_b,
        static_tokens_lost=brk.static_lost,
        engines=cacheable_per_engine(brk.reused, len(brk.b.ids), engine),
        inputs=f"{brk.scenario.name}, turn {k} -> {k1}",
        reply_tokens_lost=brk.reply_lost,
        engines_lost=engine_losses(brk.reused, brk.static_lost + brk.reply_lost, len(brk.b.ids), engine),
    )
    return Diagnostic(brk.code, template.span(line, col), message, severity, _HINTS[brk.code], evidence)


# A hint is checked again by the whole check (analyze.py gives this): the diagnostics of the check
# run with a setting as `--var`s, and the codes already found without it.
Recheck = Callable[[dict[str, Any]], list[Diagnostic]]
MAX_HINTS = 3  # settings named per finding


def _settings(
    template: ChatTemplate,
    rendered: MultiTurnRenders,
    breaks: list[_Break],
    tokenizer: LoadedTokenizer,
    recheck: Recheck | None,
    known: frozenset[str],
) -> dict[str, str]:
    """For each code, the settings verified to keep its broken scenarios stable, as a user applies
    them (issue 23, point 2): the multi-turn analysis is run again with the setting as `--var`s (the
    scenarios rebuilt under it, so a mode it turns off is off), then, through `recheck`, the whole
    check: the code is gone, the template raises nowhere it did not, no multi-turn break is left at
    warning or worse and no other new warning or error (a code not in `known`) appears. One switch
    at a time, then pairs."""
    switches = caller_switches(template)
    if not switches:
        return {}
    codes = {b.code for b in breaks}
    errors = {(line, error) for line, error, _ in rendered.failures}
    fixed: dict[str, list[str]] = {}
    rendering = []  # settings under which every scenario renders
    current = {(k, v) for k, v in template.extra_kwargs.items() if isinstance(v, bool | str)}

    def attempt(setting: dict[str, Any]) -> None:
        tried = template.with_variables(setting)
        again = render_multiturn(tried)
        if again.scenarios is None or any((line, error) not in errors for line, error, _ in again.failures):
            return  # the template raises with it: never offered
        rendering.append(setting)
        still, _ = _breaks(
            again.renderer, again.scenarios, tokenizer, _special_strings(tokenizer, tried), again.reasoning
        )
        gone = [c for c in sorted(codes - {b.code for b in still}) if len(fixed.get(c, [])) < MAX_HINTS]
        if gone and recheck is not None:
            after = recheck(setting)
            found = {d.code for d in after}
            # Not stable if a multi-turn break is still a warning or worse, or any new one appears.
            unstable = any(
                d.severity >= Severity.WARNING and (d.code.startswith("PFX4") or d.code not in known | codes)
                for d in after
            )
            gone = [] if unstable else [c for c in gone if c not in found]
        for code in gone:
            fixed.setdefault(code, []).append(f"`{as_vars(setting)}`")

    for name in switches:
        for value in switch_values(template, name):
            if (name, value) not in current:  # the caller's own `--var` is what was just checked
                attempt({name: value})
    if codes - set(fixed) and 1 < len(switches) <= 3:
        for i, first in enumerate(switches):
            for second in switches[i + 1 :]:
                for a in (True, False):
                    for b in (True, False):
                        attempt({first: a, second: b})
    tried = ", ".join(f"`{n}`" for n in switches)
    none = "no setting" if rendering else "no setting the template renders with"
    how = (
        "the check, run again with it, no longer finds the break"
        if recheck
        else "every turn renders and the break is gone"
    )
    return {
        code: (
            f"{' or '.join(fixed[code])} keeps the prefix stable (verified: {how})"
            if code in fixed
            else f"{none} of {tried} keeps it stable"
        )
        for code in codes
    }


@dataclass
class MultiTurnRenders:
    """The scenarios that apply and their turns, rendered (memoized by the renderer)."""

    renderer: _Renderer
    scenarios: list[Scenario] | None  # None: the template does not even compile
    # (template line, error, which scenario and turn) of each scenario the template raises for
    failures: list[tuple[int, str, str]] = field(default_factory=list)
    reasoning: ReasoningFormat | None = None  # how its model writes reasoning (None: it does not)


def render_multiturn(template: ChatTemplate) -> MultiTurnRenders:
    """Every render the analysis needs before it needs a tokenizer, in the order it would do them:
    done while a tokenizer may still be loading in a helper (prefixlint/tokenizer_process.py)."""
    renderer = _Renderer(template)
    failures: list[tuple[int, str, str]] = []
    try:
        scenarios, fmt = _scenarios(template, renderer, failures)
    except Exception:  # a template that does not even compile is reported elsewhere
        return MultiTurnRenders(renderer, None)
    for scenario in scenarios:
        failed = renderer.failure(scenario)
        if failed is not None:
            failures.append(failed)
    return MultiTurnRenders(renderer, scenarios, failures, fmt)


def analyze_multiturn(
    template: ChatTemplate,
    tokenizer: LoadedTokenizer,
    rendered: MultiTurnRenders | None = None,
    engine: Engine | None = None,
    *,
    hints: bool = True,
    recheck: Recheck | None = None,
    known: frozenset[str] = frozenset(),
) -> MultiTurnResult:
    """Check every scenario's turns extend one another; one diagnostic per cause found. `hints`:
    look for settings that keep the prefix stable, each verified by running the multi-turn
    analysis again with it as `--var`s and then `recheck` (the whole check, from analyze.py) when
    given; `known`: the codes the rest of the check found already."""
    rendered = rendered or render_multiturn(template)
    renderer, scenarios = rendered.renderer, rendered.scenarios
    if scenarios is None:
        return MultiTurnResult([], None)
    specials = _special_strings(tokenizer, template)
    breaks, reuse = _breaks(renderer, scenarios, tokenizer, specials, rendered.reasoning)
    if not breaks:
        return MultiTurnResult([], reuse)
    settings = _settings(template, rendered, breaks, tokenizer, recheck, known) if hints else {}
    groups: dict[str, list[_Break]] = {}
    for brk in breaks:
        groups.setdefault(brk.code, []).append(brk)
    for group in groups.values():  # one finding per code, shown by its costliest break
        group.sort(key=lambda b: -_severity(template, b, engine, tokenizer)[0])
    ordered = sorted(groups.items(), key=lambda kv: _CAUSE_ORDER[kv[0]])
    diagnostics = [
        _diagnostic(template, group, settings.get(code, ""), engine, tokenizer) for code, group in ordered
    ]
    return MultiTurnResult(diagnostics, reuse, [_template_line(group[0]) for _, group in ordered])
