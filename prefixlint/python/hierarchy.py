"""Class hierarchy analysis: the project methods a call on an object of a known class may run.

A call `model.generate(...)` on a value whose class is known statically (`model: Model`) runs
`Model.generate` or the override of a project subclass (`OpenAIServerModel.generate`, which calls
the real client): the call reaches a sink when any of them does. `obj(...)` is `__call__`, and a
method that only forwards its arguments (`return self.generate(*args, **kwargs)`) is the method it
forwards to, looked up on the same class. The subclasses are found by a text search of the
project's modules (indexed once per project root and process), then checked by resolving each
candidate's bases; bounded in depth and number, in a deterministic order.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.python.project import Project, python_sources, read_text

if TYPE_CHECKING:
    from prefixlint.python.evaluate import Evaluator

Method = tuple["Evaluator", cst.FunctionDef]
ClassRef = tuple["Evaluator", cst.ClassDef]

MAX_SUBCLASS_DEPTH = 3
MAX_SUBCLASSES = 24
MAX_OVERRIDES = 8
MAX_FORWARDS = 2

_CLASS = re.compile(r"^[ \t]*class[ \t]+\w+[ \t]*\(([^)]*)\)", re.MULTILINE)
# Project roots indexed in this process: a word named in a class statement's bases -> the modules.
_BASES: dict[str, dict[str, list[str]]] = {}


def _modules_naming(project: Project, base: str) -> list[str]:
    """The project modules with a class statement whose bases name `base` (a text search)."""
    found = _BASES.get(project.root)
    if found is None:
        found = _BASES[project.root] = {}
        for path in python_sources(project):
            if _is_test(os.path.relpath(path, project.root)):
                continue  # a test double (`FakeModel(Model)`) sends no request of the program
            content = read_text(path)
            if content is None or "class" not in content:
                continue
            for word in sorted({w for bases in _CLASS.findall(content) for w in re.findall(r"\w+", bases)}):
                found.setdefault(word, []).append(path)
    return found.get(base, [])


def _is_test(relative: str) -> bool:
    parts = relative.split(os.sep)
    name = parts[-1]
    return (
        any(p in ("test", "tests", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def subclasses(ev: Evaluator, cls: cst.ClassDef) -> list[ClassRef]:
    """The project classes deriving from `cls`, directly or through others, nearest first."""
    out: list[ClassRef] = []
    seen = {id(cls)}
    level = [(ev, cls)]
    for _ in range(MAX_SUBCLASS_DEPTH):
        following: list[ClassRef] = []
        for _, owner in level:
            for path in _modules_naming(ev.project, owner.name.value):
                other = ev.project.evaluator(path)
                if other is None:
                    continue
                for candidate in other.index.classes.values():
                    if id(candidate) in seen or owner.name.value not in _base_words(candidate):
                        continue
                    if any(b[1] is owner for b in other.base_classes(candidate)):
                        seen.add(id(candidate))
                        following.append((other, candidate))
                        if len(out) + len(following) >= MAX_SUBCLASSES:
                            return out + following
        out += following
        level = following
        if not level:
            break
    return out


def _base_words(cls: cst.ClassDef) -> set[str]:
    words = set()
    for arg in cls.bases:
        node = arg.value
        while isinstance(node, cst.Attribute):
            words.add(node.attr.value)
            node = node.value
        if isinstance(node, cst.Name):
            words.add(node.value)
    return words


def dispatch(ev: Evaluator, cls: cst.ClassDef, name: str, forwards: int = 0) -> list[Method]:
    """The methods a call of `name` on an object of class `cls` may run: the one `cls` has (its
    own or inherited) and the overrides of its project subclasses, each forwarder replaced by what
    it forwards to; at most MAX_OVERRIDES, in a deterministic order."""
    out: list[Method] = []
    seen: set[int] = set()
    candidates: list[Method] = []
    found = ev.method(cls, name)
    if found is not None:
        candidates.append(found)
    for sub_ev, sub in subclasses(ev, cls):
        own = sub_ev.index.methods.get((sub.name.value, name))
        if own is not None:
            candidates.append((sub_ev, own))
    for method_ev, fn in candidates:
        target = forwarded_to(fn)
        if target is not None and forwards < MAX_FORWARDS:
            replaced = dispatch(ev, cls, target, forwards + 1)
        else:
            replaced = [(method_ev, fn)]
        for item in replaced:
            if id(item[1]) not in seen:
                seen.add(id(item[1]))
                out.append(item)
        if len(out) >= MAX_OVERRIDES:
            return out[:MAX_OVERRIDES]
    return out


def forwarded_to(fn: cst.FunctionDef) -> str | None:
    """The method of `self` that `fn` passes all its arguments on to unchanged, when its body is
    only that (`return self.generate(*args, **kwargs)`), else None."""
    star = fn.params.star_arg
    args = star.name.value if isinstance(star, cst.Param) else None
    kwargs = fn.params.star_kwarg.name.value if fn.params.star_kwarg is not None else None
    body = fn.body.body if isinstance(fn.body, cst.IndentedBlock) else ()
    statements = [s for s in body if not _is_docstring(s)]
    if args is None or kwargs is None or len(statements) != 1:
        return None
    stmt = statements[0]
    if not (isinstance(stmt, cst.SimpleStatementLine) and len(stmt.body) == 1):
        return None
    small = stmt.body[0]
    call = small.value if isinstance(small, (cst.Return, cst.Expr)) else None
    if not (
        isinstance(call, cst.Call)
        and isinstance(call.func, cst.Attribute)
        and isinstance(call.func.value, cst.Name)
        and call.func.value.value == "self"
    ):
        return None
    passed = [(a.star, a.value.value if isinstance(a.value, cst.Name) else None) for a in call.args]
    return call.func.attr.value if passed == [("*", args), ("**", kwargs)] else None


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def forget() -> None:
    """A new run indexes afresh (files may have changed since the last)."""
    _BASES.clear()
