"""PFX401/PFX402 for a history: which rewrites found on a module's histories are findings, and their
messages. A rewrite counts on a history that outlives one request (appended to on a per-turn path);
at warning when a request is seen to send it, at info when it only holds messages. A framework
memory read or handed over on a per-turn path is reported by memories.py, or, when the project
defines the memory's class itself, where that class cuts the history it returns.
"""

from __future__ import annotations

import os
import re

import libcst as cst

from prefixlint.core.findings import Diagnostic, Severity, Span
from prefixlint.python.candidates import is_message_literal
from prefixlint.python.cstwalk import nodes
from prefixlint.python.evaluate import Evaluator
from prefixlint.python.history.facts import Facts, Key, Op, Sent, Site, snippet
from prefixlint.python.history.sent import follow, sent_args
from prefixlint.python.history.shapes import head_slices, key_of, summarising
from prefixlint.python.history.walk import NEEDLES, Walk
from prefixlint.python.memories import Reach, per_turn
from prefixlint.python.memories import diagnostic as memory_diagnostic
from prefixlint.python.scopes import ModuleIndex


def _kept(index: ModuleIndex, facts: Facts, key: Key, site: Site) -> bool:
    """Whether the history outlives one request: appended to on a per-turn path (in a function
    other than the constructor; for a function's local list, in a loop around `site` that does
    not build the list anew on each pass)."""
    rebuilt: set[int] = set()
    if key[0] == "name" and site.fn is not None and key[1] == id(site.fn):
        scope = index.scopes.get(site.fn)
        for binding in scope.bindings.get(key[2], ()) if scope is not None else ():
            if binding.kind in ("assign", "unpack", "unknown"):  # `x = ...`, `x, err = ...`
                rebuilt |= {loop for loop, _ in binding.branch}
    for append in facts.appends.get(key, ()):
        fn = append.fn
        if fn is None or fn.name.value in ("__init__", "__post_init__"):
            continue
        if key[0] == "name" and site.fn is not None and key[1] == id(site.fn):
            shared = [loop for loop in site.loops if loop in append.loops and id(loop) not in rebuilt]
            if not shared:
                continue
        return True
    return False


_HEAD = (
    "{what}: once the window is full, each request diverges right after what is kept (the oldest "
    "message is gone), so the whole retained window is recomputed every turn"
)
_FILTER = (
    "{what}: messages the turn that produced them sent (tool results, reasoning) are not in the "
    "history the next turn sends, so the request diverges at the first one dropped and everything "
    "after it is recomputed every turn"
)
_CLEAR = (
    "{what}: the earlier requests sent those entries with it, the next one sends them without, so "
    "the request diverges at the first entry changed and everything after it is recomputed"
)
_MOVING = (
    "{what} writes a per-turn block into the last message of a copy of the history: on the next turn "
    "that message is history without the block, so the request diverges there and everything after "
    "it is recomputed every turn"
)
_HINT = (
    "keep the history append-only; if it must be shortened, drop in large steps (e.g. halve it when "
    "full) so the prefix holds between drops, or summarise once and keep the summary fixed"
)
_MOVING_HINT = "put the per-turn block in the new user message itself and keep it in the history as sent"
_SUMMARY = (
    "{what}: the oldest messages give way to a summary, as the code means them to; each time the "
    "summary is made or changes, the request diverges at it and everything after it is recomputed "
    "(once per summary, not every turn, while the summary is kept fixed)"
)
_UNREACHED = " (no call that sends this history to a model was found in this module)"


def history_diagnostics(path: str, text: str, index: ModuleIndex, ev: Evaluator) -> list[Diagnostic]:
    """PFX401/PFX402 for the histories the module keeps and rewrites; [] fast for a module
    without any of the shapes' text."""
    memories = ev.project.frameworks.memory_needles.search(text) is not None
    if NEEDLES.search(text) is None and not memories:
        return []
    walk = Walk(index, ev)
    try:
        walk.run(index.module)
    except RecursionError:
        return []
    facts = walk.facts
    if not facts.ops and not facts.shapes and not memories:
        return []
    sent = Sent()
    for call, site in facts.calls:
        for arg in sent_args(ev, index, call):
            try:
                follow(index, facts, arg, sent, at=site)
            except RecursionError:
                continue
    found: dict[tuple[int, str], Diagnostic] = {}
    for op in [*facts.ops, *sent.ops]:
        diag = _diagnostic(path, index, facts, sent, op)
        if diag is not None:
            found.setdefault((diag.span.line, diag.code), diag)
    for reach, site in [*sent.memories, *facts.memories]:
        if not _runs_per_turn(index, facts, reach, site):
            continue
        own = _in_own_class(ev, path, index, reach)
        if own:  # the memory is the project's own class: the finding goes where it cuts the history
            found.update({(id(d), d.code): d for d in own})
            continue
        diag = memory_diagnostic(path, index, reach, _processors_cut(index, reach))
        if diag is not None:
            found.setdefault((diag.span.line, diag.code), diag)
    return list(found.values())


def _as_given(checked: str, other: str) -> str:
    """Another module's path written as the checked one is (relative to the working folder when
    that one is), so that a finding made from two modules is one finding."""
    return other if os.path.isabs(checked) else os.path.relpath(other)


def _in_own_class(ev: Evaluator, path: str, index: ModuleIndex, reach: Reach) -> list[Diagnostic]:
    """A memory read (`memory.aget()`) whose class the project defines itself (llama_index's own
    `ChatMemoryBuffer`): this module's detection applied to that method (and to the methods of
    its class it hands the work to: `asyncio.to_thread(self.get)`), each slice from the head of
    what it returns reported there, with the read that sends it."""
    if not isinstance(reach.node, cst.Call) or not isinstance(reach.node.func, cst.Attribute):
        return []
    func = reach.built.func
    named = func.value if isinstance(func, cst.Attribute) and func.attr.value.startswith("from_") else func
    cls_ref = ev.find_class(named, reexported=True)
    if cls_ref is None:
        return []
    owner, cls = cls_ref
    line, _ = index.pos(reach.node)
    where = f"{path}:{line}"
    out: list[Diagnostic] = []
    names, done = [reach.node.func.attr.value], set()
    while names:
        name = names.pop()
        found = owner.method(cls, name) if name not in done else None
        done.add(name)
        if found is None:
            continue
        method_ev, fn = found
        method_index = method_ev.index
        walk = Walk(method_index, method_ev)
        try:
            walk.run(method_index.module)
        except RecursionError:
            continue
        body = method_index.bodies.get(fn)
        sent = Sent()
        for ret in body.returns if body is not None else ():
            if ret.value is None:
                continue
            follow(method_index, walk.facts, ret.value, sent)
            names += [
                a.attr.value
                for a in nodes(ret.value, cst.Attribute)
                if isinstance(a.value, cst.Name) and a.value.value == "self"
            ]
        for op in sent.ops:
            if op.kind != "head" or op.site.fn is not fn:
                continue
            at_line, column = method_index.pos(op.site.node)
            message = _HEAD.format(what=op.what) + (
                f" (`{cls.name.value}.{fn.name.value}`, the history `{snippet(reach.node)}` sends at {where})"
            )
            out.append(
                Diagnostic(
                    "PFX401",
                    Span(_as_given(path, method_ev.path), at_line, column),
                    message,
                    Severity.WARNING,
                    hint=_HINT,
                )
            )
    return out


def _runs_per_turn(index: ModuleIndex, facts: Facts, reach: Reach, site: Site) -> bool:
    """A memory read, or given to what runs the conversation, on a per-turn path: the read or the
    call is made on each turn, or (a chain built once) the object it built is called on one."""
    fresh = isinstance(reach.node, cst.Arg) and _function_of(index, reach.built) is site.fn is not None
    if per_turn(site.fn, site.loops) and not fresh:
        return True
    if isinstance(reach.node, cst.Arg):  # `ConversationChain(memory=...)`: is the chain run per turn?
        # A memory made in the function that hands it over (a `from_defaults` factory) is new on
        # each call of it: only a loop there that runs what it was given makes turns.
        owner = facts.built.get(id(site.node))
        return owner is not None and any(
            isinstance(c.func, cst.Attribute)
            and key_of(index, c.func.value) == owner
            and (bool(s.loops) if fresh else per_turn(s.fn, s.loops))
            for c, s in facts.calls
        )
    return False


def _function_of(index: ModuleIndex, node: cst.CSTNode) -> cst.FunctionDef | None:
    """The function a node is written in (None at module level or in a class body)."""
    scope = index.scope_for(node)
    while scope is not None and not isinstance(scope.node, cst.FunctionDef):
        scope = scope.parent
    return scope.node if scope is not None else None


def _processors_cut(index: ModuleIndex, reach: Reach) -> bool:
    """Whether a history processor passed (`history_processors=[keep_recent]`) is a function of
    this module that returns its messages sliced from the head (`messages[-5:]`)."""
    if reach.row.rewrites != "processors" or not isinstance(reach.node, cst.Arg):
        return False
    for name in nodes(reach.node.value, cst.Name):
        fn = index.functions.get(name.value)
        body = index.bodies.get(fn) if fn is not None else None
        params = [p.name for p in fn.params.params] if fn is not None else []
        for ret in body.returns if body is not None else ():
            if ret.value is not None and params and head_slices(index, ret.value, key_of(index, params[0])):
                return True
    return False


def _diagnostic(path: str, index: ModuleIndex, facts: Facts, sent: Sent, op: Op) -> Diagnostic | None:
    line, column = index.pos(op.site.node)
    if op.kind == "moving":
        whole = op.key[1]
        local = key_of(index, op.base) if op.base is not None else None
        if local is None or local not in sent.keys or _kept(index, facts, local, op.site):
            return None
        copied = sent.copies.get(local, set()) | (sent.shallow.get(local, set()) if whole else set())
        if not any(_kept(index, facts, k, op.site) for k in copied):
            return None
        return Diagnostic(
            "PFX402",
            Span(path, line, column),
            _MOVING.format(what=op.what),
            Severity.WARNING,
            hint=_MOVING_HINT,
        )
    if op.kind == "clear" and _MESSAGE_WORDS.search(op.key[1]) is None:
        return None  # an entry of a list that is not a conversation (a cache, a queue of jobs)
    if op.key[0] != "stored" and op.kind != "clear" and not _kept(index, facts, op.key, op.site):
        return None
    reached = op.at_send or op.key in sent.keys
    if not reached and not _message_like(index, facts, op.key):
        return None
    message = {"head": _HEAD, "filter": _FILTER, "clear": _CLEAR}[op.kind].format(what=op.what)
    severity = Severity.WARNING if reached else Severity.INFO
    if op.kind == "head" and summarising(op.site):
        message, severity = _SUMMARY.format(what=op.what), Severity.INFO
    if not reached:
        message += _UNREACHED
    return Diagnostic("PFX401", Span(path, line, column), message, severity, hint=_HINT)


# Attribute names of conversation histories, for those appended to in another module.
_MESSAGE_WORDS = re.compile(r"^(?:steps|history|messages|conversation|turns)$")  # as in walk.NEEDLES


def _message_like(index: ModuleIndex, facts: Facts, key: Key) -> bool:
    """A history no sink here was seen to send is still reported (at info) when it holds messages:
    it is annotated as a list of messages, or what is appended to it is a message (a dict with a
    role, a `...Message(...)`, a parameter annotated as one); its name alone is not enough (a
    deque of message hashes is called `history` too)."""
    if key[0] == "stored" or (key[0] == "attr" and key[1] in facts.typed):
        return True
    if key[0] == "attr" and _MESSAGE_WORDS.search(key[1]) and not facts.appends.get(key):
        # appended elsewhere (an agent's `memory.steps`): its name is what there is to go by
        return True
    for site in facts.appends.get(key, ()):
        if isinstance(site.node, cst.Call) and any(_is_message(a.value, site) for a in site.node.args):
            return True
    return False


def _is_message(node: cst.BaseExpression, site: Site) -> bool:
    if is_message_literal(node) or (isinstance(node, cst.Call) and "Message" in snippet(node.func)):
        return True
    if isinstance(node, cst.Name) and site.fn is not None:
        return any(
            p.name.value == node.value
            and p.annotation is not None
            and "Message" in snippet(p.annotation.annotation)
            for p in site.fn.params.params
        )
    return False
