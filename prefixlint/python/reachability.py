"""Which code of the analysed module cannot run: what it builds sends no request, so a prompt built
there, or a value found there, is no finding (it is dropped, not lowered to info: code that cannot
run costs no cache, and an info line would still ask a reader to look at it).

Everything is judged on the text being analysed, as if it were the file at its path in its project
(the fix verifier's fixed text, never on disk, is judged as the file would be with the fix); the
other files of the project are read from disk.

Two kinds of unreachable code:

1. **A constant-false arm**: the body of an `if`/`elif` whose test literals alone decide false
   (`if False:`, `if 0:`, `elif cond and False:`, `if not True:`), or the `else` of one they decide
   true. The evaluator skips the bindings and returns in such an arm (`Evaluator.may_run`, with the
   same constant evaluation), so text built only there is no prompt text; here a prompt built or a
   value found in the arm is dropped. A module constant (`DEBUG = False`) is not a literal: it is
   there to be changed, and decides nothing.

2. **A dead function**, when the project around the module is seen: its root has a `.git`,
   `pyproject.toml`, `setup.py` or `setup.cfg`, the module lies under it, and the walk of it was
   complete. A function is *judged* when it is a module-level function, a method of a module-level
   class or such a class itself, is no dunder, has no decorator but the plain wrappers below (any
   other may register it: `@app.get`, `@tool`, `@agent.system_prompt`), and
   - for a method, its class's bases are all plain or classes the project defines (a framework base
     may call a method by name: `_run`, `forward`), and the module reads no attribute of `self` by a
     name made at run time (`getattr(self, name)`);
   - for a class, the same bases, and nothing in the project registers subclasses
     (`__init_subclass__`, `__subclasses__`);
   - for a public name (no leading underscore), its module is no package `__init__` (the package's
     face), is imported by another module of the project that is no test, and by none as a whole
     (`from .m import *` makes every public name an export): the project is then its user and
     shows every use. A public name in a module nothing else imports (a library's API, an example
     or a script, a single file checked alone) is an entry: never judged.
   A judged function is dead when its name, as a word, is written nowhere that can run it: not in
   another module or in the docs and configuration of the project (tests excepted: a builder only
   tests call sends no request of the program), and not in the analysed text outside its own
   definition, except inside functions that are dead in turn (a private helper of a dead builder).
   A name written in a string (`getattr(obj, "name")`, a registry, `__all__`) counts as a reference.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.python.evaluate.env import UNDECIDED, func_name
from prefixlint.python.project import (
    MAX_IMPORTED_MODULE_BYTES,
    Project,
    importers,
    is_test_file,
    is_walk_complete,
    read_text,
)
from prefixlint.python.scopes import ModuleIndex, index_module, parse_module

if TYPE_CHECKING:
    from prefixlint.python.evaluate import Evaluator

# What makes a folder a whole project, whose files show every reference to its code.
_PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg")
# Files beside the code whose text may name a function: docs, configuration, entry points.
_REFERRING_SUFFIXES = (".py", ".md", ".toml", ".yaml", ".yml", ".json")
_ROOT_FILES = ("setup.cfg", "tox.ini", "Procfile", "Dockerfile", "Makefile")
# Decorators that only wrap a function: it still has to be called to run.
_PLAIN_DECORATORS = frozenset(
    {
        "staticmethod",
        "classmethod",
        "abstractmethod",
        "property",
        "cached_property",
        "setter",
        "getter",
        "deleter",
        "wraps",
        "lru_cache",
        "cache",
        "overload",
        "override",
        "final",
        "deprecated",
    }
)
# Bases that bring no method to override and call by name.
_PLAIN_BASES = frozenset({"object", "ABC", "Exception", "Protocol"})
_SUBCLASS_HOOKS = ("__init_subclass__", "__subclasses__")
_WORD = re.compile(r"[A-Za-z_]\w*")
_CLASS_LINE = re.compile(r"^[ \t]*class[ \t]+(\w+)", re.MULTILINE)
# `from pkg.mod import a, b` (group 1, 2) or `import pkg.mod` (group 3), on one line.
_IMPORT = re.compile(
    r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import[ \t]+([^\n]*)|import[ \t]+([\w.]+))", re.MULTILINE
)
_NAMES = re.compile(r"\b(\w+)\b(?:[ \t]+as[ \t]+\w+)?")
# An `if`/`elif` whose test may be decided by literals: only such a module is parsed for its arms.
_LITERAL_IF = re.compile(r"^[ \t]*(?:el)?if\b[^\n]*\b(?:False|True|None|0)\b[ \t)]*:", re.MULTILINE)
_SELF_GETATTR = re.compile(r"\bgetattr\(\s*self\s*,\s*(?![\"'\s])")


@dataclass(frozen=True)
class _Words:
    """The words written in a project's files (name -> the files), and the classes it defines."""

    files: dict[str, frozenset[str]]
    classes: frozenset[str]
    read: tuple[str, ...]  # every file whose words these are


_WORDS: dict[str, _Words] = {}  # project root -> its words, read once per run


def forget() -> None:
    """A new run reads the project afresh (references may have been added or removed since)."""
    _WORDS.clear()


def _project_words(project: Project) -> _Words:
    found = _WORDS.get(project.root)
    if found is None:
        by_name = project._index()
        paths = [p for ps in by_name.values() for p in ps if p.endswith(_REFERRING_SUFFIXES)]
        paths += [p for p in (os.path.join(project.root, f) for f in _ROOT_FILES) if os.path.isfile(p)]
        files: dict[str, set[str]] = {}
        classes: set[str] = set()
        read: list[str] = []
        for path in sorted({os.path.abspath(p) for p in paths}):
            if is_test_file(os.path.relpath(path, project.root)):
                continue  # a test calls a builder, but sends no request of the program
            text = read_text(path)
            if not text:
                continue
            read.append(path)
            for word in _words_that_may_run(path, text):
                files.setdefault(word, set()).add(path)
            if path.endswith(".py"):
                classes.update(_CLASS_LINE.findall(text))
        found = _WORDS[project.root] = _Words(
            {w: frozenset(ps) for w, ps in files.items()}, frozenset(classes), tuple(read)
        )
    return found


def _words_that_may_run(path: str, text: str) -> set[str]:
    """The words of a project file, less those written only in its constant-false arms (a call
    there calls nothing). Only a module with an `if` on a literal is parsed for that; one too large
    to parse cheaply keeps every word."""
    if not path.endswith(".py") or _LITERAL_IF.search(text) is None or len(text) > MAX_IMPORTED_MODULE_BYTES:
        return set(_WORD.findall(text))
    from prefixlint.python.evaluate import Evaluator

    try:
        index = index_module(parse_module(text), path)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return set(_WORD.findall(text))
    arms = _false_arms(index, Evaluator(index))
    lines = text.splitlines()
    return {
        w for n, line in enumerate(lines, 1) if not any(n in arm for arm in arms) for w in _WORD.findall(line)
    }


def _is_seen(project: Project, path: str) -> bool:
    """Whether the module lies in a whole project whose files show every reference to its code."""
    root = os.path.abspath(project.root)
    inside = path.startswith(root + os.sep)
    return (
        inside
        and any(os.path.exists(os.path.join(root, m)) for m in _PROJECT_MARKERS)
        and is_walk_complete(project)
    )


def _last_name(node: cst.BaseExpression) -> str:
    """`functools.wraps(f)` -> "wraps", `pkg.Base` -> "Base"."""
    return func_name(node.func if isinstance(node, cst.Call) else node)


def _plainly_decorated(node: cst.FunctionDef | cst.ClassDef) -> bool:
    return all(_last_name(d.decorator) in _PLAIN_DECORATORS for d in node.decorators)


def _plain_bases(cls: cst.ClassDef, defined: frozenset[str]) -> bool:
    """Whether every base of `cls` is plain or a class of the project (whose calls by name are in
    the project's text)."""
    for arg in cls.bases:
        if arg.keyword is not None:
            continue  # `metaclass=ABCMeta`
        name = _last_name(arg.value)
        if name not in _PLAIN_BASES and name not in defined:
            return False
    return True


class _Unit:
    """A judged definition: its name and the lines it spans."""

    def __init__(self, name: str, node: cst.CSTNode, index: ModuleIndex) -> None:
        self.name = name
        (self.first, _), (self.last, _) = index.positions[node]


def _judged(index: ModuleIndex, text: str, words: _Words, imported: bool) -> list[_Unit]:
    """The module's definitions that the rule judges (see the module's docstring)."""
    defined = words.classes | set(index.classes)
    hooks = any(h in words.files or h in text for h in _SUBCLASS_HOOKS)
    dynamic_self = _SELF_GETATTR.search(text) is not None

    def judged_name(name: str) -> bool:
        if name.startswith("__") and name.endswith("__"):
            return False
        return name.startswith("_") or imported

    units = [
        _Unit(name, fn, index)
        for name, fn in index.functions.items()
        if judged_name(name) and _plainly_decorated(fn)
    ]
    for cls_name, cls in index.classes.items():
        if not _plain_bases(cls, frozenset(defined)) or not _plainly_decorated(cls):
            continue
        if judged_name(cls_name) and not hooks:
            units.append(_Unit(cls_name, cls, index))
        if dynamic_self:
            continue
        units += [
            _Unit(name, fn, index)
            for (owner, name), fn in index.methods.items()
            if owner == cls_name and index.class_of.get(fn) is cls and judged_name(name)
            if _plainly_decorated(fn)
        ]
    return units


@dataclass(frozen=True)
class Unreachable:
    """The line ranges of a module that cannot run, and the files whose text decided that its dead
    functions are dead (a cached result that drops a finding there depends on them)."""

    lines: list[range]
    deciding: list[str]

    def holds(self, line: int) -> bool:
        return any(line in r for r in self.lines)


def unreachable_code(
    project: Project, path: str, text: str, index: ModuleIndex, evaluator: Evaluator
) -> Unreachable:
    """What of the analysed module (`text`, at `path`) cannot run: its constant-false arms, and its
    dead functions when the project is seen."""
    arms = _false_arms(index, evaluator)
    path = os.path.abspath(path)
    if not (index.functions or index.classes) or not _is_seen(project, path):
        return Unreachable(arms, [])
    if is_test_file(os.path.relpath(path, project.root)):
        return Unreachable(arms, [])
    words = _project_words(project)
    imported = os.path.basename(path) != "__init__.py" and _imported(project, path)
    dead = _dead(_judged(index, text, words, imported), path, text, words, arms)
    if not dead:
        return Unreachable(arms, [])
    return Unreachable(arms + [range(u.first, u.last + 1) for u in dead], list(words.read))


def _dead(units: list[_Unit], path: str, text: str, words: _Words, arms: list[range]) -> list[_Unit]:
    """The judged definitions that nothing which can run refers to (a use in a constant-false arm
    of `arms` runs no more than one in a dead function)."""
    # written in no other file of the project (whose copy of this one is replaced by `text`)
    dead = [u for u in units if not (words.files.get(u.name, frozenset()) - {path})]
    if not dead:
        return []
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    uses = {
        u.name: [
            line
            for line in (
                bisect.bisect_right(starts, m.start()) for m in re.finditer(rf"\b{re.escape(u.name)}\b", text)
            )
            if not any(line in arm for arm in arms)
        ]
        for u in dead
    }
    # The greatest set whose every use in this text is inside itself or inside another of the set.
    changed = True
    while changed:
        changed = False
        for unit in list(dead):
            outside = [line for line in uses[unit.name] if not unit.first <= line <= unit.last]
            if any(not any(o.first <= line <= o.last for o in dead if o is not unit) for line in outside):
                dead.remove(unit)
                changed = True
    return dead


def _imported(project: Project, path: str) -> bool:
    """Whether another module of the project that is no test imports the module at `path` (each
    import its text writes resolved as the evaluator resolves it: another module of the same name
    elsewhere is not this one), and none imports all of it (`from .m import *` in a package's
    `__init__` makes each public name an export, which no word names)."""
    used = False
    for other in importers(project, path, api=False):
        if is_test_file(os.path.relpath(other, project.root)):
            continue
        for m in _IMPORT.finditer(read_text(other) or ""):
            module, names = m.group(1) or m.group(3), (m.group(2) or "").strip()
            if _resolves(project, module, other, path):
                if names.startswith("*"):
                    return False
                used = True
            elif any(_resolves(project, _submodule(module, n), other, path) for n in _NAMES.findall(names)):
                used = True
    return used


def _submodule(module: str, name: str) -> str:
    """`from pkg import m` -> "pkg.m", `from . import m` -> ".m"."""
    return f"{module}.{name}" if module.strip(".") else module + name


def _resolves(project: Project, dotted: str, importer: str, path: str) -> bool:
    found = project.module_path(dotted, importer)
    return found is not None and os.path.abspath(found) == path


def _false_arms(index: ModuleIndex, evaluator: Evaluator) -> list[range]:
    """The lines of the arms of `if` statements that literals decide never run."""
    found = []
    for node in index.branch_nodes.values():
        if not isinstance(node, cst.If):
            continue
        test = evaluator.literal_test(node)
        if test is UNDECIDED:
            continue
        arm = node.orelse if test else node.body
        if arm is not None and arm in index.positions:
            (first, _), (last, _) = index.positions[arm]
            found.append(range(first, last + 1))
    return found
