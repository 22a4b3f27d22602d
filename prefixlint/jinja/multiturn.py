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
then tried to say which setting, if any, keeps the prefix stable.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from prefixlint.engines import Engine, cacheable_per_engine
from prefixlint.jinja.environment import REASONING_FIELDS
from prefixlint.jinja.inputs import SYSTEM_PROMPT, TOOLS
from prefixlint.jinja.multiturn_scenarios import (
    TOOL_CALL_SHAPES,
    Scenario,
    Step,
    agentic,
    chat_scenarios,
    mentions_reasoning,
)
from prefixlint.jinja.severity import Cost, cost_severity
from prefixlint.jinja.template import ChatTemplate, describe_error, error_line
from prefixlint.jinja.tokenized import TokenizedRender as _Render
from prefixlint.model import Diagnostic, Evidence
from prefixlint.rules import RULES, engine_losses
from prefixlint.tokens import EMBEDDED_NAME, LoadedTokenizer, common_prefix_len

CONTEXT_CHARS = 20  # each side of the divergence: ~40 characters of context
MOVED_MIN_CHARS = 24  # a shorter run of history text reappearing later is not a moved block
_SWITCH = re.compile(r"think|reason", re.IGNORECASE)
# Message fields a template may `set` at top level: not switches.
_MESSAGE_FIELDS = frozenset({*REASONING_FIELDS, "content"})
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
                key = self._key(scenario.turn(k), scenario.tools, True, _with_mode(scenario, None))
                line, error = self.errors[key]
                return line, error, f"in the multi-turn scenario «{scenario.label}» at turn {k}"
        return None

    def turns(self, scenario: Scenario, kwargs: dict[str, Any] | None = None) -> list[_Render | None]:
        merged = _with_mode(scenario, kwargs)
        return [
            self.render(scenario.turn(k), scenario.tools, True, merged) for k in range(1, scenario.turns + 1)
        ]


def _with_mode(scenario: Scenario, kwargs: dict[str, Any] | None) -> dict[str, Any] | None:
    """The scenario's own mode variables, then the setting tried (which wins)."""
    return {**dict(scenario.kwargs), **(kwargs or {})} or None


def _closes_think(render: _Render | None) -> bool:
    return render is not None and render.text.rstrip().endswith("</think>")


def _reasoning_modes(
    template: ChatTemplate, renderer: _Renderer, scenarios: list[Scenario]
) -> list[Scenario]:
    """Reasoning replies match the mode tried (issue 14, point 4): where the generation prompt
    closes the think block (thinking off) the model writes no reasoning, so reasoning scenarios run
    with the switch that opens it (`enable_thinking=True`), or not at all. A reply's reasoning in a
    field goes in the field the template reads (`reasoning_content`, else `reasoning`)."""
    out = []
    mode: dict[str, Any] | None = {}
    for scenario in scenarios:
        if not any(step.reasoning for step in scenario.steps):
            out.append(scenario)
            continue
        if mode == {} and _closes_think(renderer.render(scenario.turn(1), scenario.tools)):
            mode = next(
                (
                    {name: True}
                    for name in _switches(template)
                    if renderer.render(scenario.turn(1), scenario.tools, True, {name: True}) is not None
                    and not _closes_think(
                        renderer.render(scenario.turn(1), scenario.tools, True, {name: True})
                    )
                ),
                None,
            )
        if mode is None:
            continue  # thinking is off and no switch turns it on: no reasoning to keep
        if mode:
            scenario = scenario.with_kwargs(mode)
        if any("reasoning_content" in step.reply for step in scenario.steps):
            scenario = _reasoning_field(renderer, scenario)
        out.append(scenario)
    return out


def _reasoning_field(renderer: _Renderer, scenario: Scenario) -> Scenario:
    """`reasoning_content`, unless only `reasoning` keeps the reasoning in turn 2's history."""
    reasoning = next(step.reasoning for step in scenario.steps if step.reasoning)

    def kept(candidate: Scenario) -> bool:
        render = renderer.turns(candidate)[1] if candidate.turns > 1 else None
        return render is not None and reasoning in render.text

    if kept(scenario):
        return scenario
    other = scenario.with_reasoning_field("reasoning")
    return other if kept(other) else scenario


def _reads(template: ChatTemplate) -> frozenset[str]:
    return template.traced.undeclared


def _scenarios(
    template: ChatTemplate, renderer: _Renderer, failures: list[tuple[int, str, str]] | None = None
) -> list[Scenario]:
    """The scenarios that apply to this template, each rendering at least its first turn; an agent
    loop no tool-call shape renders goes to `failures` (with the first shape's error)."""
    source = template.traced.source
    reads_tools = "tools" in _reads(template)
    first = chat_scenarios(reads_tools=False, tools_required=False, reads_reasoning=False)[0]
    tools_required = (
        reads_tools
        and renderer.render(first.turn(1), None) is None
        and renderer.render(first.turn(1), TOOLS) is not None
    )
    scenarios = chat_scenarios(
        reads_tools=reads_tools, tools_required=tools_required, reads_reasoning=mentions_reasoning(source)
    )
    if reads_tools and "tool_calls" in source:
        for reasoning in (False, True) if mentions_reasoning(source) else (False,):
            tried = [agentic(arguments_as, content, reasoning) for arguments_as, content in TOOL_CALL_SHAPES]
            working = next((c for c in tried if all(r is not None for r in renderer.turns(c))), None)
            if working is not None:
                scenarios.append(working)
            elif failures is not None:
                failed = renderer.failure(tried[0])
                if failed is not None:
                    failures.append(failed)
    return _reasoning_modes(template, renderer, scenarios) if mentions_reasoning(source) else scenarios


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


def _generated_text(a: _Render, step: Step, thinking: bool) -> str | None:
    """The reply as a reasoning model writes it after turn N's prompt; None for a plain reply."""
    if not (step.reasoning and thinking):
        return None
    if a.text.rstrip().endswith("</think>"):
        return step.reply_text  # the prompt closed the think block: the model answers directly
    full = f"<think>\n{step.reasoning}\n</think>\n\n{step.reply_text}"
    # The generation prompt may already open the think block ("<think>\n").
    overlap = next((n for n in range(min(len(full), len(a.text)), 0, -1) if a.text.endswith(full[:n])), 0)
    return full[overlap:]


def _emitted(a: _Render, b: _Render, step: Step, specials: list[str], thinking: bool) -> _Emitted | None:
    """What the model generated after turn N's prompt: for plain replies, the text turn N+1 renders
    up to the end-of-turn token; for reasoning replies, the think block and the answer."""
    if not step.reply_text:
        return None
    generated = _generated_text(a, step, thinking)
    if generated is None and not b.text.startswith(a.text):
        return None
    at = b.text.find(step.reply_text, len(a.text))
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


def _classify(brk: _Break, step: Step, renderer: _Renderer, kwargs: dict[str, Any] | None) -> _Break:
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
        brk.scenario.turn(brk.turn), brk.scenario.tools, False, _with_mode(brk.scenario, kwargs)
    )
    gen_start = common_prefix_len(history.text, brk.a.text) if history else len(brk.a.text)
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
    # In what turn N renders after its last message (the generation prompt, a closing tag, text
    # after the loop): the opening of the reply differs from its rendering as history.
    last = str(brk.scenario.turn(brk.turn)[-1].get("content") or "")
    at = brk.a.text.rfind(last) if last else -1
    tail_start = min(gen_start, at + len(last)) if at >= 0 else gen_start
    if brk.char_a >= tail_start:
        brk.code, brk.cause = "PFX403", "generation-prompt"
        return brk
    brk.code, brk.cause = "PFX401", "re-rendered"
    return brk


def _pairs(
    renderer: _Renderer,
    scenarios: list[Scenario],
    kwargs: dict[str, Any] | None,
    tokenizer: LoadedTokenizer,
    specials: list[str],
) -> list[tuple[Scenario, int, _Render, _Render, _Emitted | None]]:
    """Every renderable step of every scenario, tokenized in one batch."""
    thinking = "</think>" in renderer.template.traced.source  # a reasoning model's template
    pairs = []
    for scenario in scenarios:
        turns = renderer.turns(scenario, kwargs)
        for k in range(1, scenario.turns):
            a, b = turns[k - 1], turns[k]
            if a is not None and b is not None:
                pairs.append((scenario, k, a, b, _emitted(a, b, scenario.steps[k - 1], specials, thinking)))
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
    kwargs: dict[str, Any] | None = None,
) -> tuple[list[_Break], float | None]:
    pairs = _pairs(renderer, scenarios, kwargs, tokenizer, specials)
    eot_ids = {s: tokenizer.token_to_id(s) for s in {e.eot for *_, e in pairs if e and e.eot}}
    breaks, reuse = [], []
    for scenario, k, a, b, emitted in pairs:
        brk = _check(scenario, k, a, b, emitted, eot_ids)
        if brk is None:
            reuse.append(1.0)
            continue
        step = scenario.steps[k - 1]
        if emitted is None and step.reply_text:  # the break is in turn N: the whole reply is lost too
            brk.reply_lost = len(tokenizer.encode_many([step.reply_text])[0].ids)
        breaks.append(_classify(brk, scenario.steps[k - 1], renderer, kwargs))
        reuse.append(brk.reuse)
    return breaks, (min(reuse) if reuse else None)


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


def _diagnostic(
    template: ChatTemplate,
    group: list[_Break],
    setting: str,
    engine: Engine | None,
    tokenizer: LoadedTokenizer,
) -> Diagnostic:
    brk = group[0]  # the first scenario and step it shows in: the simplest to reproduce
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
    # What it costs in the engine's blocks (rules.loss_severity): turn N's last token alone is
    # recomputed by engines anyway.
    static_text = brk.a.text[brk.char_a :] if brk.static_lost else ""
    cost = Cost(
        brk.reused,
        brk.static_lost,
        len(brk.b.ids),
        (text_a[: brk.char_a], static_text, brk.b.text),
        reply=brk.reply_lost,
        last_token_only=True,
    )
    severity, note = cost_severity(
        RULES[brk.code].default_severity, cost, engine, tokenizer, template.controls
    )
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


_SET = re.compile(r"\{%-?\s*set\s+([A-Za-z_]\w*(?:\s*,\s*[A-Za-z_]\w*)*)\s*=")


def _switches(template: ChatTemplate) -> list[str]:
    """Switch-like variables the template reads from its context: never one it `{% set %}`s
    itself (`keep_reasoning`, `include_thinking`), which no caller can pass."""
    own = {n.strip() for m in _SET.finditer(template.traced.source) for n in m.group(1).split(",")}
    return sorted(
        v
        for v in template.external_variables
        if _SWITCH.search(v) and v not in _MESSAGE_FIELDS and v not in own
    )


def _settings(
    template: ChatTemplate,
    renderer: _Renderer,
    breaks: list[_Break],
    tokenizer: LoadedTokenizer,
    specials: list[str],
) -> dict[str, str]:
    """For each code, the settings verified to keep its broken scenarios stable: with a setting,
    every turn of every scenario the code broke renders, and no step breaks that way any more. A
    setting that makes the template raise is never offered; one switch at a time, then pairs."""
    switches = _switches(template)
    if not switches:
        return {}
    scenarios = list({b.scenario.name: b.scenario for b in breaks}.values())
    codes = {b.code for b in breaks}
    fixed: dict[str, list[str]] = {}
    rendering = set()  # settings under which every turn renders

    def attempt(setting: dict[str, Any]) -> None:
        if any(r is None for scenario in scenarios for r in renderer.turns(scenario, setting)):
            return  # the template raises with it: never offered
        rendering.add(tuple(setting.items()))
        still, _ = _breaks(renderer, scenarios, tokenizer, specials, setting)
        shown = " and ".join(f"`{n}={v}`" for n, v in setting.items())
        for code in codes - {b.code for b in still}:
            fixed.setdefault(code, []).append(shown)

    singles = [
        {name: value}
        for name in switches
        for value in (True, False)
        if template.extra_kwargs.get(name) is not value
    ]
    for setting in singles:
        attempt(setting)
    if codes - set(fixed) and 1 < len(switches) <= 4:
        for i, first in enumerate(switches):
            for second in switches[i + 1 :]:
                for a in (True, False):
                    for b in (True, False):
                        attempt({first: a, second: b})
    tried = ", ".join(f"`{n}`" for n in switches)
    none = "no setting" if rendering else "no setting the template renders with"
    return {
        code: (
            f"{' or '.join(fixed[code][:3])} keeps the prefix stable (verified: every turn renders and "
            "the break is gone)"
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


def render_multiturn(template: ChatTemplate) -> MultiTurnRenders:
    """Every render the analysis needs before it needs a tokenizer, in the order it would do them:
    done while a tokenizer may still be loading in a helper (prefixlint/tokenizer_process.py)."""
    renderer = _Renderer(template)
    failures: list[tuple[int, str, str]] = []
    try:
        scenarios = _scenarios(template, renderer, failures)
    except Exception:  # a template that does not even compile is reported elsewhere
        return MultiTurnRenders(renderer, None)
    for scenario in scenarios:
        failed = renderer.failure(scenario)
        if failed is not None:
            failures.append(failed)
    return MultiTurnRenders(renderer, scenarios, failures)


def analyze_multiturn(
    template: ChatTemplate,
    tokenizer: LoadedTokenizer,
    rendered: MultiTurnRenders | None = None,
    engine: Engine | None = None,
) -> MultiTurnResult:
    """Check every scenario's turns extend one another; one diagnostic per cause found."""
    rendered = rendered or render_multiturn(template)
    renderer, scenarios = rendered.renderer, rendered.scenarios
    if scenarios is None:
        return MultiTurnResult([], None)
    specials = _special_strings(tokenizer, template)
    breaks, reuse = _breaks(renderer, scenarios, tokenizer, specials)
    if not breaks:
        return MultiTurnResult([], reuse)
    settings = _settings(template, renderer, breaks, tokenizer, specials)
    groups: dict[str, list[_Break]] = {}
    for brk in breaks:
        groups.setdefault(brk.code, []).append(brk)
    ordered = sorted(groups.items(), key=lambda kv: _CAUSE_ORDER[kv[0]])
    diagnostics = [
        _diagnostic(template, group, settings.get(code, ""), engine, tokenizer) for code, group in ordered
    ]
    return MultiTurnResult(diagnostics, reuse, [_template_line(group[0]) for _, group in ordered])
