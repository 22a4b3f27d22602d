"""The Python frontend's prompt model: a string is a tuple of segments, static text or holes."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from enum import Enum
from itertools import islice


class Provenance(Enum):
    """Where a hole's text comes from; the volatile ones map to a rule code."""

    CLOCK = "PFX101"
    ID = "PFX102"
    RANDOM = "PFX103"
    ENVIRONMENT = "PFX104"
    REQUEST = "PFX105"
    UNORDERED = "PFX201"
    UNKNOWN = ""

    @property
    def volatile(self) -> bool:
        return self is not Provenance.UNKNOWN


@dataclass(frozen=True)
class Text:
    text: str


@dataclass(frozen=True)
class Hole:
    """Text not known before the request; `line`/`column` point at the expression it comes from, in
    the module being checked, or in `path` (a prompt file) when it is a placeholder written there."""

    provenance: Provenance
    line: int
    column: int
    label: str
    # Guessed from a name (a parameter, a placeholder, a helper we cannot read), not from a library
    # call: attributes of it are not volatile, and a finding on it is at most a warning.
    by_name: bool = False
    path: str = ""  # "" = the module being analysed
    via: str = ""  # where the value really comes from when that is in another file (for the message)
    # A parameter whose name says nothing: per-request only if callers pass per-request values, so
    # a finding on it is info.
    weak: bool = False
    # The parameter this hole reads, as (id of its function node, name): a call of that function
    # passes what stands here (prefixlint/python/summaries.py).
    param: tuple[int, str] | None = None
    # When its expression runs: on each "call" of the function it is in, once at "import" (module
    # or class level), or once per object at "construction" (`__init__`); "edit": rows a query
    # returns in storage order, which changes only when a row is written.
    timing: str = "call"
    # A list of messages spliced into a request (`[system, *history, user]`): the conversation so
    # far, the same across its turns but not across conversations.
    history: bool = False
    # A clock read to the day (`date.today()`, `strftime("%Y-%m-%d")`): it changes once a day, so it
    # splits the cache per day, not per request.
    daily: bool = False
    # A setting of the deployment (an environment variable, or a config key a project getter reads
    # from one): the same on every request of one deployment, so it splits the cache between
    # deployments, never within one. `setting` is the variable or key as written ("" if not).
    deployment: bool = False
    setting: str = ""
    # A source that gives the conversation with what it recalls in it (LlamaIndex's
    # `memory.get(input=...)`): spliced into a request as messages it is the conversation so far,
    # and one message of it (`messages[0]`) is one of its turns; only as text is it per request.
    turns: bool = False
    # An item of a collection a loop around the sink walks (`for node in nodes:`): each item is
    # its own request; this is how the collection is written, for the message.
    item: str = ""
    # Where the value really is when `anchor` placed it where it enters another module: (path,
    # line, column, label, via) as they were (prefixlint/python/consumers.py puts it back).
    origin: tuple[str, int, int, str, str] | None = None
    # A guess by its name passed on to a wrapper whose own finding already names the parameter it
    # fills (prefixlint/python/summaries.py): no value of its own here, but callers further up may
    # still put a value seen at its source in its place.
    named_in_callee: bool = False
    # Unknown text made anew on each call from a per-request input (an opaque call given one, a
    # field of what it returns: `get_provider(pr_url).pr.title`): no finding of its own, but the
    # requests differ there, so the static text after it is no loss of an earlier value.
    per_call: bool = False
    # What a model wrote in reply to a call the code makes (a chain's earlier step, the turn before).
    reply: bool = False

    @property
    def site(self) -> tuple[str, str, int, int]:
        """Where the value is written, and as what: two holes of one site are one value read again."""
        return (self.path, self.label, self.line, self.column)


@dataclass(frozen=True)
class Break:
    """A message boundary (the next message's role header is static, but short)."""

    role: str


@dataclass(frozen=True)
class Open:
    """Content we cannot see that is likely static (a prompt part from another module, or the rest
    of a text this code only appends to): what follows a hole is unknown, not known to be dynamic.
    `tokens`: what it is known to hold at least (format instructions a library appends, a schema it
    renders: the models table's `[[appended]]` rows), `what` names it for the message."""

    line: int
    tokens: int = 0
    what: str = ""


@dataclass(frozen=True)
class Choice:
    """One of several values, decided at run time (branches, several `return`s, `a if c else b`)."""

    options: tuple[tuple[Segment, ...], ...]


Segment = Text | Hole | Break | Open | Choice
Value = tuple[Segment, ...]

EMPTY: Value = ()
# Marks a `Hole.param` name that is a keyword a wrapper's `**kwargs` passes on to a sink (request.py):
# the call of the wrapper gives it, or no text at all.
FORWARDED = "**"

# Alternatives kept per choice and per expanded prompt: enough for an if/elif chain, bounded so a
# long run of branches cannot multiply.
MAX_OPTIONS = 8
MAX_EXPANSIONS = 32


def text(s: str) -> Value:
    return (Text(s),) if s else EMPTY


def concat(*values: Value) -> Value:
    """Join values, merging neighbouring static text."""
    out: list[Segment] = []
    for value in values:
        for seg in value:
            if isinstance(seg, Text) and out and isinstance(out[-1], Text):
                out[-1] = Text(out[-1].text + seg.text)
            elif not (isinstance(seg, Text) and not seg.text):
                out.append(seg)
    return tuple(out)


def join(sep: Value, items: list[Value]) -> Value:
    parts: list[Value] = []
    for i, item in enumerate(items):
        if i:
            parts.append(sep)
        parts.append(item)
    return concat(*parts)


def holes(value: Value) -> list[Hole]:
    """Every hole of a value, those inside choices too, in order."""
    out: list[Hole] = []
    for s in value:
        if isinstance(s, Hole):
            out.append(s)
        elif isinstance(s, Choice):
            for option in s.options:
                out += holes(option)
    return out


def first_volatile(value: Value) -> Hole | None:
    return next((h for h in holes(value) if h.provenance.volatile), None)


def per_request(hole: Hole) -> bool:
    """Whether `hole` is made for each request: a per-request input (one by its name too, not a
    parameter whose name says nothing: that one is per request only if callers pass one), or
    unknown text made from one; not the conversation so far, nor a value named in a callee."""
    if hole.history or hole.named_in_callee or hole.weak:
        return False
    return hole.provenance is Provenance.REQUEST or hole.per_call


def choice(options: list[Value]) -> Value:
    """A value that is one of `options` (duplicates merged; one option is just that value)."""
    unique: list[Value] = []
    for option in options:
        if option not in unique:
            unique.append(option)
    if len(unique) > MAX_OPTIONS:  # keep the telling ones: volatile first, then the most static text
        unique.sort(key=lambda v: (first_volatile(v) is None, -len(static_text(v))))
        unique = unique[:MAX_OPTIONS]
    if len(unique) == 1:
        return unique[0]
    return (Choice(tuple(unique)),) if unique else EMPTY


# expand's answers in this process, by the identity of the value (kept alive beside them, so an id is
# never reused while it is here): the evaluator's memo hands the same value objects to many prompts,
# and a choice nested in the options of others was expanded again for every one of them (a module
# wrapping eight LLM backends: 180,000 expansions for 1,300 asked). A tuple's hash is not cached, so
# the identity, not the value, is the key.
_EXPANDED: dict[tuple[int, int], tuple[Value, list[Value]]] = {}
MAX_EXPANDED = 4_096


def expand(value: Value, limit: int = MAX_EXPANSIONS) -> list[Value]:
    """The choice-free values `value` may take (at most `limit`; the first options first)."""
    if not any(isinstance(s, Choice) for s in value):
        return [concat(value)]
    key = (id(value), limit)
    known = _EXPANDED.get(key)
    if known is not None and known[0] is value:
        return list(known[1])
    if len(_EXPANDED) >= MAX_EXPANDED:
        _EXPANDED.clear()
    found = _expand(value, limit)
    _EXPANDED[key] = (value, found)
    return list(found)


def _expand(value: Value, limit: int) -> list[Value]:
    results: list[list[Segment]] = [[]]
    for seg in value:
        if isinstance(seg, Choice):
            # each option expanded once, not once per result so far, and only the first `limit`
            # forms built: nested choices would otherwise multiply before the cut
            alts = list(islice((alt for option in seg.options for alt in expand(option, limit)), limit))
            results = list(islice((r + list(alt) for r in results for alt in alts), limit))
        else:
            for r in results:
                r.append(seg)
    return [concat(tuple(r)) for r in results]


def per_option(value: Value, fn: Callable[[Value], Value]) -> Value:
    """`fn` applied to each choice-free form of `value` (formatting sees plain text and holes)."""
    if not any(isinstance(s, Choice) for s in value):
        return fn(value)
    return choice([fn(v) for v in expand(value, MAX_OPTIONS)])


def is_static(value: Value) -> bool:
    return all(isinstance(s, Text) for s in value)


def is_constant(value: Value) -> bool:
    """Static text, or text made from constants by code we cannot read (the same on every call)."""
    return bool(value) and all(isinstance(s, (Text, Open)) for s in value)


def static_text(value: Value) -> str:
    return "".join(s.text for s in value if isinstance(s, Text))


def map_text(value: Value, fn: Callable[[str], str]) -> Value:
    out: list[Value] = []
    for s in value:
        if isinstance(s, Text):
            out.append((Text(fn(s.text)),))
        elif isinstance(s, Choice):
            out.append((Choice(tuple(map_text(o, fn) for o in s.options)),))
        else:
            out.append((s,))
    return concat(*out)


def strip_edges(value: Value, chars: str | None = None, left: bool = True, right: bool = True) -> Value:
    """`str.strip` on the static ends of a value (holes keep their place)."""
    segs = list(value)
    if left and segs and isinstance(segs[0], Text):
        segs[0] = Text(segs[0].text.lstrip(chars))
    if right and segs and isinstance(segs[-1], Text):
        segs[-1] = Text(segs[-1].text.rstrip(chars))
    return concat(tuple(segs))


def map_holes(value: Value, fn: Callable[[Hole], Segment]) -> Value:
    """The value with each hole (inside choices too) replaced by `fn(hole)`."""
    out: list[Segment] = []
    for s in value:
        if isinstance(s, Hole):
            out.append(fn(s))
        elif isinstance(s, Choice):
            out.append(Choice(tuple(map_holes(o, fn) for o in s.options)))
        else:
            out.append(s)
    return tuple(out)


def splice_holes(value: Value, fn: Callable[[Hole], Value | None]) -> Value:
    """The value with each hole (inside choices too) for which `fn` gives a value replaced by it."""
    parts: list[Value] = []
    for s in value:
        if isinstance(s, Hole):
            found = fn(s)
            parts.append((s,) if found is None else found)
        elif isinstance(s, Choice):
            parts.append((Choice(tuple(splice_holes(o, fn) for o in s.options)),))
        else:
            parts.append((s,))
    return concat(*parts)


def without(value: Value, provenance: Provenance) -> Value:
    """The value with holes of one provenance made unknown (e.g. `sorted()` orders a set)."""
    return map_holes(
        value, lambda h: replace(h, provenance=Provenance.UNKNOWN) if h.provenance is provenance else h
    )
