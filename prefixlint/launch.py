"""The console entry point. A `check` whose recorded run still holds is replayed (run/runmemo.py)
before anything heavy is imported; for a `check` of a few template files (pre-commit's shape) the
tokenizer starts loading in a helper at once, before the command line is even parsed; everything
else goes to the click command line (prefixlint/cli/)."""

from __future__ import annotations

import os
import sys


def main() -> None:
    argv = sys.argv[1:]
    if argv[:1] == ["check"]:
        from prefixlint.run.runmemo import replay

        code = replay(argv)
        if code is not None:
            sys.exit(code)
        _start_tokenizer_early(argv[1:])
    from prefixlint.cli import main as run_command_line

    run_command_line(argv)


def _start_tokenizer_early(args: list[str]) -> None:
    """Guess the tokenizer a `check` of a few named template files will load and start loading it
    in a helper now: the load (~0.5 s) then overlaps the imports, the config and the rendering, not
    only the rendering. The guess ignores the config file's `tokenizer`; a helper the run turns out
    not to need is stopped as soon as the run knows (prefixlint.run.schedule._lint_in_order)."""
    if "--diff" in args or any(a.startswith("--diff=") for a in args):
        return
    from prefixlint.run.sources import PARALLEL_MIN_SOURCES, source_kind

    named = [a for a in args if not a.startswith("-") and os.path.exists(a)]
    # Templates by name only: an option's value (a tokenizer.json, a config) is no template.
    templates = [a for a in named if source_kind(a) in ("jinja", "tokenizer_config") and os.path.isfile(a)]
    if not templates or len(named) >= PARALLEL_MIN_SOURCES or any(os.path.isdir(a) for a in named):
        return  # nothing to tokenize, or a folder: maybe many files, and a pool that loads its own
    spec = _option_value(args, "--tokenizer")
    try:
        from prefixlint.models.tokens import start_loading
        from prefixlint.plan import tokenizer_file_for

        path = tokenizer_file_for(os.path.dirname(templates[0]), spec)
        if path is not None and not _remembered(path, templates):
            start_loading(path)
    except Exception:  # only a guess: the run loads what it needs and reports what is wrong
        return


def _remembered(tokenizer: str, templates: list[str]) -> bool:
    """Whether every template has a book of its encodings (prefixlint/models/token_memo.py), or the
    tokenizer an index (prefixlint/models/token_index.py), in a cache dir where the run may look: then
    the tokenizer likely never loads, and a helper loading it would cost as much CPU as the rest
    of the run."""
    from prefixlint.models.token_index import has_index
    from prefixlint.models.token_memo import has_book
    from prefixlint.run.runmemo import cache_dirs

    folders = list(cache_dirs())
    if any(has_index(folder, tokenizer) for folder in folders):
        return True
    return all(any(has_book(folder, tokenizer, t) for folder in folders) for t in templates)


def _option_value(args: list[str], name: str) -> str | None:
    for i, arg in enumerate(args):
        if arg == name and i + 1 < len(args):
            return args[i + 1]
        if arg.startswith(name + "="):
            return arg.split("=", 1)[1]
    return None
