"""Find what to lint: template files, tokenizer_config.json chat templates, Python modules.

Folders are walked recursively in sorted order (stable output); excludes are glob patterns matched
against each path relative to the folder given and against each path part (gitignore-like). In a
git work tree, what git ignores (`.gitignore` files, `.git/info/exclude`, the global excludes file)
is skipped too, as ruff's `respect-gitignore` does: git itself is asked, once per folder walked,
so its rules are git's own. Files named explicitly are never looked up (no git process in a
pre-commit run).
"""

from __future__ import annotations

import fnmatch
import functools
import json
import os
import re
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prefixlint.models.gguf import names_model

if TYPE_CHECKING:  # its regexes cost ~5 ms to compile: only for runs that classify
    from prefixlint.jinja.classify import Classification
    from prefixlint.plan import RunPlan
    from prefixlint.settings import Options

TEMPLATE_SUFFIXES = (".jinja", ".j2", ".jinja2")

# Below this many sources to analyse, a process pool costs more (start, a tokenizer per worker) than
# it saves; above it, every core works.
PARALLEL_MIN_SOURCES = 12

DEFAULT_EXCLUDES = (
    ".git",
    ".hg",
    ".venv",
    "venv",
    "node_modules",
    "__pycache__",
    ".tox",
    "build",
    "dist",
    # Tool caches: thousands of files, none of them a source (ours holds its results).
    ".prefixlint_cache",
    ".mypy_cache",
    ".pytest_cache",
    ".ruff_cache",
)


class SourceError(ValueError):
    """A path named on the command line that is no source prefixlint can read; the message names
    it."""


@dataclass(frozen=True)
class Source:
    path: str
    kind: str  # "jinja", "tokenizer_config", "python", "gguf" (a .gguf file or an `ollama:` model)


def classify_source(
    source: Source, text: str, template_kinds: tuple[tuple[str, str], ...] = (), root: str = "."
) -> Classification:
    """What a source is, before any analysis (prefixlint/jinja/classify.py has the rule): a chat
    template, an app prompt template, a Python module, or not a prompt at all (skipped).
    `template_kinds` are the config's (glob, kind) overrides; a later glob wins."""
    from prefixlint.jinja.classify import (
        CONFIG_KINDS,
        NOT_PROMPT,
        Classification,
        classify_template,
        template_markers,
    )

    if source.kind == "tokenizer_config":
        return Classification("tokenizer_config", "the chat_template of a tokenizer_config.json")
    if source.kind == "python":
        marker = template_markers(text)
        if marker is not None and not _parses_as_python(text):
            return Classification(
                NOT_PROMPT, f"a template of a Python file: does not parse, holds {marker!r}"
            )
        return Classification("python", "Python module")
    for glob, kind in reversed(template_kinds):
        from prefixlint.core.pathmatch import PathMatcher

        if PathMatcher(Path(root), [glob]).matches(source.path):
            return Classification(CONFIG_KINDS[kind], f"template-kinds {glob!r} = {kind!r}")
    return classify_template(source.path, text)


def _parses_as_python(text: str) -> bool:
    import ast

    try:
        ast.parse(text)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


_INCLUDE_TAG = re.compile(rb"\{%-?\+?\s*(?:include|import|from|extends)\b")


def uses_includes(data: bytes) -> bool:
    """Whether a template's bytes name other template files: its analysis then depends on them."""
    return _INCLUDE_TAG.search(data) is not None


def source_kind(path: str | os.PathLike[str]) -> str | None:
    name = os.path.basename(os.fspath(path))
    if names_model(path):  # a .gguf file or an `ollama:` model
        return "gguf"
    if name == "tokenizer_config.json":
        return "tokenizer_config"
    if name.endswith(TEMPLATE_SUFFIXES):
        return "jinja"
    if name.endswith(".py"):
        return "python"
    return None


@functools.cache
def _exclude_pattern(patterns: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for all glob patterns (fnmatch's translation): a path is tested once, not once per
    pattern (a 1,500-file tree asked fnmatch 60,000 times)."""
    globs = [p.rstrip("/") for p in patterns] or ["\x00never"]
    return re.compile("|".join(f"(?:{fnmatch.translate(os.path.normcase(g))})" for g in globs))


def _excluded(rel: str, patterns: tuple[str, ...]) -> bool:
    """Whether the relative path, or any one of its parts, matches one of the glob patterns."""
    match = _exclude_pattern(patterns).match
    rel = os.path.normcase(rel)
    return match(rel) is not None or any(match(part) is not None for part in rel.split("/"))


def _git_ignored(folder: Path) -> tuple[set[str], list[str]] | None:
    """What git ignores under `folder`, as paths relative to it (an ignored folder once, with a
    trailing "/"), and the ignore files git read; None outside a git work tree or without git."""
    try:
        top = subprocess.run(
            ["git", "rev-parse", "--show-toplevel", "--absolute-git-dir"],
            cwd=folder,
            capture_output=True,
            text=True,
            check=False,
        )
        if top.returncode != 0:
            return None
        listed = subprocess.run(
            ["git", "ls-files", "-z", "--others", "--ignored", "--exclude-standard", "--directory"],
            cwd=folder,
            capture_output=True,
            check=False,
        )
    except OSError:  # no git: nothing is known to be ignored
        return None
    if listed.returncode != 0:
        return None
    ignored = {p for p in listed.stdout.decode("utf-8", "surrogateescape").split("\0") if p}
    ignored.discard("./")  # the folder named itself is ignored: it was asked for by name
    work_tree, git_dir = (top.stdout.splitlines() + ["", ""])[:2]
    # What a replayed run (runmemo) must see change: the .gitignore files above the folder (those in
    # it are stamped as it is walked), the repository's exclude file and the global one.
    files = [os.path.join(git_dir, "info", "exclude")]
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    files.append(os.path.join(config_home, "git", "ignore"))
    here = folder.resolve()
    for parent in (here, *here.parents):
        files.append(str(parent / ".gitignore"))
        if str(parent) == work_tree:
            break
    return ignored, files


def discover(
    paths: list[str],
    excludes: tuple[str, ...] = (),
    *,
    skip: Callable[[str | Path, bool], bool] | None = None,
    defaults: tuple[str, ...] = DEFAULT_EXCLUDES,
    force_exclude: bool = False,
    walked: list[str] | None = None,
    respect_gitignore: bool = True,
) -> Iterator[Source]:
    """Sources under `paths`. A file named explicitly must be of a known kind (a .jinja/.j2/.jinja2
    template, a .py, a tokenizer_config.json), else SourceError names it; folders yield only files
    of known kinds, less what git ignores (`respect_gitignore`). `skip(path, is_dir)` is the
    config's excludes; it applies to files named explicitly only with `force_exclude` (as in ruff,
    so pre-commit's file list honours the config). Each folder listed is appended to `walked`, with
    the git ignore files that decided what was skipped."""
    patterns = tuple(defaults) + tuple(excludes)
    skip = skip or (lambda _path, _is_dir: False)
    seen: set[str] = set()
    for given in paths:
        root = Path(given)
        if root.is_dir():
            found = _git_ignored(root) if respect_gitignore else None
            ignored = found[0] if found is not None else set()
            if walked is not None and found is not None:
                walked.extend(found[1])
            for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
                if walked is not None:
                    walked.append(dirpath)
                    if found is not None:
                        walked.append(os.path.join(dirpath, ".gitignore"))
                rel_dir = os.path.relpath(dirpath, root)
                git_dir = "" if rel_dir == "." else rel_dir.replace(os.sep, "/") + "/"
                dirnames[:] = sorted(
                    d
                    for d in dirnames
                    if not _excluded(os.path.normpath(os.path.join(rel_dir, d)), patterns)
                    and f"{git_dir}{d}/" not in ignored
                    and not skip(Path(dirpath) / d, True)
                )
                folder = str(Path(dirpath))  # as Path spells it ("sub", not "./sub"), once per folder
                for filename in sorted(filenames):
                    kind = source_kind(filename)
                    if kind is None or f"{git_dir}{filename}" in ignored:
                        continue
                    file = filename if folder == "." else os.path.join(folder, filename)
                    rel = os.path.normpath(os.path.join(rel_dir, filename))
                    if file not in seen and not _excluded(rel, patterns) and not skip(file, False):
                        seen.add(file)
                        yield Source(file, kind)
        elif str(root) not in seen and not (force_exclude and skip(root, False)):
            kind = source_kind(root)
            if kind is None:
                raise SourceError(
                    f"{root}: not a file prefixlint checks (a .jinja, .j2 or .jinja2 template, a "
                    "tokenizer_config.json, a .gguf model or a .py file); rename it or check its folder"
                )
            seen.add(str(root))
            yield Source(str(root), kind)


@dataclass(frozen=True)
class NamedTemplate:
    name: str
    source: str
    line: int  # the line of tokenizer_config.json that holds it


class ConfigError(ValueError):
    """A tokenizer_config.json that holds no usable chat template; the message says why."""


def templates_in_tokenizer_config(text: str) -> list[NamedTemplate]:
    """The `chat_template` of a tokenizer_config.json: a string, or a list of {name, template}."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"not valid JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ConfigError("not a JSON object")
    value = data.get("chat_template")
    line = next((i for i, ln in enumerate(text.splitlines(), 1) if '"chat_template"' in ln), 1)
    if value is None:
        return []
    if isinstance(value, str):
        return [NamedTemplate("default", value, line)]
    if isinstance(value, list):
        out = []
        for i, item in enumerate(value):
            if not (isinstance(item, dict) and isinstance(item.get("template"), str)):
                raise ConfigError(f"chat_template[{i}] is not a {{name, template}} object")
            out.append(NamedTemplate(str(item.get("name", i)), item["template"], line))
        return out
    kinds = {bool: "a boolean", int: "a number", float: "a number", dict: "an object"}
    shown = f"{kinds.get(type(value), 'a value')} ({json.dumps(value)[:40]})"
    raise ConfigError(f"chat_template is {shown}, not a string or a list of templates")


@dataclass(frozen=True)
class TemplateLiteral:
    """Where a chat template's JSON string literal stands in a tokenizer_config.json's text."""

    name: str  # as NamedTemplate.name: "default" for a lone string
    start: int  # offset of the opening quote
    end: int  # offset after the closing quote


def template_literals(text: str) -> list[TemplateLiteral]:
    """The JSON string literals of the chat templates in a tokenizer_config.json's text, in the
    order of templates_in_tokenizer_config (json gives values, not places: a small scan of the
    top-level object finds them). ConfigError when the text is not such an object."""
    decoder = json.JSONDecoder()
    ws = re.compile(r"\s*")

    def skip(at: int) -> int:
        return ws.match(text, at).end()  # type: ignore[union-attr]

    def members(at: int) -> Iterator[tuple[str, int, int]]:
        """(key, value start, value end) of the object at `at`."""
        at = skip(at + 1)
        while at < len(text) and text[at] != "}":
            key, at = json.decoder.scanstring(text, at + 1)
            at = skip(skip(at) + 1)  # the colon
            _, end = decoder.raw_decode(text, at)
            yield key, at, end
            at = skip(end)
            at = skip(at + 1) if at < len(text) and text[at] == "," else at

    try:
        start = skip(0)
        for key, at, end in members(start):
            if key != "chat_template":
                continue
            if text[at] == '"':
                return [TemplateLiteral("default", at, end)]
            out = []
            item = skip(at + 1)
            for i in range(len(json.loads(text[at:end]))):
                fields = {k: (a, e) for k, a, e in members(item)}
                _, item_end = decoder.raw_decode(text, item)
                name = str(json.loads(text[slice(*fields["name"])])) if "name" in fields else str(i)
                out.append(TemplateLiteral(name, *fields["template"]))
                item = skip(item_end)
                item = skip(item + 1) if text[item] == "," else item
            return out
    except (ValueError, KeyError, IndexError, AttributeError) as exc:
        raise ConfigError(f"cannot locate the chat template in the JSON text ({exc})") from exc
    return []


def iter_sources(
    paths: list[str], options: Options | RunPlan, walked: list[str] | None = None
) -> Iterator[Source]:
    """The sources under `paths`, less the built-in, command-line and config excludes; the folders
    listed go to `walked`."""
    from prefixlint.core.pathmatch import PathMatcher

    matcher = PathMatcher(Path(options.root or "."), (options.exclude or ()) + options.extend_exclude)
    defaults = DEFAULT_EXCLUDES if options.exclude is None else ()
    return discover(
        paths,
        options.excludes,
        skip=matcher.matches,
        defaults=defaults,
        force_exclude=options.force_exclude,
        walked=walked,
        respect_gitignore=options.respect_gitignore,
    )


def list_sources(paths: list[str], options: Options | RunPlan) -> list[tuple[str, str, str]]:
    """(path, kind, why) of every source under `paths`, classified as `check` would, analysing
    nothing (`check --show-files`)."""
    out = []
    for source in iter_sources(paths, options):
        if source.kind == "gguf":  # binary: its chat templates are read from its metadata
            out.append((source.path, source.kind, "a GGUF model: each chat template in its metadata"))
            continue
        try:
            from prefixlint.core.files import read_text

            text = read_text(source.path, options.limits.file_bytes)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            out.append((source.path, source.kind, f"cannot read: {reason}"))
            continue
        found = classify_source(source, text, options.template_kinds, options.root or ".")
        out.append((source.path, found.kind, found.reason))
    return out
