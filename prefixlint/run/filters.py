"""What a run reports of its raw results: inline suppressions (and the unused ones), per-file ignores,
select/ignore, and each finding once. Cheap, and applied on every run, after the result cache: what
is cached is the raw analysis."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefixlint.core.files import read_text
from prefixlint.core.findings import Diagnostic, SourceResult, Span

if TYPE_CHECKING:
    from prefixlint.plan import RunPlan
    from prefixlint.run.sources import Source


def apply_filters(source: Source, results: list[SourceResult], run: RunPlan, text: str | None) -> None:
    """Apply inline suppressions (reporting unused ones), per-file ignores and select/ignore.
    `text`: the source's text as the run read it (None: unreadable or binary, so no comments)."""
    if run.suppressions and results:
        from prefixlint.run.suppress import directives_for, suppress, unused_suppressions

        try:
            directives = [] if text is None else directives_for(source.kind, text)
        except ValueError:
            directives = []
        for result in results:
            own = [d for d in result.diagnostics if d.span.path == source.path]
            elsewhere = [d for d in result.diagnostics if d.span.path != source.path]
            result.diagnostics = suppress(own, directives) + _suppress_in_includes(
                elsewhere, run.limits.file_bytes
            )
        skipped = () if run.template.multiturn else ("PFX4",)
        results[0].diagnostics += unused_suppressions(directives, source.path, skipped)
    keep = run.codes_for(source.path)
    for result in results:
        kept = (d for d in result.diagnostics if d.code in keep)
        result.diagnostics = sorted(kept, key=Diagnostic.sort_key)


def _suppress_in_includes(diagnostics: list[Diagnostic], max_bytes: int) -> list[Diagnostic]:
    """Findings traced into an included file obey that file's own suppression comments."""
    from prefixlint.run.suppress import directives_for, suppress

    out: list[Diagnostic] = []
    for path in dict.fromkeys(d.span.path for d in diagnostics):
        try:
            directives = directives_for("jinja", read_text(path, max_bytes))
        except (OSError, ValueError):
            directives = []
        out += suppress([d for d in diagnostics if d.span.path == path], directives)
    return out


def drop_repeats(results: list[SourceResult]) -> None:
    """A finding traced into an included file is also found when that file is checked on its
    own: report each (code, place) once, where it was found first."""
    seen: set[tuple[str, Span]] = set()
    for result in results:
        kept = []
        for d in result.diagnostics:
            if (d.code, d.span) not in seen:
                kept.append(d)
            seen.add((d.code, d.span))
        result.diagnostics = kept
