"""Verified fixes: a candidate is attached to its finding only once the fixed text, analysed again,
holds.

A generator yields unverified candidates for one finding, best first (`CandidateGenerator`; the
Jinja one is `prefixlint.jinja.fixes`, the Python one `prefixlint.python.fixes`). The first that
verifies is the finding's fix: the fixed text, analysed again with the run's plan (the same
tokenizer, engine, variables and analyses: the caller passes that analysis in), no longer has the finding
(its code at its place, or at the moved text), has no finding of any rule at warning or above that
the original did not have (or did not leave out because an earlier value parts the same requests: a
move uncovers that one), creates no finding (neither reported nor left out before) of the fixed
finding's severity or higher, nor one that loses a cache block or more by the loss measure
(`Diagnostic.cache_lost`, whatever its severity: a name guess is info, its lost blocks are real),
leaves no other value that varies ahead of all but less than a cache block
of the static tokens the finding counted (every value of the request is taken as varying; a value of
the finding's group, less than a block from it, whatever its own finding's severity now is), and keeps
what the kind says a fix must keep (`Preserves`: a template still renders the moved value, byte-
identical apart from it; Python code still holds it). Fixes are made with the raw results, before
the cache stores them, so each content is verified once.

What verifying costs is bounded by counts, never by a clock (`Verifier`): at most MAX_CANDIDATES
candidates a finding and MAX_REANALYSES analyses of fixed text a source, one analysis for every
candidate that writes the same fixed text, and the findings' first candidates tried before any
finding's second, so a finding whose candidates all fail cannot spend the budget of the next.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import replace
from itertools import islice
from typing import TYPE_CHECKING

from prefixlint.core.edits import EditError, apply_edits, line_mapping, offset_of
from prefixlint.core.findings import Diagnostic, Fix, Severity, SourceResult
from prefixlint.core.words import counted
from prefixlint.fixes.kinds import KindFixes, fixes_for

if TYPE_CHECKING:
    from prefixlint.plan import FixPart
    from prefixlint.run.sources import Source

# The analysis of a source's fixed text (the run's own analysis, with the run's plan).
Analyse = Callable[[str], list[SourceResult]]

# The codes a fix is looked for: what busts the cache (PFX1xx-5xx), not broken input (PFX0xx).
FIXABLE_FAMILIES = "12345"
# Candidates tried per finding: each costs one analysis of the fixed text.
MAX_CANDIDATES = 4
# Analyses of fixed text per source, all its findings together: checking with fixes costs at most
# this many analyses more than checking without (a candidate past it is not tried).
MAX_REANALYSES = 8
SPENT = "not tried: the source's analyses of fixed text (MAX_REANALYSES) were spent"
NO_FIX = "no automatic fix was found"
# Why a kind has no candidates at all.
NOT_EDITED = {"gguf": "a GGUF model is never written"}


# -- verification ----------------------------------------------------------------------------------


def _place(d: Diagnostic) -> str:
    return f"{d.code} ({d.severity.label}) at line {d.span.line}"


def verify(
    kinds: KindFixes,
    candidate: Fix,
    source: Source,
    text: str,
    before: list[SourceResult],
    finding: Diagnostic,
    part: FixPart,
    analysed: Callable[[str], list[SourceResult] | None],
) -> str | None:
    """None when `candidate` holds for `finding` (see the module's docstring), else why it does not.
    `analysed`: the analysis of a fixed text (None once the budget is spent: `Verifier.analysed`)."""
    if any(e.path != source.path for e in candidate.edits):
        return "it edits another file"
    try:
        fixed = apply_edits(text, candidate.edits)
        new_line, written = line_mapping(text, candidate.edits)
    except EditError as exc:
        return str(exc)
    if fixed == text:
        return "it changes nothing"
    # What the fixed text must keep first: a few renders, cheaper than the analysis below.
    kept = (kinds.preserves or _keeps_value)(candidate, source, text, fixed, finding, part)
    if kept is not None:
        return kept
    after = analysed(fixed)
    if after is None:
        return SPENT
    name = next((r.name for r in before if finding in r.diagnostics), "")
    worst: dict[tuple[str, str, int | None], Severity] = {}
    reported: set[tuple[str, str, int | None]] = set()
    for r in before:
        for d in r.diagnostics + r.covered:  # a value the finding's value hid is uncovered, not added
            key = (r.name, d.code, new_line(d.span.line))
            worst[key] = max(worst.get(key, d.severity), d.severity)
            if d in r.diagnostics:
                reported.add(key)
    # The other values of the finding's group, where they now are: one that still stands ahead of
    # the group's loss keeps it, whatever the severity its own finding now has (a parameter's info).
    members = {new_line(line): label for label, line, _ in finding.group}
    for result in after:
        for d in result.diagnostics:
            if (
                result.name == name
                and d.code == finding.code
                and _at(d, new_line(finding.span.line), written)
            ):
                return f"{_place(d)} is still there"
            if result.name == name and d.span.line in members and not _recovers(finding, d, part.block):
                return (
                    f"`{members[d.span.line]}`, which parts the requests with it, still stands ahead of "
                    f"{d.static_tokens} of the {finding.static_tokens} static tokens (now {_place(d)}): "
                    "every value of the group must move"
                )
            was = worst.get((result.name, d.code, d.span.line))
            if d.severity >= Severity.WARNING and (was is None or d.severity > was):
                return f"it adds {_place(d)}"
            if was is None and (d.severity >= finding.severity or (d.cache_lost or 0) > 0):
                # made by the fix (neither reported nor hidden before): a finding as bad as the one
                # fixed, or one that loses a cache block whatever its severity (a name guess is
                # info), is a new cost, not a fix; the next candidate may put the text elsewhere
                lost = f", which loses {counted(d.cache_lost, 'cached token')}" if d.cache_lost else ""
                return f"it adds {_place(d)}{lost}"
            if (result.name, d.code, d.span.line) not in reported and not _recovers(finding, d, part.block):
                named = _NAMED.search(d.message)
                return (
                    f"{'`' + named.group(1) + '`' if named else 'another value'}, which varies too "
                    f"(now {_place(d)}), stands ahead of {d.static_tokens} of the "
                    f"{finding.static_tokens} static tokens: it recovers less than one cache block"
                )
    return None


_NAMED = re.compile(r"`([^`]+)`")  # the value a finding's message names first


def _recovers(finding: Diagnostic, new: Diagnostic, block: int) -> bool:
    """Whether a fix of `finding` after which the value of `new` (which varies too, and was no finding
    before, or one the finding's value hid) stands ahead of `new.static_tokens` still recovers at
    least one cache block of the static tokens the finding counted: a move past a neighbour that
    varies only puts it in front."""
    if finding.static_tokens is None or new.static_tokens is None:
        return True
    return finding.static_tokens - new.static_tokens >= block


def _at(d: Diagnostic, line: int | None, written: set[int]) -> bool:
    """Whether `d` is at `line`, or at text the edits wrote (where it prints, for a template)."""
    printed = d.origin.line if d.origin is not None and d.origin.path == d.span.path else None
    return d.span.line == line or d.span.line in written or printed in written


_VALUE = re.compile(r"[A-Za-z_][\w.]*")


def _keeps_value(
    candidate: Fix, source: Source, text: str, fixed: str, finding: Diagnostic, part: FixPart
) -> str | None:
    """A fix to code moves the volatile value, never drops it: the name at the finding's place
    (`datetime.now`, `platform.system`, `ticket_id`) is in the fixed text as often as before."""
    try:
        at = offset_of(text, finding.span.line, finding.span.column)
    except EditError:
        return None
    found = _VALUE.match(text, at) or _VALUE.search(text, at, at + 3)  # `{current_date}`, `${x}`
    if found is None:
        return None
    value = found.group(0)
    if fixed.count(value) < text.count(value):
        return f"`{value}` is no longer in the code"
    return None


# -- attaching -------------------------------------------------------------------------------------


class Verifier:
    """The analyses of one source's fixed texts: each text analysed once, at most `budget` of them."""

    def __init__(self, source: Source, analyse: Analyse, budget: int | None = None) -> None:
        self.source, self.analyse = source, analyse
        self.left = MAX_REANALYSES if budget is None else budget
        self._done: dict[str, list[SourceResult]] = {}

    def analysed(self, fixed: str) -> list[SourceResult] | None:
        """The analysis of `fixed` (the source's text with a candidate's edits), None past the budget."""
        if fixed not in self._done:
            if self.left <= 0:
                return None
            self.left -= 1
            self._done[fixed] = self.analyse(fixed)
        return self._done[fixed]


def _tried(candidate: Fix, reason: str) -> str:
    said = f"{candidate.message[:1].lower()}{candidate.message[1:]}"
    return f"{said} was {reason}" if reason == SPENT else f"{said} did not hold: {reason}"


def first_verified(
    kind: str,
    source: Source,
    text: str,
    before: list[SourceResult],
    finding: Diagnostic,
    part: FixPart,
    verifier: Verifier,
) -> tuple[Fix | None, list[str]]:
    """The first candidate of the finding (of a result of `kind`: a chat template, an app prompt
    template, …) that verifies, as a plain verified Fix, and why the ones tried before it did not.
    `verifier`: the source's analyses so far (its budget shared with its other findings)."""
    found = _first_verified([(kind, finding)], source, text, before, part, verifier)
    return found[0]


def _first_verified(
    findings: list[tuple[str, Diagnostic]],
    source: Source,
    text: str,
    before: list[SourceResult],
    part: FixPart,
    verifier: Verifier,
) -> list[tuple[Fix | None, list[str]]]:
    """`first_verified` of each (kind, finding), in rounds: every finding's next candidate is tried
    before any finding's one after it, all of them on one budget of analyses."""
    out: list[tuple[Fix | None, list[str]]] = [(None, []) for _ in findings]
    pending = []
    for k, (kind, finding) in enumerate(findings):
        kinds = fixes_for(kind)
        if kinds is not None:
            pending.append(
                (k, kinds, finding, islice(kinds.candidates(source.path, text, finding), MAX_CANDIDATES))
            )
    while pending:
        still = []
        for k, kinds, finding, candidates in pending:
            candidate = next(candidates, None)
            if candidate is None:
                continue
            reason = verify(kinds, candidate, source, text, before, finding, part, verifier.analysed)
            if reason is None:
                out[k] = (Fix(candidate.applicability, candidate.message, tuple(candidate.edits)), out[k][1])
            else:
                out[k][1].append(_tried(candidate, reason))
                still.append((k, kinds, finding, candidates))
        pending = still
    return out


def without_fix_hint(finding: Diagnostic, advice: str, reasons: list[str]) -> str:
    """A finding's hint once no candidate holds: its words, and that no automatic fix was found
    (with why the first candidate tried did not hold)."""
    words = finding.hint or advice
    tail = f"{NO_FIX} ({reasons[0]})" if reasons else NO_FIX
    return f"{words}; {tail}" if words else tail[:1].upper() + tail[1:]


def attach_fixes(
    source: Source, text: str, results: list[SourceResult], part: FixPart, analyse: Analyse
) -> None:
    """Give each cache-busting finding of `results` (the raw analysis of `text`) its verified fix,
    or a hint that says no automatic fix was found; all of them on one `Verifier`'s budget, whose
    analyses of fixed text are `analyse`'s."""
    places, asked = [], []
    for r, result in enumerate(results):
        for i, d in enumerate(result.diagnostics):
            if d.code[3] not in FIXABLE_FAMILIES or d.fix is not None:
                continue
            places.append((r, i))
            if d.span.path == source.path:  # a finding traced into an included file is that file's
                asked.append((len(places) - 1, (result.kind, d)))
    found: list[tuple[Fix | None, list[str]]] = [(None, []) for _ in places]
    for (p, _), answer in zip(
        asked,
        _first_verified([a for _, a in asked], source, text, results, part, Verifier(source, analyse)),
        strict=True,
    ):
        found[p] = answer
    for (r, i), (fix, reasons) in zip(places, found, strict=True):
        result, d = results[r], results[r].diagnostics[i]
        if fix is not None:
            result.diagnostics[i] = replace(d, fix=fix)
            continue
        if result.kind in NOT_EDITED and d.span.path != source.path:
            reasons = [NOT_EDITED[result.kind]]
        result.diagnostics[i] = replace(d, hint=without_fix_hint(d, _advice(result.kind)(d), reasons))


def _advice(kind: str) -> Callable[[Diagnostic], str]:
    """The words of a finding that has no hint of its own (templates' findings say what to move)."""
    if kind in ("jinja", "tokenizer_config", "prompt_template", "gguf"):
        from prefixlint.jinja.fixes import advice

        return lambda d: advice(d, kind)
    return lambda d: ""
