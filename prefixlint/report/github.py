"""GitHub Actions workflow commands: one `::error|warning|notice file=…,line=…,col=…::…` line per
finding, which GitHub shows as annotations on the pull request's diff."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prefixlint.core.findings import Severity
from prefixlint.report.text import help_text

if TYPE_CHECKING:
    from prefixlint.run.check import Report

_LEVELS = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def _escape_data(text: str) -> str:
    # The escapes of GitHub's toolkit (`escapeData`): a raw newline would end the command.
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def render_github(report: Report) -> str:
    lines = []
    for d in report.diagnostics:
        props = ",".join(
            f"{key}={_escape_property(str(value))}"
            for key, value in (
                ("file", d.span.path),
                ("line", d.span.line),
                ("col", d.span.column),
                ("title", f"prefixlint ({d.code} {d.name})"),
            )
        )
        help_line = help_text(d, report.unsafe_fixes)
        message = f"{d.code} {d.message}" + (f"\nhelp: {help_line}" if help_line else "")
        lines.append(f"::{_LEVELS[d.severity]} {props}::{_escape_data(message)}")
    return "".join(line + "\n" for line in lines)
