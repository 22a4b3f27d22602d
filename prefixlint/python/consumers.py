"""Where a module's prompt text is sent from: the project modules that import it and call a sink.

A prompt module (`prompts.py` holding `SYSTEM_PROMPT = f"Today is {date.today()} ..."`) sends
nothing itself; checked alone, as pre-commit checks it, its text is only a candidate. The modules
that import it and send requests say what really follows its values: their requests are analysed
(the module's own values put back where they are written, everything else of theirs left to their
own check) and reported here, in the module where the value is. A value an importer's class keeps
on its objects (a constructor parameter's default, a field's value, `self.x = VALUE`) is sent by the
modules that read that attribute (`interpreter.system_message` in a function given the object):
they are consumers too, whether or not they import it.
"""

from __future__ import annotations

import os
import re
from dataclasses import replace

import libcst as cst

from prefixlint.python.evaluate import Evaluator, _default_of
from prefixlint.python.evaluate.callsites import texts_matching
from prefixlint.python.project import Project, importers
from prefixlint.python.prompt import Prompt
from prefixlint.python.segments import Hole, Provenance, Segment, Value, map_holes

MAX_CONSUMERS = 5


def consumer_requests(project: Project, path: str) -> list[Prompt]:
    """The requests that modules importing `path` send, as seen from `path`: its values where they
    are written in it, the others' values unknown (but per-request inputs still cut the loss)."""
    path = os.path.abspath(path)
    out: list[Prompt] = []
    for consumer in [*importers(project, path)[:MAX_CONSUMERS], *_attribute_readers(project, path)]:
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


def _attribute_readers(project: Project, path: str) -> list[str]:
    """The modules that read an attribute in which a class of a module importing `path` keeps one
    of its values (at most MAX_CONSUMERS, found by a text search of the attribute's name)."""
    attrs: set[str] = set()
    for other in importers(project, path, api=False)[:MAX_CONSUMERS]:
        ev = Evaluator.of(project, other)
        if ev is None:
            continue
        for (_, attr), bindings in ev.index.instance_attrs.items():
            if any(_kept_from(ev, b.expr, path) for b in bindings if b.expr is not None):
                attrs.add(attr)
        for cls in ev.index.classes.values():
            for attr, bindings in ev.index.scopes[cls].bindings.items():
                if bindings and _kept_from(ev, bindings[-1].expr, path):
                    attrs.add(attr)  # a field's value (`system: str = SYSTEM`)
    readers: list[str] = []
    for attr in sorted(attrs):
        for reader in texts_matching(project, attr, rf"\.{re.escape(attr)}\b"):
            if reader != path and reader not in readers:
                readers.append(reader)
    return readers[:MAX_CONSUMERS]


def _kept_from(ev: Evaluator, expr: cst.BaseExpression | None, path: str) -> bool:
    """Whether `expr` (or, for a constructor's parameter, its default) names a value of `path`."""
    if isinstance(expr, cst.Name):
        fn = ev.index.scope_for(expr).node
        if isinstance(fn, cst.FunctionDef) and fn.name.value == "__init__":
            expr = _default_of(fn, expr.value) or expr
    if not isinstance(expr, (cst.Name, cst.Attribute)):
        return False
    for name in sorted(ev.index.qualified_names(expr, ev.index.module_scope)):
        found = ev.resolve(name)
        if found is not None and os.path.abspath(found[0].path) == path:
            return True
    return False


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
