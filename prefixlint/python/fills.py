"""Where a template meets its values at a sink.

A sink that takes a template and the values of its placeholders (`llm.predict(tmpl, query_str=q)`,
a row of the models table with `fills = true`) sends the template filled with what the call
passes: each placeholder takes the provenance of the argument given for it (a constant is static
text that counts in what follows; a parameter is a per-request input), and only a placeholder
nothing fills is judged by its name (`Evaluator.placeholder`). `template.format(...)` and the
other fill methods are filled the same way where they are evaluated (`Evaluator.format`); a template
filled in its module, or used by a module that imports it, is judged there, not by its names. A
sink called inside a loop sends one request per item (`Evaluator.with_items`).
"""

from __future__ import annotations

import re

import libcst as cst

from prefixlint.python.evaluate import Env, Evaluator, func_name
from prefixlint.python.evaluate.appended import PARTIAL_FILLS
from prefixlint.python.frameworks import SinkModel
from prefixlint.python.project import importers, read_text
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import Value, per_option


def fill_values(ev: Evaluator, call: cst.Call, row: SinkModel, env: Env) -> dict[str, Value]:
    """What a `fills` row's call passes for the placeholders: its keywords and `**mapping` entries,
    not the ones the row names as prompt parts nor those that only configure the call."""
    skip = set(row.arguments) | ev.project.frameworks.not_prompt
    return {k: v for k, v in ev.named_arguments(call, env).items() if k not in skip}


def filled(ev: Evaluator, template: Value, call: cst.Call, named: dict[str, Value]) -> Value:
    """The template with each placeholder the call fills replaced by what it passes."""
    return per_option(template, lambda v: ev.fill_all(v, call, [], named))


def filled_here(ev: Evaluator, template: cst.Call) -> bool:
    """Whether the template object `template` builds (`NAME = PromptTemplate("...")` at module
    level) is filled in this module: `NAME.format(...)` or the like, or passed as the template of a
    `fills` sink. There what is passed decides each placeholder, not its name."""
    name = _assigned_name(ev.index, template)
    return name is not None and name_filled(ev, name, template)


def used_elsewhere(ev: Evaluator, name: str) -> bool:
    """Whether a module that imports this one uses its template `name` (not only imports or
    re-exports it): that module fills it, and its check judges what is passed there."""
    key = (id(ev.project), ev.path)
    found = _USERS.get(key)
    if found is None or found[0] is not ev.project:
        if len(_USERS) > 64:
            _USERS.clear()
        texts = [t for t in (read_text(p) for p in importers(ev.project, ev.path)) if t]
        found = _USERS[key] = (ev.project, texts)
    texts = [t for t in found[1] if name in t]  # the regex costs ~1 ms per 20 KB: most texts lack the name
    if not texts:
        return False
    use = re.compile(
        rf"^(?!\s*(?:from|import)\b)(?!\s*{re.escape(name)},?\s*$).*(?<![\w\"']){re.escape(name)}\b(?![\"'])",
        re.M,
    )
    return any(use.search(t) for t in texts)


_USERS: dict[tuple[int, str], tuple[object, list[str]]] = {}


def name_filled(ev: Evaluator, name: str, at: cst.CSTNode) -> bool:
    """Whether the template module-level `name` holds (`at`: where it is made) is filled in this
    module, or used by a module that imports it (which fills it, and is judged there)."""
    # `.partial(...)` fills some placeholders and leaves the rest to a later fill: no fill of its own
    if any(c is not at and func_name(c.func) not in PARTIAL_FILLS for c in ev.calls_filling(name)):
        return True
    for method in _fill_sink_methods(ev):
        for c in ev.calls_named(method):
            if any(isinstance(a.value, cst.Name) and a.value.value == name for a in c.args):
                row = ev.project.frameworks.match_call(ev.index, c)
                if isinstance(row, SinkModel) and row.fills:
                    return True
    return used_elsewhere(ev, name) or any(name_filled(ev, other, at) for other in _wrapped_as(ev, name))


def _wrapped_as(ev: Evaluator, name: str) -> list[str]:
    """The module-level names a template row builds from the text `name` holds
    (`PROMPT = PromptTemplate(PROMPT_TMPL)`): filling those fills it."""
    out = []
    for other, bindings in ev.index.module_scope.bindings.items():
        expr = bindings[-1].expr if bindings else None
        if other != name and isinstance(expr, cst.Call) and expr.args:
            first = expr.args[0].value
            row = ev.project.frameworks.match_call(ev.index, expr)
            if (
                isinstance(first, cst.Name)
                and first.value == name
                and isinstance(row, SinkModel)
                and row.templates
            ):
                out.append(other)
    return out


def _assigned_name(index: ModuleIndex, expr: cst.BaseExpression) -> str | None:
    """The module-level name `expr` is assigned to, if it is (`NAME = expr`)."""
    for name, bindings in index.module_scope.bindings.items():
        if any(b.expr is expr for b in bindings):
            return name
    return None


def _fill_sink_methods(ev: Evaluator) -> set[str]:
    return {p.rsplit(".", 1)[-1] for row in ev.project.frameworks.sinks if row.fills for p in row.calls}


def piped(ev: Evaluator, call: cst.Call, env: Env) -> Value | None:
    """`(prompt | llm).invoke({...})`, or `chain = prompt | llm` then `chain.invoke({...})`, or a
    chain a project helper returns (`make_chain().invoke({...})`): the chain's first stage, a
    template, filled with what the call passes; None for any other call."""
    if not isinstance(call.func, cst.Attribute):
        return None
    found = _chain(ev, call.func.value, env)
    if found is None:
        return None
    owner, node, at = found
    while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        node = node.left
    first = owner.value(node, at.deeper())
    return ev.format(first if owner is ev else ev.anchor(first, call), call, env)


def _chain(
    ev: Evaluator, node: cst.BaseExpression | None, env: Env, hops: int = 0
) -> tuple[Evaluator, cst.BaseExpression, Env] | None:
    """The `a | b` a receiver holds, with the evaluator and env it is read in: the expression, a
    name assigned it, or what the one return of a project helper called there holds (the helper
    builds the chain per request, `prompt.partial(day=...)` included, and the caller invokes it)."""
    if isinstance(node, cst.Name):
        node = ev.index.assigned(node)
    if isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        return ev, node, env
    if not isinstance(node, cst.Call) or hops > 2 or env.depth > 8:
        return None
    callee = ev.resolve_callable(node.func, node)
    if callee is None or callee[1] in ev.active:
        return None
    owner, fn = callee
    returns = [r.value for r in owner.index.bodies[fn].returns if r.value is not None]
    if len(returns) != 1:
        return None
    inner = Env(args={**env.args, fn: ev.bind_arguments(fn, node, env)}, depth=env.depth + 1)
    return _chain(owner, returns[0], inner, hops + 1)
