"""PFX401/PFX402 in Python: an agent's history, kept across turns, sent again rewritten.

A history is a list (or deque) that outlives one request: an attribute of an object, a module or
closure variable, or a local list appended to inside the loop that sends it. When what is sent
from it on turn N+1 does not extend what was sent on turn N, the server recomputes everything
after the first difference on every turn:

- dropped from the head (a sliding window, `pop(0)`, `deque(maxlen=…)`, a counter that skips the
  oldest): once the window is full, each request diverges right after what is kept;
- filtered by role or type (tool results dropped) on the way into the history or to the model:
  the turn that produced them sent them, the next one does not;
- a per-turn block written into the last message of a copy of the history: the previous user
  message loses it on the next turn (PFX402, the block moves with the conversation).

Read from the CST only (nothing is run). What is sent is what a modelled sink (or a project
function that reaches one, prefixlint/python/summaries.py) receives as its messages, followed
through the function's own assignments and `self.method()` returns.
"""

from __future__ import annotations

import dataclasses
import os
import re
from dataclasses import dataclass, field

import libcst as cst

from prefixlint.model import Diagnostic, Severity, Span
from prefixlint.python.evaluate import Env, Evaluator
from prefixlint.python.frameworks import Frameworks, SinkModel
from prefixlint.python.memories import Reach, passed_in, per_turn, read_of
from prefixlint.python.memories import diagnostic as memory_diagnostic
from prefixlint.python.scopes import ModuleIndex, string_value

# Text one of the shapes needs: a module without any of it costs no walk.
_NEEDLES = re.compile(
    r"\.pop\(\s*\d|\.popleft\(|maxlen\s*=|\bdel\s+[\w.]+\["  # pop(0), deque(maxlen=), del h[0]
    r"|\[\s*-[^\]\[:]*:\s*\]|\[\s*[A-Za-z_][\w.()+\- ]*:\s*\]"  # h[-N:], h[k:]
    r"|role[\"')\]]*\s*(?:not\s+in|in|==|!=)\s|isinstance\(\s*\w+\s*,\s*\(?\w*Message"  # role filters
    r"|\[-1\]\s*(?:\[[^\]]+\]|\.\w+)?\s*\+?=(?!=)"  # h[-1]["content"] += ...
    r"|\bfor\s+\w+\s+in\s+[\w.]*\.(?:steps|history|messages|conversation|turns)\b"  # entries emptied
    r"|-=\s*1\s*\n\s*continue\b"  # a counter that skips the oldest
)
_SENT_PARTS = ("messages", "prompt")
# A wrapper's argument that carries the conversation (positional ones always may).
_HISTORY_KEYWORDS = {"messages", "history", "chat_history", "conversation", "input", "inputs", "contents"}
_APPENDS = {"append", "extend", "appendleft", "insert"}
_STORES = re.compile(r"^(?:append|add|extend|push|store|save|record)")
_LOGS = re.compile(r"log|warn|debug|info|print", re.I)
_COPIES = {"copy.deepcopy", "deepcopy"}
_FOLLOW_DEPTH = 3

Key = tuple  # ("attr", name) | ("name", id(owning scope node), name)


@dataclass
class _Site:
    node: cst.CSTNode
    fn: cst.FunctionDef | None
    loops: tuple[cst.CSTNode, ...]
    tests: tuple[cst.BaseExpression, ...] = ()  # the `if` tests around it, in its function


@dataclass
class _Op:
    kind: str  # head | filter | moving
    key: Key
    site: _Site
    what: str
    at_send: bool = False
    base: cst.BaseExpression | None = None  # moving: the list whose last message is written


@dataclass
class _Facts:
    appends: dict[Key, list[_Site]] = field(default_factory=dict)
    ops: list[_Op] = field(default_factory=list)
    calls: list[tuple[cst.Call, _Site]] = field(default_factory=list)
    sites: dict[int, _Site] = field(default_factory=dict)  # id(node) -> where it is
    typed: set[str] = field(default_factory=set)  # attributes annotated as lists of messages
    shapes: bool = False  # a head slice or a role filter is written somewhere (it may be sent)
    frameworks: Frameworks | None = None  # whose `[[memory]]` rows say which memories rewrite
    memories: list[tuple[Reach, _Site]] = field(default_factory=list)  # memories given to a call
    built: dict[int, Key] = field(default_factory=dict)  # id(call) -> what its result is assigned to


def _code(node: cst.CSTNode) -> str:
    text = " ".join(cst.Module([]).code_for_node(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def _int(node: cst.BaseExpression | None) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = _int(node.expression)
        return -inner if inner is not None else None
    return None


class _Walk:
    """Collects, in one pass over the module, the appends, head drops, filters and sinks."""

    def __init__(self, index: ModuleIndex, ev: Evaluator) -> None:
        self.index, self.ev = index, ev
        self.facts = _Facts(frameworks=ev.project.frameworks)
        self.fns: list[cst.FunctionDef] = []
        self.loops: list[cst.CSTNode] = []
        self.tests: list[cst.BaseExpression] = []

    def site(self, node: cst.CSTNode) -> _Site:
        found = _Site(node, self.fns[-1] if self.fns else None, tuple(self.loops), tuple(self.tests))
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
            stack.extend((child, fn, loops, tests) for child in reversed(_kids(node)))

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
            elif key is not None and method == "pop" and node.args and (_int(node.args[0].value) or 0) >= 0:
                if _int(node.args[0].value) is not None:
                    self._op("head", key, node, f"`{_code(node)}` drops a message from the head")
            elif key is not None and method == "popleft":
                self._op("head", key, node, f"`{_code(node)}` drops the oldest message")
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
                isinstance(sl, cst.Index) and (_int(sl.value) or 0) >= 0 and _int(sl.value) is not None
            ) or (isinstance(sl, cst.Slice) and _from_head(sl))
            if key is not None and head:
                self._op("head", key, node, f"`{_code(node)}` drops messages from the head")

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._assigned(target.target, node.value, node)
        key = self.key(node.targets[-1].target)
        if isinstance(node.value, cst.Call) and key is not None:
            self.facts.built[id(node.value)] = key

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if (
            isinstance(node.target, (cst.Name, cst.Attribute))
            and "message" in _code(node.annotation.annotation).lower()
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
            a.keyword is not None and a.keyword.value == "maxlen" and not _is_none(a.value)
            for a in value.args
        ):
            self._op(
                "head", key, node, f"`{_code(value)}` drops the oldest message once it is full", once=False
            )
            return
        if self._in_init():
            return  # set up once, before any turn
        for sl in head_slices(self.index, value, key):
            if not stepped(self.index, sl, key, tuple(self.tests)) or _summarising(self.site(node)):
                self._op("head", key, node, f"`{_code(sl)}` keeps only the newest messages")
        for comp in role_filters(self.index, value, key):
            self._op("filter", key, node, f"`{_code(comp)}` drops messages by role")

    def _in_init(self) -> bool:
        return bool(self.fns) and self.fns[-1].name.value in ("__init__", "__post_init__", "reset", "clear")

    def _op(self, kind: str, key: Key, node: cst.CSTNode, what: str, once: bool = True) -> None:
        if once and (not self.fns or self._in_init()):
            return  # module-level code, or the constructor: it runs once, before any turn
        self.facts.ops.append(_Op(kind, key, self.site(node), what))

    def _counter_skip(self, node: cst.For) -> None:
        """`for m in history: if drop > 0: drop -= 1; continue` then `history = kept`: the oldest
        `drop` messages are skipped, a sliding window written as a loop."""
        key = self.key(node.iter)
        if key is None:
            return
        for stmt in _statements(node.body, deep=True):
            if isinstance(stmt, cst.If) and _has_continue(stmt.body) and _counts_down(stmt.body):
                rebuilt = _reassigned_from_loop(self.fns[-1] if self.fns else None, key, self.index)
                if rebuilt:
                    self._op("head", key, stmt, "a counter skips the oldest messages (a sliding window)")
                return

    def _role_skip(self, node: cst.For) -> None:
        """`for m in trace: if m.role not in (USER, ASSISTANT): continue; store(m)`: messages of
        some roles (tool results) do not reach the history the next turn sends."""
        for stmt in _statements(node.body, deep=True):
            if not (isinstance(stmt, cst.If) and _only_skips(stmt.body) and _tests_role(stmt.test)):
                continue
            tested = {n.value for n in _nodes(node.target, cst.Name)} | {
                n.value for n in _nodes(stmt.test, cst.Name)
            }
            for call in _calls(node.body):
                func = call.func
                if not isinstance(func, cst.Attribute) or not _mentions(call, tested):
                    continue
                key = self.key(func.value) if func.attr.value in _APPENDS else None
                if key is not None and key[0] == "name" and key[1] != id(self.index.module_scope.node):
                    key = None  # a list this loop fills (a transcript), not a history kept across turns
                if key is None and self._stores(func):
                    key = ("stored", _code(func))
                if key is not None:
                    self._op(
                        "filter", key, stmt, f"`{_code(stmt.test)}` keeps only some roles in the history"
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
        names = {n.value for n in _nodes(node.target, cst.Name)}
        for stmt in _statements(node.body, deep=True):
            if not isinstance(stmt, cst.If):
                continue
            for inner in _statements(stmt.body):
                targets = [t.target for t in inner.targets] if isinstance(inner, cst.Assign) else []
                if not (isinstance(inner, cst.Assign) and _empty(inner.value)):
                    continue
                for target in targets:
                    owner = target.value if isinstance(target, (cst.Attribute, cst.Subscript)) else None
                    if isinstance(owner, cst.Name) and owner.value in names:
                        self._op("clear", key, inner, f"`{_code(inner)}` empties a field of earlier entries")
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
        last = _last_of(target)
        if last is None:
            return
        self.facts.ops.append(
            _Op("moving", ("last", last is target), self.site(node), f"`{_code(target)}`", base=last.value)
        )


_HANDLERS = {
    cst.For: _Walk.visit_For,
    cst.Subscript: _Walk.visit_Subscript,
    cst.ListComp: _Walk.visit_ListComp,
    cst.GeneratorExp: _Walk.visit_GeneratorExp,
    cst.Call: _Walk.visit_Call,
    cst.Del: _Walk.visit_Del,
    cst.Assign: _Walk.visit_Assign,
    cst.AnnAssign: _Walk.visit_AnnAssign,
    cst.AugAssign: _Walk.visit_AugAssign,
}


def _sent_args(ev: Evaluator, index: ModuleIndex, node: cst.Call) -> list[cst.BaseExpression]:
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
        from prefixlint.python.summaries import requests_at_call

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


def _from_head(sl: cst.Slice) -> bool:
    """`del h[:k]`, `del h[1:k]`: a slice that starts at a fixed place near the head and ends
    before the tail (a computed start may as well be the tail: `del h[start:]` in a rewind)."""
    lower = _int(sl.lower) if sl.lower is not None else 0
    return lower is not None and lower >= 0 and sl.upper is not None and (_int(sl.upper) or 1) > 0


def _empty(node: cst.BaseExpression) -> bool:
    """`None`, `[]`, `""`, `{}`: what a cleared field is set to."""
    if isinstance(node, (cst.List, cst.Dict)) and not node.elements:
        return True
    return _is_none(node) or (isinstance(node, cst.SimpleString) and string_value(node) in ("", b""))


def _is_none(node: cst.BaseExpression) -> bool:
    return isinstance(node, cst.Name) and node.value == "None"


def head_slices(index: ModuleIndex, node: cst.BaseExpression, key: Key) -> list[cst.Subscript]:
    """`history[-N:]`, `history[k:]` (k computed, or negative) inside an expression, on `key`."""
    out = []
    for sub in _nodes(node, cst.Subscript):
        if len(sub.slice) != 1 or key_of(index, sub.value) != key:
            continue
        sl = sub.slice[0].slice
        if not isinstance(sl, cst.Slice) or sl.lower is None or sl.upper is not None or sl.step is not None:
            continue
        literal = _int(sl.lower)
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
            for c in _nodes(test, cst.Call)
        ):
            continue
        if any(
            isinstance(op, (cst.FloorDivide, cst.Divide))
            for op in _nodes(lower, (cst.FloorDivide, cst.Divide))
        ):
            return True
        kept, limits = _int(lower), [_int(n) for n in _nodes(test, cst.Integer)]
        if kept is not None and any(limit is not None and -kept * 2 <= limit for limit in limits):
            return True
    return False


def role_filters(index: ModuleIndex, node: cst.BaseExpression, key: Key) -> list[cst.BaseExpression]:
    """`[m for m in history if m.role in (USER, ASSISTANT)]` on `key`: a filter by role or type
    that drops more than the system message (which is sent apart, the same every turn)."""
    out = []
    for comp in _nodes(node, (cst.ListComp, cst.GeneratorExp)):
        fors = comp.for_in
        if key_of(index, fors.iter) == key and fors.ifs and any(_tests_role(i.test) for i in fors.ifs):
            out.append(comp)
    return out


_ROLE_WORDS = {"role", "type", "message_type", "kind", "isinstance"}


def _tests_role(test: cst.BaseExpression) -> bool:
    """A test on a message's role or type that keeps or drops some roles, not one that only sets
    the system message apart (it is sent apart, the same every turn)."""
    names = [n.value for n in _nodes(test, cst.Name)]
    strings = [v for n in _nodes(test, cst.SimpleString) if isinstance(v := string_value(n), str)]
    if not _ROLE_WORDS & {w.lower() for w in names + strings}:
        return False
    values = [w for w in strings if w.lower() not in _ROLE_WORDS]
    values += [n for n in names if n.isupper() or ("isinstance" in names and n[:1].isupper())]
    return bool(values) and not all("system" in v.lower() for v in values)


def _words(node: cst.CSTNode) -> list[str]:
    out = []
    for n in _nodes(node, (cst.Name, cst.SimpleString)):
        if isinstance(n, cst.Name):
            out.append(n.value)
        else:
            v = string_value(n)
            if isinstance(v, str):
                out.append(v)
    return out


def _nodes(node: cst.CSTNode, kinds: type | tuple[type, ...]) -> list:
    """The nodes of those kinds in a subtree, itself included."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            out.append(n)
        stack.extend(reversed(_kids(n)))
    return out


# A node type's fields that may hold nodes a shape is made of (not whitespace, commas, brackets).
_FIELDS: dict[type, tuple[str, ...]] = {}
_PUNCTUATION = re.compile(
    r"whitespace|^(?:comma|lpar|rpar|lbracket|rbracket|lbrace|rbrace|leading_lines|lines_after_decorators"
    r"|semicolon|colon|equal|dot|default_indicator|header|footer|newline|indent)$"
)
_IS_NODE: dict[type, bool] = {}


def _kids(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A node's children read from its fields (libcst's `children` runs a visitor per call)."""
    names = _FIELDS.get(type(node))
    if names is None:
        fields = dataclasses.fields(node)  # type: ignore[arg-type]
        names = _FIELDS[type(node)] = tuple(f.name for f in fields if not _PUNCTUATION.search(f.name))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if type(value) in (list, tuple):
            out += [v for v in value if _node(v)]
        elif _node(value):
            out.append(value)
    return out


def _node(value: object) -> bool:
    kind = type(value)
    found = _IS_NODE.get(kind)
    if found is None:
        found = _IS_NODE[kind] = isinstance(value, cst.CSTNode) and not isinstance(
            value, (cst.BaseParenthesizableWhitespace, cst.Comma, cst.EmptyLine)
        )
    return found


def _statements(body: cst.BaseSuite, deep: bool = False) -> list[cst.CSTNode]:
    """A block's statements, small ones split out; `deep`: those inside its `try` and `with`
    blocks too (the same pass of a loop), not inside nested loops or functions."""
    out: list = []
    for stmt in getattr(body, "body", ()):
        if isinstance(stmt, cst.SimpleStatementLine):
            out += list(stmt.body)
        else:
            out.append(stmt)
            if deep and isinstance(stmt, (cst.Try, cst.With)):
                out += _statements(stmt.body, deep)
    return out


def _only_skips(body: cst.BaseSuite) -> bool:
    """`if ...: continue` (a log call beside it at most): the message is dropped, not handled."""
    stmts = _statements(body)
    return any(isinstance(s, cst.Continue) for s in stmts) and all(
        isinstance(s, (cst.Continue, cst.Pass)) or (isinstance(s, cst.Expr) and _LOGS.search(_code(s)))
        for s in stmts
    )


def _has_continue(body: cst.BaseSuite) -> bool:
    return any(isinstance(s, cst.Continue) for s in _statements(body))


def _counts_down(body: cst.BaseSuite) -> bool:
    return any(
        isinstance(s, cst.AugAssign) and isinstance(s.operator, cst.SubtractAssign) for s in _statements(body)
    )


def _calls(node: cst.CSTNode) -> list[cst.Call]:
    return _nodes(node, cst.Call)


def _mentions(node: cst.CSTNode, names: set[str]) -> bool:
    return any(n.value in names for n in _nodes(node, cst.Name))


def _reassigned_from_loop(fn: cst.FunctionDef | None, key: Key, index: ModuleIndex) -> bool:
    """Whether `fn` assigns the history `key` from a local list (the one the loop fills)."""
    if fn is None:
        return False
    for assign in _nodes(fn.body, cst.Assign):
        if isinstance(assign.value, cst.Name) and any(key_of(index, t.target) == key for t in assign.targets):
            return True
    return False


def _last_of(target: cst.BaseExpression) -> cst.Subscript | None:
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
        if isinstance(sl, cst.Index) and _int(sl.value) == -1:
            return node
    return None


# What is sent, followed back through assignments.


@dataclass
class _Sent:
    keys: set[Key] = field(default_factory=set)
    ops: list[_Op] = field(default_factory=list)  # head slices and role filters met on the way
    copies: dict[Key, set[Key]] = field(default_factory=dict)  # local -> the histories it copies
    shallow: dict[Key, set[Key]] = field(default_factory=dict)
    memories: list[tuple[Reach, _Site]] = field(default_factory=list)  # memories read into it


def _follow(
    index: ModuleIndex,
    facts: _Facts,
    node: cst.BaseExpression,
    out: _Sent,
    depth: int = 0,
    at: _Site | None = None,
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
                if not stepped(index, sl, inner, site.tests) or _summarising(site):
                    out.ops.append(
                        _Op("head", inner, site, f"`{_code(sl)}` keeps only the newest messages", True)
                    )
            continue
        if isinstance(root, (cst.ListComp, cst.GeneratorExp)):
            inner = key_of(index, root.for_in.iter)
            site = facts.sites.get(id(root))
            for f in role_filters(index, root, inner) if inner is not None and site is not None else ():
                out.ops.append(_Op("filter", inner, site, f"`{_code(f)}` drops messages by role", True))
            continue
        if isinstance(root, cst.Call):  # `self._window()`: what the method returns
            method = _method(index, root)
            body = index.bodies.get(method) if method is not None else None
            for ret in body.returns if body is not None else ():
                if ret.value is not None:
                    _follow(index, facts, ret.value, out, depth + 1, at)
            continue
        key = key_of(index, root)
        if key is None or key in out.keys:
            continue
        out.keys.add(key)
        if isinstance(root, cst.Name) and key[0] == "name":
            for expr in _bound_exprs(index, root):
                _note_copies(index, key, expr, out)
                _follow(index, facts, expr, out, depth + 1, at)


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
            elif _code(func) in _SAME_ITEMS and n.args:
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


def _note_copies(index: ModuleIndex, local: Key, expr: cst.BaseExpression, out: _Sent) -> None:
    """What `local = expr` copies: histories copied message by message (`copy.deepcopy(h)`,
    `[dict(m) for m in h]`), and any history it is made from (`list(h)`, `h + [...]`)."""
    for call in _nodes(expr, cst.Call):
        names = index.qualified_names(call.func) | {_code(call.func)}
        if names & _COPIES and call.args:
            inner = key_of(index, call.args[0].value)
            if inner is not None:
                out.copies.setdefault(local, set()).add(inner)
    for comp in _nodes(expr, cst.ListComp):
        inner = key_of(index, comp.for_in.iter)
        if inner is not None and not isinstance(comp.elt, cst.Name):
            out.copies.setdefault(local, set()).add(inner)
    for root in _roots(expr):
        inner = key_of(index, root) if not isinstance(root, cst.Call) else None
        if inner is not None and inner != local:
            out.shallow.setdefault(local, set()).add(inner)


# Findings.


def _kept(index: ModuleIndex, facts: _Facts, key: Key, site: _Site) -> bool:
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


def _summarising(site: _Site) -> bool:
    fn = site.fn
    if fn is None:
        return False
    return "summar" in fn.name.value.lower() or any(
        "summar" in _code(c.func).lower() for c in _calls(fn.body)
    )


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
    if _NEEDLES.search(text) is None and not memories:
        return []
    walk = _Walk(index, ev)
    try:
        walk.run(index.module)
    except RecursionError:
        return []
    facts = walk.facts
    if not facts.ops and not facts.shapes and not memories:
        return []
    sent = _Sent()
    for call, site in facts.calls:
        for arg in _sent_args(ev, index, call):
            try:
                _follow(index, facts, arg, sent, at=site)
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
        walk = _Walk(method_index, method_ev)
        try:
            walk.run(method_index.module)
        except RecursionError:
            continue
        body = method_index.bodies.get(fn)
        sent = _Sent()
        for ret in body.returns if body is not None else ():
            if ret.value is None:
                continue
            _follow(method_index, walk.facts, ret.value, sent)
            names += [
                a.attr.value
                for a in _nodes(ret.value, cst.Attribute)
                if isinstance(a.value, cst.Name) and a.value.value == "self"
            ]
        for op in sent.ops:
            if op.kind != "head" or op.site.fn is not fn:
                continue
            at_line, column = method_index.pos(op.site.node)
            message = _HEAD.format(what=op.what) + (
                f" (`{cls.name.value}.{fn.name.value}`, the history `{_code(reach.node)}` sends at {where})"
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


def _runs_per_turn(index: ModuleIndex, facts: _Facts, reach: Reach, site: _Site) -> bool:
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
    for name in _nodes(reach.node.value, cst.Name):
        fn = index.functions.get(name.value)
        body = index.bodies.get(fn) if fn is not None else None
        params = [p.name for p in fn.params.params] if fn is not None else []
        for ret in body.returns if body is not None else ():
            if ret.value is not None and params and head_slices(index, ret.value, key_of(index, params[0])):
                return True
    return False


def _diagnostic(path: str, index: ModuleIndex, facts: _Facts, sent: _Sent, op: _Op) -> Diagnostic | None:
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
    if op.kind == "head" and _summarising(op.site):
        message, severity = _SUMMARY.format(what=op.what), Severity.INFO
    if not reached:
        message += _UNREACHED
    return Diagnostic("PFX401", Span(path, line, column), message, severity, hint=_HINT)


# Attribute names of conversation histories, for those appended to in another module.
_MESSAGE_WORDS = re.compile(r"^(?:steps|history|messages|conversation|turns)$")  # as in _NEEDLES


def _message_like(index: ModuleIndex, facts: _Facts, key: Key) -> bool:
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


def _is_message(node: cst.BaseExpression, site: _Site) -> bool:
    from prefixlint.python.candidates import is_message_literal

    if is_message_literal(node) or (isinstance(node, cst.Call) and "Message" in _code(node.func)):
        return True
    if isinstance(node, cst.Name) and site.fn is not None:
        return any(
            p.name.value == node.value
            and p.annotation is not None
            and "Message" in _code(p.annotation.annotation)
            for p in site.fn.params.params
        )
    return False
