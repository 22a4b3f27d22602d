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

   A module-level value (`NAME = ...`, `NAME: T = ...`, one name) is judged as a function is (same
   conditions for a public name) and dead by the same words and fixpoint, but its value runs
   nothing: a use inside another constant keeps a definition alive, only a dead function or class
   makes a use dead. Another module that writes its name does not keep it when, there too, every
   line writing it imports it or lies in a constant-false arm or a dead function of that module
   (judged as its own are; a package `__init__` re-exports, and keeps it; a name more than
   `_MAX_MODULES_ASKED` modules write is taken as live, each would be parsed). No value of a
   module is judged when it, or a module that imports it, reads the module's names by a name made
   at run time (`getattr(prompts, kind)`, `vars(prompts)`, `globals()`, a module `__getattr__`,
   `importlib.import_module`). The comment lines just above a definition, and its decorators,
   belong to it. A finding located in a dead value is dropped (a legacy prompt constant only
   retired helpers return).

3. **An arm that the defaults decide**, where no caller passes the argument: a parameter with a
   literal default (`use_input_language=False`, `mode="fast"`, `x=None`) of a judged function
   (`pinned_defaults`) holds it on every call when each word of the function's name in the
   project's files that may run, tests excepted, is the callee of a plain call (`f(...)`,
   `obj.f(...)`, a method call on any object: the class is not pinned, every call of that name
   counts) that passes it neither by keyword nor by position and spreads no `*args`/`**kwargs`,
   or a definition or a plain import of it. Any other use decides nothing: passed as a value,
   stored, a decorator, an `as` alias, a string or a comment naming it (`getattr`, a registry),
   docs or configuration. The evaluator decides such an `if` (`Evaluator.pinned_test`, under
   `may_run`) as it decides `if False:`, so text built only on the arm not taken is no prompt
   text, and a finding in that arm is dropped here (`Unreachable.holds`: decided only for the
   lines asked about). Each module searched for calls is walked once per process (`_name_uses`,
   from the tree this process holds when it has one); a function is searched only when one of its
   tests reads such a parameter. Files the word index does not read (notebooks, `.mdx` docs) are
   not seen, as for dead functions.
"""

from __future__ import annotations

import ast
import bisect
import os
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import libcst as cst

from prefixlint.python.cstwalk import kids
from prefixlint.python.evaluate.env import UNDECIDED, func_name, literal_value
from prefixlint.python.project import (
    MAX_IMPORTED_MODULE_BYTES,
    Project,
    importers,
    is_test_file,
    is_walk_complete,
    parsed_module,
    read_text,
    remember,
    text_has,
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
    _IDLE_LINES.clear()
    _IMPORTED.clear()


def read_words_ahead(root: str) -> None:
    """The words of the project at `root`, read now if its modules can be judged (`_is_seen`)."""
    project = Project(root)
    if _is_seen(project, os.path.join(os.path.abspath(root), "")):
        _project_words(project)


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
    there calls nothing). Only a module with an `if` that literals may decide is parsed with libcst
    for that (`_may_have_false_arms`); one too large to parse cheaply keeps every word."""
    if not path.endswith(".py") or _LITERAL_IF.search(text) is None or len(text) > MAX_IMPORTED_MODULE_BYTES:
        return set(_WORD.findall(text))
    if not _may_have_false_arms(path, text):  # most `if x is None:` decide nothing: no libcst parse
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


def _may_have_false_arms(path: str, text: str) -> bool:
    """Whether an `if` of the module may have a test that literals alone decide (`Evaluator.constant`
    without arguments), by CPython's parser (~50x faster than libcst's): a test with no literal
    where `constant` needs one (both sides of a comparison, one side of `and`/`or`) decides
    nothing. An over-approximation: any constant counts as a literal, and a module CPython cannot
    parse may have one."""
    from prefixlint.python import cpython_tree

    tree = cpython_tree(path, text)
    if tree is None:
        return True
    # statements hold statements only in these fields (an expression holds none): a walk of them
    # meets every `if` at a tenth of the nodes of `ast.walk`
    bodies: list[ast.AST] = [tree]
    while bodies:
        node = bodies.pop()
        if isinstance(node, ast.If) and _may_be_literal(node.test):
            return True
        for name in _BODY_FIELDS:
            bodies += getattr(node, name, ())
    return False


_BODY_FIELDS = ("body", "orelse", "finalbody", "handlers", "cases")


def _may_be_literal(node: ast.expr) -> bool:
    if isinstance(node, ast.Constant):  # True, False, None, numbers, strings
        return True
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _may_be_literal(node.operand)
    if isinstance(node, ast.BoolOp):  # one known side may decide it
        return any(_may_be_literal(v) for v in node.values)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        return _may_be_literal(node.left) and _may_be_literal(node.comparators[0])
    return False


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
    """A judged definition: its name, its node and the lines it spans; `constant` for a module-level
    value (whose own text runs nothing that could use another definition)."""

    def __init__(self, name: str, node: cst.CSTNode, index: ModuleIndex, constant: bool = False) -> None:
        self.name = name
        self.node = node
        self.constant = constant
        (self.first, _), (self.last, _) = index.positions[node]
        # its decorators, and the comment lines just above, belong to it (`# OLD_PROMPT: kept for v1`)
        decorators = getattr(node, "decorators", ())
        if decorators and decorators[0] in index.positions:
            self.first = index.positions[decorators[0]][0][0]
        self.first -= len(getattr(node, "leading_lines", ()))


def _judged(
    index: ModuleIndex, text: str, words: _Words, imported: bool, constants: bool = False
) -> list[_Unit]:
    """The module's definitions that the rule judges (see the module's docstring); its module-level
    values too when `constants`."""
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
    if constants:
        units += [
            _Unit(name, line, index, constant=True) for name, line in _constants(index) if judged_name(name)
        ]
    return units


# Reading a module's names by a name made at run time, in the module itself (`globals()[key]`, a
# module `__getattr__`) or on the module object (`getattr(prompts, kind)`, `vars(prompts)`).
_SELF_BY_NAME = re.compile(r"\b(?:globals|vars)\(\s*\)|def __getattr__|sys\.modules\[__name__\]")
_BY_NAME = re.compile(r"\bgetattr\([^,\n]*,\s*(?![\"'\s])|\bvars\(\s*[\w.]+\s*\)|\.__dict__\b")
_DYNAMIC_IMPORT = re.compile(r"\bimport_module\(|\b__import__\(")
# `import pkg.mod as m` (1, 2) or `from pkg import mod as m, other` (3)
_MODULE_IMPORT = re.compile(
    r"^[ \t]*(?:import[ \t]+([\w.]+)(?:[ \t]+as[ \t]+(\w+))?|from[ \t]+[\w.]+[ \t]+import[ \t]+([^\n]*))",
    re.MULTILINE,
)
_ALIASED = re.compile(r"\b(\w+)\b(?:[ \t]+as[ \t]+(\w+))?")


def _read_by_name(project: Project, path: str, text: str, words: _Words) -> bool:
    """Whether the module, or a project module that imports it, may read its values by a name made
    at run time (a registry of prompts looked up by kind): no word would name such a use. A module
    that imports modules by a computed name (`importlib.import_module`) and reads any object's
    names so is taken to read this one's."""
    if _SELF_BY_NAME.search(text) is not None:
        return True
    name = os.path.splitext(os.path.basename(path))[0]
    reading = [
        (other, read_text(other) or "")
        for other in sorted(words.files.get(name, frozenset()) - {path})
        if other.endswith(".py") and text_has(_BY_NAME, other)
    ]
    if not reading:
        return False
    importing = set(importers(project, path, api=False))
    for other, found in reading:
        if _DYNAMIC_IMPORT.search(found) is not None:
            return True
        if other in importing:
            held = "|".join(re.escape(a) for a in sorted(_module_names(found, name)))
            on_module = (
                rf"\bgetattr\(\s*(?:{held})\s*,\s*(?![\"'\s])"
                rf"|\bvars\(\s*(?:{held})\s*\)|\b(?:{held})\.__dict__\b"
            )
            if re.search(on_module, found) is not None:
                return True
    return False


def _module_names(text: str, name: str) -> set[str]:
    """The names a module's text may hold the module `name` by: `name` itself, `pkg.name`, and the
    `as` aliases of its imports."""
    held = {name}
    for m in _MODULE_IMPORT.finditer(text):
        if m.group(1) and m.group(1).split(".")[-1] == name:
            held.add(m.group(2) or m.group(1))
        for item in _ALIASED.finditer(m.group(3) or ""):
            if item.group(1) == name and item.group(2):
                held.add(item.group(2))
    return held


def _constants(index: ModuleIndex) -> list[tuple[str, cst.SimpleStatementLine]]:
    """The module-level `NAME = value` (or `NAME: T = value`) statements, with their name."""
    found = []
    for line in index.module.body:
        if not isinstance(line, cst.SimpleStatementLine) or len(line.body) != 1:
            continue
        stmt = line.body[0]
        if isinstance(stmt, cst.Assign) and len(stmt.targets) == 1:
            target = stmt.targets[0].target
        elif isinstance(stmt, cst.AnnAssign) and stmt.value is not None:
            target = stmt.target
        else:
            continue
        if isinstance(target, cst.Name):
            found.append((target.value, line))
    return found


@dataclass(frozen=True)
class Unreachable:
    """The line ranges of a module that cannot run, and the files whose text decided that its dead
    functions are dead (a cached result that drops a finding there depends on them). The `if`
    statements that defaults no caller overrides may decide (`pinned`: each with its lines) are
    decided only for a line asked about: searching the project for the callers of every function
    with a defaulted flag would cost more than the few findings asked about."""

    lines: list[range]
    deciding: list[str]
    pinned: list[tuple[cst.If, range]] = field(default_factory=list)
    evaluator: Evaluator | None = None

    @property
    def any(self) -> bool:
        """Whether any line may be unreachable."""
        return bool(self.lines or self.pinned)

    def holds(self, line: int) -> bool:
        if any(line in r for r in self.lines):
            return True
        return self.evaluator is not None and any(
            line in lines and _in_arm_not_taken(node, line, self.evaluator) for node, lines in self.pinned
        )


def _in_arm_not_taken(node: cst.If, line: int, evaluator: Evaluator) -> bool:
    test = evaluator.pinned_test(node)
    if test is UNDECIDED:
        return False
    arm = node.orelse if test else node.body
    if arm is None or arm not in evaluator.index.positions:
        return False
    (first, _), (last, _) = evaluator.index.positions[arm]
    return first <= line <= last


def unreachable_code(
    project: Project, path: str, text: str, index: ModuleIndex, evaluator: Evaluator
) -> Unreachable:
    """What of the analysed module (`text`, at `path`) cannot run: its constant-false arms, and its
    dead functions when the project is seen."""
    arms = _false_arms(index, evaluator)
    path = os.path.abspath(path)
    if not (index.functions or index.classes or index.module_scope.bindings) or not _is_seen(project, path):
        return Unreachable(arms, [])
    if is_test_file(os.path.relpath(path, project.root)):
        return Unreachable(arms, [])
    pinned = [
        (node, range(index.positions[node][0][0], index.positions[node][1][0] + 1))
        for node in index.branch_nodes.values()
        if isinstance(node, cst.If) and node in index.positions and evaluator.literal_test(node) is UNDECIDED
    ]
    words = _project_words(project)
    imported = os.path.basename(path) != "__init__.py" and _imported(project, path)
    constants = not _read_by_name(project, path, text, words)
    dead = _dead(_judged(index, text, words, imported, constants), path, text, words, arms, project)
    if not dead:
        return Unreachable(arms, [], pinned, evaluator)
    return Unreachable(arms + [range(u.first, u.last + 1) for u in dead], list(words.read), pinned, evaluator)


def _dead(
    units: list[_Unit], path: str, text: str, words: _Words, arms: list[range], project: Project | None = None
) -> list[_Unit]:
    """The judged definitions that nothing which can run refers to (a use in a constant-false arm
    of `arms` runs no more than one in a dead function). A constant's value runs nothing: a use
    inside another constant keeps a definition, and only a dead function or class makes a use dead."""
    # a function another file names is live: only the others are looked for here, in one pass
    units = [u for u in units if u.constant or not (words.files.get(u.name, frozenset()) - {path})]
    if not units:
        return []
    starts = [0] + [m.end() for m in re.finditer(r"\n", text)]
    uses: dict[str, list[int]] = {u.name: [] for u in units}
    for m in _WORD.finditer(text):
        found = uses.get(m.group())
        if found is not None:
            line = bisect.bisect_right(starts, m.start())
            if not any(line in arm for arm in arms):
                found.append(line)
    runnable = [u for u in units if not u.constant]

    def in_runnable(unit: _Unit, line: int) -> bool:
        return any(o.first <= line <= o.last for o in runnable if o is not unit)

    def unused_elsewhere(unit: _Unit) -> bool:
        others = words.files.get(unit.name, frozenset()) - {path}
        if not others:
            return True
        if not unit.constant or project is None:
            return False
        # A constant another module imports is dead when that module, too, uses it only in dead
        # code; asked only of one that no live line here uses, and that few modules name (each
        # asks for a parse: a name many modules write, `logger`, is taken as live).
        here = [line for line in uses[unit.name] if not unit.first <= line <= unit.last]
        if len(others) > _MAX_MODULES_ASKED or not all(in_runnable(unit, line) for line in here):
            return False
        return all(_used_only_in_dead_code(project, words, other, unit.name) for other in sorted(others))

    # written in no other file of the project (whose copy of this one is replaced by `text`)
    dead = [u for u in units if unused_elsewhere(u)]
    # The greatest set whose every use in this text is inside itself or inside a dead function of
    # the set.
    changed = True
    while changed:
        changed = False
        for unit in list(dead):
            outside = [line for line in uses[unit.name] if not unit.first <= line <= unit.last]
            if any(
                not any(o.first <= line <= o.last for o in dead if o is not unit and not o.constant)
                for line in outside
            ):
                dead.remove(unit)
                changed = True
    return dead


_MAX_MODULES_ASKED = 4
# Project module -> (its text, the lines of it that cannot run or only import), per run (`forget`).
_IDLE_LINES: dict[str, tuple[str, list[range] | None]] = {}


def _used_only_in_dead_code(project: Project, words: _Words, path: str, name: str) -> bool:
    """Whether every line of the project module at `path` that writes `name` imports it, or lies in
    a constant-false arm or a dead function of that module (judged as the module's own are)."""
    if not path.endswith(".py") or os.path.basename(path) == "__init__.py":
        return False  # docs or configuration name it; a package re-exports it
    text = read_text(path) or ""
    found = list(re.finditer(rf"\b{re.escape(name)}\b", text))
    # a line at the module's top level that is no import runs at import: no parse needed to say so
    for m in found:
        start = text.rfind("\n", 0, m.start()) + 1
        if text[start] not in " \t" and not text.startswith(("from ", "import "), start):
            return False
    idle = _idle_lines(project, words, path, text)
    if idle is None:
        return False
    lines = [text.count("\n", 0, m.start()) + 1 for m in found]
    return all(any(line in r for r in idle) for line in lines)


def _idle_lines(project: Project, words: _Words, path: str, text: str) -> list[range] | None:
    cached = _IDLE_LINES.get(path)
    if cached is not None and cached[0] == text:
        return cached[1]
    _IDLE_LINES[path] = (text, None)  # too large, unparsable, or being worked out
    index = _parsed(project, path, text, indexed=True)
    if not isinstance(index, ModuleIndex):
        return None
    from prefixlint.python.evaluate import Evaluator

    arms = _false_arms(index, Evaluator(index))
    imported = _imported(project, path)
    functions = _judged(index, text, words, imported)
    dead = _dead(functions, path, text, words, arms)
    imports = [
        range(index.positions[line][0][0], index.positions[line][1][0] + 1)
        for line in index.module.body
        if isinstance(line, cst.SimpleStatementLine)
        and isinstance(line.body[0], (cst.Import, cst.ImportFrom))
    ]
    found = arms + imports + [range(u.first, u.last + 1) for u in dead]
    _IDLE_LINES[path] = (text, found)
    return found


def _imported(project: Project, path: str) -> bool:
    """Whether another module of the project that is no test imports the module at `path` (each
    import its text writes resolved as the evaluator resolves it: another module of the same name
    elsewhere is not this one), and none imports all of it (`from .m import *` in a package's
    `__init__` makes each public name an export, which no word names). Once per run and module:
    only the other modules' files decide it."""
    key = (project.root, path)
    if key not in _IMPORTED:
        _IMPORTED[key] = _imported_now(project, path)
    return _IMPORTED[key]


_IMPORTED: dict[tuple[str, str], bool] = {}  # (root, module) -> _imported, per run (`forget`)


def _imported_now(project: Project, path: str) -> bool:
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


def pinned_defaults(project: Project, index: ModuleIndex, fn: cst.FunctionDef) -> dict[str, object]:
    """The parameters of `fn` (of the module `index` holds) that hold their literal default on
    every call: `fn` is judged (as for dead functions), and every word of its name in the project's
    files that may run, tests excepted, is the callee of a plain call that passes none of them (not
    by keyword, not by position, no `*args`/`**kwargs`). Any other use (passed as a value, stored,
    a decorator, a string, an alias, docs or configuration naming it) decides nothing."""
    found = project.pinned.get(fn)
    if found is None:
        found = project.pinned[fn] = _pinned(project, index, fn)
        if found:  # a caller added anywhere brings the arm back
            project.read += _project_words(project).read
    return found


def _pinned(project: Project, index: ModuleIndex, fn: cst.FunctionDef) -> dict[str, object]:
    path = os.path.abspath(index.path)
    if not _is_seen(project, path) or is_test_file(os.path.relpath(path, project.root)):
        return {}
    if fn not in _judged_functions(project, index, path):
        return {}
    name = fn.name.value
    words = _project_words(project)
    # the files that may call it: those of the project that write its name, and those whose text
    # is analysed here (the fixed text the verifier judges, never on disk)
    files = set(words.files.get(name, frozenset())) | {path}
    root = os.path.abspath(project.root) + os.sep
    files |= {
        p
        for p, t in project.texts.items()
        if p.endswith(".py") and p.startswith(root) and t and name in t
        if not is_test_file(os.path.relpath(p, project.root))
    }
    shapes: list[_Call] = []
    for other in sorted(files):
        text = project.texts[other] if other in project.texts else read_text(other)
        if not other.endswith(".py") or text is None:
            return {}
        uses = _name_uses(project, other, text).get(name, [])
        if len(uses) != len(re.findall(rf"\b{re.escape(name)}\b", text)):
            return {}  # written in a string or a comment: a registry, getattr, a note
        for use in uses:
            if use is None:
                return {}
            if isinstance(use, _Call):
                if use.star:
                    return {}
                shapes.append(use)
    params = [*fn.params.posonly_params, *fn.params.params]
    method = index.class_of.get(fn) is not None
    if method and not any(_last_name(d.decorator) == "staticmethod" for d in fn.decorators):
        params = params[1:]  # `self`, `cls`: an unbound `Cls.f(obj, x)` counts one more, never less
    by_position = {p.name.value: i for i, p in enumerate(params)}
    pinned = {}
    for param in (*params, *fn.params.kwonly_params):
        value = literal_value(param.default)
        if param.default is None or value is UNDECIDED:
            continue
        p = param.name.value
        position = by_position.get(p)
        if any(p in c.keywords or (position is not None and position < c.positional) for c in shapes):
            continue
        pinned[p] = value
    return pinned


def _judged_functions(project: Project, index: ModuleIndex, path: str) -> frozenset[cst.CSTNode]:
    """The functions of a module the dead-function rule judges (its name is seen at every use)."""
    found = project.judged.get(path)
    if found is None:
        text = project.texts[path] if path in project.texts else read_text(path)
        words = _project_words(project)
        imported = os.path.basename(path) != "__init__.py" and _imported(project, path)
        units = _judged(index, text or "", words, imported)
        found = project.judged[path] = frozenset(u.node for u in units if isinstance(u.node, cst.FunctionDef))
    return found


@dataclass(frozen=True)
class _Call:
    """A call of a name: how many positional arguments it passes, the keywords, and whether it
    spreads `*args` or `**kwargs`."""

    positional: int
    keywords: frozenset[str]
    star: bool


# Project module -> (its text, each name written in it -> its uses: a call, "def", "import", or
# None for any other use), made once per process while the text is unchanged.
_USES: dict[str, tuple[str, dict[str, list[_Call | str | None]]]] = {}


# A module searched for the calls of a function or the uses of a constant is parsed up to this size
# (mem0's memory/main.py, 168 KB, calls its prompt builders; ~1.5 s of libcst at the limit, once
# per process).
MAX_SEARCHED_MODULE_BYTES = 400_000


def _parsed(project: Project, path: str, text: str, indexed: bool) -> ModuleIndex | cst.Module | None:
    """A project module's tree, when it is at most MAX_SEARCHED_MODULE_BYTES: the index this
    process holds for that text (the checked file, an import, a module parsed ahead for the
    workers), else parsed here (`indexed`: and indexed, kept for the checked files that import
    it); None if it is larger or does not parse."""
    if len(text) > MAX_SEARCHED_MODULE_BYTES:
        return None  # decided on the size alone: the result never depends on what was parsed before
    held = project.modules.get(path) if project.texts.get(path) == text else None
    held = held or parsed_module(path, text)
    if held is not None:
        return held
    try:
        module = parse_module(text)
        if not indexed:
            return module
        index = index_module(module, path)
    except (cst.ParserSyntaxError, RecursionError, ValueError):
        return None
    remember(path, text, index)  # a checked file later, most likely
    return index


def _name_uses(project: Project, path: str, text: str) -> dict[str, list[_Call | str | None]]:
    cached = _USES.get(path)
    if cached is not None and cached[0] == text:
        return cached[1]
    parsed = _parsed(project, path, text, indexed=False)
    module = parsed.module if isinstance(parsed, ModuleIndex) else parsed
    uses: dict[str, list[_Call | str | None]] = {}
    stack: list[tuple[cst.CSTNode, cst.CSTNode | None, cst.CSTNode | None]] = (
        [(module, None, None)] if module is not None else []
    )
    while stack:
        node, parent, grand = stack.pop()
        if type(node) is cst.Name:
            uses.setdefault(node.value, []).append(_use(node, parent, grand))
            continue
        stack.extend((k, node, parent) for k in kids(node))
    if module is None:
        uses = {w: [None] for w in _WORD.findall(text)}  # unparsable: nothing decided by it
    if len(_USES) >= 2_000:
        _USES.clear()
    _USES[path] = (text, uses)
    return uses


def _use(node: cst.Name, parent: cst.CSTNode | None, grand: cst.CSTNode | None) -> _Call | str | None:
    """What a written name does: the callee of a call (`f(...)`, `obj.f(...)`), a definition, a
    plain import; None for anything else."""
    if isinstance(parent, cst.Attribute) and parent.attr is node:
        node, parent = parent, grand
    if isinstance(parent, cst.Call) and parent.func is node:
        return _Call(
            sum(1 for a in parent.args if a.keyword is None and not a.star),
            frozenset(a.keyword.value for a in parent.args if a.keyword is not None),
            any(a.star for a in parent.args),
        )
    if isinstance(parent, (cst.FunctionDef, cst.ClassDef)) and parent.name is node:
        return "def"
    if isinstance(parent, cst.ImportAlias) and parent.name is node and parent.asname is None:
        return "import"
    return None
