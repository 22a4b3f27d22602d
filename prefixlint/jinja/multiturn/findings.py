"""PFX401-PFX403 from the comparison across turns: one finding per code, shown by its costliest
break, with the divergence's context on both sides, the template line that prints it, what each
turn recomputes, the engine's severity, and the settings verified to keep the prefix stable.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prefixlint.core.findings import Diagnostic, Evidence, Severity
from prefixlint.core.rules import RULES
from prefixlint.engines import Engine, cacheable_per_engine
from prefixlint.engines.loss import engine_losses
from prefixlint.engines.severity import Cost, cost_severity
from prefixlint.jinja.multiturn.compare import Break, find_breaks, special_strings
from prefixlint.jinja.multiturn.hints import Recheck, verified_settings
from prefixlint.jinja.multiturn.render import MultiTurnRenders, render_multiturn
from prefixlint.jinja.template import ChatTemplate
from prefixlint.jinja.tokenized import TokenizedRender as _Render
from prefixlint.models.tokens import EMBEDDED_NAME, LoadedTokenizer

CONTEXT_CHARS = 20  # each side of the divergence: ~40 characters of context


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


def _cost(brk: Break) -> str:
    reply = f" and {_tokens(brk.reply_lost)} the model generated" if brk.reply_lost else ""
    return f"each turn recomputes {_tokens(brk.static_lost)} of the prompt{reply}"


def _template_line(brk: Break) -> int:
    """The template line a break is reported at: turn N+1's when turn N's side is the model's output."""
    return _origin(brk.b, brk.char_b)[0] if brk.held_text else _origin(brk.a, brk.char_a)[0]


def _severity(
    template: ChatTemplate, brk: Break, engine: Engine | None, tokenizer: LoadedTokenizer
) -> tuple[Severity, str]:
    """What the break costs in the engine's blocks (prefixlint/engines/severity.py): turn N's last token
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
    group: list[Break],
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
    specials = special_strings(tokenizer, template)
    breaks, reuse = find_breaks(renderer, scenarios, tokenizer, specials, rendered.reasoning)
    if not breaks:
        return MultiTurnResult([], reuse)
    settings = verified_settings(template, rendered, breaks, tokenizer, recheck, known) if hints else {}
    groups: dict[str, list[Break]] = {}
    for brk in breaks:
        groups.setdefault(brk.code, []).append(brk)
    for group in groups.values():  # one finding per code, shown by its costliest break
        group.sort(key=lambda b: -_severity(template, b, engine, tokenizer)[0])
    ordered = sorted(groups.items(), key=lambda kv: _CAUSE_ORDER[kv[0]])
    diagnostics = [
        _diagnostic(template, group, settings.get(code, ""), engine, tokenizer) for code, group in ordered
    ]
    return MultiTurnResult(diagnostics, reuse, [_template_line(group[0]) for _, group in ordered])
