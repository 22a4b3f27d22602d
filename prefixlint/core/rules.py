"""The rule catalog (contract: codes and names never change, only new ones are added): the
severities a finding can have, and each rule's code, name, summary and default severity. Nothing
here imports the rest of prefixlint: every part can name a rule.

Each rule's page lives in `rules/<CODE>.md` (shipped as `prefixlint.rule_pages`): what it finds,
why it busts the cache, and a bad and a good example that the tests run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from importlib import resources


class Severity(IntEnum):
    """Ordered so that `severity >= fail_on` decides the exit code."""

    INFO = 1
    WARNING = 2
    ERROR = 3

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.strip().upper()]


@dataclass(frozen=True)
class Rule:
    code: str
    name: str
    summary: str
    default_severity: Severity

    @property
    def severities(self) -> tuple[Severity, ...]:
        """Every severity a finding of this rule can have: a cache-busting rule's is lowered to
        info when it loses less than one cache block (loss_severity); PFX002 is an error when
        no input renders, a warning for an accidental raise and info for a deliberate one."""
        if self.code == "PFX002":
            return (Severity.INFO, Severity.WARNING, Severity.ERROR)
        if self.code[3] in "12345" and self.default_severity > Severity.INFO:
            return tuple(s for s in Severity if s <= self.default_severity)
        return (self.default_severity,)

    def page(self) -> str:
        """The rule's Markdown page, as the tests read it (each example's fence carries what it
        must find: ```jinja {"expect": "PFX101", "line": 1})."""
        return resources.files("prefixlint.rule_pages").joinpath(f"{self.code}.md").read_text("utf-8")

    def page_for_reading(self) -> str:
        """The page as `prefixlint rule` prints it: the examples' test metadata left out."""
        return _TEST_METADATA.sub(r"\1", self.page())


# The JSON after a fence's language: what the tests expect of the example, not for the reader.
_TEST_METADATA = re.compile(r"^(```\w+) \{.*\}$", re.MULTILINE)


def find_rule(key: str) -> Rule | None:
    """A rule by its code (`PFX101`, any case) or its name (`clock-in-prefix`, `clock_in_prefix`)."""
    found = RULES.get(key.upper())
    if found is not None:
        return found
    name = key.lower().replace("_", "-")
    return next((r for r in RULES.values() if r.name == name), None)


_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

RULES: dict[str, Rule] = {
    r.code: r
    for r in [
        Rule("PFX001", "template-syntax-error", "the template does not parse", _E),
        Rule("PFX002", "template-render-error", "the template raises for the inputs tried", _W),
        Rule("PFX003", "python-syntax-error", "a Python source does not parse", _E),
        Rule("PFX004", "unused-suppression", "a suppression comment that suppresses nothing", _W),
        Rule("PFX101", "clock-in-prefix", "the current date or time ahead of static content", _E),
        Rule("PFX102", "id-in-prefix", "request, session, trace or user ids ahead of static content", _E),
        Rule("PFX103", "random-in-prefix", "randomness ahead of static content", _E),
        Rule(
            "PFX104", "environment-in-prefix", "per-machine or per-process values ahead of static content", _E
        ),
        Rule("PFX105", "request-input-in-prefix", "per-request user data ahead of static content", _W),
        Rule("PFX201", "unordered-serialization", "unordered iteration or JSON ahead of static content", _W),
        Rule(
            "PFX301",
            "unstable-whitespace",
            "whitespace that changes with the inputs ahead of static content",
            _W,
        ),
        Rule("PFX302", "token-boundary-merge", "the static prefix's last tokens merge with what follows", _I),
        Rule("PFX401", "history-rewrite", "turn N+1's prompt is not a token extension of turn N's", _E),
        Rule("PFX402", "system-relocated", "the system prompt or tools move with the conversation", _E),
        Rule(
            "PFX403", "generation-prompt-mismatch", "the generation prompt renders differently as history", _W
        ),
        Rule("PFX501", "prefix-diverges-early", "rendered variants diverge before static content ends", _E),
        Rule(
            "PFX502", "prefix-below-engine-minimum", "the cacheable prefix is below the engine's minimum", _I
        ),
        Rule(
            "PFX503",
            "unread-cache-breakpoint",
            "a cache_control breakpoint (in a request log or written in code) that can never be read",
            _W,
        ),
    ]
}


def resolve_selector(selector: str) -> list[str]:
    """Codes matched by a ruff-style prefix selector (`PFX1`, `PFX101`, `ALL`); empty if none."""
    selector = selector.strip().upper()
    if selector == "ALL":
        return sorted(RULES)
    return sorted(code for code in RULES if code.startswith(selector))
