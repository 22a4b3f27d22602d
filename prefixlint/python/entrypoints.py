"""Whether a request entry point of the project is seen to pass a per-request value to a prompt
builder's parameter (issue 28, point 4).

A parameter judged by its name (`question`, `context`) is per request only "if its callers pass
one": until something is seen passing one, a finding on it stays at info. This walks the project's
calls back from that parameter (Evaluator.callers, Evaluator.constructions: the call graph the
wrappers' summaries use, not a second one) to where the value comes from:

- a parameter of a request entry point (a web route, a chat handler, a Django view, a function
  given to `gr.ChatInterface(fn=)` or `graph.add_node`: the models table's `[[entry]]` rows);
- a call or read whose value a request brings (`input()`, `parser.parse_args()`, `sys.argv`,
  `websocket.receive_text()`, `st.chat_input()`: its `[[request]]` rows);
- and in between, through the caller's own parameters, what a value is made from (`json.loads(data)`,
  `data["task"]`, `args.query`, an f-string), a name's assignment, `**params` built as a dict
  literal, and an attribute (`self.researcher.query`) set from a constructor's parameter
  (`self.query = query`), whose constructions are followed in turn.

Bounded: at most MAX_DEPTH calls up and MAX_STEPS parameters per question, each visited once; the
answer is memoized per parameter for the checked file.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from prefixlint.python.evaluate import MAX_CALLERS, Evaluator
from prefixlint.python.evaluate.callsites import texts_matching
from prefixlint.python.frameworks.names import positional_parameters
from prefixlint.python.project import read_text
from prefixlint.python.segments import Hole, Provenance

MAX_DEPTH = 10  # calls up from the prompt builder (gpt-researcher's CLI to its prompt is 8)
MAX_STEPS = 40  # parameters looked at for one question
MAX_HOPS = 6  # expressions followed inside one function (a name's assignment, a call's argument)
MAX_ATTRIBUTE_MODULES = 4  # modules searched for the classes that set an attribute


@dataclass(frozen=True)
class _Param:
    ev: Evaluator
    fn: cst.FunctionDef
    name: str


@dataclass(frozen=True)
class Passer:
    """Where a per-request value is seen to come from: what (an entry point, a call), at `path:line`,
    and the models table's row that makes it one."""

    what: str
    where: str
    row: str

    def __str__(self) -> str:
        return f"{self.what} at {self.where}, {self.row}"


def entry_passing(ev: Evaluator, hole: Hole) -> Passer | None:
    """The request entry point seen to pass a per-request value to the parameter `hole` reads (a
    guess by its name), or None when none is seen (then it stays a guess)."""
    if hole.provenance is not Provenance.REQUEST or not hole.by_name or hole.item:
        return None
    memo: dict[object, Passer | None] = ev.project.entry_passers
    key = hole.param or (hole.path, hole.line, hole.column)
    if key not in memo:
        memo[key] = _passer(ev, hole)
    return memo[key]


def _passer(ev: Evaluator, hole: Hole) -> Passer | None:
    if hole.param is not None:
        fn = _function(ev, hole.param[0])
        return None if fn is None else _walk([_Param(fn[0], fn[1], hole.param[1])])
    # an attribute of the object (`self.researcher.query`): what the classes that set it are given
    node = _attribute_at(ev, hole) if not hole.path or hole.path == ev.path else None
    cls = ev.index.scope_for(node).cls if node is not None else None
    if node is None or cls is None or not ev.constructions(cls):
        return None  # an object nobody makes reads nothing a request passes
    first: list[_Param] = []
    for found in _attribute(ev, node, 0):
        if isinstance(found, Passer):
            return found
        first.append(found)
    return _walk(first) if first else None


def _attribute_at(ev: Evaluator, hole: Hole) -> cst.Attribute | None:
    """The `self.x.y` read a hole stands for, found by its position in the checked module."""
    found: tuple[tuple[int, int], cst.Attribute] | None = None
    for node, (start, end) in ev.index.positions.items():
        here = isinstance(node, cst.Attribute) and (start[0], start[1] + 1) == (hole.line, hole.column)
        if here and (found is None or end > found[0]):  # `self.a.b`, not the `self.a` it starts with
            found = (end, node)  # type: ignore[assignment]
    return found[1] if found is not None and _rooted_at_self(found[1]) else None


def _function(ev: Evaluator, key: int) -> tuple[Evaluator, cst.FunctionDef] | None:
    """The function whose id a hole's `param` holds, among the modules read for this file."""
    for other in [ev, *ev.project.evaluators.values()]:
        for fn in other.index.bodies:
            if id(fn) == key:
                return other, fn
    return None


def _walk(start: list[_Param]) -> Passer | None:
    """Breadth first up the callers, so the nearest entry point is named."""
    level = start
    seen = {(id(p.fn), p.name) for p in start}
    steps = 0
    for _depth in range(MAX_DEPTH):
        following: list[_Param] = []
        for param in level:
            steps += 1
            if steps > MAX_STEPS:
                return None
            for found in _step(param):
                if isinstance(found, Passer):
                    return found
                key = (id(found.fn), found.name)
                if key not in seen:
                    seen.add(key)
                    following.append(found)
        if not following:
            return None
        level = following
    return None


def _place(ev: Evaluator, node: cst.CSTNode) -> str:
    line = ev.index.pos(node)[0]
    path = os.path.relpath(ev.path, ev.project.root)
    return f"{ev.path if path.startswith('..') else path}:{line}"


def _step(param: _Param) -> Iterator[Passer | _Param]:
    """What the calls of `param`'s function pass for it: a passer, or the callers' own parameters."""
    ev, fn = param.ev, param.fn
    entry = ev.project.frameworks.entry_point(ev.index, fn, param.name)
    if entry is not None:
        yield Passer(f"`{fn.name.value}()`", _place(ev, fn.name), entry.name)
        return
    cls = ev.index.class_of.get(fn)
    made = fn.name.value == "__init__" and cls is not None
    sites = ev.constructions(cls) if made and cls is not None else ev.callers(fn)
    for site_ev, call in sites[:MAX_CALLERS]:
        node = _argument(site_ev, fn, call, param.name)
        if node is not None:
            yield from _sources(site_ev, node, 0)


def _argument(ev: Evaluator, fn: cst.FunctionDef, call: cst.Call, name: str) -> cst.BaseExpression | None:
    """What `call` passes for parameter `name` of `fn`: by keyword, by position, or as a key of a
    `**params` dict written as a literal."""
    positional = positional_parameters(fn)
    at = positional.index(name) if name in positional else -1
    position = 0
    for arg in call.args:
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg.value
        elif arg.star == "**":
            found = _dict_key(ev, arg.value, name)
            if found is not None:
                return found
        elif arg.star == "*":
            position = -(10**6)  # what follows a `*args` has no position we know
        else:
            if position == at:
                return arg.value
            position += 1
    return None


def _dict_key(ev: Evaluator, node: cst.BaseExpression, key: str) -> cst.BaseExpression | None:
    literal = ev.index.assigned(node) if isinstance(node, cst.Name) else node
    if not isinstance(literal, cst.Dict):
        return None
    for element in literal.elements:
        literal_key = isinstance(element, cst.DictElement) and isinstance(element.key, cst.SimpleString)
        if literal_key and element.key.evaluated_value == key:  # type: ignore[union-attr]
            return element.value
    return None


def _sources(ev: Evaluator, node: cst.BaseExpression, hops: int) -> Iterator[Passer | _Param]:
    """Where the value of `node` comes from, as far as one function shows: a request row's call, or
    the parameters of its function it is made from (each then followed to its callers)."""
    if hops > MAX_HOPS:
        return
    frameworks = ev.project.frameworks
    if isinstance(node, cst.Await):
        yield from _sources(ev, node.expression, hops + 1)
        return
    request = (
        frameworks.match_request(ev.index, node) if isinstance(node, (cst.Call, cst.Attribute)) else None
    )
    if request is not None:
        yield Passer(f"`{ev.label(node)}`", _place(ev, node), request.name)
        return
    if isinstance(node, cst.Call):
        # a value made from a per-request one (`json.loads(data)`, `query.strip()`) is per request
        if isinstance(node.func, cst.Attribute):
            yield from _sources(ev, node.func.value, hops + 1)
        for arg in node.args[:3]:
            if arg.keyword is None and not arg.star:
                yield from _sources(ev, arg.value, hops + 1)
    elif isinstance(node, cst.Attribute):
        if _rooted_at_self(node):
            yield from _attribute(ev, node, hops)
        else:  # a field of a per-request object (`request.task`, `args.query`)
            yield from _sources(ev, node.value, hops + 1)
    elif isinstance(node, cst.Subscript):
        yield from _sources(ev, node.value, hops + 1)
    elif isinstance(node, cst.Name):
        yield from _name(ev, node, hops)
    elif isinstance(node, cst.FormattedString):
        for part in node.parts:
            if isinstance(part, cst.FormattedStringExpression):
                yield from _sources(ev, part.expression, hops + 1)
    elif isinstance(node, cst.BinaryOperation):
        yield from _sources(ev, node.left, hops + 1)
        yield from _sources(ev, node.right, hops + 1)


def _name(ev: Evaluator, node: cst.Name, hops: int) -> Iterator[Passer | _Param]:
    scope = ev.index.scope_for(node)
    owner = scope.node
    if isinstance(owner, cst.FunctionDef) and node.value in scope.params and node.value not in scope.bindings:
        if node.value not in ("self", "cls"):  # the object itself: what it holds is read as attributes
            yield _Param(ev, owner, node.value)
        return
    assigned = ev.index.assigned(node)
    if assigned is None:  # `task, kind = extract(data)`: what the unpacked value is made from
        here = ev.index.pos(node)
        bound = [b for b in scope.bindings.get(node.value, ()) if b.pos < here and b.kind == "unpack"]
        assigned = bound[-1].expr if bound else None
    if assigned is not None:
        yield from _sources(ev, assigned, hops + 1)


def _rooted_at_self(node: cst.Attribute) -> bool:
    base: cst.BaseExpression = node
    while isinstance(base, cst.Attribute):
        base = base.value
    return isinstance(base, cst.Name) and base.value == "self"


def _attribute(ev: Evaluator, node: cst.Attribute, hops: int) -> Iterator[Passer | _Param]:
    """`self.query` (this class's), or `self.researcher.query` (an object of a class not seen
    here): what the `self.query = ...` assignments of the classes that make one are made from,
    this class first, then the project's (a text search, the nearest modules first)."""
    attr = node.attr.value
    cls = ev.index.scope_for(node).cls
    if isinstance(node.value, cst.Name) and cls is not None:
        own = ev.index.instance_attrs.get((cls.name.value, attr))
        if own:
            for binding in own:
                if binding.expr is not None:
                    yield from _sources(ev, binding.expr, hops + 1)
            return
    pattern = r"self\." + re.escape(attr) + r"\s*=[^=]"
    here = os.path.abspath(ev.path)
    # an object is named after its class (`self.researcher` holds a `GPTResearcher`): the modules
    # defining a class so named first, then the nearest
    receiver = node.value.attr.value if isinstance(node.value, cst.Attribute) else ""
    named = re.compile(r"^class\s+\w*" + re.escape(receiver.strip("_").replace("_", "")), re.I | re.M)
    paths = sorted(
        texts_matching(ev.project, attr, pattern),
        key=lambda p: (
            not (receiver and named.search(read_text(p) or "")),
            -len(os.path.commonpath([p, here])),
            p,
        ),
    )[:MAX_ATTRIBUTE_MODULES]
    for path in paths:
        other = ev.evaluator(path)
        if other is None:
            continue
        for (_owner, name), bindings in sorted(other.index.instance_attrs.items()):
            if name != attr:
                continue
            for binding in bindings:
                if binding.expr is not None:
                    yield from _sources(other, binding.expr, hops + 1)
