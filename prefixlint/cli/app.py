"""The click group every command joins, the exit codes (contract: 0 nothing at or above the
failing severity, 1 findings, 2 usage, config or internal error), and `main`, which runs it with
no traceback for the user. The commands live in the other modules of this package, which
prefixlint/cli/__init__.py imports."""

from __future__ import annotations

import os
import sys
from typing import NoReturn

import click

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def fail(message: str) -> NoReturn:
    click.echo(f"prefixlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="prefixlint")
def cli() -> None:
    """Find what breaks prefix (KV) caching in chat templates and prompt code."""


def main(argv: list[str] | None = None) -> None:
    """Run the command line `argv` (default: sys.argv); no traceback ever reaches the user (set
    PREFIXLINT_DEBUG=1 to see one). Given `argv`, a `check` run is recorded for replay."""
    try:
        cli(args=argv, standalone_mode=True, obj=None if argv is None else {"argv": argv})
    except SystemExit:
        raise
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as exc:
        if os.environ.get("PREFIXLINT_DEBUG"):
            raise
        click.echo(f"prefixlint: internal error: {type(exc).__name__}: {exc}", err=True)
        sys.exit(EXIT_ERROR)
