"""Reporters: turn a Report into text for a terminal, a CI log or a machine."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from prefixlint.api import Report


def render_report(report: Report, fmt: str) -> str:
    """The report in `fmt` (concise, full, json, github, sarif)."""
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

    return render_full(report) if fmt == "full" else render_concise(report)


FORMATS = ("concise", "full", "json", "github", "sarif")
