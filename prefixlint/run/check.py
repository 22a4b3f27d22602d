"""One `check` run over paths with its plan: the sources found, what the result cache holds served,
the rest analysed (prefixlint/run/schedule.py), and the raw results filtered (filters.py) into a
`Report`, with every path the run read (the stamps a recorded run is replayed on)."""

from __future__ import annotations

import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from prefixlint.core.files import decode_source, read_limited
from prefixlint.core.findings import Diagnostic, Severity, SourceResult
from prefixlint.core.fingerprint import stamp
from prefixlint.models.tokens import TokenizerError, load_tokenizer, resolve_tokenizer_path
from prefixlint.plan import RunPlan, tokenizer_files
from prefixlint.run.filters import apply_filters, drop_repeats
from prefixlint.run.schedule import Analyse, lint_all
from prefixlint.run.sources import Source, iter_sources, uses_includes


@dataclass
class Report:
    tokenizer: str
    engine: str
    sources: list[SourceResult]
    # Every path the run read or listed (folders walked, sources and their folders, tokenizer
    # files): the stamps a recorded run is replayed on (prefixlint/run/runmemo.py).
    inputs: list[str] = field(default_factory=list)
    # False when a template includes other files: they are not among `inputs`, so the run must
    # not be replayed on them.
    replayable: bool = True
    template_vars: dict[str, Any] = field(default_factory=dict)  # `--var`, `--chat-template-kwargs`
    # `check --fix`: the fixes written (prefixlint.fixes.autofix.Applied), and whether unsafe ones apply
    # (`--unsafe-fixes`: the reporters mark those fixable too).
    fixed: list[Any] = field(default_factory=list)
    unsafe_fixes: bool = False

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return sorted((d for s in self.sources for d in s.diagnostics), key=Diagnostic.sort_key)

    def worst(self) -> Severity | None:
        return max((d.severity for d in self.diagnostics), default=None)


def check_paths(paths: list[str], run: RunPlan, workers: int | None, analyse: Analyse) -> Report:
    """Every source under `paths` analysed (`analyse`, prefixlint.api.analyse_source) with the plan
    `run`, served from the result cache where it holds them, and filtered.
    `workers`: processes to analyse in (None: every core when there are many sources, else 1)."""
    if "prefixlint.python.project" in sys.modules:  # loaded by an earlier run of this process
        sys.modules["prefixlint.python.project"].forget_disk()
    if "prefixlint.python.dispatch" in sys.modules:
        sys.modules["prefixlint.python.dispatch"].forget()
    if "prefixlint.python.hierarchy" in sys.modules:  # classes may have been added since
        sys.modules["prefixlint.python.hierarchy"].forget()
    if "prefixlint.python.evaluate.callsites" in sys.modules:  # callers may have been added since
        sys.modules["prefixlint.python.evaluate.callsites"].forget()
    if "prefixlint.python.registries" in sys.modules:  # registered classes may have been added since
        sys.modules["prefixlint.python.registries"].forget()
    if "prefixlint.python.reachability" in sys.modules:  # references may have been added since
        sys.modules["prefixlint.python.reachability"].forget()
    if "prefixlint.jinja.reach" in sys.modules:  # which templates the code names may have changed
        sys.modules["prefixlint.jinja.reach"].forget()
    cache = None
    if run.cache_dir is not None:
        from prefixlint.run.cache import ResultCache

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
    folder_files, files = tokenizer_files([(s.path, s.kind) for s in sources], run.tokenizer)
    folders = {f: file or str(run.tokenizer) for f, file in folder_files.items()}  # the key's
    keys = [
        cache.key(s, data, run.analysis_key, folders[_folder(s)])
        if cache is not None and data is not None and not inc
        else None
        for s, data, inc in zip(sources, contents, includes, strict=True)
    ]
    found: list[list[SourceResult] | None] = [cache.get(k) if cache is not None else None for k in keys]
    missing = [i for i, f in enumerate(found) if f is None]
    for i, fresh in zip(
        missing,
        lint_all(
            [sources[i] for i in missing],
            run,
            workers,
            analyse,
            [files[i] for i in missing],
            [contents[i] for i in missing],
        ),
        strict=True,
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


def _inputs(walked: list[str], sources: list[Source], folders: dict[str, str]) -> list[str]:
    """What the run read or listed. A source's folder is there because a tokenizer.json or
    tokenizer_config.json appearing beside it changes its analysis."""
    from prefixlint.run.cache import tokenizer_inputs

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
