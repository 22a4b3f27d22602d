"""What a template variable's name says about where its value comes from.

A variable the caller may pass per request (`date_string`, `user_name`, `request_id`) is not the
template reading the clock: it is request input (PFX105), an id (PFX102) or the machine (PFX104).
"""

from __future__ import annotations

import re

_ID = re.compile(r"(^|_)(id|ids|uuid|guid|nonce)(_|$)", re.I)
# A scope word alone names an id (`session`, `request`); with other words it names something the
# scope holds (`conversation_instructions`, `thread_summary`), which says nothing about requests.
_SCOPE = re.compile(r"^(request|session|trace|span)$", re.I)
# The conversation itself (`{% for message in conversation %}`, `chat_history`): the turns so far,
# different for every conversation and growing with each turn, not an id of it.
_TURNS = re.compile(r"(^|_)(conversation|thread|history|transcript|dialog|dialogue)$", re.I)
_ENV = re.compile(
    r"(^|_)(host|hostname|cwd|pid|platform|machine|os|env|environment|workdir|username)(_|$)", re.I
)
_REQUEST = re.compile(
    r"(^|_)(date|time|now|today|timestamp|datetime|user|name|query|question|location|city|country|"
    r"language|locale|timezone|tz|documents?|context|memory|profile)(_|$)",
    re.I,
)


def provenance_code(name: str) -> str | None:
    """The rule a per-request value of this variable would break, or None for app configuration
    (switches like `enable_thinking`, tool lists) that stays fixed for an app."""
    if _ID.search(name) or _SCOPE.match(name):
        return "PFX102"
    if _ENV.search(name):
        return "PFX104"
    if _REQUEST.search(name) or _TURNS.search(name):
        return "PFX105"
    return None


# Words of a name that reads "the current date/time" (`current_date`, `today_str`, `NOW`); any other
# word makes it something else (`birth_date` is user data, `due_time` a request field).
_CLOCK_WORDS = frozenset({"date", "time", "now", "today", "datetime", "timestamp"})
_CLOCK_QUALIFIERS = frozenset(
    {"current", "curr", "cur", "todays", "string", "str", "formatted", "fmt", "utc", "local", "iso", "text"}
)


def clock_named(name: str) -> bool:
    """Whether a variable is named like the current date or time (`current_date`, `now`, `today`)."""
    words = [w for w in re.split(r"_+|(?<=[a-z])(?=[A-Z])", name.strip("_")) if w]
    lowered = [w.lower() for w in words]
    return any(w in _CLOCK_WORDS for w in lowered) and all(
        w in _CLOCK_WORDS or w in _CLOCK_QUALIFIERS for w in lowered
    )


def sample_values(name: str) -> tuple[str, str]:
    """Two different, plausible values for a request-scoped variable."""
    code = provenance_code(name)
    if code == "PFX102":
        return "req-7f3a9c21", "req-1b2e4d08"
    if code == "PFX104":
        return "worker-a.internal", "worker-b.internal"
    if re.search(r"date|time|now|today|timestamp", name, re.I):
        return "04 Mar 2025", "05 Mar 2025"
    return "Alice Martin", "Bo Chen"
