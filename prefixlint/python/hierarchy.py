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

from prefixlint.python.project import (
    Project,
    is_test_file,
    modules_defining,
    names_api,
    python_sources,
    read_text,
)

if TYPE_CHECKING:
    from prefixlint.python.evaluate import Evaluator

Method = tuple["Evaluator", cst.FunctionDef]
ClassRef = tuple["Evaluator", cst.ClassDef]

MAX_SUBCLASS_DEPTH = 3
MAX_SUBCLASSES = 24
MAX_OVERRIDES = 8
MAX_FORWARDS = 2

_CLASS = re.compile(r"^[ \t]*class[ \t]+(\w+)[ \t]*\(([^)]*)\)", re.MULTILINE)
# Project roots indexed in this process: a word named in a class statement's bases -> the
# (module, class name) pairs of those statements.
_BASES: dict[str, dict[str, list[tuple[str, str]]]] = {}


def _named_in_bases(project: Project) -> dict[str, list[tuple[str, str]]]:
    """The project's class statements by the words their bases name (a text search, no parse)."""
    found = _BASES.get(project.root)
    if found is None:
        found = _BASES[project.root] = {}
        for path in python_sources(project):
            if is_test_file(os.path.relpath(path, project.root)):
                continue  # a test double (`FakeModel(Model)`) sends no request of the program
            content = read_text(path)
            if content is None or "class" not in content:
                continue
            for child, bases in _CLASS.findall(content):
                for word in sorted(set(re.findall(r"\w+", bases))):
                    found.setdefault(word, []).append((path, child))
    return found


def overrides(ev: Evaluator, cls: cst.ClassDef, name: str) -> list[Method]:
    """The `name` methods that project subclasses of `cls` (directly or through others) define,
    nearest first. The subclasses are found by their names in the text first, and only the modules
    that also define a `name` method and name a modelled API are parsed, to check that the class
    really derives from `cls` (an override that only calls other project code is not followed)."""
    by_base = _named_in_bases(ev.project)
    defining = set(modules_defining(ev.project, name))
    out: list[Method] = []
    seen = {cls.name.value}
    level = [cls.name.value]
    candidates: list[tuple[str, str]] = []
    for _ in range(MAX_SUBCLASS_DEPTH):
        following = []
        for base in level:
            for path, child in by_base.get(base, ()):
                if child not in seen:
                    seen.add(child)
                    following.append(child)
                if path in defining:
                    candidates.append((path, child))
        level = following
        if len(candidates) >= MAX_SUBCLASSES or not level:
            break
    for path, child in candidates[:MAX_SUBCLASSES]:
        if not names_api(ev.project, path):
            continue  # a module that names no modelled API: its override sends no request itself
        other = ev.evaluator(path)
        sub = other.index.classes.get(child) if other is not None else None
        own = other.index.methods.get((child, name)) if sub is not None else None
        if own is not None and _derives(other, sub, cls, MAX_SUBCLASS_DEPTH):
            out.append((other, own))
    return out


def _derives(ev: Evaluator, sub: cst.ClassDef, cls: cst.ClassDef, depth: int) -> bool:
    for base_ev, base in ev.base_classes(sub):
        if base is cls or (depth > 1 and _derives(base_ev, base, cls, depth - 1)):
            return True
    return False


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
    candidates += overrides(ev, cls, name)
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
