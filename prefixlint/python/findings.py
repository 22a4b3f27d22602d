"""From prompts to diagnostics: what a volatile value costs, counted as the engine loses it.

A request-dependent value (a clock, an id, randomness, a machine value, unordered data, a
per-request input) parts the requests where it stands. What it costs is the static text after it
that those requests would otherwise share: literal text, text made from constants by code we cannot
read (of unseen length: "at least"), the later static messages and tools of the same request, up to
the next per-request input, or unknown text made from one (`get_provider(query).pr.title`): after
either nothing is shared anyway (unknown text no request makes, a config attribute, is crossed). A
value seen at its source further on that parts the same requests (an id after a clock) does not end
that count, but the value's own loss ends there (what follows is lost to that one too, across the
requests that share this one): the severity is judged on the own loss, and the message names the
later value. Where the request carries the conversation so far and the value changes on every turn,
the history after it is recomputed on every turn too. Values less than a cache block apart,
neighbour to neighbour, part the requests as one group: one finding at the first (where requests
part) names every member, its line and how often it varies; the loss is the static text after the
last member, and a fix must move them all; a member that is first in another form of the prompt
(after a value with a literal fallback) gives way to it there. A parameter whose name says nothing
is a member beside a value seen at its source (the clock is real, so the loss after the group is
too), and the group varies as often as its most frequent member: the message says so when that is a
parameter beside a date. A value seen at its source that changes more often than the one before it
(a clock after a setting) is no member: the requests the earlier one parts differ there anyway, so
its loss ends there, and the later one gets its own finding.

A value costs only over the requests that agree on everything before it (the engine loses all from
the first token where two requests differ): when an earlier value of the same request varies at
least as often (prefixlint/python/frequency.py), the later one adds nothing and gets no finding of
its own (nor does a per-request input, a date or an id known by its name behind a parameter: a
`query` after the `snippets` searched for it), unless it varies less often (a date behind a
per-request question): a co-cause, reported at info with the earlier value named, that costs its own
loss once the earlier one moves; when the earlier one is known only by its name, the later one is
kept at info and the message names it.

The severity follows that loss in the chosen engine's aligned blocks (less than one is info), how
sure we are that the text reaches a model (a candidate no modelled sink sends is at most info; a
value known only by its name is at most `guess_severity`), and when the value is made (once at
import or construction: it splits the cache per process, a lower kind of loss). A setting of the
deployment (an environment variable) is the same on every request of one deployment: it splits the
cache between deployments, never within one, so it is at most info, and costs no history across
turns.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from prefixlint.core.findings import Diagnostic, Severity, Span
from prefixlint.core.rules import RULES
from prefixlint.core.words import counted
from prefixlint.engines.loss import EVERY_TOKEN, aligned_loss
from prefixlint.engines.severity import TOKENIZER_DEPENDS_NOTE, loss_severity
from prefixlint.python.frequency import (
    Frequency,
    frequency,
    most_frequent,
    varies_at_least_as_often,
    varies_more_often,
)
from prefixlint.python.prompt import Prompt
from prefixlint.python.segments import Break, Hole, Open, Provenance, Segment, Text, expand, holes

if TYPE_CHECKING:
    from prefixlint.engines import Engine

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
# A setting of the deployment (prefixlint/python/evaluate/config_reads.py): its own kind of value.
_DEPLOYMENT_WHAT = "a deployment setting"
_DEPLOYMENT_HINT = (
    "nothing is lost within one deployment; to share one cache across deployments, put the setting "
    "after the static instructions"
)
_TIMING = {
    "import": "it is computed once, when the module is imported, so it splits the cache per process "
    "(and per day for a date) rather than per request",
    "construction": "it is computed once per object (in its constructor), so it splits the cache per "
    "object and process rather than per request",
    "edit": "the rows come back in the order the database stores them, which changes when a row is "
    "written, so it splits the cache per edit rather than per request (add an ORDER BY)",
}
_TIMING_SHORT = {
    "import": "is computed once per process",
    "construction": "is computed once per object",
    "edit": "changes only when a row is written",
}

# Chat-format markers (`<|eot_id|>`, `<|im_start|>`, `[INST]`, `</s>`) are one special token each in
# the models that use them, whatever the tokenizer used to count.
_SPECIAL_MARKER = re.compile(r"<\|[^|<>\s]{1,40}\|>|\[/?INST\]|</?s>")
# Values that, written into a user/assistant/tool turn, record that turn (a timestamp, who sent it).
_RECORD_KINDS = {Provenance.CLOCK, Provenance.ID, Provenance.ENVIRONMENT}
_TURN_ROLES = {"user", "assistant", "tool", "function", "human", "ai", "model"}


@dataclass
class _Evidence:
    """One volatile value in one form of a prompt, and what follows it there."""

    hole: Hole
    prompt: Prompt
    before: str  # the static text ahead of it
    after: str  # the static text after it that the requests would share
    unseen: bool = False  # text made from constants follows, of a length we cannot see
    least: int = 0  # tokens that unseen text is known to hold at least (what a library appends)
    added: tuple[str, ...] = ()  # what the library adds among it (`[[appended]]` rows), by name
    history: Hole | None = None  # the conversation so far follows
    more_follows: bool = True  # more of the request may be built elsewhere
    companions: list[Hole] = field(default_factory=list)  # its group: values less than a block apart
    parted: Hole | None = None  # an earlier value, known by its name, that may part the requests first
    covered: bool = False  # an earlier value seen at its source parts every request this one parts
    cause: Hole | None = None  # that earlier value, when it varies more often than this one (a co-cause)
    ends: Hole | None = None  # a later value, varying at least as often: what follows it is its loss too
    own: str = ""  # the static text up to it: this value's own loss (all of `after` without one)


def _is_strong_input(seg: Segment) -> bool:
    """A per-request input known as one (not a parameter whose name says nothing, not history)."""
    return isinstance(seg, Hole) and seg.provenance is Provenance.REQUEST and not seg.weak and not seg.history


def _turn_role(before: tuple[Segment, ...]) -> str | None:
    """The role of the conversation turn a segment is in, if it is not a system message."""
    role = next((s.role for s in reversed(before) if isinstance(s, Break)), None)
    # A role copied from elsewhere (`role=message.role`) replays a conversation: turns, not a
    # system prompt, which code writes as the literal "system".
    return role if role in _TURN_ROLES or role == "unknown" else None


def parted_before(before: tuple[Segment, ...], hole: Hole) -> tuple[bool, Hole | None]:
    """Whether an earlier value of the request already parts every request that `hole` parts (a
    per-request input known as one, or, for a per-request input, a date or an id that is itself only
    a guess from its name, any parameter of the prompt builder; or a value seen at its source that
    varies at least as often), and else the first earlier value known only by its name (or a
    parameter whose name says nothing) that may (then `hole` is kept, at info)."""
    # A per-request input, a date or an id known by its name behind a per-request input: the
    # requests part at the earlier one as surely as at this one (a `query` after the `snippets`
    # searched for it), so this one adds nothing of its own.
    guessed = hole.by_name and (hole.provenance in _RECORD_KINDS or hole.provenance is Provenance.REQUEST)
    guess: Hole | None = None
    for s in before:
        if not isinstance(s, Hole):
            continue
        if hole.param is not None and s.param == hole.param and s.label == hole.label:
            return True, None  # the same parameter read again: its value is the one already written
        if s.provenance is Provenance.REQUEST and not s.history:
            if guessed or not s.weak:
                return True, None
            guess = guess or s  # a parameter whose name says nothing: per request if callers pass one
        elif varies_at_least_as_often(s, hole):
            if not s.by_name:
                return True, None
            guess = guess or s
    return False, guess


def co_cause(before: tuple[Segment, ...], hole: Hole, count: Callable[[str], int], block: int) -> Hole | None:
    """The first earlier value, a block or more before `hole` (not of its group), that parts for
    certain every request `hole` parts and varies more often than it (a per-request input before a
    date): `hole` costs nothing on top of it, a co-cause, until that one moves. None for a value
    known only by its name, or when the earlier one varies no more often (then `hole` is no finding
    at all)."""
    if hole.by_name or frequency(hole) is None:
        return None  # (no earlier value varies at least as often as one that does not vary)
    for j, s in enumerate(before):
        if not isinstance(s, Hole) or s.by_name and s.weak:
            continue
        # certain (a strong input, or seen at its source), varying at least as often, and not alike
        if not (varies_at_least_as_often(s, hole) and (_is_strong_input(s) or not s.by_name)):
            continue
        if frequency(s) is frequency(hole):
            continue
        between = "".join(t.text for t in before[j + 1 :] if isinstance(t, Text))
        return s if _tokens(between, count) >= block else None
    return None


def _evidence(prompt: Prompt, count: Callable[[str], int], block: int, covered: bool) -> list[_Evidence]:
    """The request-dependent values of each form the prompt may take (one per combination of
    branches), with what follows each; with `covered`, also those an earlier value already parts
    the requests for (marked so: what a fix that moves the earlier one uncovers)."""
    out = []
    for segments in expand(prompt.value):
        merged: set[int] = set()  # values already named as a companion of an earlier one
        texts = [s.text if isinstance(s, Text) else "" for s in segments]  # joined up to each value
        for i, seg in enumerate(segments):
            if not (isinstance(seg, Hole) and seg.provenance.volatile) or i in merged:
                continue
            parted, maybe = parted_before(segments[:i], seg)
            if parted and not covered:
                continue  # the requests already differ there: nothing after it is lost to this value
            turn = _turn_role(segments[:i])
            if turn is not None and seg.by_name and seg.provenance in _RECORD_KINDS:
                continue  # a name is a guess, and a date or id in a conversation turn a cheap one
            found, companions = _follows(prompt, segments, i, "".join(texts[:i]), turn, count, block)
            if not parted:
                merged.update(companions)
            if found is not None:
                found.parted, found.covered = maybe, parted
                found.cause = co_cause(segments[:i], seg, count, block) if parted else None
                out.append(found)
    return out


def _follows(
    prompt: Prompt,
    segments: tuple[Segment, ...],
    i: int,
    before: str,
    turn: str | None,
    count: Callable[[str], int],
    block: int,
) -> tuple[_Evidence | None, set[int]]:
    """What follows the value at `i` (`before`: the static text ahead of it): static text up to the
    next per-request input, crossing other volatile values (named as companions when less than a
    block after it) and the history."""
    hole = segments[i]
    assert isinstance(hole, Hole)
    after: list[str] = []
    since_last: list[str] = []  # static text since the value or its last companion
    companions: list[Hole] = []
    merged: set[int] = set()
    group_end = 0  # pieces of `after` up to the group's last member (less than a block each)
    unseen = False
    least = 0
    added: list[str] = []
    history: Hole | None = None
    ends: Hole | None = None  # the later value, varying at least as often, where its own loss ends
    own_end = 0  # pieces of `after` up to it
    input_follows = False
    crossed = False  # a message boundary lies between the value and the segment at hand
    # A candidate's date or id written into a conversation turn records that turn: it costs the
    # rest of the turn only (a modelled request shows what really follows it).
    turn_bound = not prompt.reached and turn is not None and hole.provenance in _RECORD_KINDS
    guess = hole.provenance is Provenance.REQUEST and hole.weak
    # A model's reply that is the assistant's turn (`messages.append(response)`, then the next turn
    # appended) is a turn of the conversation: the turns after it can only come after it, so they
    # are the conversation going on, not its loss (a reply put in a system message is not).
    ends_turn = (
        hole.reply
        and i + 1 < len(segments)
        and isinstance(segments[i + 1], Break)
        and _turn_role(segments[:i]) == "assistant"
    )
    for k in range(i + 1, len(segments)):
        seg = segments[k]
        if isinstance(seg, Text):
            after.append(seg.text)
            since_last.append(seg.text)
        elif isinstance(seg, Open):
            unseen = True
            least += seg.tokens
            if seg.what and seg.what not in added:
                added.append(seg.what)
        elif isinstance(seg, Break):
            if turn_bound or ends_turn:
                break
            crossed = True
            if seg.role == "unknown":  # turns replayed with their own roles: the conversation so far
                history = history or Hole(Provenance.UNKNOWN, 0, 0, "the replayed turns", history=True)
        elif seg.history:
            history = history or seg
        elif seg.per_call and not seg.provenance.volatile:
            # unknown text made per request (`provider.pr.title` of `get_provider(pr_url)`): the
            # requests differ there anyway, so what follows is lost to it, not to `hole`
            input_follows = True
            break
        elif seg.provenance.volatile:
            if not (seg.by_name or seg.weak) and varies_more_often(seg, hole):
                # a value seen at its source that changes more often (a clock behind a setting):
                # the requests `hole` parts differ there anyway, and those it does not part, there
                # first: nothing after it is lost to `hole`, however close it is
                input_follows = True
                break
            close = _tokens("".join(since_last), count) < block
            other = seg.label != hole.label
            if guess and seg.provenance is Provenance.REQUEST and not (close and other and not crossed):
                # A per-request input judged as one (a parameter, a loop item) is followed, a block
                # or more on, by another judged alike (or by itself again): the text after that one
                # is not shared either (closer, two of them are one group, named here at the first).
                input_follows = True
                break
            if seg.weak and not (close and (guess or not hole.by_name) and not crossed):
                # a parameter whose name says nothing (per request only if callers pass one), or one
                # in a later message (a replayed turn, the same across a conversation): crossed
                continue
            if _is_strong_input(seg) and (crossed or not close):
                input_follows = True  # nothing after a per-request input (the user's turn) is shared
                break
            surer = not (seg.weak or seg.by_name and not hole.by_name)  # a guess ends no value seen
            if not close and surer and seg.site != hole.site and varies_at_least_as_often(seg, hole):
                # A block or more on, a value that parts every request `hole` parts: what follows it
                # is lost to it too, across the requests that share this one, so this value's own
                # loss ends here. The requests it parts still lose it all (and the history after
                # it), so the count goes on; the severity is judged on its own loss.
                if ends is None:
                    ends, own_end = seg, len(after)
                continue
            # Less than a block apart, the requests part at the first and all must move: one group,
            # whose loss is the text after its last member (a guess does not stand for a value seen
            # at its source, which gets a finding of its own; a parameter beside a real source
            # joins it: the loss after it is real, whatever the parameter holds).
            if close and not (hole.by_name and not seg.by_name):
                if seg.label != hole.label and all(c.label != seg.label for c in companions):
                    companions.append(seg)  # named once, however often it is written
                merged.add(k)
                since_last = []
                group_end = len(after)
    before += "".join(after[:group_end])  # shared once the whole group moves
    static = "".join(after[group_end:])
    more = not input_follows and (
        prompt.open_tail or any(isinstance(s, (Open, Break)) for s in segments[i + 1 :])
    )
    if not re.search(r"\w", static):
        static = ""  # trailing punctuation or whitespace is not content
        # Only text built elsewhere may follow: a finding for a value seen at its source, not for
        # one meant to vary or known by its name (a guess followed by a guess is none), nor for one
        # a per-request input follows (the user's turn: nothing after it is shared anyway).
        elsewhere = (
            prompt.open_tail
            and not input_follows
            and not (hole.provenance is Provenance.REQUEST or hole.by_name)
        )
        if not (unseen or history or elsewhere):
            return None, merged
    own = "".join(after[group_end:own_end]) if ends is not None else static
    evidence = _Evidence(
        hole,
        prompt,
        before,
        static,
        unseen,
        least,
        tuple(added),
        history,
        more,
        companions,
        ends=ends,
        own=own,
    )
    return evidence, merged


def _tokens(text: str, count: Callable[[str], int]) -> int:
    return count(_SPECIAL_MARKER.sub("\x00", text)) if text else 0


def _place(path: str, hole: Hole) -> str:
    """Where a finding is reported: the checked file, or the prompt file a placeholder is in."""
    if not hole.path or hole.path == os.path.abspath(path):
        return path
    relative = os.path.relpath(hole.path)
    return hole.path if relative.startswith("..") else relative


def _key(path: str, hole: Hole) -> tuple[str, str, int, int]:
    """What one finding is about: a volatile expression of one kind at one place."""
    return (_place(path, hole), hole.provenance.value, hole.line, hole.column)


def _rank(ev: _Evidence) -> tuple[bool, bool, bool, bool, bool, int, int]:
    """Stronger evidence first: a request a modelled sink sends (where an earlier value parts its
    requests already, that is what the value costs, whatever a candidate text says), then a form
    where no earlier value parts the requests, then one no earlier value may part, then the history,
    then a form where other values part the requests with it (`x if x else "Unknown"` beside a date:
    the requests that carry `x` are the ones that part per request), then a value that changes more
    often (two values of another module that enter this one at the same place: the one that parts
    more requests), then more text."""
    often = frequency(ev.hole)
    return (
        ev.prompt.reached,
        not ev.covered,
        ev.parted is None,
        ev.history is not None,
        bool(ev.companions),
        -_ORDER.index(often) if often is not None else -len(_ORDER),
        len(ev.after),
    )


_ORDER = list(Frequency)  # most often first


def _lower(severity: Severity) -> Severity:
    return Severity(max(Severity.INFO, severity - 1))


def diagnostics(
    path: str,
    prompts: list[Prompt],
    count_tokens: Callable[[str], int],
    engine: Engine | None = None,
    guess_severity: Severity = Severity.INFO,
    stand_in: Callable[[], bool] = lambda: False,
    dispatch: str | None = None,
    covered: list[Diagnostic] | None = None,
    passed: Callable[[Hole], object | None] | None = None,
) -> list[Diagnostic]:
    """One diagnostic per volatile expression: the strongest evidence among the prompts it reaches.
    `stand_in()`: the tokens are counted with the embedded stand-in tokenizer, whose block
    boundaries are not the model's. `dispatch`: where the project picks code at run time
    (prefixlint/python/dispatch.py), so a prompt no sink is seen to send may still be sent.
    `covered` (when given) gets, unreported, the findings of values whose requests an earlier value
    already parts: a fix that moves the earlier value uncovers them, it does not add them.
    `passed(hole)`: the request entry point seen to pass a per-request value to the parameter a
    name guess reads (prefixlint/python/entrypoints.py), or None; seen, its loss decides."""
    block = max(engine.block_size if engine is not None else 1, 1)
    best: dict[tuple[str, str, int, int], _Evidence] = {}
    # A value a modelled whole request carries is judged by that request, which shows what follows
    # it; a piece of it (a message, a template) can only say the rest is built elsewhere. Only a
    # request that holds every value of the piece is the piece's whole (not one that read it in part).
    sent = [{_key(path, h) for h in holes(p.value)} for p in prompts if p.reached and not p.open_tail]
    for prompt in prompts:
        piece = {_key(path, h) for h in holes(prompt.value)} if prompt.open_tail else set()
        whole = set().union(*(keys for keys in sent if piece and piece <= keys))
        for ev in _evidence(prompt, count_tokens, block, covered is not None):
            key = _key(path, ev.hole)
            if key in whole:
                continue
            kept = best.get(key)
            if kept is None or _rank(ev) > _rank(kept):
                best[key] = ev
    out = []
    for (place, code, line, column), ev in sorted(best.items()):
        found = _diagnostic(ev, code, count_tokens, engine, guess_severity, stand_in(), dispatch, passed)
        if found is None:
            continue
        diagnostic = Diagnostic(
            code,
            Span(place, line, column),
            found[0],
            found[1],
            hint=_DEPLOYMENT_HINT if ev.hole.deployment else _HINT[ev.hole.provenance],
            static_tokens=_tokens(ev.after, count_tokens) + ev.least,
            cache_lost=found[2],
            group=tuple((c.label, c.line, c.column) for c in ev.companions if _place(path, c) == place),
        )
        if not ev.covered:
            out.append(diagnostic)
        elif covered is not None:
            covered.append(diagnostic)
            if ev.cause is not None and diagnostic.severity > Severity.INFO:
                # reported at info for what it costs now; what it costs alone stays covered, what a
                # move of the earlier value uncovers
                out.append(
                    replace(
                        diagnostic, message=diagnostic.message + _co_caused(ev.cause), severity=Severity.INFO
                    )
                )
        if ev.parted is not None and not ev.covered and covered is not None:
            # kept at info for an earlier name guess: a move of that one uncovers its own severity
            alone = _diagnostic(
                replace(ev, parted=None),
                code,
                count_tokens,
                engine,
                guess_severity,
                stand_in(),
                dispatch,
                passed,
            )
            if alone is not None:
                covered.append(replace(diagnostic, message=alone[0], severity=alone[1], cache_lost=alone[2]))
    return _named_elsewhere(out)


def _named_elsewhere(found: list[Diagnostic]) -> list[Diagnostic]:
    """The findings less those of values another finding of the same rule names as a member of its
    group: in one form of the prompt the value is first (`location` may be a literal fallback, then
    the next value is), in another it is beside the group's first, and a move of the group moves it
    too. One finding, at the first, unless the value alone is reported above the group; of two that
    name each other (each first in a form of its own), the one written first."""

    def place(d: Diagnostic) -> tuple[str, int, int]:
        return (d.span.path, d.span.line, d.span.column)

    members = {id(d): {(d.span.path, line, column) for _, line, column in d.group} for d in found}

    def named_by(d: Diagnostic, e: Diagnostic) -> bool:
        if e is d or e.code != d.code or e.severity < d.severity or place(d) not in members[id(e)]:
            return False
        return place(e) not in members[id(d)] or place(e) < place(d)

    return [d for d in found if not any(named_by(d, e) for e in found)]


def _diagnostic(
    ev: _Evidence,
    code: str,
    count: Callable[[str], int],
    engine: Engine | None,
    guess_severity: Severity,
    stand_in: bool,
    dispatch: str | None = None,
    passed: Callable[[Hole], object | None] | None = None,
) -> tuple[str, Severity, int | None] | None:
    """The message, severity and cache loss (Diagnostic.cache_lost) of one finding, or None when it
    costs nothing worth saying."""
    hole, prov = ev.hole, ev.hole.provenance
    # a guess by its name that a request entry point is seen to pass: no guess any more
    seen = passed(hole) if passed is not None and hole.by_name and ev.prompt.reached else None
    where = f"{ev.prompt.what} (line {ev.prompt.line})"
    kind = _DEPLOYMENT_WHAT if hole.deployment else _WHAT[prov]
    what = f"{kind} (`{hole.label}`{', ' + hole.via if hole.via else ''})"
    if hole.by_name:
        named = "a per-request input if its callers pass one" if hole.weak else _NAMED_LIKE[prov]
        if seen is not None:
            named = f"a per-request input that a request entry point passes ({seen})"
        if hole.item:  # a loop around the sink: one request per item
            named = f"an item of `{hole.item}` (the call is made once per item: each item is its own request)"
        what = f"`{hole.label}`{' (' + hole.via + ')' if hole.via else ''}, {named},"
    severity = RULES[code].default_severity
    # a setting is the same on every turn of a deployment's conversations: no history is lost to it
    per_turn = ev.history is not None and hole.timing == "call" and ev.prompt.reached and not hole.deployment
    tokens = _tokens(ev.after, count) + ev.least
    counted_text = bool(ev.after) or ev.unseen and bool(tokens or not per_turn)  # not "at least 0"
    cache_lost: int | None = None  # what the counted static text costs in aligned units, if any
    if counted_text:
        least = "at least " if ev.unseen else ""
        added = f" (among them text the library adds: {', '.join(ev.added)})" if ev.added else ""
        message = (
            f"{what} is ahead of {least}{counted(tokens, 'static token')} of {where}{added}: "
            f"{'it cannot' if tokens == 1 and not least else 'they cannot'} be served from the prefix cache"
        )
        before = _tokens(ev.before, count)
        # judged on its own loss: what a later value that varies as often loses too is not its
        judged = _tokens(ev.own, count) + ev.least if ev.ends is not None else tokens
        aligned = aligned_loss(before, judged, engine if engine is not None else EVERY_TOKEN)
        lost = aligned > 0  # the shared rule (loss_severity) at the measured alignment
        cache_lost = aligned
        if stand_in and lost and not per_turn and not _costs_a_block_anywhere(before, judged, engine):
            # the stand-in's block boundaries are not the model's: never more than info on them
            lost = False
            message += "; " + TOKENIZER_DEPENDS_NOTE.format(measured=RULES[code].default_severity.label)
        if not (lost or per_turn):
            if ev.unseen:
                severity = min(severity, Severity.WARNING)  # at least some: more is built by code
            elif prov is Provenance.REQUEST or hole.by_name or not ev.more_follows:
                return None  # a few tokens at the end lose nothing the engine would have kept
            else:
                severity = Severity.INFO  # less than one cache block here, but more follows
    elif per_turn:
        message = f"{what} goes into {where}, ahead of the conversation history (`{ev.history.label}`)"
        message += _every_turn(hole)
    else:
        message = (
            f"{what} goes into {where}, and what follows it is built elsewhere: any static text "
            "after it cannot be served from the prefix cache"
        )
        severity = min(severity, Severity.WARNING)
    if per_turn and counted_text:
        message += f", nor can the conversation history after it (`{ev.history.label}`)" + _every_turn(hole)
    if ev.companions:
        message += _group(hole, ev.companions)
    if ev.ends is not None:
        message += (
            f"; {counted(_tokens(ev.own, count), 'static token')} of them are its own: "
            f"`{ev.ends.label}` (line {ev.ends.line}, {_how_often(ev.ends)}) after it parts these "
            "requests again, so what follows that is recovered only once both move"
        )
    # The group varies as often as its most frequent member; one seen at its source that varies
    # more often than `hole` ends its loss (`_follows`), so a more frequent member is a guess: the
    # message says so, the severity stays that of the values seen at their source.
    oftener = most_frequent([c for c in ev.companions if varies_more_often(c, hole)])
    kind_of_loss = _kind_of_loss(hole)
    if kind_of_loss is not None and oftener is not None:
        message += (
            f"; `{hole.label}` alone {kind_of_loss[0]}, but `{oftener.label}` (line {oftener.line}, "
            f"{_how_often(oftener)}) beside it varies more often: the group parts the requests as often "
            "as its most frequent member (the severity is that of the values seen at their source)"
        )
    elif kind_of_loss is not None:
        message += f"; {kind_of_loss[1]}"
    if hole.deployment:
        severity = Severity.INFO  # the same on every request of one deployment: never lost within one
    elif kind_of_loss is not None:
        severity = _lower(severity)
    if hole.by_name and seen is None:  # a name is a guess, not a source seen
        severity = min(severity, Severity.INFO if hole.weak else guess_severity)
    if ev.parted is not None:
        earlier = ev.parted
        named = (
            "a per-request input if its callers pass one" if earlier.weak else _NAMED_LIKE[earlier.provenance]
        )
        if seen is not None and passed is not None and passed(earlier) is not None:
            # both seen passed per request: the requests part at the earlier one, and what follows
            # this one is lost to both (the earlier has no finding of its own: this one follows it)
            message += f"; `{earlier.label}` before it is passed per request too: both must move"
        else:
            message += (
                f"; `{earlier.label}` before it, {named}, may already part the requests, and then this "
                "value costs nothing more"
            )
            severity = Severity.INFO
    if not ev.prompt.reached and dispatch is not None:
        message += (
            "; the call that sends it to a model could not be resolved statically: the project picks "
            f"the code it runs at run time ({dispatch}), which may send it (declare that call in "
            "`python.sinks`)"
        )
        severity = Severity.INFO
    elif not ev.prompt.reached:
        message += (
            "; no call that sends it to a model was found (a wrapper of your own? declare it in "
            "`python.sinks`)"
        )
        severity = Severity.INFO
    return message, severity, cache_lost


def _kind_of_loss(hole: Hole) -> tuple[str, str] | None:
    """How a value that changes less often than per request splits the cache, as (a short phrase,
    the sentence a finding ends with); None for one that changes on every request."""
    if hole.deployment:
        setting = f" (`{hole.setting}`)" if hole.setting else ""
        return (
            "is the same on every request of one deployment",
            f"it is read from the deployment's configuration{setting}: it is the same on every request "
            "of one deployment, so it splits the cache between deployments, never within one",
        )
    if hole.timing in _TIMING:
        return _TIMING_SHORT[hole.timing], _TIMING[hole.timing]
    if hole.daily:
        return (
            "changes once a day",
            "it changes once a day, so the cache is split per day rather than per request",
        )
    return None


def _co_caused(earlier: Hole) -> str:
    return (
        f"; but `{earlier.label}` (line {earlier.line}, {_how_often(earlier)}) before it already parts "
        "these requests: this value costs nothing on top of it (a co-cause) until that one moves"
    )


def _how_often(hole: Hole) -> str:
    """How often a value changes, in a reader's words."""
    if hole.weak:
        return "per request if its callers pass one"
    if hole.by_name:
        return f"{_NAMED_LIKE[hole.provenance]}".split(" (")[0]
    often = frequency(hole)
    if often is Frequency.CALL:
        return "per second" if hole.provenance is Provenance.CLOCK else "per request"
    return often.value if often is not None else "unknown"


def _group(hole: Hole, members: list[Hole]) -> str:
    """What a finding says of the values less than a cache block after its own: one loss, counted
    after the last of them, which no move of fewer than all of them recovers."""
    named = ", ".join(f"`{h.label}` (line {h.line}, {_how_often(h)})" for h in [hole, *members])
    said = (
        f"; {named}: less than a cache block apart, they part the requests as one, here at the first; "
        "the loss is the static text after the last of them, so "
        f"{'both' if len(members) == 1 else 'all of them'} must move (moving one recovers nothing)"
    )
    weak = [f"`{h.label}`" for h in members if h.weak or h.by_name]
    if weak and not hole.by_name:  # (a group of guesses is a guess: its severity says so)
        said += (
            f"; {', '.join(weak)} {'is' if len(weak) == 1 else 'are'} known only as "
            f"{'a parameter' if len(weak) == 1 else 'parameters'}, but `{hole.label}` is "
            "seen at its source: the loss after the group is real either way"
        )
    return said


def _every_turn(hole: Hole) -> str:
    """Why the history after a per-turn value is lost: said as a condition for a value known only
    by its name (an input that may well be the same on every turn of a conversation)."""
    if hole.by_name:
        return ": if it changes between the turns of a conversation, every turn recomputes all of it"
    return ": the prompt is rebuilt on every turn, so every turn recomputes the whole conversation"


def _costs_a_block_anywhere(before: int, after: int, engine: Engine | None) -> bool:
    """Whether moving the value would let the engine serve at least one more cache block of the
    `after` static tokens that follow `before` shared ones, wherever the block boundaries fall (the
    shared rule, `loss_severity`, at any alignment)."""
    kept = loss_severity(Severity.ERROR, before, after, engine, any_alignment=True)
    return kept is Severity.ERROR


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
