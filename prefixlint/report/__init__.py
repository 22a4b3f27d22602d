"""Reporters: turn a Report into text for a terminal, a CI log or a machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefixlint.run.check import Report


def render_report(
    report: Report, fmt: str, *, quiet: bool = False, statistics: bool = False, show_fixes: bool = False
) -> str:
    """The report in `fmt` (concise, full, json, github, sarif). `quiet`: the findings without the
    summary line; `statistics`: a count per rule code instead of the findings (as text, or as JSON
    with `--format json`); `show_fixes`: the text formats list the fixes written, or available."""
    if statistics:
        from prefixlint.report.text import render_statistics

        return render_statistics(report, as_json=fmt == "json", quiet=quiet)
    if fmt == "json":
        from prefixlint.report.json import render_json

        return render_json(report)
    if fmt == "github":
        from prefixlint.report.github import render_github

        return render_github(report)
    if fmt == "sarif":
        from prefixlint.report.sarif import render_sarif

        return render_sarif(report)
    from prefixlint.report.text import render_concise, render_full

    if fmt == "full":
        return render_full(report, quiet=quiet, show_fixes=show_fixes)
    return render_concise(report, quiet=quiet, show_fixes=show_fixes)


FORMATS = ("concise", "full", "json", "github", "sarif")
