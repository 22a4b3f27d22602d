"""What the history passes record about one module, and the small readers they share.

Where a node is (its function, the loops and `if` tests around it: `Site`), each rewrite found on
a history (`Op`: dropped from the head, filtered by role, a field cleared, a per-turn block written
into the last message), what one pass over the module collected (`Facts`), and what a request was
followed back to (`Sent`). A history is named by a `Key`: an attribute by its name, a variable by
the scope that binds it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from prefixlint.python.frameworks import Frameworks
from prefixlint.python.memories import Reach

Key = tuple  # ("attr", name) | ("name", id(owning scope node), name)


@dataclass
class Site:
    node: cst.CSTNode
    fn: cst.FunctionDef | None
    loops: tuple[cst.CSTNode, ...]
    tests: tuple[cst.BaseExpression, ...] = ()  # the `if` tests around it, in its function


@dataclass
class Op:
    kind: str  # head | filter | moving
    key: Key
    site: Site
    what: str
    at_send: bool = False
    base: cst.BaseExpression | None = None  # moving: the list whose last message is written


@dataclass
class Facts:
    appends: dict[Key, list[Site]] = field(default_factory=dict)
    ops: list[Op] = field(default_factory=list)
    calls: list[tuple[cst.Call, Site]] = field(default_factory=list)
    sites: dict[int, Site] = field(default_factory=dict)  # id(node) -> where it is
    typed: set[str] = field(default_factory=set)  # attributes annotated as lists of messages
    shapes: bool = False  # a head slice or a role filter is written somewhere (it may be sent)
    frameworks: Frameworks | None = None  # whose `[[memory]]` rows say which memories rewrite
    memories: list[tuple[Reach, Site]] = field(default_factory=list)  # memories given to a call
    built: dict[int, Key] = field(default_factory=dict)  # id(call) -> what its result is assigned to


def snippet(node: cst.CSTNode) -> str:
    text = " ".join(cst.Module([]).code_for_node(node).split())
    return text if len(text) <= 60 else text[:57] + "..."


def literal_int(node: cst.BaseExpression | None) -> int | None:
    if isinstance(node, cst.Integer):
        return int(node.value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Minus):
        inner = literal_int(node.expression)
        return -inner if inner is not None else None
    return None


@dataclass
class Sent:
    keys: set[Key] = field(default_factory=set)
    ops: list[Op] = field(default_factory=list)  # head slices and role filters met on the way
    copies: dict[Key, set[Key]] = field(default_factory=dict)  # local -> the histories it copies
    shallow: dict[Key, set[Key]] = field(default_factory=dict)
    memories: list[tuple[Reach, Site]] = field(default_factory=list)  # memories read into it
