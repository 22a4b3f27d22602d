"""How a call is written, and the patterns a row matches it with.

A call pattern is either `.a.b.c`, the end of the called expression as written
(`self.client.chat.completions.create` ends with `.chat.completions.create`), or a dotted name
matched (`fnmatch`, `*` crossing dots) against what the called name is imported as
(`langchain*.ChatPromptTemplate.from_messages`). A row with `imports` applies only in modules that
import one of those packages (`imported_packages`): how a generic method name (`.invoke`, `.chat`)
is told apart. Nothing here needs libcst until a node is looked at.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import libcst as cst

    from prefixlint.python.scopes import ModuleIndex


@dataclass(frozen=True)
class Pattern:
    text: str
    suffix: bool  # `.a.b`: the end of the written chain; else a glob over the qualified name

    def matches(self, written: str, qualified: set[str]) -> bool:
        if self.suffix:
            return written == self.text[1:] or written.endswith(self.text)
        return any(fnmatch.fnmatchcase(q, self.text) for q in qualified)


CALL = "__call__"  # a pattern's last name for calls of an object the pattern's name built


def positional_parameters(fn: cst.FunctionDef) -> list[str]:
    """The names of `fn`'s positional parameters, as a caller counts them (after `self`/`cls`)."""
    names = [p.name.value for p in (*fn.params.posonly_params, *fn.params.params)]
    return names[1:] if names[:1] in (["self"], ["cls"]) else names


def written_chain(node: cst.BaseExpression) -> str:
    """`self.client.chat.completions.create` for that chain of names; calls and subscripts in the
    chain (`get_client().messages.create`) keep only the names after them."""
    import libcst as cst

    parts: list[str] = []
    while True:
        if isinstance(node, cst.Attribute):
            parts.append(node.attr.value)
            node = node.value
        elif isinstance(node, cst.Name):
            parts.append(node.value)
            break
        else:
            break
    return ".".join(reversed(parts))


_IMPORTED: dict[int, tuple[ModuleIndex, frozenset[str]]] = {}


def receiver_name(func: cst.BaseExpression) -> str:
    """The last name of what a method is called on: `self._retriever` for `self._retriever.retrieve`,
    `as_retriever` for `index.as_retriever().retrieve`; "" for a plain function."""
    import libcst as cst

    if not isinstance(func, cst.Attribute):
        return ""
    receiver = func.value
    if isinstance(receiver, cst.Call):
        receiver = receiver.func
    if isinstance(receiver, cst.Attribute):
        return receiver.attr.value
    return receiver.value if isinstance(receiver, cst.Name) else ""


def imported_packages(index: ModuleIndex) -> frozenset[str]:
    """The top-level packages a module imports (`langchain_core`, `openai`)."""
    found = _IMPORTED.get(id(index))
    if found is None or found[0] is not index:  # an id is reused once its index is gone
        if len(_IMPORTED) > 64:  # it keeps the indexes alive: a few modules at a time
            _IMPORTED.clear()
        packages = frozenset(d.lstrip(".").split(".")[0] for names in index.imports.values() for d in names)
        found = _IMPORTED[id(index)] = (index, packages)
    return found[1]


def last_name(pattern: str) -> str:
    return pattern.rsplit(".", 1)[-1]


def as_pattern(text: str) -> Pattern:
    return Pattern(text, text.startswith("."))
