"""The Python frontend (libcst): finds prompt-building code and what in it breaks prefix caching.

Imported lazily by the API so that linting templates alone never loads libcst. Its entries take the
run's python part (prefixlint/plan.py); a library caller's `Options` resolve to it at the door."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

from prefixlint.core.findings import SourceResult
from prefixlint.plan import PythonPart, as_python_part

if TYPE_CHECKING:
    from prefixlint.settings import Options

# Text every prompt sink needs somewhere in the file (prefixlint/python/sinks.py, embedded.py): prompt-ish
# names and keywords, message constructors and `role`s, prompt methods, prompt attributes, Jinja. A
# file without any of them cannot yield a finding, so it is only checked for syntax.
_MAY_HOLD_PROMPTS = re.compile(
    r"prompt|system|instruction|preamble|persona|message|role|template|invoke|predict|generate_content"
    r"|complete|description|backstory|content|jinja|from_string"
    r"|[\"'](?:user|assistant|human|ai|developer|tool|function|model)[\"']"
    r"|\(\s*[\w.]*\.(?:user|assistant|human|ai|developer|tool|function|model)\s*,",
    re.IGNORECASE,
)


def _parses(path: str, text: str) -> bool:
    """CPython's parser alone (C, ~50x faster than libcst's); it only parses, it runs nothing."""
    try:
        compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def may_hold_prompts(text: str, declared: tuple[str, ...] = (), rows: tuple[str, ...] = ()) -> bool:
    """Whether a module has any text a prompt sink needs (else it is only checked for syntax): the
    words above, or what a row of the models table needs (`dspy`, `smolagents`, `converse`), the
    project's own included (`python.sinks` names, `declared`, and `[[python.sink]]` rows)."""
    if _MAY_HOLD_PROMPTS.search(text) is not None:
        return True
    from prefixlint.python.frameworks import for_project  # the table is read without libcst

    return for_project(declared, rows).needles.search(text) is not None


def cpython_tree(path: str, text: str) -> ast.Module | None:
    """The module's tree by CPython's parser (None if it does not parse): a screen's, not libcst's."""
    try:
        return compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None


def has_prompt_shapes(path: str, text: str, settings: PythonPart | Options) -> bool:
    """Whether any finder of the frontend can take up something in the module (prefilter.py): a
    module that has none holds no prompt text and is never evaluated. One that CPython cannot parse
    goes on to libcst, which reports it."""
    return _has_shapes(path, text, as_python_part(settings))


# The screen's answer per module in this process: path -> (text, the sinks and rows, answer). The
# parse ahead of a pool's fork screens the modules, and each worker then asks again for each
# module it checks: the forked workers read the parent's answers instead of a second `ast` walk.
_SCREENED: dict[str, tuple[str, tuple[tuple[str, ...], tuple[str, ...]], bool]] = {}
MAX_SCREENED = 20_000


def _has_shapes(path: str, text: str, part: PythonPart) -> bool:
    rows = (part.sinks, part.sink_rows)
    known = _SCREENED.get(path)
    if known is not None and known[1] == rows and known[0] == text:
        return known[2]
    if len(_SCREENED) >= MAX_SCREENED:
        _SCREENED.clear()
    found = _SCREENED[path] = (text, rows, _screen(path, text, part))
    return found[2]


def _screen(path: str, text: str, part: PythonPart) -> bool:
    if not may_hold_prompts(text, part.sinks, part.sink_rows):
        return not _parses(path, text)
    tree = cpython_tree(path, text)
    if tree is None:
        return True
    from prefixlint.python.frameworks import for_project
    from prefixlint.python.prefilter import has_shapes

    return has_shapes(tree, for_project(part.sinks, part.sink_rows), part.sinks)


def analyze_python(path: str, text: str, settings: PythonPart | Options) -> SourceResult:
    """Diagnostics for one Python source; a file with no prompt text costs no libcst (whose import
    alone takes ~0.4 s, its parse ~1 s per 100 KB with the index)."""
    part = as_python_part(settings)
    if not has_prompt_shapes(path, text, part):
        return SourceResult(path, "python")
    from prefixlint.python.analyze import analyze_python as analyze

    return analyze(path, text, part)


def parse_ahead(path: str, text: str, part: PythonPart) -> bool:
    """Parse and index the module now if it holds prompt text, so that pool workers forked after
    this share one parse of it (a package's core modules are checked in one worker and imported
    by the files of every other: each worker parsed them again). False once the parse cache has
    no room left for workers' own parses (project.parse_ahead)."""
    if not _has_shapes(path, text, part):
        return True
    from prefixlint.python.project import parse_ahead as parse

    return parse(path, text)


def read_project_ahead(part: PythonPart) -> None:
    """Read the words of the run's project now (reachability.py), before pool workers fork: each
    worker that checks a module with prompts needs them, and read them again (2.5 CPU s per worker
    on a project of 1,500 modules)."""
    if part.project_root is not None:
        from prefixlint.python.reachability import read_words_ahead

        read_words_ahead(part.project_root)


__all__ = ["analyze_python", "has_prompt_shapes", "may_hold_prompts", "parse_ahead", "read_project_ahead"]
