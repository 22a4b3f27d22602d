"""From prompts to diagnostics: a volatile hole is a finding when static content follows it."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from prefixlint.model import Diagnostic, Severity, Span
from prefixlint.python.prompt import Prompt
from prefixlint.python.segments import Break, Hole, Open, Provenance, Text, expand
from prefixlint.rules import RULES

_WHAT = {
    Provenance.CLOCK: "the current date/time",
    Provenance.ID: "an identifier",
    Provenance.RANDOM: "a random choice",
    Provenance.ENVIRONMENT: "a per-machine value",
    Provenance.REQUEST: "a per-request input",
    Provenance.UNORDERED: "an unordered iteration",
}
_HINT = {
    Provenance.CLOCK: "move the date to the end of the last message, or round it to the day and put it last",
    Provenance.ID: "keep ids out of the prompt, or send them as metadata / after all static content",
    Provenance.RANDOM: "fix the selection (a seed or a stable order), or put the varying part last",
    Provenance.ENVIRONMENT: "move per-machine values after the static instructions, or into a later message",
    Provenance.REQUEST: "put per-request data after the static instructions (e.g. in the user message)",
    Provenance.UNORDERED: "sort it (`sorted()`, `json.dumps(sort_keys=True)`) before it reaches the prompt",
}


_NAMED_LIKE = {
    Provenance.CLOCK: "named like a date or time (filled where the checked code does not show)",
    Provenance.ID: "named like an identifier",
    Provenance.RANDOM: "named like a random choice",
    Provenance.ENVIRONMENT: "named like a per-machine value",
    Provenance.REQUEST: "a per-request input by its name",
    Provenance.UNORDERED: "named like an unordered collection",
}


@dataclass
class _Candidate:
    hole: Hole
    prompt: Prompt
    static_after: str  # the static text that follows the hole ("" when only unknown content follows)
    more_follows: bool = True  # another message or text built elsewhere comes after it


def _candidates(prompt: Prompt) -> list[_Candidate]:
    """Volatile holes followed by static text (or by text built elsewhere), in each form the
    prompt may take (one per combination of branches)."""
    out = []
    for segments in expand(prompt.value):
        for i, seg in enumerate(segments):
            if not (isinstance(seg, Hole) and seg.provenance.volatile):
                continue
            guess = seg.by_name and seg.provenance in _RECORD_KINDS
            if _after_request_input(segments[:i], guessed=guess):
                break  # the prompt already differs per request there: nothing after it is lost to this
            after = segments[i + 1 :]
            input_follows = False
            if seg.provenance is not Provenance.REQUEST:
                # Static text after a later per-request input is never cached anyway: what this
                # value costs ends there.
                cut = next((k for k, s in enumerate(after) if _is_request_input(s)), None)
                if cut is not None:
                    after, input_follows = after[:cut], True
            turn = _turn_role(segments[:i])
            if turn is not None and seg.by_name and seg.provenance in _RECORD_KINDS:
                continue  # a name is a guess, and a date or id in a conversation turn a cheap one
            if turn is not None and seg.provenance in _RECORD_KINDS:
                # A date or id written into a conversation turn records when or by whom it was
                # written: what it can cost is the rest of that turn, not the turns after it.
                end = next((k for k, s in enumerate(after) if isinstance(s, Break)), len(after))
                after = after[:end]
            # A request input (meant to vary, often beside other inputs) must be followed by one
            # stretch of static text long enough to lose; any other volatile value loses all the
            # static text after it, between other values too.
            if seg.provenance is Provenance.REQUEST:
                static = _longest_static_run(after)
            else:
                static = "".join(s.text for s in after if isinstance(s, Text))
            if re.search(r"\w", static):  # trailing punctuation or whitespace is not content
                more = (
                    not input_follows
                    and (turn is None or seg.provenance not in _RECORD_KINDS)
                    and (prompt.open_tail or any(isinstance(s, (Open, Break)) for s in after))
                )
                out.append(_Candidate(seg, prompt, static, more))
            elif (
                not (seg.provenance is Provenance.REQUEST or seg.by_name)
                and not (turn is not None and seg.provenance in _RECORD_KINDS)
                and (prompt.open_tail or any(isinstance(s, Open) for s in after))
            ):  # a guess followed by a guess is not a finding
                out.append(_Candidate(seg, prompt, ""))
    return out


# Chat-format markers (`<|eot_id|>`, `<|im_start|>`, `[INST]`, `</s>`) are one special token each in
# the models that use them, whatever the tokenizer used to count.
_SPECIAL_MARKER = re.compile(r"<\|[^|<>\s]{1,40}\|>|\[/?INST\]|</?s>")

# Values that, written into a user/assistant/tool turn, record that turn (a timestamp, who sent it).
_RECORD_KINDS = {Provenance.CLOCK, Provenance.ID, Provenance.ENVIRONMENT}
_TURN_ROLES = {"user", "assistant", "tool", "function", "human", "ai", "model"}


def _turn_role(before: tuple) -> str | None:
    """The role of the conversation turn a segment is in, if it is not a system message."""
    role = next((s.role for s in reversed(before) if isinstance(s, Break)), None)
    # A role copied from elsewhere (`role=message.role`) replays a conversation: turns, not a
    # system prompt, which code writes as the literal "system".
    return role if role in _TURN_ROLES or role == "unknown" else None


def _is_request_input(seg: object) -> bool:
    return isinstance(seg, Hole) and seg.provenance is Provenance.REQUEST


def _after_request_input(before: tuple, guessed: bool = False) -> bool:
    """Whether a per-request input comes earlier in the prompt: one named so, or, for a value that
    is itself only a guess from its name, any parameter of the prompt builder."""
    return any(
        isinstance(s, Hole) and s.provenance is Provenance.REQUEST and (guessed or not s.weak) for s in before
    )


def _longest_static_run(segments: tuple) -> str:
    runs, current = [], []
    for seg in segments:
        if isinstance(seg, Text):
            current.append(seg.text)
        elif not isinstance(seg, Break):  # a role header between messages is static too
            runs.append("".join(current))
            current = []
    runs.append("".join(current))
    return max(runs, key=len)


def _place(path: str, hole: Hole) -> str:
    """Where a finding is reported: the checked file, or the prompt file a placeholder is in."""
    if not hole.path or hole.path == os.path.abspath(path):
        return path
    relative = os.path.relpath(hole.path)
    return hole.path if relative.startswith("..") else relative


def diagnostics(
    path: str, prompts: list[Prompt], count_tokens: Callable[[str], int], block_size: int = 16
) -> list[Diagnostic]:
    """Less than one cache block of the engine (16 tokens for vLLM) of static text after a value
    loses nothing the engine would have reused: info for a volatile source, and nothing at all
    for a request input (meant to vary) or a value only named like a volatile one."""
    """One diagnostic per volatile expression: the strongest evidence among the prompts it reaches."""
    best: dict[tuple[str, str, int, int], _Candidate] = {}
    for prompt in prompts:
        for cand in _candidates(prompt):
            key = (_place(path, cand.hole), cand.hole.provenance.value, cand.hole.line, cand.hole.column)
            kept = best.get(key)
            if kept is None or len(cand.static_after) > len(kept.static_after):
                best[key] = cand
    out = []
    for (place, code, line, column), cand in sorted(best.items()):
        hole = cand.hole
        prov = hole.provenance
        where = f"{cand.prompt.what} (line {cand.prompt.line})"
        what = f"{_WHAT[prov]} (`{hole.label}`{', ' + hole.via if hole.via else ''})"
        if hole.by_name:
            named = "a per-request input if its callers pass one" if hole.weak else _NAMED_LIKE[prov]
            what = f"`{hole.label}`{' (' + hole.via + ')' if hole.via else ''}, {named},"
        severity = RULES[code].default_severity
        if cand.static_after:
            tokens = count_tokens(_SPECIAL_MARKER.sub("\x00", cand.static_after))
            if tokens < block_size:
                if prov is Provenance.REQUEST or hole.by_name or not cand.more_follows:
                    # meant to vary, only named so, or near the end of the last text: a few
                    # tokens after it lose nothing the engine would have kept
                    continue
                severity = Severity.INFO  # less than one cache block here, but more follows
            message = (
                f"{what} is ahead of {tokens} static tokens of {where}: they cannot be served from the "
                "prefix cache"
            )
        else:
            message = (
                f"{what} goes into {where}, and what follows it is built elsewhere: any static text "
                "after it cannot be served from the prefix cache"
            )
            severity = min(severity, Severity.WARNING)
        if hole.by_name:  # a name is a guess, not a source seen
            severity = min(severity, Severity.INFO if hole.weak else Severity.WARNING)
        out.append(Diagnostic(code, Span(place, line, column), message, severity, hint=_HINT[prov]))
    return out


def prefix_numbers(prompts: list[Prompt], count_tokens: Callable[[str], int]) -> tuple[int, int] | None:
    """(cacheable, total) tokens of the module's main prompt: the one that loses the most static
    text behind a volatile value, else the largest. Cacheable is the static text ahead of its first
    volatile value; None without a prompt."""
    best: tuple[int, int, str, str] | None = None
    for prompt in prompts:
        for form in expand(prompt.value):
            total = "".join(s.text for s in form if isinstance(s, Text))
            if not total.strip():
                continue
            ahead = []
            for seg in form:
                if isinstance(seg, Hole) and seg.provenance.volatile:
                    break
                if isinstance(seg, Text):
                    ahead.append(seg.text)
            cacheable = "".join(ahead)
            rank = (len(total) - len(cacheable), len(total), cacheable, total)
            if best is None or rank[:2] > best[:2]:
                best = rank
    if best is None:
        return None
    return count_tokens(best[2]), count_tokens(best[3])
