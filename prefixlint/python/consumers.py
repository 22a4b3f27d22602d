"""Where a module's prompt text is sent from: the project modules that import it and call a sink.

A prompt module (`prompts.py` holding `SYSTEM_PROMPT = f"Today is {date.today()} ..."`) sends
nothing itself; checked alone, as pre-commit checks it, its text is only a candidate. The modules
that import it and send requests say what really follows its values: their requests are analysed
(the module's own values put back where they are written, everything else of theirs left to their
own check) and reported here, in the module where the value is.
"""

from __future__ import annotations

import os
from dataclasses import replace

from prefixlint.python.evaluate import Evaluator
from prefixlint.python.project import Project, importers
from prefixlint.python.prompt import Prompt
from prefixlint.python.segments import Hole, Provenance, Segment, Value, map_holes

MAX_CONSUMERS = 5


def consumer_requests(project: Project, path: str) -> list[Prompt]:
    """The requests that modules importing `path` send, as seen from `path`: its values where they
    are written in it, the others' values unknown (but per-request inputs still cut the loss)."""
    path = os.path.abspath(path)
    out: list[Prompt] = []
    for consumer in importers(project, path)[:MAX_CONSUMERS]:
        ev = Evaluator.of(project, consumer)
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
