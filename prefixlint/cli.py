"""The command line: `check`, `diff`, `render`, `explain`, `rule`, `rules`, `engines`. Exit codes
(contract): 0 nothing at or above the failing severity, 1 findings, 2 usage, config or internal
error."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

import click

from prefixlint.words import counted

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> None:
    click.echo(f"prefixlint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="prefixlint")
def cli() -> None:
    """Find what breaks prefix (KV) caching in chat templates and prompt code."""


def _lint_options(func: Any) -> Any:
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
    return _template_var_options(func)


def _template_var_options(func: Any) -> Any:
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


def _setup(paths: tuple[str, ...], kw: dict[str, Any]) -> tuple[Any, str, Any]:
    """(Options, fail-on, Config) from the config file and the command line; exits 2 on a bad
    config."""
    from prefixlint.config import ConfigError, build_options, discover_config
    from prefixlint.engines import load_engines
    from prefixlint.rules import resolve_selector

    for selector in kw["select"] + kw["extend_select"] + kw["ignore"]:
        if not resolve_selector(selector):
            _fail(f"unknown rule code or prefix {selector!r} (see `prefixlint rules`)")
    kw["tokenizer"] = _tokenizer_spec(kw["tokenizer"])
    if kw["engine"] is not None:
        kw["engine"] = kw["engine"].strip().lower()
        if kw["engine"] not in load_engines():
            _fail(f"unknown engine {kw['engine']!r}; known: {', '.join(sorted(load_engines()))}")
    try:
        config = discover_config(paths, kw["config_file"])
    except ConfigError as exc:
        _fail(f"config: {exc}")
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
        template_vars=_template_vars(kw["chat_template_kwargs"], kw["template_var"]),
        block_size=kw["block_size"],
    )
    if kw["tokenizer"] is None and config.tokenizer is not None:
        from prefixlint.tokens import TokenizerError, resolve_tokenizer_path

        try:  # name the file and the key: the path came from there, not from the command line
            resolve_tokenizer_path(config.tokenizer)
        except TokenizerError as exc:
            key = "tool.prefixlint.tokenizer" if config.path.name == "pyproject.toml" else "tokenizer"
            _fail(f"config: {config.path}: `{key}`: {exc}")
    return options, kw["fail_on"] or config.fail_on or "warning", config


def _tokenizer_spec(spec: str | None) -> str | None:
    """`--tokenizer` as given, except a tokenizer_config.json (a config, not a tokenizer): the
    tokenizer file beside it is used, with a note, or the run stops saying there is none."""
    if spec is None or os.path.basename(spec) != "tokenizer_config.json" or not os.path.isfile(spec):
        return spec
    from pathlib import Path

    from prefixlint.tokens import find_tokenizer_file

    folder = Path(spec).parent
    found = find_tokenizer_file(folder)
    if found is None:
        _fail(
            f"--tokenizer {spec}: a tokenizer_config.json holds no tokenizer, and there is no "
            f"tokenizer.json beside it in {folder}; pass a tokenizer.json or a model folder"
        )
    click.echo(f"prefixlint: note: --tokenizer {spec} is a tokenizer_config.json: using {found}", err=True)
    return str(found)


def _render_target(path: str) -> str:
    """What `render` renders for PATH: a template file, a tokenizer_config.json, or a model folder's
    chat_template.jinja (else its tokenizer_config.json); anything else exits 2 naming it."""
    from prefixlint.sources import source_kind

    if os.path.isdir(path):
        for name in ("chat_template.jinja", "chat_template.j2", "tokenizer_config.json"):
            candidate = os.path.join(path, name)
            if os.path.isfile(candidate):
                return candidate
        _fail(f"{path}: a folder without chat_template.jinja or tokenizer_config.json: nothing to render")
    kind = source_kind(path)
    if kind not in ("jinja", "tokenizer_config", "gguf"):
        what = "a Python file" if kind == "python" else "not a file prefixlint renders"
        _fail(
            f"{path}: {what} (render takes a .jinja/.j2/.jinja2 template, a tokenizer_config.json, "
            "a .gguf model or a model folder)"
        )
    return path


def _settings(paths: tuple[str, ...], options: Any, fail_on: str, config: Any) -> str:
    """The resolved settings of a run (`check --show-settings`), one `name = value` a line, values
    as JSON: what the config file and the command line add up to, then the plan of each source
    (prefixlint/settings.py): its kind, tokenizer file, engine block and rules."""
    from dataclasses import asdict

    from prefixlint.api import iter_sources
    from prefixlint.plan import plan_for, tokenizer_file_for

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


def _write(text: str, output_file: str | None) -> None:
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
            from prefixlint.ollama import unknown_model

            problem = unknown_model(value)
            if problem is not None:
                self.fail(problem, param, ctx)
            return value
        return super().convert(value, param, ctx)


SOURCE_PATH = _SourcePath(exists=True)


_max_prefix_loss_option = click.option(
    "--max-prefix-loss",
    type=click.IntRange(min=0),
    metavar="TOKENS",
    help="With --diff or `diff`: tokens the cacheable prefix may lose (default: less than one cache block "
    "of the engine).",
)


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
@_max_prefix_loss_option
@_lint_options
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
        options, fail_on, config = _setup(paths, kw)
        _write(_settings(paths, options, fail_on, config), kw["output_file"])
        sys.exit(EXIT_OK)
    if show_files:
        from prefixlint.api import list_sources
        from prefixlint.sources import SourceError

        options, _, _ = _setup(paths, kw)
        try:
            listed = list_sources(list(paths), options)
        except SourceError as exc:
            _fail(str(exc))
        lines = [f"{path}: {kind} ({why})" for path, kind, why in listed]
        _write("".join(line + "\n" for line in lines), kw["output_file"])
        if not listed and not kw["quiet"]:
            click.echo(_nothing_found(paths), err=True)
        sys.exit(EXIT_OK)
    if diff_ref is not None and (fix or add_noqa):
        _fail("--fix and --add-noqa do not go with --diff")
    if fix and add_noqa:
        _fail("--fix and --add-noqa: choose one")
    if diff_ref is not None:
        _run_diff(diff_ref, paths, "concise" if fmt == "full" else fmt, max_prefix_loss, kw)
    from prefixlint.api import lint_paths
    from prefixlint.model import Severity
    from prefixlint.report import render_report
    from prefixlint.sources import SourceError
    from prefixlint.tokens import TokenizerError

    options, fail_on, config = _setup(paths, kw)
    options.python_numbers = fmt in ("json", "sarif")  # the outputs that show per-source numbers
    try:
        if fix:
            from prefixlint.autofix import fix_paths

            report, _ = fix_paths(list(paths), options, unsafe_fixes)
        else:
            report = lint_paths(list(paths), options)
            report.unsafe_fixes = unsafe_fixes
    except (TokenizerError, SourceError) as exc:
        _fail(str(exc))
    except OSError as exc:  # a fix that cannot be written: the file is named
        _fail(f"cannot write a fix: {exc}")
    if add_noqa:
        _add_noqa(report, options, kw["quiet"])
    # Skipped sources are counted in the summary and listed by --show-files, not warned about.
    notes = dict.fromkeys(n for s in report.sources if s.kind != "not_prompt" for n in s.notes)
    if not report.sources:
        notes[_nothing_found(paths).removeprefix("prefixlint: warning: ")] = None
    elif all(s.kind == "not_prompt" for s in report.sources):
        skipped = len({s.path for s in report.sources})
        notes[f"nothing checked: the {counted(skipped, 'file')} found are not prompts (see --show-files)"] = (
            None
        )
    notes.update(dict.fromkeys(_unread_variables(options.template_vars, report.sources)))
    warnings = "" if kw["quiet"] else "".join(f"prefixlint: warning: {n}\n" for n in notes)
    click.echo(warnings, err=True, nl=False)
    text = render_report(report, fmt, quiet=kw["quiet"], statistics=statistics, show_fixes=show_fixes)
    _write(text, kw["output_file"])
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


def _add_noqa(report: Any, options: Any, quiet: bool) -> None:
    """`check --add-noqa`: a suppression for every finding reported; exit 0 when all are written,
    1 (naming them) when some could not be."""
    from prefixlint.noqa import add_noqa
    from prefixlint.plan import template_part

    try:
        result = add_noqa(report.diagnostics, template_part(options))
    except OSError as exc:
        _fail(f"cannot write a suppression: {exc}")
    if not quiet:
        files = len(result.files)
        click.echo(f"Added {counted(result.added, 'suppression')} in {counted(files, 'file')}.")
    for line in result.skipped:
        click.echo(f"prefixlint: warning: not suppressed: {line}", err=True)
    sys.exit(EXIT_FINDINGS if result.skipped else EXIT_OK)


def _nothing_found(paths: tuple[str, ...]) -> str:
    """The warning for paths that hold no source (ruff: "No Python files found under the given
    path(s)"): a wrong path in CI must not pass in silence."""
    shown = ", ".join(paths)
    return (
        f"prefixlint: warning: no sources found under {shown} (.jinja/.j2/.jinja2 templates, "
        "tokenizer_config.json, .py files, less excluded and git-ignored ones): nothing was checked"
    )


def _record_run(report: Any, options: Any, config: Any, stdout: str, stderr: str, code: int) -> None:
    """Let the same command line replay this run while nothing it read changes (runmemo.py). Only
    for a run started by `main` (it knows the command line), with the result cache on, no result
    cut off by a time limit, and a tokenizer given by path (a Hub id's cache can gain a snapshot)."""
    argv = (click.get_current_context().find_root().obj or {}).get("argv")
    if argv is None or options.cache_dir is None:
        return
    if options.tokenizer is not None and not os.path.exists(options.tokenizer):
        return
    from prefixlint.cache import timed_out
    from prefixlint.runmemo import library_inputs, record

    if any(timed_out(r) for r in report.sources) or not report.replayable:
        return
    inputs = [*config.consulted, *report.inputs, *library_inputs()]
    record(options.cache_dir, argv, inputs, stdout, stderr, code)


def _run_diff(
    ref: str, paths: tuple[str, ...], fmt: str, max_prefix_loss: int | None, kw: dict[str, Any]
) -> None:
    from prefixlint.diffgate import DiffError, diff_gate, render_diff
    from prefixlint.model import Severity
    from prefixlint.sources import SourceError
    from prefixlint.tokens import TokenizerError

    paths = paths or (".",)
    options, fail_on, _ = _setup(paths, kw)
    try:
        result = diff_gate(ref, list(paths), options, max_prefix_loss, Severity.parse(fail_on))
    except (DiffError, TokenizerError, SourceError) as exc:
        _fail(str(exc))
    if not result.sources and not kw["quiet"]:
        click.echo(_nothing_found(paths), err=True)
    text = render_diff(result, fmt)
    if kw["quiet"] and fmt in ("concise", "text"):  # the failing sources only
        text = "".join(line + "\n" for line in _failing_lines(result))
    _write(text, kw["output_file"])
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
@_max_prefix_loss_option
@_lint_options
def diff_cmd(ref: str, paths: tuple[str, ...], fmt: str, max_prefix_loss: int | None, **kw: Any) -> None:
    """Fail when a change since git REF regresses a source: its cacheable prefix loses a cache block
    of the engine (or more than --max-prefix-loss tokens), or it gains findings at or above
    --fail-on. A changed static prefix is a note, never a failure. Prints before/after cacheable
    tokens per template and Python source (PATHS default: .). Without any commit yet (a first
    commit), every source is new and only its findings are checked."""
    _run_diff(ref, paths, fmt, max_prefix_loss, kw)


def _template_vars(kwargs_json: str | None, variables: tuple[str, ...]) -> dict[str, Any]:
    """`--chat-template-kwargs` then each `--var` (a later one wins); exits 2 naming a bad one."""
    out: dict[str, Any] = {}
    if kwargs_json is not None:
        try:
            value = json.loads(kwargs_json)
        except ValueError as exc:
            _fail(f"--chat-template-kwargs: not valid JSON ({exc})")
        if not isinstance(value, dict):
            _fail(f"--chat-template-kwargs: expected a JSON object, got {kwargs_json!r}")
        out.update(value)
    out.update(_parse_var(v) for v in variables)
    return out


def _parse_var(text: str) -> tuple[str, Any]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        _fail(f"--var {text!r}: expected NAME=VALUE (VALUE may be JSON), e.g. --var enable_thinking=false")
    try:
        return name.strip(), json.loads(value)
    except ValueError:
        return name.strip(), value


@cli.command()
@click.argument("template_path", type=click.Path(exists=True))
@click.option(
    "--messages",
    type=click.Path(exists=True, dir_okay=False),
    help="JSON list of messages (or a request body).",
)
@click.option(
    "--tools", "tools_path", type=click.Path(exists=True, dir_okay=False), help="JSON list of tool schemas."
)
@click.option("--now", help="The clock strftime_now reads, ISO 8601 (default: a fixed instant).")
@_template_var_options
@click.option("--no-generation-prompt", is_flag=True, help="Render without add_generation_prompt.")
@click.option("--tokens", is_flag=True, help="Also print the token ids and pieces.")
@click.option(
    "--tokenizer",
    "tokenizer",
    help="tokenizer.json (or .gz), a model folder, or a Hub id in the local cache.",
)
@click.option(
    "--name",
    "template_name",
    help="Which named template of a tokenizer_config.json list or a GGUF (tool_use).",
)
def render(
    template_path: str,
    messages: str | None,
    tools_path: str | None,
    now: str | None,
    template_var: tuple[str, ...],
    no_generation_prompt: bool,
    tokens: bool,
    tokenizer: str | None,
    template_name: str | None,
    chat_template_kwargs: str | None,
) -> None:
    """Print a prompt exactly as the serving stack renders it."""
    from datetime import UTC, datetime

    template_vars = _template_vars(chat_template_kwargs, template_var)
    template_path = _render_target(template_path)
    tokenizer = _tokenizer_spec(tokenizer)

    from prefixlint.files import read_text
    from prefixlint.jinja.inputs import BASE_TIME, USER_TURNS, conversation
    from prefixlint.jinja.template import ChatTemplate, describe_error, error_line, unread_variables
    from prefixlint.sources import ConfigError, source_kind, templates_in_tokenizer_config
    from prefixlint.tokens import TokenizerError, choose_tokenizer, special_tokens_for

    try:
        loaded = choose_tokenizer(template_path, tokenizer)[0]
        if source_kind(template_path) == "gguf":
            from prefixlint.gguf import GGUFError, source_name, template_named

            try:
                found = template_named(template_path, template_name)
            except GGUFError as exc:
                raise ValueError(str(exc)) from exc
            source, template_path = found.source, source_name(template_path, found.name)
        else:
            source = read_text(template_path)
        if template_path.endswith(".json"):
            named = templates_in_tokenizer_config(source)
            chosen = [t for t in named if template_name in (None, t.name)]
            if not chosen:
                _fail(f"{template_path}: no chat template named {template_name!r}")
            source = chosen[0].source
        msgs = conversation(USER_TURNS[0], system=True)
        if messages:
            data = json.loads(read_text(messages))
            msgs = data["messages"] if isinstance(data, dict) else data
        tools = json.loads(read_text(tools_path)) if tools_path else None
        moment = datetime.fromisoformat(now) if now else BASE_TIME
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
    except (OSError, ValueError, KeyError, ConfigError, TokenizerError) as exc:
        _fail(f"{template_path}: {exc}")
    template = ChatTemplate(source, template_path, special_tokens=special_tokens_for(template_path, loaded))
    try:
        rendered = template.render(
            msgs,
            tools=tools,
            add_generation_prompt=not no_generation_prompt,
            now=moment,
            **template_vars,
        )
    except Exception as exc:  # any template error is the user's to see, with its line
        _fail(f"{template_path}:{error_line(exc)}: {describe_error(exc)}")
    for warning in unread_variables(list(template_vars), [template.reads]):
        click.echo(f"prefixlint: warning: {warning}", err=True)
    click.echo(rendered.text, nl=not rendered.text.endswith("\n"))
    if tokens:
        enc = loaded.encode(rendered.text)
        click.echo(f"--- {len(enc.ids)} tokens ({loaded.name})")
        for i, (tid, piece) in enumerate(zip(enc.ids, enc.tokens, strict=True)):
            click.echo(f"{i:>6} {tid:>8} {piece!r}")


@cli.command("rules")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def rules_cmd(fmt: str) -> None:
    """List every rule."""
    from prefixlint.rules import RULES

    if fmt == "json":
        items = [
            {
                "code": r.code,
                "name": r.name,
                "summary": r.summary,
                "severity": r.default_severity.label,
                "severities": [s.label for s in r.severities],
            }
            for r in RULES.values()
        ]
        click.echo(json.dumps(items, indent=2))
        return
    # The severity column is the range a finding can have: the default is the highest, except
    # for PFX002 (warning by default, error when no input renders).
    for r in RULES.values():
        span = r.severities[0].label + (".." + r.severities[-1].label if len(r.severities) > 1 else "")
        click.echo(f"{r.code}  {r.name:<28} {span:<13} {r.summary}")


@cli.command("engines")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def engines_cmd(fmt: str) -> None:
    """List the engines `--engine` takes and what each caches of a shared prefix."""
    from dataclasses import asdict

    from prefixlint.engines import describe, load_engines

    engines = load_engines()
    if fmt == "json":
        click.echo(json.dumps([asdict(e) | {"summary": describe(e)} for e in engines.values()], indent=2))
        return
    for engine in engines.values():
        click.echo(f"{engine.name:<10} {describe(engine)}")
    click.echo("Facts and their sources: prefixlint/data/engines.toml.")


@cli.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """Print a rule's page (by code, PFX101, or name, clock-in-prefix): what it finds, why it
    busts the cache, examples."""
    from prefixlint.rules import find_rule

    rule = find_rule(code)
    if rule is None:
        _fail(f"unknown rule {code!r}: give a code or a name (see `prefixlint rules`)")
    click.echo(rule.page_for_reading(), nl=False)


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--log",
    "log",
    type=click.Path(exists=True, dir_okay=False),
    help="Request log: JSONL of OpenAI/Anthropic bodies (with responses), LiteLLM payloads or OTel "
    "GenAI spans, or a vLLM --enable-log-requests log; gzip accepted.",
)
@click.option(
    "--template",
    type=click.Path(exists=True, dir_okay=False),
    help="Chat template (.jinja or tokenizer_config.json); default: the one beside --tokenizer/--model-dir.",
)
@click.option(
    "--model-dir",
    type=click.Path(exists=True, file_okay=False),
    help="Model folder: tokenizer and chat template.",
)
@click.option("--tokenizer", help="tokenizer.json (or .gz), a model folder, or a Hub id.")
@click.option("--engine", "engines", multiple=True, help="Engines to simulate (default: vllm sglang openai).")
@click.option(
    "--block-size",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    help="The first engine's cache block in tokens (default: the server's settings, else the engine's own).",
)
@click.option("--cache-tokens", type=click.IntRange(min=1), help="Also simulate an LRU of this many tokens.")
@click.option(
    "--log-format",
    type=click.Choice(["openai", "anthropic", "litellm", "otel", "vllm-log"]),
    help="The log's format (default: detected from its first records).",
)
@click.option("--server-args", help='The server\'s command line, e.g. "vllm serve MODEL --block-size 32".')
@click.option(
    "--metrics",
    type=click.Path(exists=True, dir_okay=False),
    help="A Prometheus text scrape of the server's /metrics.",
)
@click.option(
    "--prefill-rate",
    type=click.FloatRange(min=0, min_open=True),
    help="Prefill tokens per second, to turn recomputed tokens into TTFT (default: measured from the log).",
)
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Causes to report.")
@click.option(
    "--what-if",
    "what_if",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Top causes to re-simulate moved after the static content.",
)
@click.option(
    "--interval",
    type=float,
    default=1.0,
    show_default=True,
    help="Seconds between requests that carry no timestamp (the clock templates read).",
)
@click.option(
    "--replicas",
    type=click.IntRange(min=1),
    help="Replicas behind a router: each policy's hit rate as a what-if.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Processes rendering the log (default: one per core for a log over 8 MB, else none).",
)
@click.option(
    "--routing",
    # The names of prefixlint.explain.routing.POLICIES, not imported here: the CLI loads fast.
    type=click.Choice(
        [
            "round-robin",
            "random",
            "session",
            "prefix-aware",
            "sglang-cache-aware",
            "sglang-cache-aware-0.1",
            "gie-prefix",
            "consistent-hash",
        ]
    ),
    default="round-robin",
    show_default=True,
    help="The router the replicas run now (with --replicas); the policies' numbers and sources are "
    "in prefixlint/data/routers.toml.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Also write an HTML page.")
@click.option(
    "--max-requests",
    type=click.IntRange(min=0),
    help="Analyse only the first N requests of the log, a sample the report states (0: all). "
    "[default: 1000000]",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0),
    help="Wall-clock budget: stop with exit 2 when the run takes longer (0: none). [default: 0]",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(min=0),
    help="Skip a request whose prompt is larger (UTF-8 bytes): the most the tokenizer sees. "
    "[default: 1000000]",
)
@click.option(
    "--max-messages",
    type=click.IntRange(min=0),
    help="Skip a request with more messages or tools. [default: 10000]",
)
@click.option(
    "--limit",
    multiple=True,
    metavar="NAME=N",
    help="Set any log limit: log_bytes, ratio, ratio_after, line_bytes, depth, request_bytes, messages, "
    "requests, seconds (0 turns one off).",
)
@_template_var_options
def explain(
    paths: tuple[str, ...], template_var: tuple[str, ...], chat_template_kwargs: str | None, **kw: Any
) -> None:
    """Why the prefix cache misses: two requests (A B), a request log (--log), or a TEMPLATE."""
    from prefixlint.explain.command import ExplainError, run
    from prefixlint.tokens import TokenizerError

    kw["template_vars"] = _template_vars(chat_template_kwargs, template_var)
    try:
        click.echo(run(paths, **kw), nl=False)
    except (ExplainError, TokenizerError) as exc:
        _fail(str(exc))


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
