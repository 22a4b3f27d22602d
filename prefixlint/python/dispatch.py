"""Calls that pick the code they run at run time: `importlib.import_module(f".{kind}", pkg)`,
`__import__(name)`, `getattr(module, name)`.

A project that makes one may send a prompt through code that no static reading of it finds
(XAgent picks its request module by a config value). There "no call sends it to a model" cannot
be said: the sink could not be resolved statically. Found by a text search of the project's
modules (no parse), once per project root and run; the severity of a finding does not change.
"""

from __future__ import annotations

import os
import re

from prefixlint.python.project import Project, python_sources, read_text

# An import whose module name is not a literal written in the call.
_IMPORT = re.compile(
    r"\b(?:importlib\.import_module|import_module|__import__)\(\s*(?![\"'][\w.]*[\"']\s*[,)])"
)
# `getattr(name, <not a literal>)`, judged dynamic when `name` is imported in the file (a module).
_GETATTR = re.compile(r"\bgetattr\(\s*(\w+)\s*,\s*(?![\"'\s])")
_FOUND: dict[str, list[str]] = {}


def _imports(text: str, name: str) -> bool:
    pattern = (
        rf"^\s*(?:import\s+[\w.]+\s+as\s+{name}\b|import\s+{name}\b"
        rf"|from\s+[\w.]+\s+import\s+[^#\n]*\b{name}\b)"
    )
    return re.search(pattern, text, re.MULTILINE) is not None


def _first_in(text: str) -> int | None:
    """The offset of the first dynamic dispatch in a module's text, or None."""
    found = [m.start() for m in _IMPORT.finditer(text)]
    found += [m.start() for m in _GETATTR.finditer(text) if _imports(text, m.group(1))]
    return min(found) if found else None


def _sites(project: Project) -> list[str]:
    """The modules of the project that pick code at run time, each with the line of the first."""
    if project.root not in _FOUND:
        found = _FOUND[project.root] = []
        for path in python_sources(project):
            content = read_text(path)
            at = _first_in(content) if content is not None and "import" in content else None
            if at is not None:
                found.append(f"{path}:{content.count(chr(10), 0, at) + 1}")
    return _FOUND[project.root]


def dynamic_dispatch(project: Project, path: str) -> str | None:
    """Where the code around the module at `path` picks code at run time (`path:line`, relative to
    the root), or None: the site in the same top folder of the project as the module, the one
    nearest to it first. One in another top folder is another program (a tool server beside
    the agent), which does not send this module's prompts."""
    root, path = os.path.abspath(project.root), os.path.abspath(path)
    top = os.path.relpath(path, root).split(os.sep)[0]
    best: tuple[int, str] | None = None
    for site in _sites(project):
        file = site.rsplit(":", 1)[0]
        inside = os.path.relpath(file, root).split(os.sep)[0] == top or os.path.dirname(path) == root
        if not inside:
            continue
        shared = len(os.path.commonpath([file, path]))
        if best is None or shared > best[0]:
            best = (shared, site)
    return os.path.relpath(best[1], root) if best is not None else None


def forget() -> None:
    """A new run searches afresh (files may have changed since the last)."""
    _FOUND.clear()
