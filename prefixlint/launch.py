"""The console entry point. A `check` whose recorded run still holds is replayed (runmemo.py)
before anything heavy is imported; everything else goes to the click command line (cli.py)."""

from __future__ import annotations

import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["check"]:
        from prefixlint.runmemo import replay

        code = replay(argv)
        if code is not None:
            sys.exit(code)
    from prefixlint.cli import main as run_command_line

    run_command_line(argv)
