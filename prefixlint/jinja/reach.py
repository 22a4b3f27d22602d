"""Whether an app prompt template is rendered by the project it ships in.

A template inside a Python package (a folder above it holds `__init__.py`) is used when the
project's code names it: a Python or data file writes its path (`J2("tasks/system.j2")`,
`get_template("system.j2")`, `template: prompts/x.j2` in a config), or a template that is used
includes it. A template nothing names is rendered by no code of the project, so what it would
cost a cache is at most info. Only text is searched (no parsing, no libcst): a name written
anywhere counts, and a name built at run time (`f"{kind}.j2"`, a glob of `*.j2`) makes every
template with that suffix count as used, since which one it loads cannot be told.
"""

from __future__ import annotations

import os
import re

from prefixlint.core.findings import Diagnostic, Severity

TEMPLATE_SUFFIXES = (".j2", ".jinja", ".jinja2")
_NAMING_SUFFIXES = (".py", ".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", *TEMPLATE_SUFFIXES)
_SKIPPED = {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".tox", "site-packages"}
MAX_FILES = 30_000  # past this the walk gives up and nothing is called unused
MAX_BYTES = 1_000_000
# A template suffix, where a written name ends; the name is what precedes it back to a character
# no path has (found from the suffix, so a long minified line costs one pass, not one per start).
_SUFFIX = re.compile(r"\.(?:j2|jinja2?)(?![\w.])")
_NOT_IN_PATH = set(" \t\r\n\"'`()[]<>,=|;:*")
MAX_NAME = 300
# A name made at run time: a placeholder or a glob right before the suffix (`{kind}.j2`, `*.j2`,
# `"prompts/" + name + ".j2"`), or a loader that lists its folder.
_DYNAMIC = re.compile(r"(?:[}*]|[\"']\s*\+?\s*[\"']?)\.(j2|jinja2?)(?![\w.])|\blist_templates\s*\(")
NOT_RENDERED = "no code in the project renders this template (no Python, data or used template file names it)"


class _Names:
    """What a project's files name: the references written in code and data, in each template,
    and the suffixes some name built at run time may have (None: any)."""

    def __init__(self) -> None:
        self.from_code: dict[str, set[str]] = {}
        self.from_templates: dict[str, set[str]] = {}
        self.dynamic: set[str | None] = set()
        self.complete = True
        self.has_python = False


_PROJECTS: dict[str, _Names] = {}


def _read(path: str) -> str | None:
    try:
        if os.path.getsize(path) > MAX_BYTES:
            return None
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return None


def _scan(root: str) -> _Names:
    names = _Names()
    count = 0
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED and not d.startswith("."))
        for file in sorted(files):
            if not file.endswith(_NAMING_SUFFIXES):
                continue
            count += 1
            if count > MAX_FILES:
                names.complete = False
                return names
            path = os.path.join(folder, file)
            content = _read(path)
            if content is None:
                continue
            names.has_python = names.has_python or file.endswith(".py")
            named = ".j2" in content or ".jinja" in content or "list_templates" in content
            found = _written_names(content) if named else set()
            if file.endswith(TEMPLATE_SUFFIXES):
                names.from_templates[os.path.abspath(path)] = found
                continue
            if not named:
                continue
            if found:
                names.from_code[os.path.abspath(path)] = found
            for m in _DYNAMIC.finditer(content):
                names.dynamic.add("." + m.group(1) if m.group(1) else None)
    return names


def forget() -> None:
    """A new run reads what the project names afresh (files may have changed since the last)."""
    _PROJECTS.clear()


def _written_names(content: str) -> set[str]:
    out = set()
    for m in _SUFFIX.finditer(content):
        start = m.start()
        while start > max(0, m.start() - MAX_NAME) and content[start - 1] not in _NOT_IN_PATH:
            start -= 1
        out.add(content[start : m.end()])
    return out


def _names_for(root: str) -> _Names:
    root = os.path.abspath(root)
    if root not in _PROJECTS:
        _PROJECTS[root] = _scan(root)
    return _PROJECTS[root]


def _matches(reference: str, path: str) -> bool:
    """Whether a name as written means the file at `path` (a name is relative to some folder the
    loader searches, so any path that ends with it may be the one)."""
    reference = reference.replace("\\", "/")
    if "}" in reference:  # `f"{root}/tasks/system.j2"`: the written tail
        reference = reference.rsplit("}", 1)[1]
    reference = reference.lstrip("./") if not reference.startswith("/") else reference
    path = path.replace("\\", "/")
    if not reference:
        return False
    return path == reference or path.endswith("/" + reference.lstrip("/"))


def _in_package(path: str, root: str) -> bool:
    folder = os.path.dirname(os.path.abspath(path))
    root = os.path.abspath(root)
    while folder.startswith(root):
        if os.path.isfile(os.path.join(folder, "__init__.py")):
            return True
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return False


def unrendered(path: str, root: str) -> tuple[bool, list[str]]:
    """Whether the template at `path` is shipped in a Python package of the project under `root`
    and no code or data of the project, nor a template they reach, names it; and the files that
    decided it (a cached result is dropped when one of them changes)."""
    if not _in_package(path, root):
        return False, []
    names = _names_for(root)
    if not names.complete or not names.has_python:
        return False, []
    path = os.path.abspath(path)
    if None in names.dynamic or os.path.splitext(path)[1] in names.dynamic:
        return False, []
    # Templates named by code or data, then those the used ones include, to a fixed point; each
    # with the file that named it first, so the chain to `path` can be stamped.
    named_by: dict[str, str] = {}
    for code, refs in names.from_code.items():
        for template in names.from_templates:
            if template not in named_by and any(_matches(r, template) for r in refs):
                named_by[template] = code
    pending = list(named_by)
    while pending:
        current = pending.pop()
        for template in names.from_templates:
            if template not in named_by and any(_matches(r, template) for r in names.from_templates[current]):
                named_by[template] = current
                pending.append(template)
    if path in named_by:
        chain, current = [], path
        while current in named_by and current not in chain:
            chain.append(named_by[current])
            current = named_by[current]
        return False, chain
    return path in names.from_templates, sorted(names.from_code) + sorted(names.from_templates)


def demote_unrendered(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The findings of a template no code renders: info at most, and saying so."""
    from dataclasses import replace

    return [
        replace(d, severity=min(d.severity, Severity.INFO), message=f"{d.message}; {NOT_RENDERED}")
        for d in diagnostics
    ]
