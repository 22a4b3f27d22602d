"""Sinks: the calls in a module that send prompt text to a model, and the request each one sends.

A call is a sink when it is a row of the models table (prefixlint/data/frameworks.toml), a
function or class of the project that passes what it is given on to one (a wrapper,
prefixlint/python/summaries.py), a sink passed or bound as a value (valuecalls.py), or a builder
the project declares (`python.sinks`). What each sends is assembled in request order
(prefixlint/python/request.py); a prompt class (a DSPy signature, a tool class) sends its docstring
and class attributes, and a decorated function what it returns.
"""

from __future__ import annotations

import libcst as cst

from prefixlint.python.evaluate import Env, Evaluator, func_name
from prefixlint.python.frameworks import SinkModel
from prefixlint.python.prompt import Prompt
from prefixlint.python.request import assemble, fields_given, in_order, request_value
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import Value, text
from prefixlint.python.summaries import requests_at_call, value_requests


def class_value(ev: Evaluator, cls: cst.ClassDef, row: SinkModel) -> Value | None:
    """What a subclass of a class row sends (a DSPy signature, a tool class): its docstring and class
    attributes as the row's `attributes` map them, in the row's order, else the class body's."""
    table = row.attributes
    found: list[tuple[str, int, Value]] = []
    doc = cls.get_docstring()
    if doc and "__doc__" in table:
        found.append((table["__doc__"], row.rank("__doc__", table), text(doc)))
    for name, node in _class_attributes(cls):
        given = fields_given(ev.index, node) if isinstance(node, cst.Call) else None
        for key, part in table.items():
            owner, _, field = key.partition(".")
            if owner != name and (owner != "*" or f"{name}.{field}".rstrip(".") in table):
                continue  # `*` stands for the attributes (or fields) not named otherwise
            if not field:
                found.append((part, row.rank(key, table), ev.value(node, Env())))
            elif given is not None and field in given:
                found.append((part, row.rank(key, table), ev.value(given[field], Env())))
    return in_order(found)


def _class_attributes(cls: cst.ClassDef) -> list[tuple[str, cst.BaseExpression]]:
    """`name = value` and `name: type = value` in a class body, in order."""
    out = []
    for stmt in cls.body.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Assign) and small.value is not None:
                out += [
                    (t.target.value, small.value) for t in small.targets if isinstance(t.target, cst.Name)
                ]
            elif (
                isinstance(small, cst.AnnAssign)
                and small.value is not None
                and isinstance(small.target, cst.Name)
            ):
                out.append((small.target.value, small.value))
    return out


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
            wrapped = requests_at_call(self.ev, node, Env())
            for name, template in wrapped:
                what = f"the request `{name}()` sends ({template.what})"
                self._add(node, template.value, what, template.whole)
            if not wrapped:  # a sink passed or bound as a value, or a callable parameter
                for _, template in value_requests(self.ev, node, Env()):
                    self._add(node, template.value, f"the request of {template.what}", template.whole)
        except RecursionError:  # pathologically deep code: skip this request, not the file
            return

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        row = self.frameworks.match_class(self.index, node)
        if row is None:
            return
        self.ev.project.steps = 0
        try:
            value = class_value(self.ev, node, row)
        except RecursionError:
            return
        self._add(node, value, f"the prompt class `{node.name.value}` ({row.name})", row.whole_request)

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
