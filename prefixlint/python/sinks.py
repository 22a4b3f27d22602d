"""Sinks: the calls in a module that send prompt text to a model, and the request each one sends.

A call is a sink when it is a row of the models table (prefixlint/python/frameworks.py), a
function or class of the project that passes what it is given on to one (a wrapper,
prefixlint/python/summaries.py), or a builder the project declares (`python.sinks`). What a sink
sends is assembled in the order the request puts it: tools, system text, the messages, the user
turn (`frameworks.PARTS`); each part starts with a `Break` naming it, as a message does.
"""

from __future__ import annotations

import libcst as cst

from prefixlint.python.evaluate import Env, Evaluator, func_name
from prefixlint.python.frameworks import PARTS, SinkModel
from prefixlint.python.prompt import Prompt
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import Break, Value, concat

# Parts that are one message's text, and the role they are sent as.
_ROLE_OF_PART = {"system": "system", "user": "user", "tools": "tools"}


def request_value(ev: Evaluator, call: cst.Call, row: SinkModel, env: Env) -> Value | None:
    """What a call of a modelled API sends: its prompt arguments evaluated, in request order; None
    when the call passes none of them."""
    parts: dict[str, list[Value]] = {}
    position = 0
    for arg in call.args:
        if arg.star == "**":  # `completion(**kwargs)` with `kwargs = {"messages": ...}` built here
            for key, item in _mapping(ev, arg.value, env).items():
                part = row.part_of(key, -1)
                if part is not None:
                    parts.setdefault(part, []).append(item)
            continue
        if arg.star:
            continue
        keyword = arg.keyword.value if arg.keyword is not None else None
        part = row.part_of(keyword, position)
        if keyword is None:
            position += 1
        if part is None:
            continue
        parts.setdefault(part, []).append(argument_value(ev, arg.value, env.deeper(template=row.templates)))
    if not parts:
        return None
    return assemble(parts)


def _mapping(ev: Evaluator, node: cst.BaseExpression, env: Env) -> dict[str, Value]:
    """The entries of a dict passed as `**mapping`: a dict display, or a name bound to one here
    (and its entries set afterwards, `kwargs["tools"] = tools`), each entry's value evaluated."""
    from prefixlint.python.prompt_files import entries_set_after, last_assignment

    shown = last_assignment(ev, node) if isinstance(node, cst.Name) else node
    out: dict[str, Value] = {}
    if isinstance(shown, cst.Dict):
        for el in shown.elements:
            if isinstance(el, cst.DictElement) and isinstance(el.key, cst.SimpleString):
                key = el.key.evaluated_value
                if isinstance(key, str):
                    out[key] = ev.value(el.value, env.deeper())
    if isinstance(node, cst.Name):
        out.update({k: v for k, v in entries_set_after(ev, node, env).items() if isinstance(v, tuple)})
    return out


def argument_value(ev: Evaluator, node: cst.BaseExpression, env: Env) -> Value:
    """An argument's text; a function passed by name (`instructions=build_instructions`) is called
    by the framework for each request: what it returns."""
    if isinstance(node, cst.Name) and node.value in ev.index.functions:
        return ev.function_output(ev.index.functions[node.value], None, env)
    return ev.value(node, env)


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


def _describe(ev: Evaluator, call: cst.Call, row: SinkModel) -> str:
    return f"the request of `{ev.label(call.func)}()` ({row.name})"


class _SinkFinder:
    """visit_ methods replayed over the index's recorded nodes (ModuleIndex.replay)."""

    def __init__(self, index: ModuleIndex, ev: Evaluator) -> None:
        self.index, self.ev = index, ev
        self.frameworks = ev.project.frameworks
        self.prompts: list[Prompt] = []

    def _add(self, node: cst.CSTNode, value: Value | None, what: str, whole: bool) -> None:
        if value:
            line = self.index.pos(node)[0]
            self.prompts.append(Prompt(value, line, what, open_tail=not whole, reached=True))

    def visit_Call(self, node: cst.Call) -> None:
        row = self.frameworks.match_call(self.index, node)
        self.ev.project.steps = 0  # each request gets the whole budget
        try:
            if isinstance(row, SinkModel):
                self._add(
                    node,
                    request_value(self.ev, node, row, Env()),
                    _describe(self.ev, node, row),
                    row.whole_request,
                )
                return
            if row is not None:
                return  # a client constructor: configuration only
            from prefixlint.python.summaries import requests_at_call

            for name, template in requests_at_call(self.ev, node, Env()):
                what = f"the request `{name}()` sends ({template.what})"
                self._add(node, template.value, what, template.whole)
        except RecursionError:  # pathologically deep code: skip this request, not the file
            return

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        for decorator in node.decorators:
            row = self.frameworks.match_decorator(self.index, decorator)
            if row is None:
                continue
            self.ev.project.steps = 0
            try:
                output = self.ev.function_output(node, None, Env())
            except RecursionError:
                return
            what = (
                f"what `{node.name.value}()` returns ({row.name}, `@{func_name(_decorator_func(decorator))}`)"
            )
            self._add(node, assemble({row.returns: [output]}), what, row.whole_request)
            return


def _decorator_func(decorator: cst.Decorator) -> cst.BaseExpression:
    node = decorator.decorator
    return node.func if isinstance(node, cst.Call) else node


def find_sinks(index: ModuleIndex, evaluator: Evaluator) -> list[Prompt]:
    """The requests the module's sinks send, each `reached`."""
    finder = _SinkFinder(index, evaluator)
    index.replay(finder)
    return finder.prompts
