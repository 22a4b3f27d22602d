"""`check --show-settings` and `check --show-files`: what a run would read and how, analysing nothing."""

from __future__ import annotations

import json
import os
import sys
from typing import Any, NoReturn

import click

from prefixlint.cli.app import EXIT_OK, fail
from prefixlint.cli.options import nothing_found, setup, write_output


def settings_text(paths: tuple[str, ...], options: Any, fail_on: str, config: Any) -> str:
    """The resolved settings of a run (`check --show-settings`), one `name = value` a line, values
    as JSON: what the config file and the command line add up to, then the plan of each source
    (prefixlint/settings.py): its kind, tokenizer file, engine block and rules."""
    from dataclasses import asdict

    from prefixlint.plan import plan_for, tokenizer_file_for
    from prefixlint.run.sources import iter_sources

    values: dict[str, Any] = {
        "config-file": str(config.path) if config.path is not None else None,
        "paths": list(paths),
        "fail-on": fail_on,
        "enabled-rules": sorted(options.enabled_codes()),
    }
    for key, value in asdict(options).items():
        values[key.replace("_", "-")] = value
    first = paths[0] if os.path.isdir(paths[0]) else os.path.dirname(paths[0])
    values["tokenizer-file"] = tokenizer_file_for(first, options.tokenizer)
    for source in iter_sources(list(paths), options):
        plan = asdict(plan_for(source.path, source.kind, options))
        del plan["path"]
        values[f"source.{source.path}"] = {k.replace("_", "-"): v for k, v in plan.items()}
    return "".join(f"{key} = {json.dumps(value, default=str)}\n" for key, value in values.items())


def show_settings(paths: tuple[str, ...], kw: dict[str, Any]) -> NoReturn:
    """`check --show-settings`: print the resolved settings and exit 0."""
    options, fail_on, config = setup(paths, kw)
    write_output(settings_text(paths, options, fail_on, config), kw["output_file"])
    sys.exit(EXIT_OK)


def show_files(paths: tuple[str, ...], kw: dict[str, Any]) -> NoReturn:
    """`check --show-files`: list each source with its kind (and why) and exit 0."""
    from prefixlint.run.sources import SourceError, list_sources

    options, _, _ = setup(paths, kw)
    try:
        listed = list_sources(list(paths), options)
    except SourceError as exc:
        fail(str(exc))
    lines = [f"{path}: {kind} ({why})" for path, kind, why in listed]
    write_output("".join(line + "\n" for line in lines), kw["output_file"])
    if not listed and not kw["quiet"]:
        click.echo(nothing_found(paths), err=True)
    sys.exit(EXIT_OK)
