"""One cause, one finding: the findings of a template's analyses that one printed value causes
(the same template line, the same first divergent token) merged under the most specific code."""

from __future__ import annotations

from dataclasses import replace

from prefixlint.core.findings import Diagnostic

# Most specific first: the code a finding keeps when one cause shows as several (issue 14, point 3).
# A per-request divergence (PFX1xx-5xx of the variants analysis) is the cause of the multi-turn
# break it also makes, so it comes before PFX4xx; PFX501 and PFX302 say least about the cause.
SPECIFICITY = (
    "PFX101",
    "PFX102",
    "PFX103",
    "PFX104",
    "PFX201",
    "PFX301",
    "PFX105",
    "PFX501",
    "PFX402",
    "PFX401",
    "PFX403",
    "PFX302",
)


def merge_same_origin(found: list[tuple[Diagnostic, int]]) -> list[Diagnostic]:
    """One cause, one finding: findings printed by the same template line with the same first
    divergent token (the same rendered value: a date read by `strftime_now` and passed as
    `date_string`; a generation prompt that both mismatches and drops reasoning) become one, under
    the most specific code, its severity and cost the largest of the group, the others named in
    its message ("also: …")."""
    from prefixlint.core.rules import RULES

    groups: dict[tuple[str, int, int], list[Diagnostic]] = {}
    out: list[Diagnostic] = []
    for diag, origin in found:
        if diag.evidence is None:
            out.append(diag)
            continue
        key = (diag.span.path, origin, diag.evidence.token_index)
        groups.setdefault(key, []).append(diag)
    for group in groups.values():
        group.sort(key=lambda d: SPECIFICITY.index(d.code) if d.code in SPECIFICITY else len(SPECIFICITY))
        keep, others = group[0], group[1:]
        if not others:
            out.append(keep)
            continue
        also = ", ".join(f"{d.code} {RULES[d.code].name} (line {d.span.line})" for d in others)
        evidence = replace(
            keep.evidence,
            static_tokens_lost=max(d.evidence.static_tokens_lost for d in group),
            reply_tokens_lost=max(d.evidence.reply_tokens_lost for d in group),
        )
        out.append(
            replace(
                keep,
                message=f"{keep.message}; also: {also}",
                severity=max(d.severity for d in group),
                hint=keep.hint or next((d.hint for d in others if d.hint), ""),
                evidence=evidence,
            )
        )
    return out
