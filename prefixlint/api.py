"""The library entry point: `lint_paths` analyses sources and returns results; it never prints.

`lint_paths(paths, options)` resolves the settings once into a run plan (prefixlint/plan.py) and
hands it to the run (prefixlint/run/check.py: sources found, the result cache, the analyses
scheduled, the filters). Each analysis is `analyse_source` here: the frontend of the source's kind
with its part of the plan (`lint_source`), then the verified fixes. `lint_source` and
`analyse_source` also take a library caller's `Options`; `Options`, `Report`, `iter_sources` and
`list_sources` are re-exported for library callers."""

from __future__ import annotations

from dataclasses import replace

from prefixlint.core.files import read_text
from prefixlint.core.findings import Diagnostic, Severity, SourceResult, Span
from prefixlint.core.rules import RULES
from prefixlint.jinja.classify import FALLBACK_REASON
from prefixlint.models.tokens import (
    LoadedTokenizer,
    TokenizerError,
    choose_tokenizer,
)
from prefixlint.plan import RunPlan, plan_of, prepare
from prefixlint.run.check import Report, check_paths
from prefixlint.run.sources import (
    ConfigError,
    Source,
    classify_source,
    iter_sources,
    list_sources,
    templates_in_tokenizer_config,
)
from prefixlint.run.template_sources import judge_reach, lint_gguf, lint_templates
from prefixlint.settings import Options


def tokenizer_for(source_path: str, options: Options) -> LoadedTokenizer:
    """The tokenizer that analyses the source at `source_path` (tokens.choose_tokenizer)."""
    return choose_tokenizer(source_path, options.tokenizer)[0]


def lint_source(source: Source, options: RunPlan | Options, text: str | None = None) -> list[SourceResult]:
    """The raw results of one source; `text` stands in for the file's (the diff gate's old blob)."""
    run = plan_of(options)
    if source.kind == "gguf":
        return lint_gguf(source, run.template)
    bad_input_code = "PFX003" if source.kind == "python" else "PFX001"
    try:
        text = read_text(source.path, run.limits.file_bytes) if text is None else text
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        diag = Diagnostic(bad_input_code, Span(source.path), f"cannot read: {reason}", Severity.ERROR)
        return [SourceResult(source.path, source.kind, diagnostics=[diag])]

    classification = classify_source(source, text, run.template_kinds, run.root)
    if classification.kind == "not_prompt":
        note = f"{source.path}: skipped, not a prompt: {classification.reason}"
        return [SourceResult(source.path, "not_prompt", notes=[note])]
    if source.kind == "python":
        from prefixlint.python import analyze_python

        return [_scaffolding_severity(analyze_python(source.path, text, run.python))]
    prompt = classification.kind == "prompt_template"

    named = None
    if source.kind == "tokenizer_config":
        try:
            named = templates_in_tokenizer_config(text)
        except ConfigError as exc:
            diag = Diagnostic("PFX001", Span(source.path), f"tokenizer_config.json: {exc}", Severity.ERROR)
            return [SourceResult(source.path, source.kind, diagnostics=[diag])]
        if not named:  # a base model's config: nothing to check, so no tokenizer to load (~0.5 s)
            note = f"{source.path}: no chat_template in this tokenizer_config.json: nothing checked"
            return [SourceResult(source.path, source.kind, notes=[note])]

    # A tokenizer still loading in a helper is used unchecked: its load overlaps compiling and
    # rendering. If it turns out broken, the source is analysed again with what `choose_tokenizer`
    # then picks (the embedded default and a note for a broken neighbour), as without helpers.
    choice = choose_tokenizer(source.path, run.tokenizer, wait=False)
    try:
        results = lint_templates(source, text, named, run.template, *choice, prompt=prompt)
        choice[0].check()  # an error the analysis swallowed still counts
    except TokenizerError:
        retry = choose_tokenizer(source.path, run.tokenizer)
        if retry[0] is choice[0]:
            raise
        results = lint_templates(source, text, named, run.template, *retry, prompt=prompt)
    if source.kind == "jinja" and (prompt or classification.reason == FALLBACK_REASON):
        judge_reach(source, results, run.template)
    return results


def analyse_source(source: Source, options: RunPlan | Options) -> list[SourceResult]:
    """`lint_source` of a source file, each cache-busting finding with its verified fix (or a hint
    that says there is none) when the plan says fixes (prefixlint/fixes/verify.py). The texts it encodes
    are remembered for its next analysis, when the result cache is on (prefixlint/models/token_memo.py)."""
    from prefixlint.models.token_memo import remembering

    run = plan_of(options)
    # Without a result cache, verifying fixes still reads the check's encodings from memory: each
    # candidate is an analysis of nearly the same text (an h2ogpt module: 87 s of encoding each).
    with remembering(run.cache_dir, source.path, in_memory=run.fixes):
        results = lint_source(source, run)
        if run.fixes and any(r.diagnostics for r in results):
            from prefixlint.fixes.verify import attach_fixes

            text = ""  # a GGUF is never edited: its findings only get words
            if source.kind != "gguf":
                try:
                    text = read_text(source.path, run.limits.file_bytes)
                except (OSError, ValueError):
                    return results
            # The fixed texts are analysed as the source was: this module's `lint_source`, looked
            # up when called (a test counts the analyses by replacing it).
            attach_fixes(source, text, results, run.fix, lambda fixed: lint_source(source, run, fixed))
    return results


def _scaffolding_severity(result: SourceResult) -> SourceResult:
    """A .py of project scaffolding (`{{cookiecutter.name}}/`, `templates/`) that does not parse is
    a template, not broken code: its PFX003 is info."""

    from prefixlint.jinja.classify import scaffolding_path

    if scaffolding_path(result.path):
        result.diagnostics = [
            replace(d, severity=Severity.INFO, message=f"{d.message} (in project scaffolding)")
            if d.code == "PFX003"
            else d
            for d in result.diagnostics
        ]
    return result


def lint_paths(paths: list[str], options: Options, workers: int | None = None) -> Report:
    """Analyse every source under `paths`; raises TokenizerError for an unusable `--tokenizer`.
    `workers`: processes to analyse in (None: every core when there are many sources, else 1)."""
    return check_paths(paths, prepare(options, paths), workers, analyse_source)


__all__ = [
    "Options",
    "Report",
    "lint_paths",
    "lint_source",
    "analyse_source",
    "iter_sources",
    "list_sources",
    "RULES",
]
