"""`check --fix`: write the applicable fixes of a report to the files, check again, repeat (ruff's
loop: a fix verified alone is applied with the others of its file that do not overlap it; what the
next check finds decides the next round, so every file written is checked as it now is).

Only real source files are written: a `.jinja`/`.j2`/`.jinja2` template, a `.py` module, or a
`tokenizer_config.json` (its template is a JSON string: the fix edits that string, escaped as the
file escapes it). A GGUF model or an Ollama store is never written; a finding in one has no fix.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from prefixlint.core.edits import EditError, apply_edits
from prefixlint.core.findings import Diagnostic, Fix

if TYPE_CHECKING:
    from prefixlint.run.check import Report
    from prefixlint.settings import Options

MAX_ROUNDS = 10  # ruff stops after 100; a template rarely needs more than one
WRITABLE_KINDS = ("jinja", "tokenizer_config", "python")
_BOM = "\ufeff"


@dataclass(frozen=True)
class Applied:
    """A fix written to a file: the finding it fixed, as it was reported."""

    path: str
    line: int
    column: int
    code: str
    name: str
    message: str
    applicability: str


def applicable(fix: Fix | None, unsafe: bool) -> bool:
    """Whether `check --fix` applies `fix` (`--unsafe-fixes` for the unsafe ones)."""
    return fix is not None and fix.verified and (fix.applicability == "safe" or unsafe)


def _writable(path: str) -> bool:
    from prefixlint.run.sources import source_kind

    return source_kind(path) in WRITABLE_KINDS and os.path.isfile(path)


def read_source(path: str) -> tuple[str, bool]:
    """A source's text as the analysis decodes it, and whether it starts with a BOM."""
    data = Path(path).read_bytes()
    text = data.decode("utf-8-sig")
    return text, data.startswith(_BOM.encode())


def write_source(path: str, text: str, bom: bool) -> None:
    """Replace a file's text, keeping its BOM and permissions; written beside it, then renamed, so a
    reader never sees half a file."""
    target = Path(path)
    mode = target.stat().st_mode
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write((_BOM if bom else "") + text)
        os.chmod(tmp, mode & 0o7777)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def apply_to_file(path: str, findings: list[Diagnostic]) -> list[Diagnostic]:
    """Write the fixes of `findings` (all of one file) that do not overlap an earlier one; the
    findings whose fixes were written."""
    text, bom = read_source(path)
    edits: list = []
    done = []
    for d in findings:
        assert d.fix is not None
        try:
            apply_edits(text, [*edits, *d.fix.edits])
        except EditError:
            continue  # overlaps a fix taken already: the next round finds it again, or not
        edits += d.fix.edits
        done.append(d)
    if done:
        write_source(path, apply_edits(text, edits), bom)
    return done


def fix_paths(paths: list[str], options: Options, unsafe: bool) -> tuple[Report, list[Applied]]:
    """Check `paths`, write the applicable fixes, check again until nothing applicable is left (or
    MAX_ROUNDS); the last report (what remains) and every fix written."""
    from prefixlint.api import lint_paths

    report = lint_paths(paths, options)
    applied: list[Applied] = []
    for _ in range(MAX_ROUNDS):
        by_file: dict[str, list[Diagnostic]] = {}
        for d in report.diagnostics:
            if applicable(d.fix, unsafe) and _writable(d.span.path):
                by_file.setdefault(d.span.path, []).append(d)
        written = False
        for path, findings in by_file.items():
            for d in apply_to_file(path, findings):
                assert d.fix is not None
                applied.append(
                    Applied(
                        path, d.span.line, d.span.column, d.code, d.name, d.fix.message, d.fix.applicability
                    )
                )
                written = True
        if not written:
            break
        report = lint_paths(paths, options)
    report.fixed = applied
    report.unsafe_fixes = unsafe
    return report, applied
