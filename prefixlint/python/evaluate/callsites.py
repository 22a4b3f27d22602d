"""Call sites: the calls in the project of a function, or that make an object of a class.

They are sought in the module itself, then in at most MAX_CALLER_MODULES others whose text calls
the name (a text search, once per pattern and process), the nearest first; only those are parsed.
What they pass says what a parameter holds (the class of an object passed as `respond(self)`,
what a constructor call gives `__init__`), here and for the callables and entry points that
valuecalls.py and entrypoints.py follow.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from typing import Self

import libcst as cst

from prefixlint.python.evaluate.base import EvaluatorBase
from prefixlint.python.project import Project, python_sources, read_text

MAX_CALLER_MODULES = 4  # other modules parsed for the callers of one function


class CallSites(EvaluatorBase):
    """The project's calls of a function or constructions of a class."""

    def callers(self, fn: cst.FunctionDef) -> list[tuple[Self, cst.Call]]:
        """The calls of `fn` in the project: in its module, then in the modules whose text calls its
        name (a method called on an object whose class is not seen counts, as does a call that
        resolves to a method of that name of another class, an override or the base it overrides)."""
        name = fn.name.value
        method = fn in self.index.class_of
        if method:
            pattern = r"\." + re.escape(name) + r"\("
        else:  # `ask(...)`, or through its module: `prompts.ask(...)` after `from app import prompts`
            module = re.escape(_module_name(self.path))
            pattern = r"(?<![\w.])(?:" + module + r"\.)?" + re.escape(name) + r"\("
        return self._calls_in_project(name, pattern, lambda site, c: site._site_calls(c, fn, method))

    def constructions(self, cls: cst.ClassDef) -> list[tuple[Self, cst.Call]]:
        """The calls in the project that make an object of `cls` (`GPTResearcher(query=...)`), found
        as `callers` finds a function's: what they pass is what its `__init__` gets."""
        name = cls.name.value

        def makes(site: Self, call: cst.Call) -> bool:
            found = site.find_class(call.func, reexported=True)  # type: ignore[attr-defined]
            return found is not None and found[1] is cls

        return self._calls_in_project(name, r"(?<![\w])" + re.escape(name) + r"\(", makes)

    def _calls_in_project(
        self, name: str, pattern: str, keep: Callable[[Self, cst.Call], bool]
    ) -> list[tuple[Self, cst.Call]]:
        out = [(self, c) for c in self.calls_named(name) if keep(self, c)]  # type: ignore[attr-defined]
        found = 0
        here = os.path.abspath(self.path)
        nearest = sorted(  # the modules beside it first (a package calls its own code), then by path
            texts_matching(self.project, name, pattern),
            key=lambda p: (-len(os.path.commonpath([os.path.abspath(p), here])), p),
        )
        for path in nearest:
            if os.path.abspath(path) == here or found >= MAX_CALLER_MODULES:
                continue
            other = self.evaluator(path)
            if other is None:
                continue
            found += 1
            out += [(other, c) for c in other.calls_named(name) if keep(other, c)]
        return out

    def _site_calls(self, call: cst.Call, fn: cst.FunctionDef, method: bool) -> bool:
        if method and not isinstance(call.func, cst.Attribute):
            return False
        resolved = self.resolve_callable(call.func, call)  # type: ignore[attr-defined]
        if resolved is None:
            # `manager.think(...)` on an object whose class is not seen; a function imported through
            # a package that re-exports it (`from ..actions import write_intro`)
            if method:
                return True
            found = self.imported_definition(  # type: ignore[attr-defined]
                self.index.qualified_names(call.func, self.index.module_scope), 3, "functions"
            )
            return found is not None and found[1] is fn
        return resolved[1] is fn or method and resolved[1].name.value == fn.name.value


def _module_name(path: str) -> str:
    """The last part of the name a module is imported by: `prompts` of app/prompts.py, `app` of
    app/__init__.py."""
    stem = os.path.splitext(os.path.basename(path))[0]
    return os.path.basename(os.path.dirname(os.path.abspath(path))) if stem == "__init__" else stem


_TEXT_CALLERS: dict[tuple[str, str], list[str]] = {}


def texts_matching(project: Project, name: str, pattern: str) -> list[str]:
    """The project's modules whose text holds `name` and matches `pattern` (a text search, once per
    pattern and process)."""
    key = (project.root, pattern)
    if key not in _TEXT_CALLERS:
        needle = re.compile(pattern)
        found = _TEXT_CALLERS[key] = []
        for path in python_sources(project):
            content = read_text(path)
            if content is not None and name in content and needle.search(content):
                found.append(path)
    return _TEXT_CALLERS[key]


def forget() -> None:
    """A new run searches afresh (files may have changed since the last)."""
    _TEXT_CALLERS.clear()
