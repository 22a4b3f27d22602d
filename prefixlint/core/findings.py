"""The value types every part of prefixlint shares: spans, evidence, diagnostics, source results.

`Severity` is the rule catalog's (prefixlint/core/rules.py), importable from here with the rest."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from prefixlint.core.rules import RULES, Severity


@dataclass(frozen=True)
class Span:
    """A place in a source file; lines and columns are 1-based."""

    path: str
    line: int = 1
    column: int = 1


@dataclass(frozen=True)
class Evidence:
    """What a rendering-based finding rests on (JSON contract: these field names)."""

    token_index: int
    char_offset: int
    cacheable_tokens: int
    context_a: str
    context_b: str
    static_tokens_lost: int = 0  # prompt tokens recomputed per request (per turn for PFX4xx)
    engines: dict[str, int] = field(default_factory=dict)
    inputs: str = ""
    reply_tokens_lost: int = 0  # generated tokens whose cache the next turn does not reuse
    # What each engine really loses of those tokens (its blocks, minimums and steps), per engine.
    engines_lost: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Edit:
    """Replace the text from (start_line, start_column) up to, not including, (end_line,
    end_column) of `path` with `replacement`; lines and columns 1-based, columns in characters.
    An insertion has start == end."""

    path: str
    start_line: int
    start_column: int
    end_line: int
    end_column: int
    replacement: str


@dataclass(frozen=True)
class Fix:
    """A change that makes a finding go away (JSON contract: these field names). `applicability`:
    "safe" (meaning kept: `sorted()` around a set) or "unsafe" (the prompt changes: a value moved
    later). `verified`: the fixed text was analysed again, the way `check --fix` leaves it, and the
    finding was gone with nothing new at warning or above; only verified fixes are attached."""

    applicability: str
    message: str
    edits: tuple[Edit, ...]
    verified: bool = True

    def to_json(self) -> dict[str, Any]:
        return {
            "applicability": self.applicability,
            "verified": self.verified,
            "message": self.message,
            "edits": [asdict(e) for e in self.edits],
        }


@dataclass(frozen=True)
class Diagnostic:
    code: str
    span: Span
    message: str
    severity: Severity
    hint: str = ""
    evidence: Evidence | None = None
    fix: Fix | None = None
    # Where a chat template prints the divergent text, in the template's own lines (also for a
    # template inside a tokenizer_config.json, whose `span` is the JSON line; a named one of a list
    # has `path[name]`): what a relocation fix moves. Not part of the JSON output.
    origin: Span | None = None
    # The static tokens after the value that its requests would otherwise share (Python findings;
    # None elsewhere): the fix verifier's measure of what a move recovers. Not part of the JSON output.
    static_tokens: int | None = None
    # What the chosen engine loses of those static tokens, in tokens of its aligned units (whole
    # blocks, its minimum and steps), at least (text built by code we cannot read, the history may
    # add more); None when no text is counted (Python findings; None elsewhere): the verifier's loss
    # measure of a finding a fix would create. Not part of the JSON output.
    cache_lost: int | None = None
    # The later values of its group (Python): less than a cache block apart, they part the requests
    # as one, so a fix must move every one of them; (label, line, column) each. Not part of the
    # JSON output.
    group: tuple[tuple[str, int, int], ...] = ()

    @property
    def name(self) -> str:
        return RULES[self.code].name

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.span.path, self.span.line, self.span.column, self.code)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.span.path,
            "line": self.span.line,
            "column": self.span.column,
            "code": self.code,
            "name": self.name,
            "severity": self.severity.label,
            "message": self.message,
        }
        if self.hint:
            out["hint"] = self.hint
        if self.evidence is not None:
            out["evidence"] = asdict(self.evidence)
        if self.fix is not None:
            out["fix"] = self.fix.to_json()
        return out


@dataclass
class SourceResult:
    """One analysed source (a template file, one named template of a tokenizer_config, a .py file)."""

    path: str
    kind: str  # "jinja", "tokenizer_config", "python"
    name: str = ""  # the template's name inside a tokenizer_config.json list
    diagnostics: list[Diagnostic] = field(default_factory=list)
    cacheable_prefix_tokens: int | None = None
    total_tokens: int | None = None
    multiturn_reuse: float | None = None
    tokenizer: str = ""
    notes: list[str] = field(default_factory=list)  # what the run had to work around (stderr, JSON)
    # Other files the analysis read (imported modules, prompt files), each as runmemo.stamp gives
    # it when read: a cached result is stale once one of them changes.
    dependencies: list[list[Any]] = field(default_factory=list)
    # The variables a template reads from its caller (None: not a template, or it does not
    # compile): a `--var` no template reads is a warning.
    variables: list[str] | None = None
    # Findings left out of the report because an earlier value of the same request already parts
    # every request they part (Python): a fix that moves the earlier value uncovers them, so the
    # fix verifier does not count them as findings the fix adds. Not part of the JSON output.
    covered: list[Diagnostic] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "kind": self.kind,
            "cacheable_prefix_tokens": self.cacheable_prefix_tokens,
            "total_tokens": self.total_tokens,
        }
        if self.name:
            out["name"] = self.name
        if self.tokenizer:
            out["tokenizer"] = self.tokenizer
        if self.notes:
            out["notes"] = list(self.notes)
        if self.kind != "python":
            out["multiturn_reuse"] = self.multiturn_reuse
        return out
