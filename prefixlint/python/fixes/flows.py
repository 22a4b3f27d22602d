"""Where a volatile value goes in the checked file: from the expression a finding points at, through
names, calls that convert it, `return`s and `yield`s, to the text it is written into or the list
or statement sequence it is one item of. Read from the tree alone, as the frontend does."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from prefixlint.python.fixes import messages
from prefixlint.python.fixes.source import Source, callee, read_only_visits
from prefixlint.python.fixes.text import Piece, build, outermost
from prefixlint.python.scopes import unchecked_nodes

_MAX_DEPTH = 8


@dataclass(frozen=True)
class InText:
    """The value is atom `index` of the text `root` (a `.format` template when `template`)."""

    root: Piece
    index: int
    template: bool = False


@dataclass(frozen=True)
class InList:
    """The value is `element` of the list `seq` (joined into text, or a message list); `whole`:
    all of the element's text varies with it (it is not one value among static text)."""

    seq: cst.List | cst.Tuple
    element: cst.Element
    whole: bool = False


@dataclass(frozen=True)
class InStatements:
    """The value is what the statement `stmt` yields, among the yields of its block."""

    stmt: cst.SimpleStatementLine


Flow = InText | InList | InStatements


def flows(src: Source, node: cst.CSTNode) -> Iterator[Flow]:
    """Where the volatile value `node` (all of whose text varies) goes."""
    yield from _flows(src, node, set(), 0, True)


def _flows(src: Source, node: cst.CSTNode, seen: set[int], depth: int, whole: bool) -> Iterator[Flow]:
    if depth > _MAX_DEPTH or id(node) in seen:
        return
    seen.add(id(node))
    child, parent = node, src.parent(node)
    while parent is not None:
        if isinstance(parent, cst.FormattedStringExpression):
            if child is not parent.expression:
                return  # a format spec
            yield from _in_text(src, src.parent(parent), parent)  # type: ignore[arg-type]
            return
        if isinstance(parent, cst.BinaryOperation) and isinstance(parent.operator, cst.Add):
            yield from _in_text(src, child, child)
            return
        if isinstance(parent, cst.Arg) and parent.keyword is not None and _is_format(src, parent):
            yield from _in_template(src, parent)
            return
        if (reads := src.reads_of(child)) is not None:
            for ref in reads:
                yield from _flows(src, ref, seen, depth + 1, whole)
            return
        if isinstance(parent, cst.Expr) and _shuffles(child):
            # `random.shuffle(xs)` changes xs in place: what reads xs afterwards carries it
            for ref in _later_reads(src, child.args[0].value, parent):  # type: ignore[attr-defined]
                yield from _flows(src, ref, seen, depth + 1, whole)
            return
        if isinstance(parent, cst.Return) and child is parent.value:
            for call in calls_of(src, parent):
                yield from _flows(src, call, seen, depth + 1, whole)
            return
        if (message := messages.holding(child, parent, src.parent(parent))) is not None:
            if not whole:
                return  # one value among a message's text: the message cannot move for it
            child, parent = message, src.parent(message)
            continue
        if isinstance(parent, cst.Element) and isinstance(seq := src.parent(parent), (cst.List, cst.Tuple)):
            yield InList(seq, parent, whole)
            return
        if isinstance(parent, (cst.Yield, cst.From)):
            yield from _yielded(src, parent, seen, depth, whole)
            return
        carried = _carries(parent, child)
        if carried is None:
            return
        whole = whole and carried
        child, parent = parent, src.parent(parent)


# Calls whose result is all their first argument's text (converted, or its items joined).
_WHOLE_CALLS = {"str", "repr", "format", "sorted", "list", "tuple", "join", "strip", "isoformat", "strftime"}


def _carries(parent: cst.CSTNode, child: cst.CSTNode) -> bool | None:
    """Whether what `parent` makes of `child` still carries it: None when not, else whether all
    of the result's text still varies with it (a conversion, a method of it, a join of it)."""
    if isinstance(parent, cst.Arg):
        return True  # the call above says
    if isinstance(parent, cst.Call):
        return child is parent.func or callee(parent) in _WHOLE_CALLS
    if isinstance(parent, (cst.Attribute, cst.Subscript)):
        return True if child is parent.value else None
    if isinstance(parent, cst.CompFor):
        return False if child is parent.iter else None
    if isinstance(parent, (cst.IfExp, cst.BooleanOperation, cst.Await, cst.StarredElement)):
        return True
    if isinstance(parent, (cst.GeneratorExp, cst.ListComp, cst.BinaryOperation, cst.UnaryOperation)):
        return False
    return None


def _in_text(src: Source, part: cst.CSTNode, value: cst.CSTNode) -> Iterator[InText]:
    """The text that `part` (a literal or an operand) is part of, with `value` (a replacement
    field of it, or the operand) as one of its atoms."""
    root = build(src, outermost(src, part))
    if root is None:
        return
    for i, atom in enumerate(root.all_atoms()):
        if atom.node is value:
            yield InText(root, i)
            return


def _is_format(src: Source, arg: cst.Arg) -> bool:
    call = src.parent(arg)
    return (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and call.func.attr.value == "format"
        and arg in call.args
    )


def template_of(src: Source, receiver: cst.BaseExpression) -> Piece | None:
    """The literal text a `.format` is called on: written there, or a name assigned it once."""
    if isinstance(receiver, cst.Name):
        value = src.assigned(receiver)
        if value is None:
            return None
        receiver = value
    return build(src, receiver, template=True)


def _in_template(src: Source, arg: cst.Arg) -> Iterator[InText]:
    call = src.parent(arg)
    assert isinstance(call, cst.Call) and isinstance(call.func, cst.Attribute) and arg.keyword is not None
    root = template_of(src, call.func.value)
    if root is None:
        return
    hits = [
        i for i, a in enumerate(root.all_atoms()) if a.kind == "placeholder" and a.name == arg.keyword.value
    ]
    if len(hits) == 1:  # a value written twice would have to move twice
        yield InText(root, hits[0], template=True)


def _shuffles(node: cst.CSTNode) -> bool:
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, (cst.Attribute, cst.Name))
        and callee(node) == "shuffle"
        and bool(node.args)
        and isinstance(node.args[0].value, cst.Name)
    )


def _later_reads(src: Source, name: cst.Name, stmt: cst.CSTNode) -> list[cst.Name]:
    """The reads of what `name` reads, written after the statement `stmt`."""
    end = src.inner(stmt)[1]
    out = []
    for bound in src.bindings(name):
        if isinstance(bound, cst.Name):
            out += [r for r in src.references(bound) if src.inner(r)[0] >= end]
    return out


def _enclosing_function(src: Source, node: cst.CSTNode) -> cst.FunctionDef | None:
    for a in src.ancestors(node):
        if isinstance(a, (cst.FunctionDef, cst.Lambda)):
            return a if isinstance(a, cst.FunctionDef) else None
    return None


def calls_of(src: Source, inside: cst.CSTNode) -> list[cst.Call]:
    """The calls in this module of the function `inside` is in: by its name, or as `self.name()`
    within its class."""
    fn = _enclosing_function(src, inside)
    if fn is None:
        return []
    owner = src.parent(src.parent(fn) or fn)
    if isinstance(owner, cst.ClassDef):
        out: list[cst.Call] = []
        with unchecked_nodes(), read_only_visits(src.children):  # a read-only visit
            owner.visit(_MethodCalls(fn.name.value, out))
        return out
    return [
        call
        for ref in src.references(fn)
        if isinstance(call := src.parent(ref), cst.Call) and call.func is ref
    ]


class _MethodCalls(cst.CSTVisitor):
    def __init__(self, name: str, out: list[cst.Call]) -> None:
        self.name, self.out = name, out

    def visit_Call(self, node: cst.Call) -> None:
        f = node.func
        if (
            isinstance(f, cst.Attribute)
            and f.attr.value == self.name
            and isinstance(f.value, cst.Name)
            and f.value.value in ("self", "cls")
        ):
            self.out.append(node)


def _yielded(
    src: Source, node: cst.Yield | cst.From, seen: set[int], depth: int, whole: bool
) -> Iterator[Flow]:
    """A value yielded: its `yield` statement among the yields after it, then each
    `yield from` of the generator."""
    yield_node = src.parent(node) if isinstance(node, cst.From) else node
    expr = src.parent(yield_node) if yield_node is not None else None
    stmt = src.parent(expr) if isinstance(expr, cst.Expr) else None
    if isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1:
        yield InStatements(stmt)
    if isinstance(node, cst.Yield):
        for call in calls_of(src, node):
            yield from _flows(src, call, seen, depth + 1, whole)
