"""How often a request-dependent value changes, and which values change at least as often as others.

The engine loses everything from the first token where two requests differ. A value later in a
request costs only over the requests that agree on everything before it: when an earlier value
changes at least as often, those requests already differ there and the later value adds nothing.
"At least as often" is the table below (provenance and timing, as the frontend records them).
"""

from __future__ import annotations

from enum import Enum

from prefixlint.python.segments import Hole, Provenance


class Frequency(Enum):
    """When a value changes, most often first."""

    CALL = "per call"  # a clock, an id, randomness, a per-request input
    CONVERSATION = "per conversation"  # the history spliced into a request
    OBJECT = "per object"  # computed in a constructor
    DAY = "per day"  # a clock read to the day
    PROCESS = (
        "per process"  # computed at import, a machine value, an unordered iteration, rows in storage order
    )
    DEPLOYMENT = "per deployment"  # a setting read from the environment or a deployment's config


# earlier value -> the later values it already parts the requests for. A day and a process are
# not ordered (a process may outlive a day or not), so neither covers the other; nor do a day and a
# deployment. Two deployments are two processes (and objects, and conversations): those cover it.
COVERS: dict[Frequency, frozenset[Frequency]] = {
    Frequency.CALL: frozenset(Frequency),
    Frequency.CONVERSATION: frozenset(
        {Frequency.CONVERSATION, Frequency.OBJECT, Frequency.DAY, Frequency.PROCESS, Frequency.DEPLOYMENT}
    ),
    Frequency.OBJECT: frozenset({Frequency.OBJECT, Frequency.PROCESS, Frequency.DEPLOYMENT}),
    Frequency.DAY: frozenset({Frequency.DAY}),
    Frequency.PROCESS: frozenset({Frequency.PROCESS, Frequency.DEPLOYMENT}),
    Frequency.DEPLOYMENT: frozenset({Frequency.DEPLOYMENT}),
}

# Values that differ between machines or processes, not between the calls of one process.
_PER_PROCESS = {Provenance.ENVIRONMENT, Provenance.UNORDERED}


def frequency(hole: Hole) -> Frequency | None:
    """How often the value of `hole` changes; None when it is not request-dependent (static, or
    unknown)."""
    if hole.history:
        return Frequency.CONVERSATION
    if not hole.provenance.volatile:
        return None
    if hole.deployment:
        return Frequency.DEPLOYMENT
    if hole.timing in ("import", "edit") or hole.provenance in _PER_PROCESS:
        return Frequency.PROCESS
    if hole.timing == "construction":
        return Frequency.OBJECT
    if hole.daily:
        return Frequency.DAY
    return Frequency.CALL


def varies_more_often(one: Hole, other: Hole) -> bool:
    """Whether `one` changes strictly more often than `other` (it parts requests `other` does not)."""
    return varies_at_least_as_often(one, other) and not varies_at_least_as_often(other, one)


def varies_at_least_as_often(earlier: Hole, later: Hole) -> bool:
    """Whether `earlier` changes at least as often as `later`: then `later` parts no requests that
    `earlier` has not parted already."""
    first, second = frequency(earlier), frequency(later)
    return first is not None and second is not None and second in COVERS[first]


def most_frequent(values: list[Hole]) -> Hole | None:
    """The first of `values` that no other of them varies more often than (None if none varies)."""
    varying = [v for v in values if frequency(v) is not None]
    return next((v for v in varying if not any(varies_more_often(o, v) for o in varying)), None)
