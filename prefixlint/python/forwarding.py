"""A provider adapter forwarding what it is given: the whole message list, tools list or system text
of a request passed on from one parameter (through a conversion helper or comprehension) is the
caller's value, not a per-request input of the adapter's own.

`def _base_params(self, prompt_stack)` that sends `messages=self._to_messages(prompt_stack.messages)`
only reshapes the conversation: the static text around it is the request's own keys and roles, which
no two requests would otherwise share. Its holes keep their parameter, so a caller that builds the
list puts its own value in their place (prefixlint/python/summaries.py) and is judged there.
"""

from __future__ import annotations

import re
from dataclasses import replace

from prefixlint.python.evaluate.env import PARAMETER_OF
from prefixlint.python.segments import Hole, Provenance, Text, Value, expand, holes, map_holes

# Parts a request takes as one whole list or text that an adapter passes on.
_WHOLE_PARTS = frozenset({"messages", "tools", "system"})
# Three words in a row: prose a prompt would hold, not a key, a role or an identifier.
_PROSE = re.compile(r"[A-Za-z]{2,}[ \t,.;]+[A-Za-z]{2,}[ \t,.;]+[A-Za-z]{2,}")


def forwarded_whole(part: str, value: Value) -> Value:
    """`value` (what a request takes as `part`) with the holes of a forwarded parameter made the
    caller's (no finding of their own here); unchanged when it holds static prose of its own or
    values of more than one function's parameters."""
    if part not in _WHOLE_PARTS:
        return value
    # (what is not volatile, the history it replays or an opaque result, has no finding anyway)
    found = [h for h in holes(value) if h.provenance.volatile]
    if not found or not all(_weak_parameter(h) for h in found) or len({h.via for h in found}) != 1:
        return value
    if any(isinstance(s, Text) and _PROSE.search(s.text) for form in expand(value) for s in form):
        return value  # static instructions written around it: the request's own prefix
    # only the parameter's own holes: the history it replays stays history for the callers
    return map_holes(
        value,
        lambda h: (
            replace(h, provenance=Provenance.UNKNOWN, named_in_callee=True) if h.provenance.volatile else h
        ),
    )


def _weak_parameter(hole: Hole) -> bool:
    """A parameter whose name says nothing (per request only if its callers pass one)."""
    return (
        hole.provenance is Provenance.REQUEST
        and hole.weak
        and not hole.history
        and hole.via.startswith(PARAMETER_OF)
    )
