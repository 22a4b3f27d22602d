"""What a request sends of a history: the arguments of a call that carry the conversation to a model
(a modelled sink's messages, or what a project function that reaches one is given), followed back
through the function's own assignments, copies and `self.method()` returns to the histories they are
made of, with the head slices, role filters and framework memory reads met on the way.
"""

from __future__ import annotations

import libcst as cst

from prefixlint.python.cstwalk import nodes
from prefixlint.python.evaluate import Env, Evaluator
from prefixlint.python.frameworks import SinkModel
from prefixlint.python.history.facts import Facts, Key, Op, Sent, Site, snippet
from prefixlint.python.history.shapes import head_slices, key_of, role_filters, stepped, summarising
from prefixlint.python.memories import read_of
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.summaries import requests_at_call

_SENT_PARTS = ("messages", "prompt")
# A wrapper's argument that carries the conversation (positional ones always may).
_HISTORY_KEYWORDS = {"messages", "history", "chat_history", "conversation", "input", "inputs", "contents"}


_COPIES = {"copy.deepcopy", "deepcopy"}
_FOLLOW_DEPTH = 3


def sent_args(ev: Evaluator, index: ModuleIndex, node: cst.Call) -> list[cst.BaseExpression]:
    """The arguments of a call that carry the conversation to a model: a modelled sink's messages,
    or what is passed to a project function that reaches one."""
    row = ev.project.frameworks.match_call(index, node)
    sent: list[cst.BaseExpression] = []
    if isinstance(row, SinkModel):
        position = 0
        for arg in node.args:
            if arg.star:
                continue
            keyword = arg.keyword.value if arg.keyword is not None else None
            if row.part_of(keyword, position) in _SENT_PARTS:
                sent.append(arg.value)
            if keyword is None:
                position += 1
    elif row is None and _may_wrap(node):
        try:
            if requests_at_call(ev, node, Env()):
                sent = [
                    a.value
                    for a in node.args
                    if not a.star and (a.keyword is None or a.keyword.value in _HISTORY_KEYWORDS)
                ]
        except RecursionError:
            return []
    return sent


def _may_wrap(node: cst.Call) -> bool:
    """Only a call given something a history could be is asked whether it wraps a sink."""
    return any(
        not a.star
        and (a.keyword is None or a.keyword.value in _HISTORY_KEYWORDS)
        and isinstance(a.value, (cst.Name, cst.Attribute, cst.Subscript, cst.ListComp, cst.BinaryOperation))
        for a in node.args
    )


def follow(
    index: ModuleIndex,
    facts: Facts,
    node: cst.BaseExpression,
    out: Sent,
    depth: int = 0,
    at: Site | None = None,
) -> None:
    """The histories an expression sent to a model is made of, and the head slices and role
    filters on the way (each where it is written); the framework memories read into it, each with
    where it is read (else `at`, where it is sent)."""
    if depth > _FOLLOW_DEPTH:
        return
    for root in _roots(node):
        if facts.frameworks is not None and isinstance(root, (cst.Call, cst.Attribute)):
            reach = read_of(index, facts.frameworks, root)
            if reach is not None:
                site = facts.sites.get(id(root), at)
                if site is not None:
                    out.memories.append((reach, site))
                continue
        if isinstance(root, cst.Subscript):
            inner = key_of(index, root.value)
            site = facts.sites.get(id(root))
            for sl in head_slices(index, root, inner) if inner is not None and site is not None else ():
                if not stepped(index, sl, inner, site.tests) or summarising(site):
                    out.ops.append(
                        Op("head", inner, site, f"`{snippet(sl)}` keeps only the newest messages", True)
                    )
            continue
        if isinstance(root, (cst.ListComp, cst.GeneratorExp)):
            inner = key_of(index, root.for_in.iter)
            site = facts.sites.get(id(root))
            for f in role_filters(index, root, inner) if inner is not None and site is not None else ():
                out.ops.append(Op("filter", inner, site, f"`{snippet(f)}` drops messages by role", True))
            continue
        if isinstance(root, cst.Call):  # `self._window()`: what the method returns
            method = _method(index, root)
            body = index.bodies.get(method) if method is not None else None
            for ret in body.returns if body is not None else ():
                if ret.value is not None:
                    follow(index, facts, ret.value, out, depth + 1, at)
            continue
        key = key_of(index, root)
        if key is None or key in out.keys:
            continue
        out.keys.add(key)
        if isinstance(root, cst.Name) and key[0] == "name":
            for expr in _bound_exprs(index, root):
                _note_copies(index, key, expr, out)
                follow(index, facts, expr, out, depth + 1, at)


# Calls whose result holds the same messages as their argument (or receiver, for a method).
_SAME_ITEMS = {"list", "tuple", "copy", "deepcopy", "copy.copy", "copy.deepcopy", "reversed"}
_SAME_ITEMS_METHODS = {"copy", "model_copy"}


def _roots(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What a list of messages is made of, along the list itself (not into a message's content,
    nor into what an arbitrary call is given): whole names and attribute chains (`self.history`,
    not `self`), the subscripts and comprehensions on the way (each also followed to what it
    reads), and `self.method()` calls."""
    out: list[cst.BaseExpression] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, (cst.Name, cst.Attribute)):
            out.append(n)
        elif isinstance(n, cst.Subscript):
            out.append(n)
            stack.append(n.value)
        elif isinstance(n, (cst.ListComp, cst.GeneratorExp)):
            out.append(n)
            stack.append(n.for_in.iter)
        elif isinstance(n, cst.Call):
            func = n.func
            if (
                isinstance(func, cst.Attribute)
                and isinstance(func.value, cst.Name)
                and func.value.value == "self"
            ):
                out.append(n)
            elif isinstance(func, cst.Attribute) and func.attr.value in _SAME_ITEMS_METHODS:
                stack.append(func.value)
            elif snippet(func) in _SAME_ITEMS and n.args:
                stack.append(n.args[0].value)
            else:
                out.append(n)  # what it returns may be a framework memory's messages (memories.py)
        elif isinstance(n, cst.Await):
            stack.append(n.expression)
        elif isinstance(n, (cst.List, cst.Tuple)):
            stack.extend(e.value for e in n.elements)
        elif isinstance(n, cst.StarredElement):
            stack.append(n.value)
        elif isinstance(n, cst.BinaryOperation) and isinstance(n.operator, cst.Add):
            stack += [n.left, n.right]
        elif isinstance(n, cst.IfExp):
            stack += [n.body, n.orelse]
        elif isinstance(n, cst.BooleanOperation):
            stack += [n.left, n.right]
    return out


def _bound_exprs(index: ModuleIndex, name: cst.Name) -> list[cst.BaseExpression]:
    scope = index.scope_for(name)
    bindings = scope.bindings.get(name.value, ())
    return [
        b.expr
        for b in bindings
        if b.expr is not None and b.kind in ("assign", "aug", "append", "prepend", "extend")
    ]


def _method(index: ModuleIndex, call: cst.Call) -> cst.FunctionDef | None:
    func = call.func
    if not (
        isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and func.value.value == "self"
    ):
        return None
    cls = index.scope_for(call).cls
    return index.methods.get((cls.name.value, func.attr.value)) if cls is not None else None


def _note_copies(index: ModuleIndex, local: Key, expr: cst.BaseExpression, out: Sent) -> None:
    """What `local = expr` copies: histories copied message by message (`copy.deepcopy(h)`,
    `[dict(m) for m in h]`), and any history it is made from (`list(h)`, `h + [...]`)."""
    for call in nodes(expr, cst.Call):
        names = index.qualified_names(call.func) | {snippet(call.func)}
        if names & _COPIES and call.args:
            inner = key_of(index, call.args[0].value)
            if inner is not None:
                out.copies.setdefault(local, set()).add(inner)
    for comp in nodes(expr, cst.ListComp):
        inner = key_of(index, comp.for_in.iter)
        if inner is not None and not isinstance(comp.elt, cst.Name):
            out.copies.setdefault(local, set()).add(inner)
    for root in _roots(expr):
        inner = key_of(index, root) if not isinstance(root, cst.Call) else None
        if inner is not None and inner != local:
            out.shallow.setdefault(local, set()).add(inner)
