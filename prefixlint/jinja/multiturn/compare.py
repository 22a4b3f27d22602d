"""The comparison across turns: for each step N -> N+1 of each scenario, whether turn N's tokens,
and turn N with the reply as the model emitted it, are a prefix of turn N+1's; where not, a `Break`
classified by where it happens (the reply's reasoning gone: PFX401, a block of history reappearing
further on: PFX402, turn N's generation prompt or the reply's boundary: PFX403, an earlier turn
rendered differently: PFX401). All renders are tokenized in one batch; a break the embedded
stand-in tokenizer alone makes is dropped.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from prefixlint.core.controls import control_strings
from prefixlint.jinja.inputs import SYSTEM_PROMPT, TOOLS
from prefixlint.jinja.multiturn.render import Renderer
from prefixlint.jinja.multiturn.scenarios import Scenario, Step
from prefixlint.jinja.reasoning import ReasoningFormat
from prefixlint.jinja.template import ChatTemplate
from prefixlint.jinja.tokenized import TokenizedRender as _Render
from prefixlint.models.tokens import EMBEDDED_NAME, LoadedTokenizer, common_prefix_len, encode_isolating

MOVED_MIN_CHARS = 24  # a shorter run of history text reappearing later is not a moved block


@dataclass
class Break:
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


def special_strings(tokenizer: LoadedTokenizer, template: ChatTemplate) -> list[str]:
    """Texts that encode to one special token (longest first): end-of-turn candidates."""
    added = set(tokenizer.added_texts)
    added |= {v for v in template.special_tokens.values() if v and v in added}
    return sorted(added, key=len, reverse=True)


@dataclass
class Emitted:
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
) -> Emitted | None:
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
        return Emitted(generated, "") if generated is not None else None
    end = at + len(step.reply_text)
    rest = b.text[end:]
    skipped = len(rest) - len(rest.lstrip())
    eot = next((special for special in specials if rest.startswith(special, skipped)), "")
    if generated is not None:
        return Emitted(generated + (rest[:skipped] if eot else ""), eot)
    return Emitted(b.text[len(a.text) : end + skipped] if eot else b.text[len(a.text) : end], eot)


def _has_word(render: _Render, index: int) -> bool:
    start, end = render.offsets[index]
    return any(c.isalnum() for c in render.text[start:end])


def _check(
    scenario: Scenario, k: int, a: _Render, b: _Render, emitted: Emitted | None, eot_ids: dict[str, int]
) -> Break | None:
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
        brk = Break("", "", scenario, k, a, b, char_a, char_a, common, common, len(a.ids))
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
    brk = Break(code, "boundary" if code else "", scenario, k, a, b, char, char, same, same, compared)
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


def _classify(brk: Break, step: Step, renderer: Renderer) -> Break:
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


def _opens_reply(brk: Break, tail_start: int, step: Step) -> bool:
    """Whether turn N, after its last message, starts with the header turn N+1 puts between that
    message and the reply (`<|begin_assistant|>\n`): what differs comes after it."""
    reply = step.reply_text or "Paris"
    at = brk.b.text.find(reply, tail_start)
    return at > tail_start and brk.a.text.startswith(brk.b.text[tail_start:at], tail_start)


def _pairs(
    renderer: Renderer,
    scenarios: list[Scenario],
    fmt: ReasoningFormat | None,
    tokenizer: LoadedTokenizer,
    specials: list[str],
) -> list[tuple[Scenario, int, _Render, _Render, Emitted | None]]:
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


def find_breaks(
    renderer: Renderer,
    scenarios: list[Scenario],
    tokenizer: LoadedTokenizer,
    specials: list[str],
    fmt: ReasoningFormat | None,
) -> tuple[list[Break], float | None]:
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
    brk: Break, emitted: Emitted | None, renderer: Renderer, tokenizer: LoadedTokenizer
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
        held = Emitted(emitted.text, emitted.eot, reply[0].ids if reply else [])
    eot_ids = {}
    if held is not None and held.eot:
        alone = encode_isolating(tokenizer, [held.eot], controls)[0].ids
        eot_ids[held.eot] = alone[0] if len(alone) == 1 else tokenizer.token_to_id(held.eot)
    return _check(brk.scenario, brk.turn, a_iso, b_iso, held, eot_ids) is None
