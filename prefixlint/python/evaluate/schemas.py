"""Generated schemas: the choices a schema construct is given, and the schema a class or function
has when it is handed over as a value.

A `[[schema]]` row of the models table (`Literal[...]`, `Enum("Zone", names)`, a framework input's
`options=`) makes a schema whose choices keep the order they are given in: an unordered value there
(a set, `available_timezones()`) reorders the schema. A class (a pydantic model) or a function (a
`@tool`) passed as a value becomes a tool schema or a structured output generated from its
annotations, so it carries the order of the choices they spell. Only a value unordered by its
source counts: one guessed from a name says nothing about a schema's order.
"""

from __future__ import annotations

from dataclasses import replace

import libcst as cst

from prefixlint.python.evaluate.base import EvaluatorBase, bare_set
from prefixlint.python.evaluate.env import MAX_DEPTH, Env
from prefixlint.python.frameworks import SchemaModel
from prefixlint.python.segments import EMPTY, Hole, Provenance, Value, holes


class Schemas(EvaluatorBase):
    """Schema constructs, and the schemas of classes and functions handed over as values."""

    def schema_value(self, node: cst.Call | cst.Subscript, row: SchemaModel, env: Env) -> Value:
        """What a schema construct gives: nothing when its flags are not passed (it makes no schema:
        a framework input not offered to the model), the first choice unordered by its source, else
        an unknown value (the choices are known, or say nothing of their order)."""
        if isinstance(node, cst.Call):
            given = {a.keyword.value: a.value for a in node.args if a.keyword is not None}
            if not all(_true(given.get(flag)) for flag in row.flags):
                return EMPTY
            positional = [a for a in node.args if a.keyword is None and not a.star]
            chosen = [a.value for a in node.args if a.keyword is not None and row.chosen(a.keyword.value, -1)]
            chosen += [a.value for i, a in enumerate(positional) if row.chosen(None, i)]
        else:
            chosen = [e.slice.value for e in node.slice if isinstance(e.slice, cst.Index)]
        for expression in chosen:
            found = _unordered_hole(self.value(expression, env.deeper()))
            if found is not None:
                return (_listed(found, self.label(expression)),)
        return self.unknown(node)

    def definition_order(self, definition: cst.ClassDef | cst.FunctionDef, env: Env) -> Value | None:
        """A class or function of this module handed over as a value: the first choice unordered by
        its source in the annotations its generated schema is made from (a class's fields, a
        function's parameters), or None when they have none."""
        key = id(definition)
        memo = self.project.schemas
        if key in memo:
            return memo[key]
        if env.depth > MAX_DEPTH:
            return None
        memo[key] = None  # a class whose fields name itself is read once
        found = None
        for annotation in _annotations(definition):
            found = _unordered_hole(self.value(annotation, Env(depth=env.depth + 1)))
            if found is not None:
                break
        memo[key] = (found,) if found is not None else None
        return memo[key]

    def defined_order(self, name: str, env: Env) -> Value | None:
        """`definition_order` of the module-level class or function `name`, if this module has one."""
        definition = self.index.classes.get(name) or self.index.functions.get(name)
        return self.definition_order(definition, env) if definition is not None else None


def _annotations(definition: cst.ClassDef | cst.FunctionDef) -> list[cst.BaseExpression]:
    """The annotations (and field defaults: `Field(json_schema_extra=...)`) a schema is made from."""
    if isinstance(definition, cst.FunctionDef):
        p = definition.params
        return [
            q.annotation.annotation for q in [*p.posonly_params, *p.params, *p.kwonly_params] if q.annotation
        ]
    out: list[cst.BaseExpression] = []
    for stmt in definition.body.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                if isinstance(small, cst.AnnAssign):
                    out.append(small.annotation.annotation)
                    if small.value is not None:
                        out.append(small.value)
    return out


def _unordered_hole(value: Value) -> Hole | None:
    return next((h for h in holes(value) if h.provenance is Provenance.UNORDERED and not h.by_name), None)


def _true(node: cst.BaseExpression | None) -> bool:
    return isinstance(node, cst.Name) and node.value == "True"


def _listed(hole: Hole, label: str) -> Hole:
    """A set's hole once a schema lists its items: its order is now the schema's (no longer a bare
    set, which an opaque call such as `pydantic_function_tool(GetTime)` would drop), still reported
    where the set is made, where `sorted(...)` fixes it."""
    if not bare_set(hole):
        return hole
    origin = hole.origin[:3] + (label,) + hole.origin[4:] if hole.origin is not None else None
    return replace(hole, label=label, origin=origin)
