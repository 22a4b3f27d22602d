"""`check --fix` and `check --add-noqa`: the runs of `check` that write files."""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, NoReturn

import click

from prefixlint.cli.app import EXIT_FINDINGS, EXIT_OK, fail
from prefixlint.core.words import counted

if TYPE_CHECKING:
    from prefixlint.run.check import Report
    from prefixlint.settings import Options


def report_of(paths: tuple[str, ...], options: Options, fix: bool, unsafe_fixes: bool) -> Report:
    """The report of `check`, the fixes written first with `--fix`; exits 2 on a tokenizer or
    path error, or a fix that cannot be written."""
    from prefixlint.api import lint_paths
    from prefixlint.models.tokens import TokenizerError
    from prefixlint.run.sources import SourceError

    try:
        if fix:
            from prefixlint.fixes.autofix import fix_paths

            report, _ = fix_paths(list(paths), options, unsafe_fixes)
        else:
            report = lint_paths(list(paths), options)
            report.unsafe_fixes = unsafe_fixes
    except (TokenizerError, SourceError) as exc:
        fail(str(exc))
    except OSError as exc:  # a fix that cannot be written: the file is named
        fail(f"cannot write a fix: {exc}")
    return report


def write_suppressions(report: Report, options: Options, quiet: bool) -> NoReturn:
    """`check --add-noqa`: a suppression for every finding reported; exit 0 when all are written,
    1 (naming them) when some could not be."""
    from prefixlint.fixes.noqa import add_noqa
    from prefixlint.plan import template_part

    try:
        result = add_noqa(report.diagnostics, template_part(options))
    except OSError as exc:
        fail(f"cannot write a suppression: {exc}")
    if not quiet:
        files = len(result.files)
        click.echo(f"Added {counted(result.added, 'suppression')} in {counted(files, 'file')}.")
    for line in result.skipped:
        click.echo(f"prefixlint: warning: not suppressed: {line}", err=True)
    sys.exit(EXIT_FINDINGS if result.skipped else EXIT_OK)
