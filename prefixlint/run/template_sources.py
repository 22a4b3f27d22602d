"""The Jinja stage's entry for a source file: a template file (a chat template or an app's prompt
template), the named templates of a tokenizer_config.json, or each chat template in a GGUF model's
metadata, analysed with the template part of the run plan and the tokenizer chosen for the source;
and the demotion of an app template's findings when no code of its project renders it."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from prefixlint.core.findings import Diagnostic, Severity, SourceResult, Span
from prefixlint.core.fingerprint import stamp
from prefixlint.models.tokens import (
    LoadedTokenizer,
    TokenizerError,
    choose_tokenizer,
    load_tokenizer,
    read_special_tokens,
    resolve_tokenizer_path,
    special_tokens_for,
)
from prefixlint.run.sources import NamedTemplate, Source

if TYPE_CHECKING:
    from prefixlint.plan import TemplatePart


def judge_reach(source: Source, results: list[SourceResult], part: TemplatePart) -> None:
    """The findings of an app's template that no code of its project renders are info at most
    (prefixlint/jinja/reach.py); a template file without prompt text of its own, taken for a chat
    template only for want of a sign, is judged so too."""
    if not any(r.diagnostics for r in results):
        return
    from prefixlint.jinja.loader import project_root
    from prefixlint.jinja.reach import demote_unrendered, unrendered

    dead, deciding = unrendered(source.path, project_root(source.path, part.project_root))
    for result in results:
        if dead:
            result.diagnostics = demote_unrendered(result.diagnostics)
        result.dependencies += [stamp(p) for p in deciding if p != os.path.abspath(source.path)]


def lint_gguf(source: Source, part: TemplatePart, file: str | None = None) -> list[SourceResult]:
    """Each chat template in a GGUF model's metadata, as a source named `model.gguf[chat_template]`
    whose lines are the template's; analysed with the model's own tokenizer unless `--tokenizer`
    names another. A file that is no readable GGUF is PFX001 naming it. `file` stands in for the
    source's file (the diff gate's old version)."""
    from prefixlint.models.gguf import GGUFError, chat_templates, read_metadata, source_name

    try:
        metadata = read_metadata(file or resolve_tokenizer_path(source.path))
    except (OSError, GGUFError, TokenizerError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        diag = Diagnostic("PFX001", Span(source.path), f"not a readable GGUF model: {reason}", Severity.ERROR)
        return [SourceResult(source.path, source.kind, diagnostics=[diag])]
    templates = chat_templates(metadata)
    if not templates:
        note = f"{source.path}: no tokenizer.chat_template in this GGUF: nothing checked"
        return [SourceResult(source.path, source.kind, notes=[note])]

    def lint(tokenizer: LoadedTokenizer, note: str | None) -> list[SourceResult]:
        special = {**tokenizer.special_tokens, **_gguf_special_tokens(source.path, tokenizer)}
        notes = [*tokenizer.notes, *([note] if note else [])]
        results = []
        for t in templates:
            named = Source(source_name(source.path, t.name), source.kind)
            results += lint_templates(named, t.source, None, part, tokenizer, None, special=special)
        for result in results:
            result.notes.extend(notes)
        return results

    choice = choose_tokenizer(source.path, part.tokenizer, wait=False)
    try:
        results = lint(*choice)
        choice[0].check()
    except TokenizerError:
        retry = choose_tokenizer(source.path, part.tokenizer)
        if retry[0] is choice[0]:
            raise
        results = lint(*retry)
    return results


def _gguf_special_tokens(path: str, tokenizer: LoadedTokenizer) -> dict[str, str]:
    """The GGUF's own `bos_token`, … for its templates, also when `--tokenizer` names another."""
    if tokenizer.path == str(resolve_tokenizer_path(path)):
        return {}
    try:
        return load_tokenizer(path).special_tokens
    except TokenizerError:
        return {}


def lint_templates(
    source: Source,
    text: str,
    named: list[NamedTemplate] | None,
    part: TemplatePart,
    tokenizer: LoadedTokenizer,
    tokenizer_note: str | None,
    prompt: bool = False,
    special: dict[str, str] | None = None,
) -> list[SourceResult]:
    """The results of a template file, or of the `named` templates of a tokenizer_config.json;
    `prompt`: the file is an app prompt template (prefixlint/jinja/prompt.py)."""
    from prefixlint.jinja.analyze import analyze_template  # not for Python sources: ~60 ms of imports
    from prefixlint.jinja.template import ChatTemplate

    if prompt:
        from prefixlint.jinja.loader import project_root
        from prefixlint.jinja.prompt import PromptTemplate, analyze_prompt_template

        search = (project_root(source.path, part.project_root), *part.search_path)
        template = PromptTemplate(text, source.path, limits=part.limits, search_path=search)
        result = analyze_prompt_template(template, tokenizer, part)
        result.variables = _variables(lambda: template.inputs)
        if tokenizer_note:
            result.notes.append(tokenizer_note)
        return [result]
    if named is not None:
        special = read_special_tokens(Path(source.path)) or dict(tokenizer.special_tokens)
        templates = [
            ChatTemplate(
                t.source,
                source.path,
                name=t.name if len(named) > 1 else "",
                special_tokens=special,
                limits=part.limits,
                fixed_line=t.line,
            )
            for t in named
        ]
    else:
        special = special if special is not None else special_tokens_for(source.path, tokenizer)
        templates = [ChatTemplate(text, source.path, special_tokens=special, limits=part.limits)]
    results = []
    for template in templates:
        template.extra_kwargs.update(part.template_vars)
        result = analyze_template(template, tokenizer, part)
        result.kind = source.kind
        result.variables = _variables(lambda t=template: t.reads)
        if tokenizer_note:
            result.notes.append(tokenizer_note)
        results.append(result)
    return results


def _variables(reads: Callable[[], list[str]]) -> list[str] | None:
    """What a template reads from its caller; None when it does not compile (nothing to say)."""
    try:
        return reads()
    except Exception:  # noqa: BLE001 - a syntax error is the template's finding, reported already
        return None
