"""A fast walk over a libcst subtree: a node's children read from its fields, and the nodes of some
kinds below it. libcst's own `children` and visitors rebuild or revisit every node, about ten times
slower; the history and memory passes walk the same trees many times.
"""

from __future__ import annotations

import dataclasses
import re

import libcst as cst


def nodes(node: cst.CSTNode, kinds: type | tuple[type, ...]) -> list:
    """The nodes of those kinds in a subtree, itself included."""
    out = []
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, kinds):
            out.append(n)
        stack.extend(reversed(kids(n)))
    return out


# A node type's fields that may hold nodes a shape is made of (not whitespace, commas, brackets).
_FIELDS: dict[type, tuple[str, ...]] = {}
_PUNCTUATION = re.compile(
    r"whitespace|^(?:comma|lpar|rpar|lbracket|rbracket|lbrace|rbrace|leading_lines|lines_after_decorators"
    r"|semicolon|colon|equal|dot|default_indicator|header|footer|newline|indent)$"
)
_IS_NODE: dict[type, bool] = {}


def kids(node: cst.CSTNode) -> list[cst.CSTNode]:
    """A node's children read from its fields (libcst's `children` runs a visitor per call)."""
    names = _FIELDS.get(type(node))
    if names is None:
        fields = dataclasses.fields(node)  # type: ignore[arg-type]
        names = _FIELDS[type(node)] = tuple(f.name for f in fields if not _PUNCTUATION.search(f.name))
    out: list[cst.CSTNode] = []
    for name in names:
        value = getattr(node, name)
        if type(value) in (list, tuple):
            out += [v for v in value if _node(v)]
        elif _node(value):
            out.append(value)
    return out


def _node(value: object) -> bool:
    kind = type(value)
    found = _IS_NODE.get(kind)
    if found is None:
        found = _IS_NODE[kind] = isinstance(value, cst.CSTNode) and not isinstance(
            value, (cst.BaseParenthesizableWhitespace, cst.Comma, cst.EmptyLine)
        )
    return found
