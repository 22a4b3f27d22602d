"""What the commands share: the options of `check` and `diff`, `--var` and `--chat-template-kwargs`
(also on `render` and `explain`), the settings the config file and the command line resolve to,
and how a report is written."""

from __future__ import annotations

import json
import os
from typing import Any

import click

from prefixlint.cli.app import fail


def lint_options(func: Any) -> Any:
    """The options `check` and `diff` share (the config file supplies what is not given)."""
    options = [
        click.option(
            "--tokenizer",
            "tokenizer",
            help="tokenizer.json (or .gz), a model folder, or a Hub id in the local cache.",
        ),
        click.option(
            "--engine",
            help="Engine whose caching rules apply, any case (default: vllm; `prefixlint engines`).",
        ),
        click.option(
            "--block-size",
            type=click.IntRange(min=1),
            metavar="TOKENS",
            help="The engine's cache block in tokens (default: the engine's own, e.g. 16 for vLLM).",
        ),
        click.option("--select", multiple=True, help="Rule codes or prefixes to report (default: all)."),
        click.option("--extend-select", multiple=True, help="Rule codes or prefixes to add to `select`."),
        click.option("--ignore", multiple=True, help="Rule codes or prefixes not to report."),
        click.option("--exclude", multiple=True, help="Glob patterns of paths to skip."),
        click.option(
            "--respect-gitignore/--no-respect-gitignore",
            default=None,
            help="Skip what git ignores (.gitignore, .git/info/exclude, global excludes) in the folders "
            "walked (default: on).",
        ),
        click.option(
            "--force-exclude",
            is_flag=True,
            help="Apply the config's excludes to files named explicitly too (pre-commit).",
        ),
        click.option(
            "--fail-on",
            type=click.Choice(["info", "warning", "error"]),
            help="Lowest severity that fails the run (default: warning).",
        ),
        click.option("--no-multiturn", is_flag=True, help="Skip the multi-turn analysis."),
        click.option(
            "--config",
            "config_file",
            type=click.Path(exists=True, dir_okay=False),
            help="Config file (default: the nearest prefixlint.toml or pyproject.toml with "
            "[tool.prefixlint]).",
        ),
        click.option("--no-cache", is_flag=True, help="Analyse every source again (no result cache)."),
        click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings fail the run."),
        click.option(
            "-q", "--quiet", is_flag=True, help="Print the findings only: no summary line, no warnings."
        ),
        click.option(
            "--output-file", type=click.Path(dir_okay=False), help="Write the report here instead of stdout."
        ),
    ]
    for option in reversed(options):
        func = option(func)
    return template_var_options(func)


def template_var_options(func: Any) -> Any:
    """`--var` and `--chat-template-kwargs`, the same on check, diff, render and explain."""
    func = click.option(
        "--chat-template-kwargs",
        metavar="JSON",
        help="A JSON object of template variables, as vLLM's chat_template_kwargs (--var wins).",
    )(func)
    return click.option(
        "--var",
        "template_var",
        multiple=True,
        metavar="NAME=VALUE",
        help="Template variable fixed for every render (VALUE may be JSON), e.g. enable_thinking=false; "
        "repeatable.",
    )(func)


def setup(paths: tuple[str, ...], kw: dict[str, Any]) -> tuple[Any, str, Any]:
    """(Options, fail-on, Config) from the config file and the command line; exits 2 on a bad
    config."""
    from prefixlint.config import ConfigError, build_options, discover_config
    from prefixlint.core.rules import resolve_selector
    from prefixlint.engines import load_engines

    for selector in kw["select"] + kw["extend_select"] + kw["ignore"]:
        if not resolve_selector(selector):
            fail(f"unknown rule code or prefix {selector!r} (see `prefixlint rules`)")
    kw["tokenizer"] = tokenizer_spec(kw["tokenizer"])
    if kw["engine"] is not None:
        kw["engine"] = kw["engine"].strip().lower()
        if kw["engine"] not in load_engines():
            fail(f"unknown engine {kw['engine']!r}; known: {', '.join(sorted(load_engines()))}")
    try:
        config = discover_config(paths, kw["config_file"])
    except ConfigError as exc:
        fail(f"config: {exc}")
    options = build_options(
        config,
        tokenizer=kw["tokenizer"],
        engine=kw["engine"],
        select=kw["select"],
        extend_select=kw["extend_select"],
        ignore=kw["ignore"],
        excludes=kw["exclude"],
        multiturn=not kw["no_multiturn"],
        force_exclude=kw["force_exclude"],
        use_cache=not kw["no_cache"],
        respect_gitignore=kw["respect_gitignore"],
        template_vars=parse_template_vars(kw["chat_template_kwargs"], kw["template_var"]),
        block_size=kw["block_size"],
    )
    if kw["tokenizer"] is None and config.tokenizer is not None:
        from prefixlint.models.tokens import TokenizerError, resolve_tokenizer_path

        try:  # name the file and the key: the path came from there, not from the command line
            resolve_tokenizer_path(config.tokenizer)
        except TokenizerError as exc:
            key = "tool.prefixlint.tokenizer" if config.path.name == "pyproject.toml" else "tokenizer"
            fail(f"config: {config.path}: `{key}`: {exc}")
    return options, kw["fail_on"] or config.fail_on or "warning", config


def tokenizer_spec(spec: str | None) -> str | None:
    """`--tokenizer` as given, except a tokenizer_config.json (a config, not a tokenizer): the
    tokenizer file beside it is used, with a note, or the run stops saying there is none."""
    if spec is None or os.path.basename(spec) != "tokenizer_config.json" or not os.path.isfile(spec):
        return spec
    from pathlib import Path

    from prefixlint.models.tokens import find_tokenizer_file

    folder = Path(spec).parent
    found = find_tokenizer_file(folder)
    if found is None:
        fail(
            f"--tokenizer {spec}: a tokenizer_config.json holds no tokenizer, and there is no "
            f"tokenizer.json beside it in {folder}; pass a tokenizer.json or a model folder"
        )
    click.echo(f"prefixlint: note: --tokenizer {spec} is a tokenizer_config.json: using {found}", err=True)
    return str(found)


def parse_template_vars(kwargs_json: str | None, variables: tuple[str, ...]) -> dict[str, Any]:
    """`--chat-template-kwargs` then each `--var` (a later one wins); exits 2 naming a bad one."""
    out: dict[str, Any] = {}
    if kwargs_json is not None:
        try:
            value = json.loads(kwargs_json)
        except ValueError as exc:
            fail(f"--chat-template-kwargs: not valid JSON ({exc})")
        if not isinstance(value, dict):
            fail(f"--chat-template-kwargs: expected a JSON object, got {kwargs_json!r}")
        out.update(value)
    out.update(parse_var(v) for v in variables)
    return out


def parse_var(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        fail(f"--var {text!r}: expected NAME=VALUE (VALUE may be JSON), e.g. --var enable_thinking=false")
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        return name.strip(), value


def write_output(text: str, output_file: str | None) -> None:
    if output_file:
        with open(output_file, "w", encoding="utf-8") as fh:
            fh.write(text)
    else:
        click.echo(text, nl=False)


class _SourcePath(click.Path):
    """An existing path, or a model of the local Ollama store (`ollama:NAME[:TAG]`): one not
    pulled is a usage error, as a path that does not exist is (and as it is for `--tokenizer`)."""

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, str) and value.startswith("ollama:"):
            from prefixlint.models.ollama import unknown_model

            problem = unknown_model(value)
            if problem is not None:
                self.fail(problem, param, ctx)
            return value
        return super().convert(value, param, ctx)


SOURCE_PATH = _SourcePath(exists=True)


max_prefix_loss_option = click.option(
    "--max-prefix-loss",
    type=click.IntRange(min=0),
    metavar="TOKENS",
    help="With --diff or `diff`: tokens the cacheable prefix may lose (default: less than one cache block "
    "of the engine).",
)


def nothing_found(paths: tuple[str, ...]) -> str:
    """The warning for paths that hold no source (ruff: "No Python files found under the given
    path(s)"): a wrong path in CI must not pass in silence."""
    shown = ", ".join(paths)
    return (
        f"prefixlint: warning: no sources found under {shown} (.jinja/.j2/.jinja2 templates, "
        "tokenizer_config.json, .py files, less excluded and git-ignored ones): nothing was checked"
    )
