"""Whether anything in the project refers to the code that builds a prompt no sink is seen to send.

A prompt builder that nothing calls is dead code: what it would cost a cache is no finding. One
that something refers to in a way the evaluator could not follow (its name written as a string for
a `getattr` or a registry, a call on an object whose class is chosen at run time) may well be sent,
and stays a finding. The references are found by a text search of the project (no parse): every
`.py` file and the docs and configuration beside them (tests and docs count), all kept as one text
per project root and process, searched once per name.

A name counts as referred to when it is written anywhere but in its own `def` line: a call, an
attribute, a bare name (a callback, a registry), a string, a decorator that registers the function
(any decorator but the plain wrappers below), an entry point. A reference inside another function
counts only when that function is reached in turn (up to MAX_FUNCTIONS functions are followed; past
that, or where the text cannot say which function it is in, it counts). A method of a class with a base
from outside the project may override one its framework calls, and counts as referred to. A public
module-level function that a package's `__init__.py` or `__all__` exports is the library's API: kept,
and said to have no caller here.

A module in a package that nothing imports or names, that is no script, test or entry module, is
dead in the same way, unless the project imports modules by a name made at run time. A module
outside any package that nothing imports stands alone (a file checked by itself): its callers are
not in view, so nothing in it is judged; nor is anything in a folder that is no whole project (no
`.git`, `pyproject.toml`, `setup.py`, `setup.cfg` or `requirements.txt` at its root).
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, replace

import libcst as cst

from prefixlint.python.dispatch import imports_by_name
from prefixlint.python.project import Project, is_test_file, is_walk_complete, python_sources, read_text
from prefixlint.python.prompt import Prompt
from prefixlint.python.scopes import ModuleIndex
from prefixlint.python.segments import holes

# Files beside the code whose text may name a function or a module: docs, configuration, entry points.
_DOC_SUFFIXES = (".md", ".rst", ".toml", ".cfg", ".ini", ".yaml", ".yml")
_ROOT_FILES = ("Procfile", "Dockerfile", "Makefile", "setup.cfg", "tox.ini")
# What makes a folder a whole project, whose files show every reference to its code.
_PROJECT_MARKERS = (".git", "pyproject.toml", "setup.py", "setup.cfg", "requirements.txt")
MAX_FUNCTIONS = 64  # functions followed up from a builder; past that it cannot be told
MAX_OCCURRENCES = 200  # past this many occurrences of a name, it is taken as referred to
# Decorators that only wrap a function: it still has to be called to run. Any other decorator may
# register it (`@app.get`, `@tool`, `@agent.system_prompt`), so it counts as a reference.
_PLAIN_DECORATORS = {
    "staticmethod",
    "classmethod",
    "abstractmethod",
    "abstractproperty",
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
    "contextmanager",
    "asynccontextmanager",
    "deprecated",
}
# Bases that bring no framework method to override.
_PLAIN_BASES = {"object", "ABC", "Enum", "str", "int", "dict", "list", "Exception", "Protocol", "NamedTuple"}

_DEF = re.compile(r"^([ \t]*)(?:async[ \t]+)?def[ \t]+(\w+)", re.MULTILINE)
_CLASS = re.compile(r"^([ \t]*)class[ \t]+(\w+)[ \t]*(?:\(([^)]*)\))?", re.MULTILINE)
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+\S+[ \t]+)?import[ \t]")
_ALL = re.compile(r"__all__[ \t]*\+?=[ \t]*[\[(]([^\])]*)[\])]")
_MAIN_GUARD = re.compile(r"^if[ \t]+__name__[ \t]*==", re.MULTILINE)


@dataclass(frozen=True)
class Reach:
    """How the project reaches a function or module: `kind` is "live" (referred to), "string"
    (only by its name written as a string, or through a function that is), "tests" (only by tests
    or docs), "api" (exported, no caller), "dead" (nothing refers to it) or "unknown" (cannot be
    told: kept as it is); `where` is the reference that decided (`path:line`, relative to the root)."""

    kind: str
    where: str = ""
    via: str = ""  # the function between the builder and that reference


_LIVE = Reach("live")
_UNKNOWN = Reach("unknown")
# The strongest first: a builder is as reachable as its best reference.
_ORDER = ("live", "unknown", "string", "made", "tests", "api", "dead")


class _Corpus:
    """The text of every file of a project that may refer to a name, joined once per process."""

    def __init__(self, project: Project) -> None:
        self.root = project.root
        paths = python_sources(project)
        by_name = project._index()
        paths += sorted(p for ps in by_name.values() for p in ps if p.endswith(_DOC_SUFFIXES))
        paths += [p for p in (os.path.join(project.root, f) for f in _ROOT_FILES) if os.path.isfile(p)]
        # a root JSON file configures what runs (`langgraph.json` names a graph's module and function)
        paths += [os.path.join(project.root, f) for f in _root_json(project.root)]
        self.paths: list[str] = []
        self.starts: list[int] = []
        parts: list[str] = []
        offset = 0
        for path in dict.fromkeys(paths):
            text = read_text(path)
            if text is None:
                continue
            self.paths.append(path)
            self.starts.append(offset)
            parts.append(text)
            offset += len(text) + 1
        self.text = "\x00".join(parts)
        self.complete = is_walk_complete(project)
        self.found: dict[str, list[tuple[str, int]]] = {}
        self.classes: set[str] | None = None  # the names of the project's classes (`_defined_classes`)
        self.made: list[tuple[str, str, str]] | None = None  # `getattr` names made at run time

    def occurrences(self, word: str) -> list[tuple[str, int]]:
        """(path, offset in that file's text) of each place `word` is written as a whole word."""
        if word not in self.found:
            out = []
            text, at = self.text, self.text.find(word)
            while at >= 0 and len(out) <= MAX_OCCURRENCES:
                end = at + len(word)
                # found with `find`, not a regex: a look-behind would cost a scan per character
                if not (at and _word_char(text[at - 1]) or end < len(text) and _word_char(text[end])):
                    i = bisect.bisect_right(self.starts, at) - 1
                    out.append((self.paths[i], at - self.starts[i]))
                at = text.find(word, end)
            self.found[word] = out
        return self.found[word]


def _word_char(c: str) -> bool:
    return c.isalnum() or c == "_"


def _root_json(root: str) -> list[str]:
    try:
        return sorted(f for f in os.listdir(root) if f.endswith(".json"))
    except OSError:
        return []


_CORPORA: dict[str, _Corpus] = {}
# (root, path, def line index) -> the verdict for that function, once per run
_VERDICTS: dict[tuple[str, str, int], Reach] = {}


def forget() -> None:
    """A new run reads the project afresh (files may have changed since the last)."""
    _CORPORA.clear()
    _VERDICTS.clear()
    _FACTS.clear()
    _SPLIT.clear()


def _corpus(project: Project) -> _Corpus:
    if project.root not in _CORPORA:
        _CORPORA[project.root] = _Corpus(project)
    return _CORPORA[project.root]


_SPLIT: dict[str, tuple[str | None, list[str]]] = {}


def _lines(path: str) -> list[str]:
    """A project file's lines, split once while its text is the same."""
    text = read_text(path)
    cached = _SPLIT.get(path)
    if cached is None or cached[0] is not text:
        cached = _SPLIT[path] = (text, (text or "").split("\n"))
    return cached[1]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def _code(line: str) -> bool:
    stripped = line.strip()
    return bool(stripped) and not stripped.startswith("#")


def enclosing(lines: list[str], at: int) -> tuple[int, str] | None:
    """The innermost `def` around line index `at` (its index and name), or None at module or class
    level, read from the indentation (a line the text cannot place, e.g. inside a string written at
    the margin, reads as module level)."""
    level = _indent(lines[at]) if _code(lines[at]) else 10**6
    for k in range(at - 1, -1, -1):
        line = lines[k]
        if not _code(line):
            continue
        indent = _indent(line)
        if indent >= level:
            continue
        m = _DEF.match(line)
        if m is not None:
            return k, m.group(2)
        if line.lstrip().startswith((")", "]", "}")):
            continue  # the end of a bracket that opened further up (a signature): not a block
        if indent == 0:
            return None
        level = indent
    return None


def _decorators(lines: list[str], at: int) -> list[str]:
    """The last dotted part of each decorator of the `def` at line index `at`."""
    indent = _indent(lines[at])
    out = []
    for k in range(at - 1, -1, -1):
        line = lines[k]
        if not _code(line):
            continue
        stripped = line.strip()
        if stripped.startswith("@") and _indent(line) == indent:
            name = re.match(r"@([\w.]+)", stripped)
            if name is not None:
                out.append(name.group(1).rsplit(".", 1)[-1])
        elif _indent(line) <= indent and not stripped.startswith(")"):
            break
    return out


def _class_bases(lines: list[str], at: int) -> list[str] | None:
    """The bases of the class a `def` at line index `at` is a method of (None: not a method)."""
    indent = _indent(lines[at])
    for k in range(at - 1, -1, -1):
        line = lines[k]
        if not _code(line) or _indent(line) >= indent:
            continue
        m = _CLASS.match(line)
        if m is None:
            return None
        return [
            b.strip().split("[")[0].rsplit(".", 1)[-1] for b in (m.group(3) or "").split(",") if b.strip()
        ]
    return None


def _defined_classes(corpus: _Corpus) -> set[str]:
    if corpus.classes is None:
        corpus.classes = {m.group(2) for m in _CLASS.finditer(corpus.text)}
    return corpus.classes


def _external_base(corpus: _Corpus, bases: list[str]) -> str | None:
    """A base that is no class of the project, whose framework may call the methods it declares
    (a project base counts when it has one in turn, a few levels up)."""
    classes = _defined_classes(corpus)
    for base in bases:
        if not base.isidentifier() or base in _PLAIN_BASES or "=" in base:
            continue
        if base not in classes:
            return base
    return None


# `getattr(obj, f"build_{kind}_prompt")`, `getattr(obj, "on_" + event)`: a name made at run time
# from literal parts, which any function whose name has that head and tail may be.
_GETATTR_MADE = re.compile(r"getattr\(\s*[^,()]+,\s*([^,()]*(?:\{[^}]*\})?[^,()]*)[,)]")
_PIECE = re.compile(r"[rbuf]*([\"'])(.*?)\1")


def _made_names(corpus: _Corpus) -> list[tuple[str, str, str]]:
    """(head, tail, where) of each `getattr` whose name is made at run time from literal parts."""
    if corpus.made is None:
        made = []
        text, at = corpus.text, corpus.text.find("getattr(")
        while at >= 0:
            m = None if at and _word_char(text[at - 1]) else _GETATTR_MADE.match(text, at)
            at = text.find("getattr(", at + 8)
            if m is None:
                continue
            written = m.group(1).strip()
            pieces = _PIECE.fullmatch(written)
            if pieces is not None and "{" not in written:
                continue  # a plain literal: its name is written whole
            literal = [p.group(2) for p in _PIECE.finditer(written)]
            if pieces is not None:  # an f-string: the text around its placeholders
                head, tail = literal[0].split("{")[0], literal[0].rsplit("}", 1)[-1]
            else:  # a concatenation: the literal it starts or ends with
                starts = bool(literal) and written.lstrip("rbuf").startswith(("'", '"'))
                head = literal[0] if starts else ""
                tail = literal[-1] if literal and written.endswith(("'", '"')) else ""
            if head or tail:
                i = bisect.bisect_right(corpus.starts, m.start()) - 1
                made.append((head, tail, _place(corpus, corpus.paths[i], m.start() - corpus.starts[i])))
        corpus.made = made
    return corpus.made


def _fits(name: str, head: str, tail: str) -> bool:
    return len(name) > len(head) + len(tail) and name.startswith(head) and name.endswith(tail)


def _place(corpus: _Corpus, path: str, offset: int) -> str:
    text = read_text(path) or ""
    return f"{os.path.relpath(path, corpus.root)}:{text.count(chr(10), 0, offset) + 1}"


def _quoted(text: str, offset: int, length: int) -> bool:
    before = text[offset - 1 : offset]
    return before in ("'", '"') and text[offset + length : offset + length + 1] == before


def _in_import(lines: list[str], at: int) -> bool:
    """Whether line index `at` is part of an import statement (a parenthesised one runs on)."""
    for k in range(at, max(-1, at - 60), -1):
        line = lines[k]
        if _IMPORT_LINE.match(line):
            return k == at or "(" in line
        if k != at and (")" in line or not line.startswith((" ", "\t"))):
            return False
    return False


def _in_all(text: str, offset: int) -> bool:
    return any(m.start(1) <= offset < m.end(1) for m in _ALL.finditer(text))


def function_reach(project: Project, path: str, def_line: int, name: str) -> Reach:
    """How the project reaches the function `name` defined at `def_line` (1-based) of `path`: the
    functions that refer to it are followed up (breadth first, each once) until a reference that
    runs (module or class level, a decorator, a framework override) or none is left."""
    corpus = _corpus(project)
    start = (os.path.abspath(path), def_line - 1, name)
    key = (corpus.root, start[0], start[1])
    if key not in _VERDICTS:
        _VERDICTS[key] = _search(corpus, start) if corpus.complete else _UNKNOWN
    return _VERDICTS[key]


def _search(corpus: _Corpus, start: tuple[str, int, str]) -> Reach:
    best = Reach("dead")
    exported = False
    queue = [start]
    seen = {start[:2]}
    while queue:
        node = queue.pop(0)
        facts = _references(corpus, *node)
        if node == start:
            exported = facts.exported
        for found in facts.reaches:
            if found.kind in ("live", "unknown"):
                return found
            found = found if node == start else Reach(found.kind, found.where, node[2])
            if _ORDER.index(found.kind) < _ORDER.index(best.kind):
                best = found
        for caller in facts.callers:
            if caller[:2] not in seen:
                if len(seen) >= MAX_FUNCTIONS:
                    return _UNKNOWN  # too many callers up to follow: cannot be told
                seen.add(caller[:2])
                queue.append(caller)
    if best.kind == "dead" and exported:
        return Reach("api")
    return best


@dataclass(frozen=True)
class _Facts:
    """What the project's text says of one function: the references that decide by themselves,
    the functions whose bodies refer to it, and whether a package exports it as public API."""

    reaches: tuple[Reach, ...] = ()
    callers: tuple[tuple[str, int, str], ...] = ()
    exported: bool = False


_FACTS: dict[tuple[str, str, int], _Facts] = {}


def _references(corpus: _Corpus, path: str, at: int, name: str) -> _Facts:
    key = (corpus.root, path, at)
    if key not in _FACTS:
        _FACTS[key] = _read_references(corpus, path, at, name)
    return _FACTS[key]


def _read_references(corpus: _Corpus, path: str, at: int, name: str) -> _Facts:
    lines = _lines(path)
    if name.startswith("__") and name.endswith("__") or not (0 <= at < len(lines)):
        return _Facts((_LIVE,))
    if any(d not in _PLAIN_DECORATORS for d in _decorators(lines, at)):
        return _Facts((_LIVE,))  # a decorator that may register it
    bases = _class_bases(lines, at)
    if bases is not None and _external_base(corpus, bases) is not None:
        return _Facts((_LIVE,))  # may override a method its framework calls
    occurrences = corpus.occurrences(name)
    if len(occurrences) > MAX_OCCURRENCES:
        return _Facts((_LIVE,))  # a name written everywhere: not worth telling apart
    reaches = [Reach("made", where) for head, tail, where in _made_names(corpus) if _fits(name, head, tail)]
    callers: list[tuple[str, int, str]] = []
    exported = False
    for other, offset in occurrences:
        text = read_text(other) or ""
        other_lines = _lines(other)
        line_no = text.count("\n", 0, offset)
        line = other_lines[line_no] if line_no < len(other_lines) else ""
        defined = _DEF.match(line)
        if defined is not None and defined.group(2) == name:
            continue  # a definition (this one, or an override), not a reference
        if os.path.basename(other) == "__init__.py" or _in_all(text, offset):
            exported = True  # a package exports it: an import is no use
            continue
        if _in_import(other_lines, line_no):
            continue
        where = _place(corpus, other, offset)
        if not other.endswith(".py") or is_test_file(os.path.relpath(other, corpus.root)):
            reaches.append(Reach("tests", where))
        elif _quoted(text, offset, len(name)):
            reaches.append(Reach("string", where))
        else:
            around = enclosing(other_lines, line_no)
            if around is None:
                return _Facts((_LIVE,))  # module or class level: runs when the module is imported
            if not (other == path and around[0] == at):  # not a call of itself
                callers.append((other, around[0], around[1]))
    public = exported and not name.startswith("_") and bases is None
    return _Facts(tuple(reaches), tuple(callers), public)


def module_reach(project: Project, path: str) -> Reach:
    """How the project reaches the module at `path`: "live" (imported, named, a script, a test or
    an entry module), "dead" (in a package, and nothing imports or names it) or "unknown" (standalone,
    or the project imports its modules by names made at run time)."""
    corpus = _corpus(project)
    path = os.path.abspath(path)
    base = os.path.basename(path)
    relative = os.path.relpath(path, corpus.root)
    text = read_text(path) or ""
    if (
        base in ("__init__.py", "__main__.py", "setup.py", "conftest.py", "manage.py")
        or is_test_file(relative)
        or _MAIN_GUARD.search(text)
    ):
        return _LIVE
    module = os.path.splitext(base)[0]
    folder = os.path.dirname(path)
    parent = os.path.basename(folder)
    occurrences = corpus.occurrences(module)
    if len(occurrences) > MAX_OCCURRENCES:
        return _LIVE
    for other, offset in occurrences:
        if other == path:
            continue
        other_text = read_text(other) or ""
        line_no = other_text.count("\n", 0, offset)
        line = _lines(other)[line_no]
        if _in_import(_lines(other), line_no) or re.search(
            rf"\b{re.escape(parent)}[./]{re.escape(module)}\b", line
        ):
            return _LIVE
        if other_text[offset + len(module) : offset + len(module) + 3] == ".py":
            return _LIVE  # run by its file name (a Dockerfile, a README, a subprocess)
    if not os.path.isfile(os.path.join(folder, "__init__.py")) or not corpus.complete:
        return _UNKNOWN
    if imports_by_name(project):
        return _UNKNOWN
    return Reach("dead")


def _function_at(index: ModuleIndex, line: int) -> cst.FunctionDef | None:
    """The innermost function of the checked module whose text holds `line`."""
    best: cst.FunctionDef | None = None
    for entering, node in index.events:
        if entering and type(node) is cst.FunctionDef:
            span = index.positions.get(node)
            if span is not None and span[0][0] <= line <= span[1][0]:
                best = node  # events come in source order: a later match is nested in an earlier
    return best


def _def_line(lines: list[str], start: int, name: str) -> int | None:
    """The 0-based index of the `def name` line at or after 1-based line `start` (past decorators)."""
    for k in range(max(start - 1, 0), min(len(lines), start + 40)):
        m = _DEF.match(lines[k])
        if m is not None and m.group(2) == name:
            return k
    return None


def _note(reach: Reach, name: str) -> str:
    """What a finding says of how its builder is reached when no sink is seen to send it."""
    through = f"`{name}()`" if not reach.via else f"`{name}()` (through `{reach.via}()`)"
    if reach.kind == "string":
        return (
            f"{through} is reached only through its name written as a string at {reach.where} (a "
            "`getattr` or a registry picks it at run time)"
        )
    if reach.kind == "made":
        return f"{through} may be reached through a `getattr` whose name is made at run time at {reach.where}"
    if reach.kind == "tests":
        return f"{through} is referred to only by tests or docs ({reach.where})"
    if reach.kind == "api":
        return f"no caller in this repository: `{name}()` is exported by its package (public API)"
    return ""


def judge_unreached(
    project: Project, path: str, text: str, index: ModuleIndex, prompts: list[Prompt]
) -> tuple[list[Prompt], list[Prompt], bool]:
    """The prompts of the checked module less the candidates no sink is seen to send that are
    built in dead code (a function nothing in the project refers to, or a module nothing imports),
    the kept ones saying how their builder is reached when that is by name only; those dropped;
    and whether the project's files decided it (the result then depends on all of them)."""
    path = os.path.abspath(path)
    if not any(os.path.exists(os.path.join(project.root, m)) for m in _PROJECT_MARKERS):
        return prompts, [], False  # no project around it: what refers to it is not in view
    if read_text(path) != text:
        return prompts, [], False  # the text checked is not the file on disk: its lines cannot be matched
    module = None
    lines = text.split("\n")
    out: list[Prompt] = []
    dead: list[Prompt] = []
    decided = False
    for prompt in prompts:
        if prompt.reached or not any(h.provenance.volatile for h in holes(prompt.value)):
            out.append(prompt)  # sent, or no finding to judge
            continue
        if module is None:
            module = module_reach(project, path)
        if module.kind == "unknown":
            out.append(prompt)
            continue
        if module.kind == "dead":
            decided = True
            dead.append(prompt)
            continue
        fn = _function_at(index, prompt.line)
        at = _def_line(lines, index.pos(fn)[0], fn.name.value) if fn is not None else None
        if fn is None or at is None:
            out.append(prompt)
            continue
        reach = function_reach(project, path, at + 1, fn.name.value)
        if reach.kind == "dead":
            decided = True
            dead.append(prompt)
            continue
        note = _note(reach, fn.name.value)
        if note:
            decided = True
            prompt = replace(prompt, reference=note)
        out.append(prompt)
    return out, dead, decided


def deciding_files(project: Project) -> list[str]:
    """The files whose text decided a judgement of `judge_unreached`."""
    return list(_corpus(project).paths)
