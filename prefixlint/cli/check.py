"""`prefixlint check`: lint the sources under PATHS and report, fix or suppress what is found."""

from __future__ import annotations

import os
import sys
from typing import Any

import click

from prefixlint.cli import fixing, listing
from prefixlint.cli.app import EXIT_FINDINGS, EXIT_OK, cli, fail
from prefixlint.cli.diff import run_diff
from prefixlint.cli.options import (
    SOURCE_PATH,
    lint_options,
    max_prefix_loss_option,
    nothing_found,
    setup,
    write_output,
)
from prefixlint.core.words import counted


@cli.command()
@click.argument("paths", nargs=-1, type=SOURCE_PATH)
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["concise", "full", "json", "github", "sarif"]),
    default="concise",
    show_default=True,
)
@click.option(
    "--diff",
    "diff_ref",
    metavar="REF",
    help="Gate on changes: compare each template with its version at git REF (`prefixlint diff`).",
)
@click.option(
    "--show-files",
    is_flag=True,
    help="List each source with its kind (and why) and exit 0, analysing nothing.",
)
@click.option(
    "--show-settings",
    is_flag=True,
    help="Print the settings the config file and the command line resolve to, and exit 0.",
)
@click.option(
    "--statistics",
    is_flag=True,
    help="Print how many findings of each rule code instead of the findings (JSON with --format json).",
)
@click.option("--fix", is_flag=True, help="Apply the safe fixes (with --unsafe-fixes, the unsafe ones too).")
@click.option(
    "--unsafe-fixes",
    is_flag=True,
    help="Count unsafe fixes (they change the prompt: a value moved later) as applicable.",
)
@click.option(
    "--show-fixes",
    is_flag=True,
    help="List the fixes written (with --fix), else the fixes --fix would write.",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Write a suppression comment for every current finding, and exit 0 once all are written.",
)
@max_prefix_loss_option
@lint_options
def check(
    paths: tuple[str, ...],
    fmt: str,
    diff_ref: str | None,
    max_prefix_loss: int | None,
    show_files: bool,
    show_settings: bool,
    statistics: bool,
    fix: bool,
    unsafe_fixes: bool,
    show_fixes: bool,
    add_noqa: bool,
    **kw: Any,
) -> None:
    """Lint chat templates (.jinja, .j2, tokenizer_config.json), app prompt templates and Python
    prompt code under PATHS (default: the current folder)."""
    paths = paths or (".",)
    if show_settings:
        listing.show_settings(paths, kw)
    if show_files:
        listing.show_files(paths, kw)
    if diff_ref is not None and (fix or add_noqa):
        fail("--fix and --add-noqa do not go with --diff")
    if fix and add_noqa:
        fail("--fix and --add-noqa: choose one")
    if diff_ref is not None:
        run_diff(diff_ref, paths, "concise" if fmt == "full" else fmt, max_prefix_loss, kw)
    from prefixlint.core.findings import Severity
    from prefixlint.report import render_report

    options, fail_on, config = setup(paths, kw)
    options.python_numbers = fmt in ("json", "sarif")  # the outputs that show per-source numbers
    report = fixing.report_of(paths, options, fix, unsafe_fixes)
    if add_noqa:
        fixing.write_suppressions(report, options, kw["quiet"])
    # Skipped sources are counted in the summary and listed by --show-files, not warned about.
    notes = dict.fromkeys(n for s in report.sources if s.kind != "not_prompt" for n in s.notes)
    if not report.sources:
        notes[nothing_found(paths).removeprefix("prefixlint: warning: ")] = None
    elif all(s.kind == "not_prompt" for s in report.sources):
        skipped = len({s.path for s in report.sources})
        notes[f"nothing checked: the {counted(skipped, 'file')} found are not prompts (see --show-files)"] = (
            None
        )
    notes.update(dict.fromkeys(_unread_variables(options.template_vars, report.sources)))
    warnings = "" if kw["quiet"] else "".join(f"prefixlint: warning: {n}\n" for n in notes)
    click.echo(warnings, err=True, nl=False)
    text = render_report(report, fmt, quiet=kw["quiet"], statistics=statistics, show_fixes=show_fixes)
    write_output(text, kw["output_file"])
    if fmt in ("json", "sarif", "github") and not kw["quiet"] and (fix or show_fixes):
        from prefixlint.report.text import render_fix_summary

        click.echo(render_fix_summary(report, show_fixes), err=True, nl=False)
    worst = report.worst()
    code = EXIT_FINDINGS if worst is not None and worst >= Severity.parse(fail_on) else EXIT_OK
    if kw["exit_zero"]:
        code = EXIT_OK
    if kw["output_file"] is None and not fix:  # a run that writes files is never replayed
        _record_run(report, options, config, text, warnings, code)
    sys.exit(code)


TEMPLATE_RESULT_KINDS = ("jinja", "tokenizer_config", "prompt_template", "gguf")


def _unread_variables(template_vars: dict[str, Any], results: list[Any]) -> list[str]:
    """Warnings for `--var`s no template checked reads (a misspelt `enable_thinkng` is otherwise
    taken in silence); a template that does not compile is not looked at, and said so."""
    if not template_vars:
        return []
    from prefixlint.jinja.template import unread_variables

    templates = [r for r in results if r.kind in TEMPLATE_RESULT_KINDS]
    known = [r.variables for r in templates if r.variables is not None]
    if templates and not known:
        return []  # none compiles: nothing to tell
    unknown = len(templates) - len(known)
    tail = f" ({counted(unknown, 'template')} that do not compile not looked at)" if unknown else ""
    return [w + tail for w in unread_variables(list(template_vars), known)]


def _record_run(report: Any, options: Any, config: Any, stdout: str, stderr: str, code: int) -> None:
    """Let the same command line replay this run while nothing it read changes (run/runmemo.py). Only
    for a run started by `main` (it knows the command line), with the result cache on, no result
    cut off by a time limit, and a tokenizer given by path (a Hub id's cache can gain a snapshot)."""
    argv = (click.get_current_context().find_root().obj or {}).get("argv")
    if argv is None or options.cache_dir is None:
        return
    if options.tokenizer is not None and not os.path.exists(options.tokenizer):
        return
    from prefixlint.run.cache import timed_out
    from prefixlint.run.runmemo import library_inputs, record

    if any(timed_out(r) for r in report.sources) or not report.replayable:
        return
    inputs = [*config.consulted, *report.inputs, *library_inputs()]
    record(options.cache_dir, argv, inputs, stdout, stderr, code)
