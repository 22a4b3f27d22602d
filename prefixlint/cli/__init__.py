"""The command line: `check`, `diff`, `render`, `explain`, `rule`, `rules`, `engines`. One module
per command (or family of commands), the group and `main` in app.py, the options and settings
that `check` and `diff` share in options.py. Exit codes (contract): 0 nothing at or above the
failing severity, 1 findings, 2 usage, config or internal error."""

from __future__ import annotations

# Importing a command's module adds it to the group.
from prefixlint.cli import catalog, check, diff, explain, render  # noqa: F401
from prefixlint.cli.app import EXIT_ERROR, EXIT_FINDINGS, EXIT_OK, cli, main

__all__ = ["EXIT_ERROR", "EXIT_FINDINGS", "EXIT_OK", "cli", "main"]
