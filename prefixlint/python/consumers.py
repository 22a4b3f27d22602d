"""Where a module's prompt text is sent from: the project modules that import it and call a sink.

A prompt module (`prompts.py` holding `SYSTEM_PROMPT = f"Today is {date.today()} ..."`) sends
nothing itself; checked alone, as pre-commit checks it, its text is only a candidate. The modules
that import it and send requests say what really follows its values: their requests are analysed
(the module's own values put back where they are written, everything else of theirs left to their
own check) and reported here, in the module where the value is.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from prefixlint.python.project import Project, python_sources, read_text
from prefixlint.python.prompt import Prompt
from prefixlint.python.segments import Hole, Provenance, Segment, Value, map_holes

MAX_CONSUMERS = 5


def consumer_requests(project: Project, path: str) -> list[Prompt]:
    """The requests that modules importing `path` send, as seen from `path`: its values where they
    are written in it, the others' values unknown (but per-request inputs still cut the loss)."""
    path = os.path.abspath(path)
    out: list[Prompt] = []
    for consumer in importers(project, path)[:MAX_CONSUMERS]:
        ev = project.evaluator(consumer)
        if ev is None:
            continue
        from prefixlint.python.sinks import find_sinks

        where = os.path.relpath(consumer, project.root)
        for prompt in find_sinks(ev.index, ev):
            value = map_holes(prompt.value, lambda h: _as_seen_from(h, path))
            if any(isinstance(h, Hole) and h.path == path and h.provenance.volatile for h in _holes(value)):
                out.append(replace(prompt, value=value, what=f"{prompt.what} in {where}"))
    return out


def _as_seen_from(hole: Hole, path: str) -> Segment:
    if hole.origin is not None and hole.origin[0] == path:
        origin_path, line, column, label, via = hole.origin
        return replace(hole, path=origin_path, line=line, column=column, label=label, via=via, origin=None)
    if hole.provenance is Provenance.REQUEST and not hole.by_name:
        return hole  # a request input of the consumer still ends what the value costs
    return replace(hole, provenance=Provenance.UNKNOWN)


def _holes(value: Value) -> list[Hole]:
    from prefixlint.python.segments import holes

    return holes(value)


def importers(project: Project, path: str) -> list[str]:
    """Project modules whose text imports the module at `path` and names a modelled API."""
    name = os.path.splitext(os.path.basename(path))[0]
    if name == "__init__":
        name = os.path.basename(os.path.dirname(path))
    imports = re.compile(
        rf"^\s*(?:from\s+[\w.]*\b{re.escape(name)}\b|import\s+[\w.]*\b{re.escape(name)}\b|from\s+[\w.]+\s+import\s+.*\b{re.escape(name)}\b)",
        re.MULTILINE,
    )
    needles = project.frameworks.needles
    found = []
    for other in _import_words(project).get(name, ()):
        if other == path:
            continue
        text = read_text(other)
        if text and imports.search(text) and needles.search(text):
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
