"""What a type annotation names: the classes a parameter or a variable is declared to hold."""

from __future__ import annotations

import libcst as cst


def annotation_names(node: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The types an annotation names: `X | None`, `Optional[X]`, `"X"` give X."""
    if isinstance(node, cst.BinaryOperation):
        return annotation_names(node.left) + annotation_names(node.right)
    if isinstance(node, cst.Subscript):
        return [
            n
            for el in node.slice
            if isinstance(el.slice, cst.Index)
            for n in annotation_names(el.slice.value)
        ]
    if isinstance(node, cst.SimpleString) and isinstance(node.evaluated_value, str):
        try:  # a forward reference, `"Model"` or `"Optional[Model]"`
            return annotation_names(cst.parse_expression(node.evaluated_value.strip()))
        except cst.ParserSyntaxError:
            return []
    return [node] if isinstance(node, (cst.Name, cst.Attribute)) else []


def parameter_annotation(fn: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The annotation of parameter `name` of `fn`, if it has one."""
    p = fn.params
    for param in (*p.posonly_params, *p.params, *p.kwonly_params):
        if param.name.value == name:
            return param.annotation.annotation if param.annotation is not None else None
    return None
