"""The request one call of a modelled API sends: its prompt arguments evaluated, in request order.

What a sink sends is assembled in the order the request puts it: tools, system text, the messages,
the user turn (`frameworks.PARTS`); each part starts with a `Break` naming it, as a message does.
Arguments are read where they are written: keywords, `**mapping` (a dict built here, or one a
project helper returns), fields inside a config object or payload, a function passed by reference
(the framework calls it for each request), a template filled with what the call passes, and the
text the library adds ahead of the messages or after the template (evaluate/appended.py).
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from prefixlint.python import fills
from prefixlint.python.evaluate import Env, Evaluator
from prefixlint.python.forwarding import forwarded_whole
from prefixlint.python.frameworks import PARTS, SinkModel
from prefixlint.python.scopes import ModuleIndex, string_value
from prefixlint.python.segments import FORWARDED, Break, Provenance, Value, choice, concat

# Parts that are one message's text, and the role they are sent as.
_ROLE_OF_PART = {"system": "system", "user": "user", "tools": "tools"}


def request_value(ev: Evaluator, call: cst.Call, row: SinkModel, env: Env) -> Value | None:
    """What a call of a modelled API sends: its prompt arguments evaluated, in request order (and
    within a part, in the order the row lists them); None when the call passes none of them."""
    found: list[tuple[str, int, Value]] = []
    position = 0
    env = ev.with_items(call, env)  # in a loop over items: one request per item
    # a template filled in this module is judged where it is filled, not by its placeholders' names
    inner = env.deeper(template=row.templates and not fills.filled_here(ev, call))
    named = fills.fill_values(ev, call, row, env) if row.fills else None
    chained = fills.piped(ev, call, env) if "messages" in row.arguments.values() else None
    if chained is not None:  # `(prompt | llm).invoke({...})`: the prompt, filled
        return in_order([("messages", 0, chained)])
    for arg in call.args:
        if arg.star == "**":  # `completion(**kwargs)` with `kwargs = {"messages": ...}` built here
            nodes: dict[str, tuple[Evaluator, cst.BaseExpression, Env]] = {}
            # a wrapper's own `**kwargs` passed on, with the entries it sets on them
            entries = {
                **forwarded_keywords(ev, arg.value, row, env),
                **ev.passed_mapping(arg.value, env, nodes=nodes),
            }
            for key, item in entries.items():
                part = row.part_of(key, -1)
                if part is not None:
                    item = ev.followed(call, row, key, item)
                    found.append((part, row.rank(key if key in row.arguments else "*"), item))
                nested = row.fields_of(key, -1)
                if nested and key in nodes:  # `**{"body": {"system": ...}}`: the fields the row names
                    owner, node, at = nodes[key]
                    for part, rank, value in field_values(owner, row, key, node, nested, at):
                        found.append((part, rank, value if owner is ev else ev.anchor(value, arg.value)))
            continue
        if arg.star:
            continue
        keyword = arg.keyword.value if arg.keyword is not None else None
        key = keyword if keyword is not None else str(position)
        part = row.part_of(keyword, position)
        nested = row.fields_of(keyword, position)
        if keyword is None:
            position += 1
        if part is not None:
            if part == "prompt" and isinstance(arg.value, (cst.List, cst.Tuple)) and arg.value.elements:
                # `llm.generate([p1, p2])`: a batch, each prompt a request of its own
                value = choice([ev.called_value(el.value, inner) for el in arg.value.elements])
            else:
                value = ev.called_value(arg.value, inner)
            if named is not None and part == "prompt":  # the template, filled with what the call passes
                value = fills.filled(ev, ev.template_of(arg.value, value, env), call, named)
            value = ev.followed(call, row, key, value)
            found.append((part, row.rank(key if key in row.arguments else "*"), value))
        if nested:
            found += field_values(ev, row, key, arg.value, nested, inner)
    if not found:
        return None
    # what the provider renders ahead of the messages (`response_format=`), first in its part
    found += [(part, -1, value) for part, value in ev.appended_ahead(call)]
    # a whole list or text passed on from one parameter is the caller's to judge
    found = [(part, rank, forwarded_whole(part, value)) for part, rank, value in found]
    value = in_order(found)
    assert value is not None
    return ev.template_call(call, value, env) if row.templates else ev.with_appended(call, value)


def forwarded_keywords(ev: Evaluator, node: cst.BaseExpression, row: SinkModel, env: Env) -> dict[str, Value]:
    """`create(**kwargs)` in a wrapper `def send(self, **kwargs)` whose summary is being made: each
    prompt keyword of the row stands for what a call of the wrapper passes under that name (summaries.py
    puts it in place; a keyword the call does not pass adds no text)."""
    fn = env.summary
    if not (
        isinstance(node, cst.Name) and isinstance(fn, cst.FunctionDef) and fn.params.star_kwarg is not None
    ):
        return {}
    if fn.params.star_kwarg.name.value != node.value or ev.index.scope_for(node).node is not fn:
        return {}
    out: dict[str, Value] = {}
    for key in row.arguments:
        if key.isidentifier():  # a keyword, not a position, a field of one or `*`
            (hole,) = ev.hole(Provenance.UNKNOWN, node, key, by_name=True)
            out[key] = (replace(hole, param=(id(fn), FORWARDED + key)),)
    return out


def field_values(
    ev: Evaluator, row: SinkModel, key: str, node: cst.BaseExpression, nested: list[tuple[str, str]], env: Env
) -> list[tuple[str, int, Value]]:
    """The fields the row names inside an argument (`config=types.GenerateContentConfig(
    system_instruction=...)`, `body=json.dumps({"system": ...})`): (part, rank, value) each."""
    given = fields_given(ev.index, node)
    if given is None:  # a config dict read from a file (`config=self.agents_config["writer"]`)
        data = ev.data(node, env)
        if not isinstance(data, dict):
            return []
        return [  # a framework's template text: its `{placeholders}` are filled later, as a literal's are
            (
                part,
                row.rank(f"{key}.{name}"),
                ev.fill(data[name], node, [], {}) if row.templates else data[name],
            )
            for name, part in nested
            if isinstance(data.get(name), tuple)
        ]
    return [
        (part, row.rank(f"{key}.{name}"), ev.called_value(given[name], env))
        for name, part in nested
        if name in given
    ]


def fields_given(index: ModuleIndex, node: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """The fields of a config object or payload as written: a call's keywords, a dict literal's
    string keys, through `json.dumps(...)` and names assigned once; None when they cannot be seen."""
    for _ in range(4):  # `body = json.dumps(request)`, `request = {...}`
        if isinstance(node, (cst.Name, cst.Attribute)):
            node = index.assigned(node)
        elif isinstance(node, cst.Call) and "json.dumps" in index.qualified_names(node.func):
            node = node.args[0].value if node.args else None
        elif isinstance(node, cst.Call) and (made := _made_by(index, node)) is not None:
            node = made  # `config=make_config()`: what the helper returns
        elif isinstance(node, cst.Call):
            return {a.keyword.value: a.value for a in node.args if a.keyword is not None}
        elif isinstance(node, cst.Dict):
            return {
                string_value(e.key): e.value
                for e in node.elements
                if isinstance(e, cst.DictElement)
                and isinstance(e.key, cst.SimpleString)
                and isinstance(string_value(e.key), str)
            }
        if node is None:
            return None
    return None


def assemble(parts: dict[str, list[Value]]) -> Value:
    """The parts in request order, each message part opened by a `Break` of its role (a message
    value that has a role of its own keeps it, but system text is system text whatever builds it)."""
    out: list[Value] = []
    for part in PARTS:
        for value in parts.get(part, ()):
            role = _ROLE_OF_PART.get(part)
            if part == "messages" and not (value and isinstance(value[0], Break)):
                role = "user"  # a plain string where messages go (`input="..."`) is the user turn
            if role is not None:
                if value and isinstance(value[0], Break) and part != "messages":
                    value = value[1:]
                value = (Break(role), *value)
            out.append(value)
    return concat(*out)


def _made_by(index: ModuleIndex, call: cst.Call) -> cst.BaseExpression | None:
    """What a module function called here returns, when it has one `return`."""
    fn = index.functions.get(call.func.value) if isinstance(call.func, cst.Name) else None
    returns = index.bodies[fn].returns if fn is not None and fn in index.bodies else []
    return returns[0].value if len(returns) == 1 else None


def in_order(found: list[tuple[str, int, Value]]) -> Value | None:
    """(part, rank, value) triples as one request: parts in request order, and within a part by
    rank (the row's order), equal ranks in the order written."""
    if not found:
        return None
    parts: dict[str, list[Value]] = {}
    for part, _, value in sorted(found, key=lambda f: f[1]):
        parts.setdefault(part, []).append(value)
    return assemble(parts)
