"""How a module's histories are found: one pass over the CST that records, for each history, where it
is appended to, cut from the head, filtered by role, emptied or written into at its last message,
with the function, loops and tests around each place; and every call, and every framework memory
given to one. `NEEDLES` is the text a module must contain for any of it: a module without it costs
no walk.
"""

from __future__ import annotations

import re

import libcst as cst

from prefixlint.python.cstwalk import kids, nodes
from prefixlint.python.evaluate import Evaluator
from prefixlint.python.history.facts import Facts, Key, Op, Site, literal_int, snippet
from prefixlint.python.history.shapes import (
    calls_in,
    counts_down,
    empty,
    from_head,
    has_continue,
    head_slices,
    is_none,
    key_of,
    last_of,
    mentions,
    only_skips,
    reassigned_from_loop,
    role_filters,
    statements,
    stepped,
    summarising,
    tests_role,
)
from prefixlint.python.memories import passed_in
from prefixlint.python.scopes import ModuleIndex

# Text one of the shapes needs: a module without any of it costs no walk.
NEEDLES = re.compile(
    r"\.pop\(\s*\d|\.popleft\(|maxlen\s*=|\bdel\s+[\w.]+\["  # pop(0), deque(maxlen=), del h[0]
    r"|\[\s*-[^\]\[:]*:\s*\]|\[\s*[A-Za-z_][\w.()+\- ]*:\s*\]"  # h[-N:], h[k:]
    r"|role[\"')\]]*\s*(?:not\s+in|in|==|!=)\s|isinstance\(\s*\w+\s*,\s*\(?\w*Message"  # role filters
    r"|\[-1\]\s*(?:\[[^\]]+\]|\.\w+)?\s*\+?=(?!=)"  # h[-1]["content"] += ...
    r"|\bfor\s+\w+\s+in\s+[\w.]*\.(?:steps|history|messages|conversation|turns)\b"  # entries emptied
    r"|-=\s*1\s*\n\s*continue\b"  # a counter that skips the oldest
)


_APPENDS = {"append", "extend", "appendleft", "insert"}
_STORES = re.compile(r"^(?:append|add|extend|push|store|save|record)")


class Walk:
    """Collects, in one pass over the module, the appends, head drops, filters and sinks."""

    def __init__(self, index: ModuleIndex, ev: Evaluator) -> None:
        self.index, self.ev = index, ev
        self.facts = Facts(frameworks=ev.project.frameworks)
        self.fns: list[cst.FunctionDef] = []
        self.loops: list[cst.CSTNode] = []
        self.tests: list[cst.BaseExpression] = []

    def site(self, node: cst.CSTNode) -> Site:
        found = Site(node, self.fns[-1] if self.fns else None, tuple(self.loops), tuple(self.tests))
        self.facts.sites[id(node)] = found
        return found

    def key(self, node: cst.BaseExpression) -> Key | None:
        return key_of(self.index, node)

    def run(self, module: cst.Module) -> None:
        """Each node once, with the function, loops and `if` tests around it (the handlers are
        named as a libcst visitor's; libcst's own visit rebuilds every node, ten times slower)."""
        stack: list[tuple[cst.CSTNode, cst.FunctionDef | None, tuple, tuple]] = [(module, None, (), ())]
        while stack:
            node, fn, loops, tests = stack.pop()
            self.fns = [fn] if fn is not None else []
            self.loops, self.tests = list(loops), list(tests)
            kind = type(node)
            handler = _HANDLERS.get(kind)
            if handler is not None:
                handler(self, node)
            if kind is cst.FunctionDef:
                fn, loops, tests = node, (), ()
            elif kind is cst.For or kind is cst.While:
                loops = (*loops, node)
            elif kind is cst.If:
                stack.append((node.test, fn, loops, tests))
                stack.append((node.body, fn, loops, (*tests, node.test)))
                if node.orelse is not None:
                    stack.append((node.orelse, fn, loops, tests))
                continue
            stack.extend((child, fn, loops, tests) for child in reversed(kids(node)))

    def visit_For(self, node: cst.For) -> None:
        self._counter_skip(node)
        self._role_skip(node)
        self._clears(node)

    def visit_Subscript(self, node: cst.Subscript) -> None:
        self.site(node)
        key = self.key(node.value)
        if key is not None and head_slices(self.index, node, key):
            self.facts.shapes = True

    def visit_ListComp(self, node: cst.ListComp) -> None:
        self._comprehension(node)

    def visit_GeneratorExp(self, node: cst.GeneratorExp) -> None:
        self._comprehension(node)

    def _comprehension(self, node: cst.ListComp | cst.GeneratorExp) -> None:
        self.site(node)
        key = self.key(node.for_in.iter)
        if key is not None and role_filters(self.index, node, key):
            self.facts.shapes = True

    # appends and drops
    def visit_Call(self, node: cst.Call) -> None:
        func = node.func
        if isinstance(func, cst.Attribute):
            key = self.key(func.value)
            method = func.attr.value
            if key is not None and method in _APPENDS:
                self.facts.appends.setdefault(key, []).append(self.site(node))
            elif (
                key is not None
                and method == "pop"
                and node.args
                and (literal_int(node.args[0].value) or 0) >= 0
            ):
                if literal_int(node.args[0].value) is not None:
                    self._op("head", key, node, f"`{snippet(node)}` drops a message from the head")
            elif key is not None and method == "popleft":
                self._op("head", key, node, f"`{snippet(node)}` drops the oldest message")
        site = self.site(node)
        self.facts.calls.append((node, site))
        if node.args and self.facts.frameworks is not None:
            reach = passed_in(self.index, self.facts.frameworks, node)
            if reach is not None:
                self.facts.memories.append((reach, site))

    def visit_Del(self, node: cst.Del) -> None:
        targets = node.target.elements if isinstance(node.target, cst.Tuple) else [node.target]
        for target in targets:
            target = target.value if isinstance(target, cst.Element) else target
            if not isinstance(target, cst.Subscript) or len(target.slice) != 1:
                continue
            key = self.key(target.value)
            sl = target.slice[0].slice
            head = (
                isinstance(sl, cst.Index)
                and (literal_int(sl.value) or 0) >= 0
                and literal_int(sl.value) is not None
            ) or (isinstance(sl, cst.Slice) and from_head(sl))
            if key is not None and head:
                self._op("head", key, node, f"`{snippet(node)}` drops messages from the head")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assigned(target.target, node.value, node)
        key = self.key(node.targets[-1].target)
        if isinstance(node.value, cst.Call) and key is not None:
            self.facts.built[id(node.value)] = key

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if (
            isinstance(node.target, (cst.Name, cst.Attribute))
            and "message" in snippet(node.annotation.annotation).lower()
        ):
            self.facts.typed.add(
                node.target.value if isinstance(node.target, cst.Name) else node.target.attr.value
            )
        if node.value is not None:
            self._assigned(node.target, node.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        key = self.key(node.target)
        if key is not None and isinstance(node.operator, cst.AddAssign) and isinstance(node.value, cst.List):
            self.facts.appends.setdefault(key, []).append(self.site(node))
        self._moving(node.target, node)

    def _assigned(self, target: cst.BaseExpression, value: cst.BaseExpression, node: cst.CSTNode) -> None:
        self._moving(target, node)
        key = self.key(target)
        if key is None:
            return
        if isinstance(value, cst.Call) and any(
            a.keyword is not None and a.keyword.value == "maxlen" and not is_none(a.value) for a in value.args
        ):
            self._op(
                "head", key, node, f"`{snippet(value)}` drops the oldest message once it is full", once=False
            )
            return
        if self._in_init():
            return  # set up once, before any turn
        for sl in head_slices(self.index, value, key):
            if not stepped(self.index, sl, key, tuple(self.tests)) or summarising(self.site(node)):
                self._op("head", key, node, f"`{snippet(sl)}` keeps only the newest messages")
        for comp in role_filters(self.index, value, key):
            self._op("filter", key, node, f"`{snippet(comp)}` drops messages by role")

    def _in_init(self) -> bool:
        return bool(self.fns) and self.fns[-1].name.value in ("__init__", "__post_init__", "reset", "clear")

    def _op(self, kind: str, key: Key, node: cst.CSTNode, what: str, once: bool = True) -> None:
        if once and (not self.fns or self._in_init()):
            return  # module-level code, or the constructor: it runs once, before any turn
        self.facts.ops.append(Op(kind, key, self.site(node), what))

    def _counter_skip(self, node: cst.For) -> None:
        """`for m in history: if drop > 0: drop -= 1; continue` then `history = kept`: the oldest
        `drop` messages are skipped, a sliding window written as a loop."""
        key = self.key(node.iter)
        if key is None:
            return
        for stmt in statements(node.body, deep=True):
            if isinstance(stmt, cst.If) and has_continue(stmt.body) and counts_down(stmt.body):
                rebuilt = reassigned_from_loop(self.fns[-1] if self.fns else None, key, self.index)
                if rebuilt:
                    self._op("head", key, stmt, "a counter skips the oldest messages (a sliding window)")
                return

    def _role_skip(self, node: cst.For) -> None:
        """`for m in trace: if m.role not in (USER, ASSISTANT): continue; store(m)`: messages of
        some roles (tool results) do not reach the history the next turn sends."""
        for stmt in statements(node.body, deep=True):
            if not (isinstance(stmt, cst.If) and only_skips(stmt.body) and tests_role(stmt.test)):
                continue
            tested = {n.value for n in nodes(node.target, cst.Name)} | {
                n.value for n in nodes(stmt.test, cst.Name)
            }
            for call in calls_in(node.body):
                func = call.func
                if not isinstance(func, cst.Attribute) or not mentions(call, tested):
                    continue
                key = self.key(func.value) if func.attr.value in _APPENDS else None
                if key is not None and key[0] == "name" and key[1] != id(self.index.module_scope.node):
                    key = None  # a list this loop fills (a transcript), not a history kept across turns
                if key is None and self._stores(func):
                    key = ("stored", snippet(func))
                if key is not None:
                    self._op(
                        "filter", key, stmt, f"`{snippet(stmt.test)}` keeps only some roles in the history"
                    )
                    return
            return

    def _clears(self, node: cst.For) -> None:
        """`for step in self.memory.steps: if step.number <= now - 2: step.images = None`: a field
        of some earlier entries of a kept history is emptied, so what was sent with them is gone
        from the next request."""
        key = self.key(node.iter)
        if key is None or key[0] != "attr":
            return
        names = {n.value for n in nodes(node.target, cst.Name)}
        for stmt in statements(node.body, deep=True):
            if not isinstance(stmt, cst.If):
                continue
            for inner in statements(stmt.body):
                targets = [t.target for t in inner.targets] if isinstance(inner, cst.Assign) else []
                if not (isinstance(inner, cst.Assign) and empty(inner.value)):
                    continue
                for target in targets:
                    owner = target.value if isinstance(target, (cst.Attribute, cst.Subscript)) else None
                    if isinstance(owner, cst.Name) and owner.value in names:
                        self._op(
                            "clear", key, inner, f"`{snippet(inner)}` empties a field of earlier entries"
                        )
                        return

    def _stores(self, func: cst.Attribute) -> bool:
        """`node.append_input(m)`, `self.memory.add(m)`: a method that keeps what it is given on an
        object that outlives the loop (a parameter or an attribute), not a set or list made here."""
        method, receiver = func.attr.value, func.value
        if not _STORES.match(method) or not (isinstance(receiver, cst.Attribute) or "_" in method):
            return False
        if isinstance(receiver, cst.Name):
            scope = self.index.scope_for(receiver)
            return receiver.value in scope.params
        return isinstance(receiver, cst.Attribute)

    def _moving(self, target: cst.BaseExpression, node: cst.CSTNode) -> None:
        """`messages[-1]["content"] += env` / `messages[-1] = {...}`: the last message, written."""
        last = last_of(target)
        if last is None:
            return
        self.facts.ops.append(
            Op("moving", ("last", last is target), self.site(node), f"`{snippet(target)}`", base=last.value)
        )


_HANDLERS = {
    cst.For: Walk.visit_For,
    cst.Subscript: Walk.visit_Subscript,
    cst.ListComp: Walk.visit_ListComp,
    cst.GeneratorExp: Walk.visit_GeneratorExp,
    cst.Call: Walk.visit_Call,
    cst.Del: Walk.visit_Del,
    cst.Assign: Walk.visit_Assign,
    cst.AnnAssign: Walk.visit_AnnAssign,
    cst.AugAssign: Walk.visit_AugAssign,
}
