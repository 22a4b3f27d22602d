"""The run plan: a run's `Options` resolved, once, into the plain data each stage needs (ruff's
"resolve once into a per-file plan").

`resolve` turns the settings into a `RunPlan`: the engine profile with `--block-size` applied, the
codes enabled, the cache and fix switches, and one frozen part per stage: `TemplatePart` for the
Jinja stage (rendering, variants, multi-turn), `PythonPart` for the Python frontend (with the
template part its embedded templates use), `FixPart` for the verifier. No stage's internals see
`Options`: the public entries that library callers and tests reach with one (`api.lint_source`,
`prefixlint.python.analyze_python`, `jinja.analyze.analyze_template`) resolve it at the door
(`plan_of`, `as_python_part`, `as_template_part`).
The tokenizer file of a source is decided here and nowhere else (`source_tokenizer_file`; loading
it, with the fallback for a broken neighbour, is prefixlint/models/tokens.py's); `plan_for` is what
`check --show-settings` prints of one source.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.core.limits import Limits
from prefixlint.models.tokens import TokenizerError, resolve_tokenizer_path, tokenizer_path_for
from prefixlint.settings import per_file_ignored

if TYPE_CHECKING:
    from prefixlint.engines import Engine
    from prefixlint.settings import Options

# Options that only filter results; every other field is assumed to change the analysis (and is in
# the result cache's key).
FILTER_OPTIONS = frozenset(
    {
        "select",
        "extend_select",
        "ignore",
        "per_file_ignores",
        "excludes",
        "exclude",
        "extend_exclude",
        "force_exclude",
        "suppressions",
        "cache_dir",
        "root",
    }
)


@dataclass(frozen=True)
class TemplatePart:
    """What rendering and analysing a template needs: its limits, the variables fixed or varied,
    whether turns are checked, where includes are looked for, the engine and the `--tokenizer`."""

    limits: Limits = field(default_factory=Limits)
    template_vars: dict[str, Any] = field(default_factory=dict)  # `--var`, `--chat-template-kwargs`
    static_variables: tuple[str, ...] = ()
    dynamic_variables: tuple[str, ...] = ()
    multiturn: bool = True
    project_root: str | None = None
    search_path: tuple[str, ...] = ()  # config `template-search-path`, after the project root
    engine: Engine | None = None
    tokenizer: str | None = None  # `--tokenizer` (None: each source's own, tokens.choose_tokenizer)


@dataclass(frozen=True)
class PythonPart:
    """What the Python frontend needs: the project, its own sinks and table rows, how far a guess
    may go, whether prompts are counted in tokens, and the template part of embedded templates."""

    project_root: str | None
    sinks: tuple[str, ...]
    sink_rows: tuple[str, ...]
    source_rows: tuple[str, ...]
    guess_severity: str
    numbers: bool
    template: TemplatePart

    @property
    def engine(self) -> Engine | None:
        return self.template.engine

    @property
    def tokenizer(self) -> str | None:
        return self.template.tokenizer


@dataclass(frozen=True)
class FixPart:
    """What verifying a fix needs besides the analysis itself: the engine's cache block (a fix must
    recover at least one) and the template part its renders use."""

    block: int
    template: TemplatePart


@dataclass(frozen=True)
class RunPlan:
    """A run's settings resolved: the engine, the codes, the switches and each stage's part."""

    engine_name: str
    engine: Engine | None
    enabled: frozenset[str]
    tokenizer: str | None  # `--tokenizer`
    cache_dir: str | None
    fixes: bool
    suppressions: bool
    limits: Limits
    root: str  # the folder config globs are relative to
    template_kinds: tuple[tuple[str, str], ...]
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...]
    template: TemplatePart
    python: PythonPart
    fix: FixPart
    analysis_key: str  # every setting that changes an analysis, as the result cache keys it
    # Discovery: `--exclude`s of the command line, config excludes, and what to do with them.
    excludes: tuple[str, ...] = ()
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    force_exclude: bool = False
    respect_gitignore: bool = True

    def codes_for(self, path: str) -> set[str]:
        """The codes reported for `path`: the selection less its `per-file-ignores`."""
        return set(self.enabled) - per_file_ignored(Path(self.root), self.per_file_ignores, path)

    def source(self, path: str, kind: str) -> SourcePlan:
        """What the run does with one source: its tokenizer file, engine block and rules."""
        return SourcePlan(
            path=path,
            kind=kind,
            tokenizer_file=source_tokenizer_file(path, kind, self.tokenizer),
            engine=self.engine_name,
            block_size=self.engine.block_size if self.engine is not None else None,
            rules=tuple(sorted(self.codes_for(path))),
            template_vars=dict(self.template.template_vars),
        )


def template_part(options: Options) -> TemplatePart:
    return TemplatePart(
        limits=options.limits,
        template_vars=dict(options.template_vars),
        static_variables=options.static_variables,
        dynamic_variables=options.dynamic_variables,
        multiturn=options.multiturn,
        project_root=options.project_root,
        search_path=options.template_search_path,
        engine=options.engine_profile(),
        tokenizer=options.tokenizer,
    )


def python_part(options: Options, template: TemplatePart | None = None) -> PythonPart:
    return PythonPart(
        project_root=options.project_root,
        sinks=options.python_sinks,
        sink_rows=options.python_sink_rows,
        source_rows=options.python_source_rows,
        guess_severity=options.python_guess_severity,
        numbers=options.python_numbers,
        template=template or template_part(options),
    )


def fix_part(options: Options, template: TemplatePart | None = None) -> FixPart:
    template = template or template_part(options)
    return FixPart(max(template.engine.block_size if template.engine is not None else 1, 1), template)


def as_template_part(settings: TemplatePart | Options) -> TemplatePart:
    """The template part of `settings`: a stage's public entry also takes a library caller's
    `Options`, resolved here at its door (the run hands it the part)."""
    return settings if isinstance(settings, TemplatePart) else template_part(settings)


def as_python_part(settings: PythonPart | Options) -> PythonPart:
    """The python part of `settings` (as_template_part)."""
    return settings if isinstance(settings, PythonPart) else python_part(settings)


def plan_of(settings: RunPlan | Options) -> RunPlan:
    """The run plan of `settings`: a library caller's `Options` resolve here (as_template_part)."""
    return settings if isinstance(settings, RunPlan) else resolve(settings)


def prepare(options: Options, paths: list[str]) -> RunPlan:
    """The plan of a run of `options` over `paths`: a `--tokenizer` that names nothing usable fails
    here (TokenizerError), before any output, and the project root is found from the paths when
    the config gave none."""
    if options.project_root is None:
        from dataclasses import replace

        from prefixlint.core.files import project_root

        options = replace(options, project_root=project_root(paths))
    run = resolve(options)  # pure: it raises nothing, so the tokenizer's error still comes first
    if run.tokenizer is not None:
        resolve_tokenizer_path(run.tokenizer)
    return run


def resolve(options: Options) -> RunPlan:
    """The plan of a run with `options` (its `project_root` already found, `prepare`)."""
    template = template_part(options)
    python, fix = python_part(options, template), fix_part(options, template)
    analysed = {
        f.name: repr(getattr(options, f.name)) for f in fields(options) if f.name not in FILTER_OPTIONS
    }
    return RunPlan(
        engine_name=options.engine,
        engine=template.engine,
        enabled=frozenset(options.enabled_codes()),
        tokenizer=options.tokenizer,
        cache_dir=options.cache_dir,
        fixes=options.fixes,
        suppressions=options.suppressions,
        limits=options.limits,
        root=options.root or ".",
        template_kinds=options.template_kinds,
        per_file_ignores=options.per_file_ignores,
        template=template,
        python=python,
        fix=fix,
        analysis_key=json.dumps(analysed),
        excludes=options.excludes,
        exclude=options.exclude,
        extend_exclude=options.extend_exclude,
        force_exclude=options.force_exclude,
        respect_gitignore=options.respect_gitignore,
    )


# -- the tokenizer of a source: decided here alone -----------------------------------------------


def tokenizer_file_for(folder: str, spec: str | None) -> str | None:
    """The tokenizer file that analyses the sources in `folder`: `--tokenizer` (`spec`) if given,
    else a tokenizer.json beside them, else the embedded default; None when `spec` cannot be
    resolved (loading it reports why)."""
    try:
        return str(tokenizer_path_for(Path(folder or "."), spec))
    except TokenizerError:
        return None


def source_tokenizer_file(path: str, kind: str, spec: str | None) -> str | None:
    """The tokenizer file that analyses one source: a GGUF model's own (unless `--tokenizer`
    names another), else its folder's (tokenizer_file_for)."""
    if kind == "gguf" and spec is None:
        return _own_tokenizer_file(path)
    return tokenizer_file_for(os.path.dirname(path), spec)


def tokenizer_files(
    sources: list[tuple[str, str]], spec: str | None
) -> tuple[dict[str, str | None], list[str | None]]:
    """The tokenizer file of each folder of `sources` ((path, kind) pairs) and of each source, as
    `source_tokenizer_file` decides it, looked up once per folder: 500 templates in one folder
    share one lookup."""
    folders = {
        f: tokenizer_file_for(f, spec) for f in dict.fromkeys(os.path.dirname(p) or "." for p, _ in sources)
    }
    files = [
        _own_tokenizer_file(path)
        if kind == "gguf" and spec is None
        else folders[os.path.dirname(path) or "."]
        for path, kind in sources
    ]
    return folders, files


def _own_tokenizer_file(path: str) -> str | None:
    try:
        return str(resolve_tokenizer_path(path))
    except TokenizerError:
        return None


@dataclass(frozen=True)
class SourcePlan:
    """What a run does with one source, as `check --show-settings` prints it."""

    path: str
    kind: str
    tokenizer_file: str | None
    engine: str
    block_size: int | None
    rules: tuple[str, ...]
    template_vars: dict[str, Any]


def plan_for(path: str, kind: str, options: Options) -> SourcePlan:
    """The plan of one source of a run with `options` (`check --show-settings`)."""
    return resolve(options).source(path, kind)
