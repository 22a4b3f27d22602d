"""Calls that pick the project's code they run at run time: `importlib.import_module(f".{kind}",
pkg)`, `import_module(f"myapp.request.{kind}")`, `getattr(project_module, name)`, a registry looked
up by a key made at run time (`REGISTRY[name]`, `ProviderRegistry.get_provider(kind)`).

A project that makes one may send a prompt through code that no static reading of it finds
(XAgent picks its request module by a config value). There "no call sends it to a model" cannot
be said: the sink could not be resolved statically. Found by a text search of the project's
modules (no parse), once per project root and run; the severity of a finding does not change.
"""

from __future__ import annotations

import os
import re

from prefixlint.python.project import Project, python_sources, read_text

# `import_module(NAME, PACKAGE)` / `__import__(NAME)`: the name as written, and whether a package follows.
_IMPORT = re.compile(r"\b(importlib\.import_module|import_module|__import__)\(\s*([^,)]*)(,)?")
_LITERAL = re.compile(r"[rbu]*([\"'])[\w.]*\1")
_STATIC_HEAD = re.compile(r"[rbuf]*[\"']([\w.]*)")
# `getattr(name, <not a literal>)`, dynamic when `name` is a module of the project imported here.
_GETATTR = re.compile(r"\bgetattr\(\s*(\w+)\s*,\s*(?![\"'\s])")
# A registry looked up by a key made at run time (`REGISTRY[name]`, `ProviderRegistry.get_provider(
# kind)`, `self._registry.get(key)`): which registered class runs is decided then.
_REGISTRY = re.compile(r"\b\w*(?:registry|Registry|REGISTRY)\w*(?:\.get\w*\(|\[)\s*(?=[A-Za-z_])")
_FOUND: dict[str, list[str]] = {}


def _of_project(module: str, tops: set[str]) -> bool:
    """Whether a module name as written names the project's own code: relative, or under one of
    its top packages."""
    return module.startswith(".") or (module.split(".")[0] in tops and "." in module)


def _imports(text: str, name: str, tops: set[str]) -> bool:
    for m in re.finditer(
        rf"^\s*(?:import\s+([\w.]+)\s+as\s+{name}\b|from\s+([\w.]+)\s+import\s+[^#\n]*\b{name}\b)",
        text,
        re.MULTILINE,
    ):
        source = m.group(1) or m.group(2)
        if source.startswith(".") or source.split(".")[0] in tops:
            return True
    return False


def _first_in(text: str, tops: set[str]) -> int | None:
    """The offset of the first call in a module's text that picks code of the project by a name
    made at run time (an import of any module by a variable, a plugin loader, is not that)."""
    found = []
    for m in _IMPORT.finditer(text):
        written = m.group(2).strip()
        if not written or _LITERAL.fullmatch(written):
            continue
        head = _STATIC_HEAD.match(written)
        package = m.group(3) is not None and m.group(1) != "__import__"
        if package or (head is not None and _of_project(head.group(1), tops)):
            found.append(m.start())
    found += [m.start() for m in _GETATTR.finditer(text) if _imports(text, m.group(1), tops)]
    found += [m.start() for m in _REGISTRY.finditer(text)]
    return min(found) if found else None


def _tops(project: Project, sources: list[str]) -> set[str]:
    """The project's top-level package names (`src/` layouts too)."""
    out = set()
    for path in sources:
        parts = os.path.relpath(path, project.root).split(os.sep)
        if parts[0] == "src" and len(parts) > 2:
            out.add(parts[1])
        elif len(parts) > 1:
            out.add(parts[0])
    return out


def _sites(project: Project) -> list[str]:
    """The modules of the project that pick code at run time, each with the line of the first."""
    if project.root not in _FOUND:
        found = _FOUND[project.root] = []
        sources = python_sources(project)
        tops = _tops(project, sources)
        for path in sources:
            content = read_text(path)
            at = _first_in(content, tops) if content is not None and "import" in content else None
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
