"""`prefixlint diff REF` and `check --diff REF`: the gate on changes since a git ref."""

from __future__ import annotations

import sys
from typing import Any, NoReturn

import click

from prefixlint.cli.app import EXIT_FINDINGS, EXIT_OK, cli, fail
from prefixlint.cli.options import lint_options, max_prefix_loss_option, nothing_found, setup, write_output


def run_diff(
    ref: str, paths: tuple[str, ...], fmt: str, max_prefix_loss: int | None, kw: dict[str, Any]
) -> NoReturn:
    """Gate the sources under `paths` on their change since `ref`, print the result and exit."""
    from prefixlint.core.findings import Severity
    from prefixlint.diffgate import DiffError, diff_gate, render_diff
    from prefixlint.models.tokens import TokenizerError
    from prefixlint.run.sources import SourceError

    paths = paths or (".",)
    options, fail_on, _ = setup(paths, kw)
    try:
        result = diff_gate(ref, list(paths), options, max_prefix_loss, Severity.parse(fail_on))
    except (DiffError, TokenizerError, SourceError) as exc:
        fail(str(exc))
    if not result.sources and not kw["quiet"]:
        click.echo(nothing_found(paths), err=True)
    text = render_diff(result, fmt)
    if kw["quiet"] and fmt in ("concise", "text"):  # the failing sources only
        text = "".join(line + "\n" for line in _failing_lines(result))
    write_output(text, kw["output_file"])
    sys.exit(EXIT_FINDINGS if result.failed and not kw["exit_zero"] else EXIT_OK)


def _failing_lines(result: Any) -> list[str]:
    from prefixlint.diffgate import _headline

    out = []
    for change in result.changes:
        if change.failures:
            out.append(_headline(change))
            out.extend(f"    error: {f}" for f in change.failures)
    return out


@cli.command("diff")
@click.argument("ref")
@click.argument("paths", nargs=-1, type=click.Path(exists=True))
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["concise", "text", "json", "github", "sarif"]),
    default="concise",
    show_default=True,
    help="concise (or text): a line per source; github: workflow annotations; sarif: the added findings.",
)
@max_prefix_loss_option
@lint_options
def diff_cmd(ref: str, paths: tuple[str, ...], fmt: str, max_prefix_loss: int | None, **kw: Any) -> None:
    """Fail when a change since git REF regresses a source: its cacheable prefix loses a cache block
    of the engine (or more than --max-prefix-loss tokens), or it gains findings at or above
    --fail-on. A changed static prefix is a note, never a failure. Prints before/after cacheable
    tokens per template and Python source (PATHS default: .). Without any commit yet (a first
    commit), every source is new and only its findings are checked."""
    run_diff(ref, paths, fmt, max_prefix_loss, kw)
