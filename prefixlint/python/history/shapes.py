"""How a history is rewritten between turns, told from the CST: the shapes each rewrite is written in.

A slice from the head (`history[-N:]`, unless cut in one large step when full: `stepped`), a filter
by role or type, a `del`/`pop` near the head, the last message written into, a counter that skips
the oldest; and which history an expression names (`key_of`). Each is a question about nodes, asked
by the module pass (walk.py) and by the follower of what is sent (sent.py).
"""

from __future__ import annotations

import re

import libcst as cst

from prefixlint.python.cstwalk import nodes
from prefixlint.python.history.facts import Key, Site, literal_int, snippet
from prefixlint.python.scopes import ModuleIndex, string_value

_LOGS = re.compile(r"log|warn|debug|info|print", re.I)


def key_of(index: ModuleIndex, node: cst.BaseExpression) -> Key | None:
    """The history a receiver names: an attribute by its name (`self.history`, `node.input`), a
    name by the scope that binds it (a module or closure variable, or a function's local)."""
    if isinstance(node, cst.Attribute):
        return ("attr", node.attr.value)
    if not isinstance(node, cst.Name):
        return None
    scope = index.scope_for(node)
    name = node.value
    while scope is not None:
        if name in scope.params or any(
            b.kind not in ("append", "prepend", "head", "setitem") for b in scope.bindings.get(name, ())
        ):
            return ("name", id(scope.node), name)
        scope = scope.parent
    return ("name", id(index.module_scope.node), name)


def from_head(sl: cst.Slice) -> bool:
    """`del h[:k]`, `del h[1:k]`: a slice that starts at a fixed place near the head and ends
    before the tail (a computed start may as well be the tail: `del h[start:]` in a rewind)."""
    lower = literal_int(sl.lower) if sl.lower is not None else 0
    return lower is not None and lower >= 0 and sl.upper is not None and (literal_int(sl.upper) or 1) > 0


def empty(node: cst.BaseExpression) -> bool:
    """`None`, `[]`, `""`, `{}`: what a cleared field is set to."""
    if isinstance(node, (cst.List, cst.Dict)) and not node.elements:
        return True
    return is_none(node) or (isinstance(node, cst.SimpleString) and string_value(node) in ("", b""))


def is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def head_slices(index: ModuleIndex, node: cst.BaseExpression, key: Key) -> list[cst.Subscript]:
    """`history[-N:]`, `history[k:]` (k computed, or negative) inside an expression, on `key`."""
    out = []
    for sub in nodes(node, cst.Subscript):
        if len(sub.slice) != 1 or key_of(index, sub.value) != key:
            continue
        sl = sub.slice[0].slice
        if not isinstance(sl, cst.Slice) or sl.lower is None or sl.upper is not None or sl.step is not None:
            continue
        literal = literal_int(sl.lower)
        if literal is None or literal < 0:  # `[1:]` skips the same system message every turn
            out.append(sub)
    return out


def stepped(index: ModuleIndex, sub: cst.Subscript, key: Key, tests: tuple[cst.BaseExpression, ...]) -> bool:
    """`if len(h) > LIMIT: h = h[-(LIMIT // 2):]`: the history is cut in one large step when it is
    full and grows append-only until the next cut, so most turns keep the prefix (the fix the
    hint gives). Told by a length test around it and a kept part of at most half the limit."""
    lower = sub.slice[0].slice.lower  # type: ignore[union-attr]
    for test in tests:
        if not any(
            isinstance(c.func, cst.Name)
            and c.func.value == "len"
            and c.args
            and key_of(index, c.args[0].value) == key
            for c in nodes(test, cst.Call)
        ):
            continue
        if any(
            isinstance(op, (cst.FloorDivide, cst.Divide))
            for op in nodes(lower, (cst.FloorDivide, cst.Divide))
        ):
            return True
        kept, limits = literal_int(lower), [literal_int(n) for n in nodes(test, cst.Integer)]
        if kept is not None and any(limit is not None and -kept * 2 <= limit for limit in limits):
            return True
    return False


def role_filters(index: ModuleIndex, node: cst.BaseExpression, key: Key) -> list[cst.BaseExpression]:
    """`[m for m in history if m.role in (USER, ASSISTANT)]` on `key`: a filter by role or type
    that drops more than the system message (which is sent apart, the same every turn)."""
    out = []
    for comp in nodes(node, (cst.ListComp, cst.GeneratorExp)):
        fors = comp.for_in
        if key_of(index, fors.iter) == key and fors.ifs and any(tests_role(i.test) for i in fors.ifs):
            out.append(comp)
    return out


_ROLE_WORDS = {"role", "type", "message_type", "kind", "isinstance"}


def tests_role(test: cst.BaseExpression) -> bool:
    """A test on a message's role or type that keeps or drops some roles, not one that only sets
    the system message apart (it is sent apart, the same every turn)."""
    names = [n.value for n in nodes(test, cst.Name)]
    strings = [v for n in nodes(test, cst.SimpleString) if isinstance(v := string_value(n), str)]
    if not _ROLE_WORDS & {w.lower() for w in names + strings}:
        return False
    values = [w for w in strings if w.lower() not in _ROLE_WORDS]
    values += [n for n in names if n.isupper() or ("isinstance" in names and n[:1].isupper())]
    return bool(values) and not all("system" in v.lower() for v in values)


def statements(body: cst.BaseSuite, deep: bool = False) -> list[cst.CSTNode]:
    """A block's statements, small ones split out; `deep`: those inside its `try` and `with`
    blocks too (the same pass of a loop), not inside nested loops or functions."""
    out: list = []
    for stmt in getattr(body, "body", ()):
        if isinstance(stmt, cst.SimpleStatementLine):
            out += list(stmt.body)
        else:
            out.append(stmt)
            if deep and isinstance(stmt, (cst.Try, cst.With)):
                out += statements(stmt.body, deep)
    return out


def only_skips(body: cst.BaseSuite) -> bool:
    """`if ...: continue` (a log call beside it at most): the message is dropped, not handled."""
    stmts = statements(body)
    return any(isinstance(s, cst.Continue) for s in stmts) and all(
        isinstance(s, (cst.Continue, cst.Pass)) or (isinstance(s, cst.Expr) and _LOGS.search(snippet(s)))
        for s in stmts
    )


def has_continue(body: cst.BaseSuite) -> bool:
    return any(isinstance(s, cst.Continue) for s in statements(body))


def counts_down(body: cst.BaseSuite) -> bool:
    return any(
        isinstance(s, cst.AugAssign) and isinstance(s.operator, cst.SubtractAssign) for s in statements(body)
    )


def calls_in(node: cst.CSTNode) -> list[cst.Call]:
    return nodes(node, cst.Call)


def mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return any(n.value in names for n in nodes(node, cst.Name))


def reassigned_from_loop(fn: cst.FunctionDef | None, key: Key, index: ModuleIndex) -> bool:
    """Whether `fn` assigns the history `key` from a local list (the one the loop fills)."""
    if fn is None:
        return False
    for assign in nodes(fn.body, cst.Assign):
        if isinstance(assign.value, cst.Name) and any(key_of(index, t.target) == key for t in assign.targets):
            return True
    return False


def last_of(target: cst.BaseExpression) -> cst.Subscript | None:
    """The `x[-1]` a target writes into: itself, or the one its field or key is of."""
    node = target
    if (
        isinstance(node, cst.Attribute)
        or isinstance(node, cst.Subscript)
        and isinstance(node.value, cst.Subscript)
    ):
        node = node.value
    if isinstance(node, cst.Subscript) and len(node.slice) == 1:
        sl = node.slice[0].slice
        if isinstance(sl, cst.Index) and literal_int(sl.value) == -1:
            return node
    return None


def summarising(site: Site) -> bool:
    fn = site.fn
    if fn is None:
        return False
    return "summar" in fn.name.value.lower() or any(
        "summar" in snippet(c.func).lower() for c in calls_in(fn.body)
    )
