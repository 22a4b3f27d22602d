"""Calls through values: a modelled sink, or a project function that reaches one, run where it is
passed or bound as a value rather than written as the called expression.

- A sink passed to a call (`retryer(client.chat.completions.create, model=m, messages=msgs)`,
  `asyncio.to_thread(...)`, `loop.run_in_executor(None, partial(...))`, `Retrying()(fn, ...)`) is a
  call of that sink with the arguments the call forwards: its keywords as they are, the positionals
  after the callable shifted. A callee of the project forwards them only when its body calls that
  parameter with `*args, **kwargs` (`def with_retry(fn, *a, **kw): return fn(*a, **kw)`); one that
  is not the project's (a retrier, an executor, a thread) is taken to.
- `functools.partial(sink, ...)` is the sink with those arguments put first, and a name assigned
  once to a sink or to such a partial is the sink too (`create = partial(...)`, `create(...)`).
- A call of a callable parameter (`agent_invoker(messages)`) runs what the project's callers pass
  for it: a function or method (a wrapper, summaries.py), a sink, a lambda, a function a factory
  returns, or the caller's own parameter passed on (followed up to MAX_HOPS callers up).

Everything is read from the indexes already built; the callers in other modules are found by a text
search (once per name and process, Evaluator.callers) and only those are parsed, at most
MAX_CALLER_MODULES of them.
What a call reached so sends is worked out with the wrappers' summaries (summaries.value_requests).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from prefixlint.python.evaluate import MAX_CALLERS, Evaluator, calls_in
from prefixlint.python.frameworks import SinkModel

# Names, partials, factories and callers followed for one callable (a closure made by a factory,
# assigned to a name, passed through two methods to the one that calls it is five).
MAX_HOPS = 5


@dataclass(frozen=True)
class Reference:
    """A modelled sink written as a value: the row, the callable as written, and the arguments a
    `partial` puts ahead of the caller's."""

    row: SinkModel
    func: cst.BaseExpression
    bound: tuple[cst.Arg, ...] = ()

    def called_with(self, args: tuple[cst.Arg, ...] | list[cst.Arg]) -> cst.Call:
        """The call of the sink that passing these arguments amounts to (its nodes are the code's own,
        so they evaluate where they are written): a partial's positionals, then the call's, then
        the keywords, as `partial(f, *a, **k)(*b, **j)` is `f(*a, *b, **k, **j)`."""
        given = [*self.bound, *args]
        positional = [a for a in given if a.keyword is None and a.star != "**"]
        named = [a for a in given if a.keyword is not None or a.star == "**"]
        return cst.Call(func=self.func, args=[*positional, *named])


def _is_partial(ev: Evaluator, call: cst.Call) -> bool:
    return "functools.partial" in ev.index.qualified_names(call.func)


def sink_reference(ev: Evaluator, node: cst.BaseExpression, hops: int = 0) -> Reference | None:
    """The modelled sink an expression stands for as a value: the callable itself, a `partial` of
    it, or a name (`self.x`) assigned once to one of them. Read from the module's index and the
    models table alone, so worked out once per node (every call's arguments are asked, for every
    checked file that reaches the module)."""
    key = (ev.project.frameworks, node, "reference", hops)
    memo = ev.index.matched
    if key not in memo:
        memo[key] = _sink_reference(ev, node, hops)
    return memo[key]  # type: ignore[return-value]


def _sink_reference(ev: Evaluator, node: cst.BaseExpression, hops: int) -> Reference | None:
    if isinstance(node, (cst.Name, cst.Attribute)):
        row = ev.project.frameworks.match_callable(ev.index, node)
        if isinstance(row, SinkModel):
            return Reference(row, node)
        if row is not None or hops >= MAX_HOPS:
            return None  # a client constructor: configuration
        assigned = ev.index.assigned(node)
        if assigned is None:
            return _sink_in_every_arm(ev, node, hops)
        return sink_reference(ev, assigned, hops + 1)
    if isinstance(node, cst.Call) and hops < MAX_HOPS and _is_partial(ev, node) and node.args:
        first = node.args[0]
        inner = None if first.keyword or first.star else sink_reference(ev, first.value, hops + 1)
        if inner is not None:
            return Reference(inner.row, inner.func, (*inner.bound, *node.args[1:]))
    return None


def _sink_in_every_arm(ev: Evaluator, node: cst.BaseExpression, hops: int) -> Reference | None:
    """A name the arms of a branch bind to different callables, one of them a sink (`call =
    client.chat.completions.create`, else a completion function not modelled): where that arm is
    taken the call sends the request, read as the first such arm's."""
    if not isinstance(node, cst.Name):
        return None
    here = ev.index.pos(node)
    bound = [b for b in ev.index.scope_for(node).bindings.get(node.value, ()) if b.pos < here]
    if len(bound) < 2 or any(b.kind != "assign" or b.expr is None for b in bound):
        return None
    found = [ref for b in bound if (ref := sink_reference(ev, b.expr, hops + 1)) is not None]
    return found[0] if found else None


@dataclass(frozen=True)
class ValueCall:
    """A call that sends a request through a sink passed or bound as a value."""

    row: SinkModel
    call: cst.Call  # the sink's call it amounts to
    via: str  # how, for the message


def through_value(ev: Evaluator, call: cst.Call) -> ValueCall | None:
    """The sink call a call amounts to when what it calls, or a callable it is given, is a sink as
    a value; None otherwise. A `partial(...)` itself sends nothing: the call of what it makes does."""
    if not isinstance(call.func, cst.Call) or _is_partial(ev, call.func):
        ref = sink_reference(ev, call.func)
        if ref is not None:
            return ValueCall(ref.row, ref.called_with(call.args), f"called as `{ev.label(call.func)}`")
    if _is_partial(ev, call):
        return None
    for i, arg in enumerate(call.args):
        if arg.keyword is not None or arg.star:
            break
        # an argument is followed through one name at most (`p = partial(...)`, then `submit(p)`):
        # every positional argument of every call is asked
        ref = sink_reference(ev, arg.value, hops=MAX_HOPS - 2)
        if ref is not None:  # `i` is its position: keywords and stars come after the positionals
            if not forwards(ev, call, i):
                return None
            via = f"passed to `{ev.label(call.func)}()`"
            return ValueCall(ref.row, ref.called_with(call.args[i + 1 :]), via)
    return None


def wrapped_function(
    ev: Evaluator, func: cst.BaseExpression, at: cst.CSTNode
) -> tuple[Evaluator, cst.FunctionDef] | None:
    """The project function a callable made by wrapping it stands for: `retry(self._send, tries=3)`
    called at once, or through the name it is assigned to (`retry_func = retry(self._send)`, then
    `retry_func(**kwargs)`), when the wrapper calls what it is given with the rest (forwards)."""
    node = ev.index.assigned(func) if isinstance(func, cst.Name) else func
    if not isinstance(node, cst.Call) or not node.args or _is_partial(ev, node):
        return None
    first = node.args[0]
    if first.keyword is not None or first.star or not _wraps(ev, node):
        return None
    return ev.resolve_callable(first.value, at)


def _wraps(ev: Evaluator, call: cst.Call) -> bool:
    """Whether what `call` makes calls the callable it is given first with the arguments it gets
    itself: a project factory whose closure does `func(*args, **kwargs)`; one that is not the
    project's (a retrier, a cache) is taken to; a class of the project is constructed."""
    found = ev.resolve_callable(call.func, call)
    if found is None:
        return ev.find_class(call.func) is None
    callee_ev, fn = found
    names = _positional_names(fn)
    if not names:
        return False
    return any(
        isinstance(inner.func, cst.Name)
        and inner.func.value == names[0]
        and [a.star for a in inner.args] == ["*", "**"]
        for inner in calls_in(callee_ev.index, fn)
    )


def _positional_names(fn: cst.FunctionDef) -> list[str]:
    """Its positional parameters as a call binds them (Evaluator.bind_arguments: `self` aside)."""
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    return names[1:] if names and names[0] in ("self", "cls") else names


def forwards(ev: Evaluator, call: cst.Call, position: int) -> bool:
    """Whether the callee calls the callable it gets at `position` with the rest of its arguments:
    one of the project's does when its body calls that parameter with `*args, **kwargs`; a class of
    the project is constructed, not a forwarder; anything else is taken to forward."""
    found = ev.resolve_callable(call.func, call)
    if found is None:
        return ev.find_class(call.func) is None
    callee_ev, fn = found
    names = _positional_names(fn)
    star, double = fn.params.star_arg, fn.params.star_kwarg
    if position >= len(names) or not isinstance(star, cst.Param) or double is None:
        return False
    forwarded = [("*", star.name.value), ("**", double.name.value)]
    for inner in calls_in(callee_ev.index, fn):
        if isinstance(inner.func, cst.Name) and inner.func.value == names[position]:
            passed = [(a.star, a.value.value if isinstance(a.value, cst.Name) else None) for a in inner.args]
            if passed == forwarded:
                return True
    return False


# --- callable parameters ---------------------------------------------------------------------------
Passed = tuple[Evaluator, "cst.FunctionDef | cst.Lambda | Reference"]


def passed_callables(ev: Evaluator, fn: cst.FunctionDef, name: str, hops: int = 0) -> list[Passed]:
    """The callables the project's calls of `fn` pass for its parameter `name` (memoized per
    project; a parameter being worked out passes nothing more to itself)."""
    key = (id(fn), name)
    memo = ev.project.passed
    if key in memo:
        return memo[key]
    memo[key] = []
    out: list[Passed] = []
    seen: set[int] = set()
    for site_ev, site in ev.callers(fn)[:MAX_CALLERS]:
        node = _argument_for(fn, site, name)
        if node is None:
            continue
        for item in _callables(site_ev, node, site, hops):
            if id(item[1]) not in seen:
                seen.add(id(item[1]))
                out.append(item)
    memo[key] = out
    return out


def _argument_for(fn: cst.FunctionDef, call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    names = _positional_names(fn)
    if name not in names:
        return None
    positional = [a for a in call.args if a.keyword is None]
    at = names.index(name)
    if at < len(positional) and not any(a.star for a in positional[: at + 1]):
        return positional[at].value
    return None


def _callables(site_ev: Evaluator, node: cst.BaseExpression, at: cst.CSTNode, hops: int) -> list[Passed]:
    """What a callable passed as `node` at a call site runs."""
    ref = sink_reference(site_ev, node)
    if ref is not None:
        return [(site_ev, ref)]
    if isinstance(node, cst.Lambda):
        return [(site_ev, node)]
    if hops >= MAX_HOPS:
        return []
    if isinstance(node, cst.Name):
        scope = site_ev.index.scope_for(node)
        owner = scope.node
        if (
            isinstance(owner, cst.FunctionDef)
            and node.value in scope.params
            and node.value not in scope.bindings
        ):
            return passed_callables(site_ev, owner, node.value, hops + 1)  # passed on from its own caller
        assigned = site_ev.index.assigned(node)
        if assigned is not None:
            return _callables(site_ev, assigned, at, hops + 1)
    if isinstance(node, (cst.Name, cst.Attribute)):
        found = site_ev.resolve_callable(node, at)
        return [found] if found is not None else []
    if isinstance(node, cst.Call):  # a factory: the function it returns (`return invoke`)
        found = site_ev.resolve_callable(node.func, node)
        if found is None:
            return []
        factory_ev, factory = found
        out: list[Passed] = []
        for ret in factory_ev.index.bodies[factory].returns:
            if isinstance(ret.value, cst.Name):
                nested = nested_function(factory_ev, factory, ret.value.value)
                if nested is not None:
                    out.append((factory_ev, nested))
            elif isinstance(ret.value, cst.Lambda):
                out.append((factory_ev, ret.value))
        return out
    return []


def nested_function(ev: Evaluator, fn: cst.FunctionDef, name: str) -> cst.FunctionDef | None:
    """The function `name` defined directly in `fn`'s body (a closure it returns)."""
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    found = None
    for stmt in body:
        if isinstance(stmt, cst.FunctionDef) and stmt.name.value == name:
            found = stmt
    return found
