"""Wrappers: functions and classes of the project that pass what they are given on to a sink.

A function's summary is what the sinks inside it send, evaluated with its own parameters left as
holes that say which parameter they read (`Hole.param`); a call of the function sends that, with
what the call passes put in their place. A class's summary is what its methods' sinks send of
what its constructor was given (`self.system = system` in `__init__`, read as `self.system`). So
`llm.ask(f"{datetime.now()} ...")`, `send_message_to_model_wrapper(system_message=...)` or
`Agent(system_prompt=...)` of a project class are sinks when they lead to a modelled API, through
wrappers of wrappers up to MAX_WRAPPER_DEPTH. Computed on demand, once per function.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import libcst as cst

from prefixlint.python.evaluate import Env, Evaluator, _default_of
from prefixlint.python.frameworks import SinkModel
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import Hole, Provenance, Value, concat, holes

MAX_WRAPPER_DEPTH = 3


@dataclass(frozen=True)
class Template:
    """What one sink inside a function sends, its parameters still holes."""

    value: Value
    what: str
    whole: bool


def calls_in(index: ModuleIndex, fn: cst.FunctionDef) -> list[cst.Call]:
    """The calls written inside `fn` (nested functions included), in source order."""
    by_function = _CALLS.get(id(index))
    if by_function is None or by_function[0] is not index:
        table: dict[int, list[cst.Call]] = {}
        stack: list[cst.FunctionDef] = []
        for entering, node in index.events:
            if type(node) is cst.FunctionDef:
                if entering:
                    stack.append(node)
                else:
                    stack.pop()
            elif entering and type(node) is cst.Call:
                for owner in stack:
                    table.setdefault(id(owner), []).append(node)
        if len(_CALLS) > 512:
            _CALLS.clear()
        by_function = _CALLS[id(index)] = (index, table)
    return by_function[1].get(id(fn), [])


_CALLS: dict[int, tuple[ModuleIndex, dict[int, list[cst.Call]]]] = {}


def sink_templates(ev: Evaluator, fn: cst.FunctionDef, depth: int = 0) -> list[Template]:
    """What the sinks called inside `fn` send, with `fn`'s parameters left as parameters."""
    memo = ev.project.summaries
    key = id(fn)
    if key in memo:
        return memo[key]
    memo[key] = []  # a recursive wrapper sends nothing more than what is found without recursing
    out: list[Template] = []
    env = Env(summary=fn)
    frameworks = ev.project.frameworks
    from prefixlint.python.sinks import request_value

    for call in calls_in(ev.index, fn):
        row = frameworks.match_call(ev.index, call)
        if isinstance(row, SinkModel):
            value = request_value(ev, call, row, env)
            if value:
                out.append(Template(value, f"`{ev.label(call.func)}()` ({row.name})", row.whole_request))
        elif row is None and depth < MAX_WRAPPER_DEPTH:
            from prefixlint.python.valuecalls import value_requests

            found = requests_at_call(ev, call, env, depth + 1) or value_requests(ev, call, env, depth + 1)
            out += [template for _, template in found]
    memo[key] = out
    return out


def requests_at_call(
    ev: Evaluator, call: cst.Call, env: Env, depth: int = 0, callees: list[Callee] | None = None
) -> list[tuple[str, Template]]:
    """What a call of a project function or class that wraps a sink sends: (the wrapper's name, the
    request with what the call passes in place, described by the modelled API it ends in).
    `callees`: what the call runs, when it is known otherwise (a callable parameter's callers)."""
    out = []
    for callee_ev, fn, owner in _callees(ev, call) if callees is None else callees:  # a class: its `__init__`
        bound = None  # what the call passes, evaluated once for all the templates that read it
        for template in _templates(callee_ev, fn, owner, depth):
            if not _reads_parameters(template.value, fn):
                continue
            if bound is None:
                from prefixlint.python.fills import with_items

                # a call in a loop over items: one request per item (looked at only for a call
                # that reaches a sink reading what it passes)
                bound = ev.bind_arguments(fn, call, with_items(ev, call, env))
            value = _put_arguments(ev, callee_ev, template.value, fn, bound, call)
            name = fn.name.value if owner is None else owner.name.value
            out.append((name, Template(value, template.what, template.whole)))
    return out


def _templates(ev: Evaluator, fn: cst.FunctionDef, owner: cst.ClassDef | None, depth: int) -> list[Template]:
    if owner is None:
        return sink_templates(ev, fn, depth)
    # A class: the sinks of its methods (and its bases') read what its constructor stored.
    out = []
    for owner_ev, cls in [(ev, owner), *ev.base_classes(owner)]:
        for (cls_name, _), method in owner_ev.index.methods.items():
            if cls_name == cls.name.value and method is not fn:
                out += sink_templates(owner_ev, method, depth)
    return out


Callee = tuple[Evaluator, cst.FunctionDef, "cst.ClassDef | None"]
# A method call whose receiver's class we cannot see (an injected client) is looked up by its
# name among the project's classes when the name or the keywords say it talks to a model.
_CHATTY = re.compile(r"chat|complet|generat|ask|invoke|predict|prompt|query|respond|llm|model|send_message")
_PROMPT_KEYWORDS = {"system", "system_prompt", "system_message", "prompt", "messages", "user", "user_prompt",
                    "instructions", "query", "question", "input", "content"}  # fmt: skip


def _callees(ev: Evaluator, call: cst.Call) -> list[Callee]:
    """The project functions a call may run (`owner` None), or the class it constructs (`fn` its
    `__init__`, `owner` the class)."""
    from prefixlint.python.hierarchy import dispatch

    if isinstance(call.func, cst.Attribute):
        receiver = receiver_class(ev, call.func.value, call)
        # the class's method or an override in a project subclass (an abstract `Model.generate`)
        methods = dispatch(receiver[0], receiver[1], call.func.attr.value) if receiver is not None else []
        if receiver is None:  # an object made from a registry look-up: any registered class's method
            from prefixlint.python.registries import registered_classes

            for cls_ev, cls in registered_classes(ev, call.func.value):
                methods += [m for m in dispatch(cls_ev, cls, call.func.attr.value) if m not in methods]
        if methods:
            return [(m_ev, fn, None) for m_ev, fn in methods]
    found = ev.resolve_callable(call.func, call)
    if found is not None:
        return [(found[0], found[1], None)]
    cls = ev.find_class(call.func)
    if cls is not None:
        init = cls[0].method(cls[1], "__init__")
        return [(cls[0], init[1], cls[1])] if init is not None else []
    # `model(messages)`, `self.model(messages)` on an object of a project class: its `__call__`
    called = receiver_class(ev, call.func, call)
    if called is not None:
        return [(m_ev, fn, None) for m_ev, fn in dispatch(called[0], called[1], "__call__")]
    if not isinstance(call.func, cst.Attribute):
        return []
    name = call.func.attr.value
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if _CHATTY.search(name.lower()) or keywords & _PROMPT_KEYWORDS:
        return [(other, fn, None) for other, fn in ev.project.methods_named(name)]
    return []


def receiver_class(
    ev: Evaluator, node: cst.BaseExpression, at: cst.CSTNode
) -> tuple[Evaluator, cst.ClassDef] | None:
    """The project class of an object: `x = Client(...)`, a parameter `x: Client`, `self.x` set to
    `Client(...)` (or a parameter so annotated) in a method, or a class attribute `x: Client`."""
    if isinstance(node, cst.Name):
        scope = ev.index.scope_for(at)
        for binding in reversed(scope.bindings.get(node.value, ())):
            if binding.kind == "assign" and isinstance(binding.expr, cst.Call):
                return ev.find_class(binding.expr.func)
        found = _parameter_class(ev, node)
        outer = ev.index.enclosing_function(scope.node)
        if found is None and outer is not None and node.value not in scope.params:
            found = _scope_class(ev, outer, node.value)  # a closure's name, of the function around it
        return found
    if isinstance(node, cst.Attribute) and isinstance(node.value, cst.Name) and node.value.value == "self":
        cls = ev.index.scope_for(at).cls
        if cls is None:
            return None
        for binding in ev.index.instance_attrs.get((cls.name.value, node.attr.value), ()):
            expr = binding.expr
            # `self.llm = Client(...)`, `self.llm = llm` (a parameter `llm: Client`), or
            # `self.llm = handler()` (a parameter `handler: type[Base] = Client`)
            target = expr.func if isinstance(expr, cst.Call) else expr
            if isinstance(target, (cst.Name, cst.Attribute)) and target is not None:
                found = ev.find_class(target) or _parameter_class(ev, target)
                if found is not None:
                    return found
        return _field_class(ev, cls, node.attr.value)
    return None


def _field_class(
    ev: Evaluator, cls: cst.ClassDef, name: str, depth: int = 0
) -> tuple[Evaluator, cst.ClassDef] | None:
    """The class a field is annotated with in a class body (`model: Model = field(...)` of a
    dataclass or attrs class), in the class or its bases."""
    from prefixlint.python.evaluate import _annotation_names

    for stmt in cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ():
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if (
                isinstance(small, cst.AnnAssign)
                and isinstance(small.target, cst.Name)
                and small.target.value == name
            ):
                for part in _annotation_names(small.annotation.annotation):
                    found = ev.find_class(part)
                    if found is not None:
                        return found
                return None
    if depth < 4:
        for base_ev, base in ev.base_classes(cls):
            found = _field_class(base_ev, base, name, depth + 1)
            if found is not None:
                return found
    return None


def _scope_class(ev: Evaluator, fn: cst.FunctionDef, name: str) -> tuple[Evaluator, cst.ClassDef] | None:
    """The class of `name` in function `fn`: what it was last assigned by a class call, else the
    class its parameter stands for."""
    scope = ev.index.scopes.get(fn)
    if scope is None:
        return None
    for binding in reversed(scope.bindings.get(name, ())):
        if binding.kind == "assign" and isinstance(binding.expr, cst.Call):
            return ev.find_class(binding.expr.func)
    if name not in scope.params:
        return None
    default = _default_of(fn, name)
    if isinstance(default, (cst.Name, cst.Attribute)):
        found = ev.find_class(default)
        if found is not None:
            return found
    return _annotated_class(ev, fn, name)


def _parameter_class(ev: Evaluator, node: cst.BaseExpression) -> tuple[Evaluator, cst.ClassDef] | None:
    """The class a parameter stands for: its default when that is a class, else its annotation."""
    if not isinstance(node, cst.Name):
        return None
    scope = ev.index.scope_for(node)
    if not (isinstance(scope.node, cst.FunctionDef) and node.value in scope.params):
        return None
    default = _default_of(scope.node, node.value)
    if isinstance(default, (cst.Name, cst.Attribute)):
        found = ev.find_class(default)
        if found is not None:
            return found
    return _annotated_class(ev, scope.node, node.value)


def _annotated_class(ev: Evaluator, fn: cst.FunctionDef, name: str) -> tuple[Evaluator, cst.ClassDef] | None:
    from prefixlint.python.evaluate import _annotation_names

    p = fn.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        if param.name.value == name and param.annotation is not None:
            for part in _annotation_names(param.annotation.annotation):
                found = ev.find_class(part)
                if found is not None:
                    return found
    return None


def _reads_parameters(value: Value, fn: cst.FunctionDef) -> bool:
    return any(h.param is not None and h.param[0] == id(fn) for h in holes(value))


def _put_arguments(
    ev: Evaluator,
    callee_ev: Evaluator,
    value: Value,
    fn: cst.FunctionDef,
    bound: dict[str, Value],
    call: cst.Call,
) -> Value:
    """The template with what the call passes in place of the parameters; a volatile value of the
    wrapper's own (in another module) is reported there, not at each call of it."""
    from prefixlint.python.segments import Choice

    def put(seg: object) -> Value:
        if isinstance(seg, Hole):
            if seg.param is not None and seg.param[0] == id(fn):
                name = seg.param[1]
                if name in bound:
                    return bound[name]
                default = _default_of(fn, name)
                if default is not None:
                    return callee_ev.value(default, Env())
                return (replace(seg, provenance=Provenance.UNKNOWN, param=None),)
            if callee_ev is not ev and seg.provenance.volatile:
                return (replace(seg, provenance=Provenance.UNKNOWN),)
            return (seg,)
        if isinstance(seg, Choice):
            return (Choice(tuple(_splice(o, put) for o in seg.options)),)
        return (seg,)  # type: ignore[return-value]

    return _splice(value, put)


def _splice(value: Value, put: object) -> Value:
    return concat(*(put(seg) for seg in value))  # type: ignore[operator]
