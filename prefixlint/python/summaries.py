"""Wrappers: functions and classes of the project that pass what they are given on to a sink.

A function's summary is what the sinks inside it send, evaluated with its own parameters left as
holes that say which parameter they read (`Hole.param`); a call of the function sends that, with
what the call passes put in their place. A class's summary is what its methods' sinks send of
what its constructor was given (`self.system = system` in `__init__`, read as `self.system`). So
`llm.ask(f"{datetime.now()} ...")`, `send_message_to_model_wrapper(system_message=...)` or
`Agent(system_prompt=...)` of a project class are sinks when they lead to a modelled API, through
wrappers of wrappers up to MAX_WRAPPER_DEPTH. Computed on demand, once per function.

A sink reached through a value (valuecalls.py: passed or bound as a value, or a callable parameter
whose callers pass one) is a request too, and a function calling one is a wrapper of it:
`value_requests` says what such a call sends.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import libcst as cst

from prefixlint.python.evaluate import Env, Evaluator, _default_of, calls_in
from prefixlint.python.frameworks import SinkModel
from prefixlint.python.hierarchy import dispatch
from prefixlint.python.registries import registered_classes
from prefixlint.python.request import request_value
from prefixlint.python.segments import FORWARDED, Hole, Provenance, Value, concat, holes, is_constant
from prefixlint.python.valuecalls import (
    Reference,
    forwards,
    passed_callables,
    through_value,
    wrapped_function,
)

MAX_WRAPPER_DEPTH = 3


@dataclass(frozen=True)
class Template:
    """What one sink inside a function sends, its parameters still holes."""

    value: Value
    what: str
    whole: bool


def sink_templates(ev: Evaluator, fn: cst.FunctionDef, depth: int = 0) -> list[Template]:
    """What the sinks called inside `fn` send, with `fn`'s parameters left as parameters."""
    memo = ev.project.summaries
    key = id(fn)
    known = memo.get(key)
    if known is not None and known[0] <= depth:
        return known[1]  # worked out uncut, or cut with no more layers left below it than now
    memo[key] = (depth, [])  # a recursive wrapper sends nothing more than what is found without recursing
    cut = ev.project.summary_cuts
    out: list[Template] = []
    env = Env(summary=fn)
    frameworks = ev.project.frameworks
    for call in calls_in(ev.index, fn):
        row = frameworks.match_call(ev.index, call)
        if isinstance(row, SinkModel):
            value = request_value(ev, call, row, env)
            if value:
                out.append(Template(value, f"`{ev.label(call.func)}()` ({row.name})", row.whole_request))
        elif row is None and depth < MAX_WRAPPER_DEPTH:
            # a call that only passes this wrapper's `**kwargs` on (a retry, a private `_send`) is
            # the same request one layer down: it costs no depth
            deeper = depth if _passing_on(call, env) is not None else depth + 1
            found = requests_at_call(ev, call, env, deeper) or value_requests(ev, call, env, deeper)
            out += [template for _, template in found]
        elif row is None:  # a sink bound or passed as a value is no deeper wrapper
            out += [template for _, template in sent_through_value(ev, call, env)]
            if _callees(ev, call):
                ev.project.summary_cuts += 1  # project code not followed: the limit cut this
    memo[key] = (depth if ev.project.summary_cuts != cut else -1, out)
    return out


def requests_at_call(
    ev: Evaluator, call: cst.Call, env: Env, depth: int = 0, callees: list[Callee] | None = None
) -> list[tuple[str, Template]]:
    """What a call of a project function or class that wraps a sink sends: (the wrapper's name, the
    request with what the call passes in place, described by the modelled API it ends in).
    `callees`: what the call runs, when it is known otherwise (a callable parameter's callers)."""
    out = []
    binding = call  # the call whose arguments the callee gets
    if callees is None:
        callees = _callees(ev, call)
        if not callees:
            callees, binding = _forwarded(ev, call)
    for callee_ev, fn, owner in callees:  # a class: its `__init__`
        bound = None  # what the call passes, evaluated once for all the templates that read it
        examples: set[str] = set()
        for template in _templates(callee_ev, fn, owner, depth):
            if not _reads_parameters(template.value, fn):
                continue
            if bound is None:
                # a call in a loop over items: one request per item (looked at only for a call
                # that reaches a sink reading what it passes)
                bound = ev.bind_arguments(fn, binding, ev.with_items(call, env))
                if ev.index.in_main_guard(call):
                    # literals a script is tried with by hand are examples of what its callers pass,
                    # not every request's: the wrapper's parameters stand for them, as unfollowed
                    examples = {k for k, v in bound.items() if is_constant(v)}
                    bound = {k: v for k, v in bound.items() if k not in examples}
            value = _put_arguments(
                ev, callee_ev, template.value, fn, bound, call, _passing_on(call, env), examples
            )
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


def _callees(ev: Evaluator, call: cst.Call, func: cst.BaseExpression | None = None) -> list[Callee]:
    """The project functions a call may run (`owner` None), or the class it constructs (`fn` its
    `__init__`, `owner` the class); `func`: what it calls, when not `call.func` (_forwarded)."""
    func = call.func if func is None else func
    if isinstance(func, cst.Attribute):
        receiver = ev.receiver_class(func.value, call, func.attr.value)
        # the class's method or an override in a project subclass (an abstract `Model.generate`)
        methods = dispatch(receiver[0], receiver[1], func.attr.value) if receiver is not None else []
        if receiver is None:  # an object made from a registry look-up: any registered class's method
            for cls_ev, cls in registered_classes(ev, func.value):
                methods += [m for m in dispatch(cls_ev, cls, func.attr.value) if m not in methods]
        if methods:
            return [(m_ev, fn, None) for m_ev, fn in methods]
    found = ev.resolve_callable(func, call) or wrapped_function(ev, func, call)
    if found is not None:
        return [(found[0], found[1], None)]
    cls = ev.find_class(func)
    if cls is not None:
        init = cls[0].method(cls[1], "__init__")
        return [(cls[0], init[1], cls[1])] if init is not None else []
    # `model(messages)`, `self.model(messages)` on an object of a project class: its `__call__`
    called = ev.receiver_class(func, call, "__call__")
    if called is not None:
        return [(m_ev, fn, None) for m_ev, fn in dispatch(called[0], called[1], "__call__")]
    if not isinstance(func, cst.Attribute) or func is not call.func:
        return []
    name = func.attr.value
    keywords = {a.keyword.value for a in call.args if a.keyword is not None}
    if _CHATTY.search(name.lower()) or keywords & _PROMPT_KEYWORDS:
        return [(other, fn, None) for other, fn in ev.methods_named(name)]
    return []


# Methods that run the callable they are given first with the rest of their arguments, in a thread
# or a pool (concurrent.futures' `Executor.submit`, `asyncio.to_thread`): not every library call
# that takes a function first does (`map(self.format, items)` binds no arguments so).
_RUNNERS = ("submit", "to_thread")


def _forwarded(ev: Evaluator, call: cst.Call) -> tuple[list[Callee], cst.Call]:
    """A project callable passed first to a call that is not the project's, which calls it with the
    rest (`executor.submit(model.inference, name, prompt)`, `asyncio.to_thread(self.ask, q)`,
    valuecalls.forwards): what it may run, and the call as it calls it (the arguments after it)."""
    first = call.args[0] if call.args else None
    runner = call.func.attr.value if isinstance(call.func, cst.Attribute) else ""
    if runner not in _RUNNERS or first is None or first.keyword is not None or first.star:
        return [], call
    if not forwards(ev, call, 0):
        return [], call
    found = _callees(ev, call, first.value)
    return found, call.with_changes(args=call.args[1:])


def _reads_parameters(value: Value, fn: cst.FunctionDef) -> bool:
    return any(h.param is not None and h.param[0] == id(fn) for h in holes(value))


def _put_arguments(
    ev: Evaluator,
    callee_ev: Evaluator,
    value: Value,
    fn: cst.FunctionDef,
    bound: dict[str, Value],
    call: cst.Call,
    passing_on: int | None = None,
    examples: frozenset[str] | set[str] = frozenset(),
) -> Value:
    """The template with what the call passes in place of the parameters; a volatile value of the
    wrapper's own (in another module) is reported there, not at each call of it. A keyword the
    callee's `**kwargs` forwards is what the call gives, else (`passing_on`: the call passes the
    `**kwargs` of the wrapper around it on) what that wrapper's own callers give."""
    from prefixlint.python.segments import Choice

    def put(seg: object) -> Value:
        if isinstance(seg, Hole):
            if seg.param is not None and seg.param[0] == id(fn):
                name = seg.param[1]
                if name.startswith(FORWARDED):
                    if name[len(FORWARDED) :] in bound:
                        return bound[name[len(FORWARDED) :]]
                    return (replace(seg, param=(passing_on, name)),) if passing_on is not None else ()
                if name in bound:
                    reported = seg.by_name and seg.provenance.volatile or seg.named_in_callee
                    if reported and _passed_on(ev, call, bound[name]):
                        # the wrapper's own finding names its parameter, judged by its name; what
                        # the call passes is judged by its name too: the same guess one call up,
                        # reported once, where the text is built
                        return (replace(bound[name][0], provenance=Provenance.UNKNOWN, named_in_callee=True),)
                    return bound[name]
                if name in examples:
                    return (seg,)
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


def _passed_on(ev: Evaluator, call: cst.Call, value: Value) -> bool:
    """Whether a call passes, as written, a value known only by its name (its own parameter, a
    field of one): not a value seen at its source, nor an opaque result standing for its inputs."""
    hole = value[0] if len(value) == 1 else None
    if not (isinstance(hole, Hole) and hole.by_name and (hole.provenance.volatile or hole.named_in_callee)):
        return False
    return any(ev.label(arg.value) == hole.label for arg in call.args)


def _passing_on(call: cst.Call, env: Env) -> int | None:
    """The wrapper being summarised, when `call` passes its `**kwargs` on (`self._send(**kwargs)`)."""
    fn = env.summary
    star = fn.params.star_kwarg if isinstance(fn, cst.FunctionDef) else None
    if star is None or not any(
        a.star == "**" and isinstance(a.value, cst.Name) and a.value.value == star.name.value
        for a in call.args
    ):
        return None
    return id(fn)


def _splice(value: Value, put: object) -> Value:
    return concat(*(put(seg) for seg in value))  # type: ignore[operator]


def value_requests(ev: Evaluator, call: cst.Call, env: Env, depth: int = 0) -> list[tuple[str, Template]]:
    """What a call that matches no row and names no project wrapper sends through values: (how it
    is reached, the request), for the finder and for the summaries of the functions around it."""
    if through_value(ev, call) is not None:
        return sent_through_value(ev, call, env)
    if depth >= MAX_WRAPPER_DEPTH:
        return []
    return parameter_requests(ev, call, env, depth)


def sent_through_value(ev: Evaluator, call: cst.Call, env: Env) -> list[tuple[str, Template]]:
    """What a call sends through a sink passed or bound as a value (valuecalls.through_value)."""
    found = through_value(ev, call)
    if found is None:
        return []
    value = request_value(ev, found.call, found.row, env)
    if not value:
        return []
    what = f"`{ev.label(found.call.func)}()` ({found.row.name}, {found.via})"
    return [(what, Template(value, what, found.row.whole_request))]


def parameter_requests(ev: Evaluator, call: cst.Call, env: Env, depth: int) -> list[tuple[str, Template]]:
    """What a call of a callable parameter sends: what each callable the callers pass sends."""
    func = call.func
    if not isinstance(func, cst.Name):
        return []
    scope = ev.index.scope_for(call)
    fn = scope.node
    if not isinstance(fn, cst.FunctionDef) or func.value not in scope.params or func.value in scope.bindings:
        return []
    out: list[tuple[str, Template]] = []
    name = f"`{func.value}` (a callable parameter of `{fn.name.value}()`)"
    for site_ev, passed in passed_callables(ev, fn, func.value):
        if isinstance(passed, Reference):
            # a partial's own arguments are another module's nodes there: only this module's are read
            ref = passed if site_ev is ev else Reference(passed.row, passed.func)
            # not as a `**kwargs` forwarder (request.forwarded_keywords): where the parameter's call
            # passes the wrapper's arguments on, the caller's call is the request (through_value)
            value = request_value(ev, ref.called_with(call.args), passed.row, replace(env, summary=None))
            if value:
                what = f"`{site_ev.label(passed.func)}()` ({passed.row.name}, called as {name})"
                out.append((name, Template(value, what, passed.row.whole_request)))
        elif isinstance(passed, cst.Lambda):
            out += [(name, t) for _, t in _lambda_requests(ev, call, env, site_ev, passed, depth)]
        else:
            found = requests_at_call(ev, call, env, depth + 1, callees=[(site_ev, passed, None)])
            out += [(name, t) for _, t in found]
    return out


def _lambda_requests(
    ev: Evaluator, call: cst.Call, env: Env, site_ev: Evaluator, lam: cst.Lambda, depth: int
) -> list[tuple[str, Template]]:
    """A lambda passed for the parameter: its body's call, its parameters bound to what the call
    of the parameter passes (as comprehension names are bound, `Env.shadow`)."""
    body = lam.body
    if not isinstance(body, cst.Call):
        return []
    names = [p.name.value for p in lam.params.params]
    shadow = dict(env.shadow)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for name, arg in zip(names, positional, strict=False):
        shadow[name] = ev.value(arg.value, env.deeper())
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in names:
            shadow[arg.keyword.value] = ev.value(arg.value, env.deeper())
    inner = env.deeper(shadow=shadow)
    row = site_ev.project.frameworks.match_call(site_ev.index, body)
    if isinstance(row, SinkModel):
        value = request_value(site_ev, body, row, inner)
        what = f"`{site_ev.label(body.func)}()` ({row.name}, in a lambda)"
        return [(what, Template(value, what, row.whole_request))] if value else []
    if row is not None:
        return []
    return requests_at_call(site_ev, body, inner, depth + 1) + value_requests(site_ev, body, inner, depth + 1)
