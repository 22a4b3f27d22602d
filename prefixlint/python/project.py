"""The project around a checked Python file: the modules it imports and the prompt files it reads.

Found on disk, never imported: a dotted module name or a file name written in the code is looked
for beside the module, then in each folder above it, then anywhere under the project root (the
copy nearest the module wins). Each module is parsed once per run, and every file read is recorded,
so a cached result is dropped when one of them changes.
"""

from __future__ import annotations

import contextlib
import os
import re
import sys
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

import libcst as cst

from prefixlint.python.frameworks import Frameworks, builtin
from prefixlint.python.proxies import add_proxied_imports
from prefixlint.python.scopes import ModuleIndex, index_module, parse_module

# Text files a prompt may be kept in.
PROMPT_FILE_SUFFIXES = (
    ".txt",
    ".md",
    ".yaml",
    ".yml",
    ".j2",
    ".jinja",
    ".jinja2",
    ".prompt",
    ".json",
    ".toml",
)
_INDEXED_SUFFIXES = (".py", *PROMPT_FILE_SUFFIXES)
_SKIPPED_FOLDERS = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".tox", "site-packages"}
# A project root that is a home folder or a whole disk must not cost a long walk: past this many
# entries the tail search gives up (the folders around the module are still tried).
MAX_INDEXED_FILES = 30_000
MAX_FILE_BYTES = 1_000_000
# Modules read to follow an import: one larger than this (a 6,000-line agent class) is not parsed
# (about 1 s of libcst per 250 KB), and one checked file reads at most this much imported source,
# so a pre-commit run on one file stays fast.
MAX_IMPORTED_MODULE_BYTES = 150_000
MAX_IMPORTED_BYTES = 400_000
MAX_SIBLING_MODULES = 50
# Source kept parsed per process, in characters: a module is parsed once per run, whatever imports it,
# while the modules parsed fit (160-250 MB of libcst tree and index per MB of source: llama_index
# core reaches 3.8 MB, 620 MB peak RSS; ragflow fills it, 2 GB). A count of modules bounded it
# before: 200 made llama_index parse 867 times for 465 modules.
MAX_PARSED_BYTES = 8_000_000
# Folders above a module tried for a relative path or a package, when the module is outside the root.
MAX_PARENT_FOLDERS = 6


@dataclass
class Project:
    root: str
    modules: dict[str, ModuleIndex | None] = field(default_factory=dict)
    # The evaluator of each module read (python.evaluate makes them: `Evaluator.of`).
    evaluators: dict[str, Any] = field(default_factory=dict)
    texts: dict[str, str | None] = field(default_factory=dict)
    read: list[str] = field(default_factory=list)  # files read besides the checked one, in order
    _by_name: dict[str, list[str]] | None = None
    active: list[cst.CSTNode] = field(default_factory=list)  # functions being inlined (recursion guard)
    steps: int = 0  # expressions evaluated for the current prompt (evaluate.STEP_BUDGET)
    cut: int = 0  # evaluations cut short by a limit (such a value is not memoized)
    over_budget: int = 0  # those cut short by the step budget (Evaluator.value remembers none of them)
    values: dict[tuple, tuple] = field(default_factory=dict)  # Evaluator.value's memo
    following: set[tuple[int, str]] = field(default_factory=set)  # parameters followed to their callers
    # parameter -> what callers in other modules pass it (None: nothing said), and whether one is
    # being worked out: evaluate/parameters.passed_elsewhere
    elsewhere: dict[tuple[int, str], Any] = field(default_factory=dict)
    seeking_elsewhere: bool = False
    reading: set[tuple[int, str]] = field(default_factory=set)  # class attributes being worked out
    imported_bytes: int = 0  # source of imported modules parsed for this checked file
    memo: dict[tuple[int, bool], tuple] = field(default_factory=dict)  # binding values without arguments
    schemas: dict[int, tuple | None] = field(default_factory=dict)  # a definition's schema order (schemas.py)
    frameworks: Frameworks = field(default_factory=builtin)  # the models table (and python.sinks)
    # function -> (the wrapper depth it was worked out at, what its sinks send) (summaries.py)
    summaries: dict[int, tuple[int, list]] = field(default_factory=dict)
    summary_cuts: int = 0  # project functions the wrapper depth limit left unfollowed (summaries.py)
    passed: dict[tuple[int, str], list] = field(default_factory=dict)  # what a callable parameter gets
    registries: dict[tuple[str, str], list] = field(default_factory=dict)  # classes a registry holds
    # parameter -> the class of what the project's calls of its function pass (evaluate/objects.py)
    passed_classes: dict[tuple[int, str], Any] = field(default_factory=dict)
    # (constructor, parameter) -> what the project's constructions pass for it (evaluate/objects.py)
    constructed: dict[tuple[int, str], Any] = field(default_factory=dict)
    passing: int = 0  # calls up being followed for such a class now (objects.MAX_PASSED_HOPS)
    # parameter (or attribute read) -> the request entry point seen to pass it a per-request value
    # (entrypoints.py)
    entry_passers: dict[object, Any] = field(default_factory=dict)
    # Modules read and counted against the budget whose parse waits until a name is looked up in them.
    unparsed: dict[str, str] = field(default_factory=dict)
    # (qualified name, importing module) -> (the evaluator of the module defining it, the name there).
    resolved: dict[tuple[str, str], tuple[Any, str] | None] = field(default_factory=dict)
    # Prompt files a config read falls back to (path -> the config key), and the texts read from them
    # (text -> what to say of it): evaluate/config_reads.py.
    config_files: dict[str, str] = field(default_factory=dict)
    config_texts: dict[str, str] = field(default_factory=dict)
    # The settings object each expression evaluates to (evaluate/settings.py).
    settings: dict[cst.CSTNode, Any] = field(default_factory=dict)
    # A function -> the literal defaults no caller in the project overrides, and a module -> the
    # functions reachability.py judges there: reachability.pinned_defaults.
    pinned: dict[cst.CSTNode, dict[str, object]] = field(default_factory=dict)
    judged: dict[str, frozenset[cst.CSTNode]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Paths found under the root are compared with absolute module paths (os.path.commonpath
        # refuses to mix the two): a root given relative, as the API allows, is made absolute.
        self.root = os.path.abspath(self.root)

    # --- files ---------------------------------------------------------------------------------
    def text(self, path: str) -> str | None:
        """A file's text (None if it cannot be read as UTF-8 text of a sane size); read once."""
        path = os.path.abspath(path)
        if path not in self.texts:
            self.texts[path] = _read(path)
            if self.texts[path] is not None:
                self.read.append(path)
        return self.texts[path]

    def path_of(self, content: str) -> str | None:
        """The file a text was read from (a template's includes are looked up beside it)."""
        return next((p for p, t in self.texts.items() if t == content), None)

    def _index(self) -> dict[str, list[str]]:
        """File name -> the paths under the root with that name (walked once per process, on first
        need: the tree does not change during a run)."""
        if self._by_name is None and self.root in _WALKED:
            self._by_name = _WALKED[self.root]
        if self._by_name is None:
            self._by_name = _WALKED[self.root] = {}
            count = 0
            for folder, dirs, files in os.walk(self.root):
                dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_FOLDERS and not d.startswith("."))
                for name in files:
                    if name.endswith(_INDEXED_SUFFIXES):
                        self._by_name.setdefault(name, []).append(os.path.join(folder, name))
                count += len(files)
                if count > MAX_INDEXED_FILES:
                    _CUT.add(self.root)
                    break
        return self._by_name

    def find_file(self, reference: str, near: str, anywhere: bool = True) -> str | None:
        """The file a relative path written in the code means, for code in folder `near`: beside it,
        in a folder above it, else (`anywhere`) the nearest file under the root that ends so."""
        reference = reference.replace("\\", "/").strip()
        if not reference or "\x00" in reference:
            return None
        if os.path.isabs(reference):
            return reference if os.path.isfile(reference) else None
        reference = os.path.normpath(reference)
        if reference.startswith(".."):
            candidate = os.path.normpath(os.path.join(near, reference))
            return candidate if os.path.isfile(candidate) else None
        for folder in self._folders_up(near):
            candidate = os.path.join(folder, reference)
            if os.path.isfile(candidate):
                return candidate
        if not anywhere:
            return None
        near = os.path.abspath(near)
        tail = os.sep + reference
        matches = [p for p in self._index().get(os.path.basename(reference), []) if p.endswith(tail)]
        if not matches:
            return None
        return max(matches, key=lambda p: (len(os.path.commonpath([p, near])), -len(p)))

    def _folders_up(self, near: str) -> list[str]:
        near = os.path.abspath(near)
        out = [near]
        inside = near == self.root or near.startswith(self.root + os.sep)
        while len(out) <= MAX_PARENT_FOLDERS or inside:
            if out[-1] == self.root:
                break
            parent = os.path.dirname(out[-1])
            if parent == out[-1]:
                break
            out.append(parent)
        return out

    # --- modules -------------------------------------------------------------------------------
    def module_path(self, dotted: str, importer: str) -> str | None:
        """The file of module `dotted` (`.x`, `..pkg.x` relative to `importer`'s package); looked
        for on disk once per run for each folder that imports it (every call of a checked module
        asks again, for each name it may be imported as)."""
        key = (self.root, dotted, os.path.dirname(importer))
        found = _MODULE_PATHS.get(key, _UNSEEN)
        if found is _UNSEEN:
            found = _MODULE_PATHS[key] = self._module_path(dotted, importer)
        return found

    def _module_path(self, dotted: str, importer: str) -> str | None:
        if dotted.startswith("."):
            level = len(dotted) - len(dotted.lstrip("."))
            folder = os.path.dirname(importer)
            for _ in range(level - 1):
                folder = os.path.dirname(folder)
            rest = dotted.lstrip(".").replace(".", "/")
            candidates = [os.path.join(folder, rest, "__init__.py")]
            if rest:
                candidates.insert(0, os.path.join(folder, rest + ".py"))
            return next((os.path.normpath(c) for c in candidates if os.path.isfile(c)), None)
        if dotted.split(".")[0] in sys.stdlib_module_names:
            return None
        rel = dotted.replace(".", "/")
        near = os.path.dirname(os.path.abspath(importer))
        # Imports resolve from folders above the module, as sys.path entries are: a package found
        # nowhere there is a third-party one, and walking the whole project for it would cost
        # every pre-commit run.
        found = self.find_file(rel + ".py", near, anywhere=False) or self.find_file(
            rel + "/__init__.py", near, anywhere=False
        )
        if found is None:
            # a `src/` layout: the project's own package, installed from there, is importable
            # from its examples and scripts
            for candidate in (rel + ".py", rel + "/__init__.py"):
                path = os.path.join(self.root, "src", candidate)
                if os.path.isfile(path):
                    return path
        return found

    def module(self, path: str) -> ModuleIndex | None:
        """The parsed, indexed module at `path` (None if it cannot be read or parsed); parsed once
        per process while its text is unchanged, for every checked file that imports it."""
        path = os.path.abspath(path)
        if path not in self.modules:
            text = self._source(path)
            self.modules[path] = None
            if text is not None:
                cached = _PARSED.get(path)
                if cached is not None and cached[0] == text:
                    self.modules[path] = cached[1]
                    _PARSED.move_to_end(path)
                else:
                    with contextlib.suppress(cst.ParserSyntaxError, RecursionError, ValueError):
                        self.modules[path] = index_module(parse_module(text), path)
                    remember(path, text, self.modules[path])
                if self.modules[path] is not None:
                    add_proxied_imports(self, path, self.modules[path])
        return self.modules[path]

    def _source(self, path: str) -> str | None:
        """The text of a module to parse, counted against the imported-source budget once."""
        if path in self.unparsed:
            return self.unparsed.pop(path)
        return self.text(path) if self._affordable(path) else None

    def may_define(self, path: str, name: str) -> bool:
        """Whether the module at `path` may bind `name` (its text has it), without parsing it: a
        module that does not is never parsed for it. The budget is counted as if it were parsed,
        so that what the rest of the check can afford does not change."""
        path = os.path.abspath(path)
        if path in self.modules:
            return True
        if path not in self.unparsed:
            text = self._source(path)
            if text is None:
                self.modules[path] = None
                return True  # unreadable or unaffordable: `module` says so, as before
            self.unparsed[path] = text
        return name in self.unparsed[path]

    def _affordable(self, path: str) -> bool:
        try:
            size = os.path.getsize(path)
        except OSError:
            return False
        if size > MAX_IMPORTED_MODULE_BYTES or self.imported_bytes + size > MAX_IMPORTED_BYTES:
            return False
        self.imported_bytes += size
        return True

    def add_module(self, path: str, index: ModuleIndex, text: str | None = None) -> None:
        """The checked module, parsed already."""
        path = os.path.abspath(path)
        self.modules[path] = index
        if text is not None:
            self.texts[path] = text
        add_proxied_imports(self, path, index)


_DEF = re.compile(r"^[ \t]+(?:async[ \t]+)?def[ \t]+(\w+)[ \t]*\(", re.MULTILINE)
# An attribute an object keeps: `self.name = ...` (or annotated), or a field in a class body
# (`name: str = ...`; not a parameter on a line of its own, `name: str,`, which ends with a comma).
_STORE = re.compile(
    r"\bself\.(\w+)[ \t]*(?::[^=\n]*)?=(?!=)|^[ \t]+(\w+)[ \t]*:[ \t]*[A-Za-z_](?:[^\n]*[^,\s])?[ \t]*$",
    re.MULTILINE,
)
# An attribute set on an object from outside it: `interpreter.system_message = ...`.
_SET_ON = re.compile(r"^[ \t]*(?!self\.)[A-Za-z_][\w.]*\.(\w+)[ \t]*=(?!=)", re.MULTILINE)
# Project roots indexed in this process: method name -> the modules that define one (indented defs),
# attribute name -> the modules that store one, and those that set one on another object.
_DEFINED: dict[str, dict[str, list[str]]] = {}
_STORED: dict[str, dict[str, list[str]]] = {}
_SET: dict[str, dict[str, list[str]]] = {}


def _names_index(
    project: Project, table: dict[str, dict[str, list[str]]], pattern: re.Pattern
) -> dict[str, list[str]]:
    found = table.get(project.root)
    if found is None:
        found = table[project.root] = {}
        for path in python_sources(project):
            names = {
                n if isinstance(n, str) else next(p for p in n if p)
                for n in pattern.findall(read_text(path) or "")
            }
            for name in names:
                found.setdefault(name, []).append(path)
    return found


def modules_defining(project: Project, name: str) -> list[str]:
    """The project modules that define a method (an indented `def`) called `name`."""
    return _names_index(project, _DEFINED, _DEF).get(name, [])


def modules_storing(project: Project, name: str) -> list[str]:
    """The project modules whose objects keep an attribute called `name` (`self.name = ...`, or a
    field of a class body)."""
    return _names_index(project, _STORED, _STORE).get(name, [])


def modules_setting(project: Project, name: str) -> list[str]:
    """The project modules that set an attribute called `name` on an object (`obj.name = ...`)."""
    return _names_index(project, _SET, _SET_ON).get(name, [])


def is_test_file(relative: str) -> bool:
    """Whether a path (relative to the project root) is a test module or in a test folder."""
    parts = relative.split(os.sep)
    name = parts[-1]
    return (
        any(p in ("test", "tests", "testing") for p in parts[:-1])
        or name.startswith("test_")
        or name.endswith("_test.py")
        or name == "conftest.py"
    )


def is_walk_complete(project: Project) -> bool:
    """Whether the walk of the project root saw every file (a search that finds nothing in a cut
    walk says nothing)."""
    project._index()
    return project.root not in _CUT


def python_sources(project: Project) -> list[str]:
    """Every `.py` file under the project root (walked once per process)."""
    return sorted(p for paths in project._index().values() for p in paths if p.endswith(".py"))


# Files read by a whole-project text search in this process: path -> ((size, mtime), text).
_TEXTS: dict[str, tuple[tuple[int, int], str | None]] = {}
MAX_SEARCHED_TEXTS = 20_000


def read_text(path: str) -> str | None:
    """A project file's text for a text search, read once per process while it is unchanged."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    key = (st.st_size, st.st_mtime_ns)
    cached = _TEXTS.get(path)
    if cached is not None and cached[0] == key:
        return cached[1]
    if len(_TEXTS) >= MAX_SEARCHED_TEXTS:
        _TEXTS.clear()
    text = _read(path)
    _TEXTS[path] = (key, text)
    return text


# (a pattern, path) -> (the text searched, whether the pattern is found in it)
_FOUND: dict[tuple[str, int, str], tuple[str | None, bool]] = {}


def text_has(pattern: re.Pattern[str], path: str) -> bool:
    """Whether the project file at `path` has a match of `pattern`, searched once per process while
    its text is unchanged: the look-ups of every checked file ask it of the same modules, and a
    pattern with no literal prefix (a long alternation) is tried at every character."""
    text = read_text(path)
    key = (pattern.pattern, pattern.flags, path)
    cached = _FOUND.get(key)
    if cached is not None and cached[0] is text:
        return cached[1]
    if len(_FOUND) >= MAX_SEARCHED_TEXTS:
        _FOUND.clear()
    found = pattern.search(text or "") is not None
    _FOUND[key] = (text, found)
    return found


def names_api(project: Project, path: str) -> bool:
    """Whether the project file at `path` names a modelled API (`Frameworks.needles`): the
    override, registry and consumer look-ups ask it of the same modules for every checked file."""
    return text_has(project.frameworks.needles, path)


def importers(project: Project, path: str, api: bool = True) -> list[str]:
    """Project modules whose text imports the module at `path` and (`api`) names a modelled API."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "__init__":
        name = os.path.basename(os.path.dirname(path))
    imports = re.compile(
        rf"^\s*(?:from\s+[\w.]*\b{re.escape(name)}\b|import\s+[\w.]*\b{re.escape(name)}\b|from\s+[\w.]+\s+import\s+.*\b{re.escape(name)}\b)",
        re.MULTILINE,
    )
    found = []
    for other in _import_words(project).get(name, ()):
        if other == path:
            continue
        text = read_text(other)
        if text and imports.search(text) and (not api or names_api(project, other)):
            found.append(other)
    return found


_IMPORT_LINE = re.compile(r"^\s*(?:from|import)\s.*$", re.MULTILINE)
_WORDS: dict[str, dict[str, list[str]]] = {}  # project root -> word of an import line -> paths


def _import_words(project: Project) -> dict[str, list[str]]:
    """The words of each source's import lines, once per process and root (the tree does not change
    during a run, as `Project._index` has it): the modules that may import a name, read again only
    for those."""
    found = _WORDS.get(project.root)
    if found is None:
        found = _WORDS[project.root] = {}
        for other in python_sources(project):
            text = read_text(other) or ""
            words = {w for line in _IMPORT_LINE.findall(text) for w in re.findall(r"\w+", line)}
            for word in words:
                found.setdefault(word, []).append(other)
    return found


def parsed_module(path: str, text: str) -> ModuleIndex | None:
    """The index of a module this process parsed already with this very text (as an import of an
    earlier checked file), else None."""
    path = os.path.abspath(path)
    cached = _PARSED.get(path)
    if cached is None or cached[0] != text:
        return None
    _PARSED.move_to_end(path)
    return cached[1]


def parse_ahead(path: str, text: str) -> bool:
    """Parse and index a module for later look-ups, while that leaves half the parse cache for
    the modules parsed on demand; False (nothing parsed) when it would not."""
    if _PARSED_BYTES + len(text) > MAX_PARSED_BYTES // 2:
        return False
    if parsed_module(path, text) is None:
        index = None
        with contextlib.suppress(cst.ParserSyntaxError, RecursionError, ValueError):
            index = index_module(parse_module(text), os.path.abspath(path))
        remember(path, text, index)
    return True


def remember(path: str, text: str, index: ModuleIndex | None) -> None:
    """Keep a parsed module for the checked files that import it next (the modules a package's
    files import are mostly the same: the least recently used is dropped first)."""
    global _PARSED_BYTES
    path = os.path.abspath(path)
    old = _PARSED.pop(path, None)
    if old is not None:
        _PARSED_BYTES -= len(old[0])
    _PARSED[path] = (text, index)
    _PARSED_BYTES += len(text)
    while _PARSED_BYTES > MAX_PARSED_BYTES and len(_PARSED) > 1:  # bounded memory
        _PARSED_BYTES -= len(_PARSED.popitem(last=False)[1][0])


# Modules found on disk in this run: (root, dotted name, importer's folder) -> path or None.
_MODULE_PATHS: dict[tuple[str, str, str], str | None] = {}
_UNSEEN = object()


def forget_disk() -> None:
    """A new run looks for modules on disk afresh (files may have been added since the last one)."""
    _MODULE_PATHS.clear()


# Project roots walked in this process: file name -> paths.
_WALKED: dict[str, dict[str, list[str]]] = {}
_CUT: set[str] = set()  # roots whose walk stopped at MAX_INDEXED_FILES
# Modules parsed in this process, by path: (their text, their index).
_PARSED: OrderedDict[str, tuple[str, ModuleIndex | None]] = OrderedDict()
_PARSED_BYTES = 0  # the length of the texts in _PARSED


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_FILE_BYTES:
            return None
        with open(path, "rb") as fh:
            data = fh.read(MAX_FILE_BYTES + 1)
    except OSError:
        return None
    if b"\x00" in data[:8192]:
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None
