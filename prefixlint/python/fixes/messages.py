"""Chat messages as code writes them: `{"role": ..., "content": ...}`, `("system", ...)` and
constructors like `SystemMessage(content=...)`; their role and where their content is."""

from __future__ import annotations

import warnings

import libcst as cst

from prefixlint.python.fixes.source import callee

SYSTEM = {"system", "developer"}
USER = {"user", "human"}
_ROLES = {"system", "developer", "user", "human", "assistant", "ai", "tool", "function", "model"}
# LangChain-style message classes, by the role they carry.
_CONSTRUCTORS = {"SystemMessage": "system", "HumanMessage": "human", "UserMessage": "user", "AIMessage": "ai"}


def literal(node: cst.CSTNode | None) -> str | None:
    """What a plain string literal says; None for anything else, or a literal Python would refuse."""
    if not isinstance(node, cst.SimpleString):
        return None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # `"\w"` warns; it is still that text
            value = node.evaluated_value
    except (ValueError, SyntaxError):  # a NUL byte
        return None
    return value if isinstance(value, str) else None


def role_of(node: cst.CSTNode) -> str | None:
    """The role a literal names ("system", "user", ...), lower-case."""
    value = literal(node)
    return value.lower() if value is not None and value.lower() in _ROLES else None


def _key(element: cst.DictElement) -> str | None:
    return literal(element.key)


def _constructor(node: cst.CSTNode) -> str | None:
    return _CONSTRUCTORS.get(callee(node)) if isinstance(node, cst.Call) else None


def role(message: cst.CSTNode | None) -> str | None:
    """The role of a message written in one of the shapes above, else None."""
    if isinstance(message, cst.Dict):
        for el in message.elements:
            if isinstance(el, cst.DictElement) and _key(el) == "role":
                return role_of(el.value)
    if isinstance(message, cst.Tuple) and len(message.elements) == 2:
        return role_of(message.elements[0].value)
    return _constructor(message) if message is not None else None


def content(message: cst.CSTNode) -> cst.BaseExpression | None:
    """The expression a message's text is written in."""
    if isinstance(message, cst.Dict):
        found = [
            el.value for el in message.elements if isinstance(el, cst.DictElement) and _key(el) == "content"
        ]
        return found[0] if found else None
    if isinstance(message, cst.Tuple) and len(message.elements) == 2:
        return message.elements[1].value
    if _constructor(message) is not None:
        assert isinstance(message, cst.Call)
        named = [a.value for a in message.args if a.keyword is not None and a.keyword.value == "content"]
        plain = [a.value for a in message.args if a.keyword is None and not a.star]
        return (named or plain or [None])[0]
    return None


def holding(
    node: cst.CSTNode, parent: cst.CSTNode | None, grandparent: cst.CSTNode | None
) -> cst.CSTNode | None:
    """The message whose content `node` is (`parent` and `grandparent` above it), if any."""
    if isinstance(parent, cst.DictElement) and parent.value is node and isinstance(grandparent, cst.Dict):
        return grandparent if _key(parent) == "content" and role(grandparent) else None
    if isinstance(parent, cst.Element) and isinstance(grandparent, cst.Tuple):
        return grandparent if role(grandparent) and content(grandparent) is node else None
    if isinstance(parent, cst.Arg) and grandparent is not None and _constructor(grandparent) is not None:
        return grandparent if content(grandparent) is node else None
    return None
