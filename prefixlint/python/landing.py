"""Where a template lands: a template's placeholder judged at the place its filled text takes in the
final request, not by what follows it inside its own string.

A template (`RERANK = PromptTemplate("Search query: {query}. Rank the passages above ...")`) is a
piece of a request: what its placeholder costs depends on what comes before the text it becomes.
Where the project shows the request it ends up in (a call here or in a module that imports it,
whose request holds the template's text after the filled value) and, there, something earlier
already parts the requests at least as often (the same value written before, a per-request input,
a value that changes as often: `findings.parted_before`), the static text after the placeholder is
lost anyway: the placeholder gets no finding of its own. Where the template lands with nothing
varying before it, or where no request holding it is seen, it keeps the judgement of its own text.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

from prefixlint.python.evaluate import Evaluator
from prefixlint.python.findings import parted_before
from prefixlint.python.project import Project, importers, read_text
from prefixlint.python.prompt import Prompt
from prefixlint.python.segments import Hole, Provenance, Segment, Text, Value, expand, map_holes

MAX_LANDINGS = 5  # modules whose requests are looked at, per template
_MIN_NEEDLE = 8  # characters of the template's text after a placeholder that identify it


def _needle(form: Value, i: int) -> str | None:
    """The template's own text right after the placeholder at `i`: what marks where it landed."""
    after = form[i + 1] if i + 1 < len(form) else None
    if not isinstance(after, Text):
        return None
    needle = after.text[:60]
    return needle if len(needle.strip()) >= _MIN_NEEDLE and re.search(r"\w", needle) else None


def _placeholders(prompt: Prompt) -> dict[Hole, set[str]]:
    """The placeholders of a template piece (holes named after a `{placeholder}`, filled later)
    with the text that follows each."""
    out: dict[Hole, set[str]] = {}
    for form in expand(prompt.value):
        for i, seg in enumerate(form):
            if (
                isinstance(seg, Hole)
                and seg.by_name
                and seg.label.startswith("{")
                and seg.provenance.volatile
            ):
                needle = _needle(form, i)
                if needle is not None:
                    out.setdefault(seg, set()).add(needle)
    return out


def _parted_where_landed(requests: list[Prompt], needles: set[str], hole: Hole) -> bool | None:
    """Whether, in every request seen to hold the template's text, something before its filled value
    already parts the requests; None when no request is seen to hold it."""
    landed = False
    for request in requests:
        for form in expand(request.value):
            for k, seg in enumerate(form[1:], start=1):
                filled = form[k - 1]  # the value the placeholder took, right before the template's text
                if not (
                    isinstance(seg, Text) and isinstance(filled, Hole) and seg.text.startswith(tuple(needles))
                ):
                    continue
                landed = True
                if not _already_before(form[: k - 1], filled, hole):
                    return False
    return True if landed else None


def _already_before(before: tuple[Segment, ...], filled: Segment | None, hole: Hole) -> bool:
    """Whether the requests already differ before the filled value: the same value written earlier,
    or an earlier value that parts them at least as often as the placeholder's would."""
    if isinstance(filled, Hole) and any(isinstance(s, Hole) and s.site == filled.site for s in before):
        return True  # `query` written into the first message, then into the template at the end
    parted, _ = parted_before(before, hole)
    return parted


def _bound_name(prompt: Prompt, path: str) -> str | None:
    """The module-level name the template is assigned to (`RERANK = PromptTemplate(`), from the
    line it is built on; None inside a function (no other module can use it)."""
    lines = (read_text(path) or "").splitlines()
    line = lines[prompt.line - 1] if 0 < prompt.line <= len(lines) else ""
    m = re.match(r"([A-Za-z_]\w*)\s*(?::[^=]+)?=[^=]", line)
    return m.group(1) if m else None


def _requests_using(project: Project, path: str, name: str, here: list[Prompt]) -> list[Prompt]:
    """The whole requests of this module and of the modules that import `name` from it."""
    from prefixlint.python.sinks import find_sinks

    out = list(here)
    uses = re.compile(rf"\b{re.escape(name)}\b")
    seen = 0
    for other in importers(project, path):  # the run's import index, as fills.used_elsewhere reads it
        if seen >= MAX_LANDINGS:
            break
        text = read_text(other)
        if not text or name not in text or not uses.search(text):
            continue
        ev = Evaluator.of(project, other)
        if ev is None:
            continue
        seen += 1
        project.read.append(other)
        out += [p for p in find_sinks(ev.index, ev) if not p.open_tail]
    return out


def judged_where_landed(
    prompts: list[Prompt], project: Project, path: str, flagged: set[tuple[int, int]]
) -> list[Prompt]:
    """The prompts with each template placeholder (among `flagged`, the (line, column) of a finding)
    that lands after what already parts the requests made unknown: the request it lands in judges it."""
    path = os.path.abspath(path)
    dropped: set[tuple[int, int, str]] = set()
    for prompt in prompts:
        if not prompt.open_tail:
            continue
        places = {h: v for h, v in _placeholders(prompt).items() if (h.line, h.column) in flagged}
        if not places:
            continue
        name = _bound_name(prompt, path)
        here = [p for p in prompts if p.reached and not p.open_tail]
        # each flagged template gets the imported-source budget a check of its users would have
        spent, project.imported_bytes = project.imported_bytes, 0
        try:
            requests = _requests_using(project, path, name, here) if name else here
        finally:
            project.imported_bytes = max(spent, project.imported_bytes)
        for hole, needles in places.items():
            if _parted_where_landed(requests, needles, hole):
                dropped.add((hole.line, hole.column, hole.label))
    if not dropped:
        return prompts
    return [
        replace(
            p,
            value=map_holes(
                p.value,
                lambda h: (
                    replace(h, provenance=Provenance.UNKNOWN) if (h.line, h.column, h.label) in dropped else h
                ),
            ),
        )
        for p in prompts
    ]
