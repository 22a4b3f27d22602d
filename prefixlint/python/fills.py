"""Where a template meets its values at a sink, and requests sent once per item.

A sink that takes a template and the values of its placeholders (`llm.predict(tmpl, query_str=q)`,
a row of the models table with `fills = true`) sends the template filled with what the call
passes: each placeholder takes the provenance of the argument given for it (a constant is static
text that counts in what follows; a parameter is a per-request input), and only a placeholder
nothing fills is judged by its name (`Evaluator.placeholder`). `template.format(...)` and the
other fill methods are filled the same way where they are evaluated (`Evaluator.format`).

A sink called inside a loop over a collection (`for node in nodes:`, a comprehension, `map(lambda
n: ..., nodes)`) sends one request per item: the names the loop binds are per-request values
there, at the confidence of a parameter (`Hole.item` names the collection, for the message).
"""

from __future__ import annotations

import re
from dataclasses import replace

import libcst as cst

from prefixlint.python.evaluate import Env, Evaluator, func_name
from prefixlint.python.frameworks import SinkModel
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.scopes import names_in_target as _names_in_target
from prefixlint.python.segments import Hole, Provenance, Value, holes, is_constant, per_option

Loop = tuple[tuple[str, ...], cst.BaseExpression]  # the names a loop binds, and what it iterates
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


def fill_values(ev: Evaluator, call: cst.Call, row: SinkModel, env: Env) -> dict[str, Value]:
    """What a `fills` row's call passes for the placeholders: its keywords and `**mapping` entries,
    not the ones the row names as prompt parts nor those that only configure the call."""
    from prefixlint.python.prompt_files import named_arguments

    skip = set(row.arguments) | ev.project.frameworks.not_prompt
    return {k: v for k, v in named_arguments(ev, call, env).items() if k not in skip}


def filled(ev: Evaluator, template: Value, call: cst.Call, named: dict[str, Value]) -> Value:
    """The template with each placeholder the call fills replaced by what it passes."""
    return per_option(template, lambda v: ev.fill_all(v, call, [], named))


def with_items(ev: Evaluator, call: cst.Call, env: Env) -> Env:
    """`env` with the names bound by the loops around `call` as per-item request values. A loop
    over fixed items (a literal list, constants) sends the same requests on every run: its names
    keep their values."""
    loops = loops_around(ev.index, call)
    if not loops:
        return env
    shadow = dict(env.shadow)
    for names, iterable in loops:
        collection = ev.value(iterable, env.deeper(shadow=shadow))
        if is_constant(collection) or not collection:
            continue
        # As confident as a parameter: sure when the collection is a per-request input known as
        # one (or volatile at its source), else "if its callers pass one".
        strong = any(
            h.provenance.volatile
            and not h.history
            and not h.weak
            and not h.by_name
            or h.provenance is Provenance.REQUEST
            and not h.weak
            and not h.history
            for h in holes(collection)
        )
        label = ev.label(iterable)
        for name in names:
            (hole,) = ev.hole(Provenance.REQUEST, iterable, name, by_name=True, weak=not strong)
            shadow[name] = (replace(hole, item=label, timing="call"),)
    return env.deeper(shadow=shadow) if shadow != env.shadow else env


def loops_around(index: ModuleIndex, call: cst.Call) -> tuple[Loop, ...]:
    """The loops (outermost first) around `call` within its function (or the module's top level)."""
    owner = index.scope_for(call).node
    table = _TABLES.get(id(owner))
    if table is None or table[0] is not owner:
        if len(_TABLES) > 256:
            _TABLES.clear()
        found: dict[int, tuple[Loop, ...]] = {}
        _walk(owner, owner, (), found)
        table = _TABLES[id(owner)] = (owner, found)
    return table[1].get(id(call), ())


_TABLES: dict[int, tuple[cst.CSTNode, dict[int, tuple[Loop, ...]]]] = {}


def _walk(
    node: cst.CSTNode, owner: cst.CSTNode, loops: tuple[Loop, ...], out: dict[int, tuple[Loop, ...]]
) -> None:
    if node is not owner and isinstance(node, (cst.FunctionDef, cst.ClassDef)):
        return  # a scope of its own: its calls are looked up from it
    if isinstance(node, cst.Call):
        if loops:
            out[id(node)] = loops
        lam = node.args[0].value if len(node.args) >= 2 else None
        if isinstance(node.func, cst.Name) and node.func.value == "map" and isinstance(lam, cst.Lambda):
            # `map(lambda n: llm.predict(..., n), nodes)`: the lambda runs once per item
            for arg in node.args[1:]:
                _walk(arg, owner, loops, out)
            params = tuple(p.name.value for p in lam.params.params[:1])
            _walk(lam.body, owner, (*loops, (params, node.args[1].value)), out)
            return
    elif isinstance(node, cst.For):
        _walk(node.iter, owner, loops, out)
        _walk(node.body, owner, (*loops, (tuple(_names_in_target(node.target)), node.iter)), out)
        if node.orelse is not None:
            _walk(node.orelse, owner, loops, out)
        return
    elif isinstance(node, _COMPREHENSIONS):
        inner = loops
        comp: cst.CompFor | None = node.for_in
        while comp is not None:
            _walk(comp.iter, owner, inner, out)
            inner = (*inner, (tuple(_names_in_target(comp.target)), comp.iter))
            for test in comp.ifs:
                _walk(test, owner, inner, out)
            comp = comp.inner_for_in
        parts = (node.key, node.value) if isinstance(node, cst.DictComp) else (node.elt,)
        for part in parts:
            _walk(part, owner, inner, out)
        return
    for child in node.children:
        _walk(child, owner, loops, out)


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
        from prefixlint.python.consumers import importers
        from prefixlint.python.project import read_text

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
    if any(c is not at and func_name(c.func) != "partial" for c in ev.calls_filling(name)):
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
    """`(prompt | llm).invoke({...})`, or `chain = prompt | llm` then `chain.invoke({...})`: the
    chain's first stage, a template, filled with what the call passes; None for any other call."""
    if not isinstance(call.func, cst.Attribute):
        return None
    node: cst.BaseExpression | None = call.func.value
    if isinstance(node, cst.Name):
        node = ev.index.assigned(node)
    if not (isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr)):
        return None
    while isinstance(node, cst.BinaryOperation) and isinstance(node.operator, cst.BitOr):
        node = node.left
    return ev.format(ev.value(node, env.deeper()), call, env)


def template_of(ev: Evaluator, node: cst.BaseExpression, value: Value, env: Env) -> Value:
    """The template a parameter holds where its callers are not seen: its default, when it has one
    (`tmpl: str = DEFAULT_TMPL`): a template configures the call, it is not the request's data."""
    from prefixlint.python.evaluate import _default_of

    if not (isinstance(node, cst.Name) and len(value) == 1 and isinstance(value[0], Hole)):
        return value
    if value[0].param is None:
        return value
    fn = ev.index.scope_for(node).node
    default = _default_of(fn, node.value) if env.summary is not fn else None
    if default is None or (isinstance(default, cst.Name) and default.value == "None"):
        return value
    return ev.value(default, Env(depth=env.depth + 1))
