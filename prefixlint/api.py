"""The library entry point: `lint_paths` analyses sources and returns results; it never prints."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from prefixlint.files import MAX_SOURCE_BYTES, read_limited
from prefixlint.jinja.environment import Limits
from prefixlint.model import Diagnostic, Severity, SourceResult, Span
from prefixlint.rules import RULES, resolve_selector
from prefixlint.sources import ConfigError, Source, discover, templates_in_tokenizer_config
from prefixlint.tokens import LoadedTokenizer, TokenizerError, find_tokenizer_file, load_tokenizer, read_special_tokens


@dataclass
class Options:
    tokenizer: str | None = None  # None: a tokenizer.json beside the template, else the embedded default
    engine: str = "vllm"
    excludes: tuple[str, ...] = ()
    select: tuple[str, ...] = ("ALL",)
    ignore: tuple[str, ...] = ()
    limits: Limits = field(default_factory=Limits)
    multiturn: bool = True
    # Template variables this app keeps fixed, and ones it passes per request (config `variables`).
    static_variables: tuple[str, ...] = ()
    dynamic_variables: tuple[str, ...] = ()

    def enabled_codes(self) -> set[str]:
        codes = {c for s in self.select for c in resolve_selector(s)}
        return codes - {c for s in self.ignore for c in resolve_selector(s)}


@dataclass
class Report:
    tokenizer: str
    engine: str
    sources: list[SourceResult]

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return sorted((d for s in self.sources for d in s.diagnostics), key=Diagnostic.sort_key)

    def worst(self) -> Severity | None:
        return max((d.severity for d in self.diagnostics), default=None)


def read_text(path: str, max_bytes: int = MAX_SOURCE_BYTES) -> str:
    """A source's text; raises ValueError with a reason for binary, non-UTF-8, too large or
    non-regular files (prefixlint.files), OSError for unreadable ones and symlink loops."""
    data = read_limited(path, max_bytes)
    if b"\x00" in data[:8192]:
        raise ValueError("binary file (NUL bytes), not a text source")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 text (byte {exc.start})") from exc


def tokenizer_for(source_path: str, options: Options) -> LoadedTokenizer:
    """`--tokenizer` if given; else a tokenizer.json beside the source; else the embedded default."""
    if options.tokenizer is not None:
        return load_tokenizer(options.tokenizer)
    beside = find_tokenizer_file(Path(source_path).parent)
    if beside is not None:
        try:
            return load_tokenizer(str(beside))
        except TokenizerError:
            pass  # a broken neighbour should not stop the run: the default still gives an answer
    return load_tokenizer(None)


def special_tokens_for(source_path: str, tokenizer: LoadedTokenizer) -> dict[str, str]:
    """`bos_token`, `eos_token`, … from the tokenizer_config.json beside the template, else the tokenizer's."""
    beside = Path(source_path).parent / "tokenizer_config.json"
    tokens = read_special_tokens(beside) if beside.is_file() else {}
    return tokens or dict(tokenizer.special_tokens)


def _lint_source(source: Source, options: Options) -> list[SourceResult]:
    from prefixlint.jinja.analyze import analyze_template
    from prefixlint.jinja.template import ChatTemplate

    bad_input_code = "PFX003" if source.kind == "python" else "PFX001"
    try:
        text = read_text(source.path, options.limits.file_bytes)
    except (OSError, ValueError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        diag = Diagnostic(bad_input_code, Span(source.path), f"cannot read: {reason}", Severity.ERROR)
        return [SourceResult(source.path, source.kind, diagnostics=[diag])]

    if source.kind == "python":
        from prefixlint.python import analyze_python

        return [analyze_python(source.path, text, options)]

    tokenizer = tokenizer_for(source.path, options)
    if source.kind == "tokenizer_config":
        try:
            named = templates_in_tokenizer_config(text)
        except ConfigError as exc:
            diag = Diagnostic("PFX001", Span(source.path), f"tokenizer_config.json: {exc}", Severity.ERROR)
            return [SourceResult(source.path, source.kind, diagnostics=[diag])]
        special = read_special_tokens(Path(source.path)) or dict(tokenizer.special_tokens)
        templates = [
            ChatTemplate(t.source, source.path, name=t.name if len(named) > 1 else "", special_tokens=special,
                         limits=options.limits, fixed_line=t.line)
            for t in named
        ]
    else:
        special = special_tokens_for(source.path, tokenizer)
        templates = [ChatTemplate(text, source.path, special_tokens=special, limits=options.limits)]
    results = []
    for template in templates:
        result = analyze_template(template, tokenizer, options)
        result.kind = source.kind
        results.append(result)
    return results


def lint_paths(paths: list[str], options: Options) -> Report:
    """Analyse every source under `paths`; raises TokenizerError for an unusable `--tokenizer`."""
    if options.tokenizer is not None:
        default_name = load_tokenizer(options.tokenizer).name  # fail early, before any output
    else:
        default_name = "auto: tokenizer.json beside each template, else deepseek (embedded default)"
    enabled = options.enabled_codes()
    results: list[SourceResult] = []
    for source in discover(paths, options.excludes):
        for result in _lint_source(source, options):
            result.diagnostics = sorted(
                (d for d in result.diagnostics if d.code in enabled), key=Diagnostic.sort_key
            )
            results.append(result)
    return Report(tokenizer=default_name, engine=options.engine, sources=results)


__all__ = ["Options", "Report", "lint_paths", "RULES"]
