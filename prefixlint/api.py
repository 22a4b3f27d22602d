"""The library entry point: `lint_paths` analyses sources and returns results; it never prints.

`lint_paths(paths, options)` resolves the settings once into a run plan (prefixlint/plan.py),
finds the sources, serves what the result cache holds, analyses the rest (`analyse_source`: the
frontend of each kind with its part of the plan, then the verified fixes), in this process with
tokenizers loading in helpers ahead of use, or across pool workers, and filters the raw results
(prefixlint/filters.py) into a `Report`. `lint_source` is the analysis of one source; both also
take a library caller's `Options`."""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from prefixlint.files import decode_source, read_limited, read_text
from prefixlint.filters import apply_filters, drop_repeats
from prefixlint.fingerprint import stamp
from prefixlint.jinja.classify import FALLBACK_REASON
from prefixlint.model import Diagnostic, Severity, SourceResult, Span
from prefixlint.models.tokens import (
    LoadedTokenizer,
    TokenizerError,
    choose_tokenizer,
    load_tokenizer,
    resolve_tokenizer_path,
)
from prefixlint.plan import RunPlan, plan_of, resolve, tokenizer_file_for
from prefixlint.rules import RULES
from prefixlint.schedule import lint_all
from prefixlint.settings import Options
from prefixlint.sources import (
    ConfigError,
    Source,
    classify_source,
    discover,
    templates_in_tokenizer_config,
    uses_includes,
)
from prefixlint.template_sources import judge_reach, lint_gguf, lint_templates


@dataclass
class Report:
    tokenizer: str
    engine: str
    sources: list[SourceResult]
    # Every path the run read or listed (folders walked, sources and their folders, tokenizer
    # files): the stamps a recorded run is replayed on (prefixlint/runmemo.py).
    inputs: list[str] = field(default_factory=list)
    # False when a template includes other files: they are not among `inputs`, so the run must
    # not be replayed on them.
    replayable: bool = True
    template_vars: dict[str, Any] = field(default_factory=dict)  # `--var`, `--chat-template-kwargs`
    # `check --fix`: the fixes written (prefixlint.autofix.Applied), and whether unsafe ones apply
    # (`--unsafe-fixes`: the reporters mark those fixable too).
    fixed: list[Any] = field(default_factory=list)
    unsafe_fixes: bool = False

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return sorted((d for s in self.sources for d in s.diagnostics), key=Diagnostic.sort_key)

    def worst(self) -> Severity | None:
        return max((d.severity for d in self.diagnostics), default=None)


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
    that says there is none) when the plan says fixes (prefixlint/fixes.py). The texts it encodes
    are remembered for its next analysis, when the result cache is on (prefixlint/token_memo.py)."""
    from prefixlint.models.token_memo import remembering

    run = plan_of(options)
    # Without a result cache, verifying fixes still reads the check's encodings from memory: each
    # candidate is an analysis of nearly the same text (an h2ogpt module: 87 s of encoding each).
    with remembering(run.cache_dir, source.path, in_memory=run.fixes):
        results = lint_source(source, run)
        if run.fixes and any(r.diagnostics for r in results):
            from prefixlint.fixes import attach_fixes

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
    from dataclasses import replace

    from prefixlint.jinja.classify import scaffolding_path

    if scaffolding_path(result.path):
        result.diagnostics = [
            replace(d, severity=Severity.INFO, message=f"{d.message} (in project scaffolding)")
            if d.code == "PFX003"
            else d
            for d in result.diagnostics
        ]
    return result


def iter_sources(
    paths: list[str], options: Options | RunPlan, walked: list[str] | None = None
) -> Iterator[Source]:
    """The sources under `paths`, less the built-in, command-line and config excludes; the folders
    listed go to `walked`."""
    from prefixlint.pathmatch import PathMatcher
    from prefixlint.sources import DEFAULT_EXCLUDES

    matcher = PathMatcher(Path(options.root or "."), (options.exclude or ()) + options.extend_exclude)
    defaults = DEFAULT_EXCLUDES if options.exclude is None else ()
    return discover(
        paths,
        options.excludes,
        skip=matcher.matches,
        defaults=defaults,
        force_exclude=options.force_exclude,
        walked=walked,
        respect_gitignore=options.respect_gitignore,
    )


def list_sources(paths: list[str], options: Options | RunPlan) -> list[tuple[str, str, str]]:
    """(path, kind, why) of every source under `paths`, classified as `check` would, analysing
    nothing (`check --show-files`)."""
    out = []
    for source in iter_sources(paths, options):
        if source.kind == "gguf":  # binary: its chat templates are read from its metadata
            out.append((source.path, source.kind, "a GGUF model: each chat template in its metadata"))
            continue
        try:
            text = read_text(source.path, options.limits.file_bytes)
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            out.append((source.path, source.kind, f"cannot read: {reason}"))
            continue
        found = classify_source(source, text, options.template_kinds, options.root or ".")
        out.append((source.path, found.kind, found.reason))
    return out


def lint_paths(paths: list[str], options: Options, workers: int | None = None) -> Report:
    """Analyse every source under `paths`; raises TokenizerError for an unusable `--tokenizer`.
    `workers`: processes to analyse in (None: every core when there are many sources, else 1)."""
    if options.tokenizer is not None:
        resolve_tokenizer_path(options.tokenizer)  # fail early on a missing one, before any output
    if options.project_root is None:
        from prefixlint.files import project_root

        options = replace(options, project_root=project_root(paths))
    run = resolve(options)  # from here on, only the plan
    if "prefixlint.python.project" in sys.modules:  # loaded by an earlier run of this process
        sys.modules["prefixlint.python.project"].forget_disk()
    if "prefixlint.python.dispatch" in sys.modules:
        sys.modules["prefixlint.python.dispatch"].forget()
    if "prefixlint.python.hierarchy" in sys.modules:  # classes may have been added since
        sys.modules["prefixlint.python.hierarchy"].forget()
    if "prefixlint.python.valuecalls" in sys.modules:  # callers may have been added since
        sys.modules["prefixlint.python.valuecalls"].forget()
    if "prefixlint.python.registries" in sys.modules:  # registered classes may have been added since
        sys.modules["prefixlint.python.registries"].forget()
    if "prefixlint.jinja.reach" in sys.modules:  # which templates the code names may have changed
        sys.modules["prefixlint.jinja.reach"].forget()
    cache = None
    if run.cache_dir is not None:
        from prefixlint.cache import ResultCache

        cache = ResultCache(Path(run.cache_dir))
    walked: list[str] = []
    sources = list(iter_sources(paths, run, walked))
    # Read once: for the key and for suppressions.
    contents = [_read_bytes(s, run.limits.file_bytes) for s in sources]
    # A template that includes others depends on files the key does not cover: never cached.
    includes = [
        s.kind == "jinja" and data is not None and uses_includes(data)
        for s, data in zip(sources, contents, strict=True)
    ]
    folders = _folder_tokenizers(sources, run.tokenizer)
    keys = [
        cache.key(s, data, run.analysis_key, folders[_folder(s)])
        if cache is not None and data is not None and not inc
        else None
        for s, data, inc in zip(sources, contents, includes, strict=True)
    ]
    found: list[list[SourceResult] | None] = [cache.get(k) if cache is not None else None for k in keys]
    missing = [i for i, f in enumerate(found) if f is None]
    for i, fresh in zip(
        missing, lint_all([sources[i] for i in missing], run, workers, analyse_source), strict=True
    ):
        found[i] = fresh
        if cache is not None:
            cache.put(keys[i], fresh)
    results: list[SourceResult] = []
    for source, raw, data in zip(sources, found, contents, strict=True):
        assert raw is not None
        apply_filters(source, raw, run, _text_or_none(data))
        results.extend(raw)
    drop_repeats(results)
    if run.tokenizer is not None:
        # Named by the results when every source came from the cache (no tokenizer load at all).
        cached_name = next((r.tokenizer for r in results if r.tokenizer), None)
        default_name = cached_name or load_tokenizer(run.tokenizer).name
    else:
        default_name = "auto: tokenizer.json beside each template, else deepseek (embedded default)"
    inputs = _inputs(walked, sources, folders) + [dep[0] for r in results for dep in r.dependencies]
    report = Report(
        default_name, run.engine_name, results, inputs, template_vars=dict(run.template.template_vars)
    )
    report.replayable = not any(includes)
    return report


def _read_bytes(source: Source, max_bytes: int) -> bytes | None:
    if source.kind == "gguf":  # gigabytes of tensors: its identity stands for its bytes
        try:
            return json.dumps(stamp(str(resolve_tokenizer_path(source.path)))).encode()
        except TokenizerError:
            return None
    try:  # the same checks as the analysis: no FIFO read, no 1 GB file loaded to hash it
        return read_limited(source.path, max_bytes)
    except (OSError, ValueError):
        return None  # unreadable sources are not cached and are reported by the analysis


def _text_or_none(data: bytes | None) -> str | None:
    try:
        return decode_source(data) if data is not None else None
    except ValueError:
        return None


def _folder(source: Source) -> str:
    return os.path.dirname(source.path) or "."


def _folder_tokenizers(sources: list[Source], spec: str | None) -> dict[str, str]:
    """The tokenizer file of each folder of `sources` (plan.tokenizer_file_for; `spec` itself when
    it names none), looked up once per folder: 500 templates in one folder share one lookup."""
    return {f: tokenizer_file_for(f, spec) or str(spec) for f in dict.fromkeys(map(_folder, sources))}


def _inputs(walked: list[str], sources: list[Source], folders: dict[str, str]) -> list[str]:
    """What the run read or listed. A source's folder is there because a tokenizer.json or
    tokenizer_config.json appearing beside it changes its analysis."""
    from prefixlint.cache import tokenizer_inputs

    out = walked + [s.path for s in sources]
    for source in sources:
        if source.path.startswith("ollama:"):  # what the name resolves to: its manifest and blob
            from prefixlint.models.ollama import OllamaError, manifest_path, store_dir

            try:
                out += [str(manifest_path(source.path.removeprefix("ollama:"), store_dir()))]
                out += [str(resolve_tokenizer_path(source.path))]
            except (OllamaError, TokenizerError):
                pass
    for folder, tokenizer in folders.items():
        out += [folder, *tokenizer_inputs(folder, tokenizer)]
    return out


__all__ = ["Options", "Report", "lint_paths", "RULES"]
