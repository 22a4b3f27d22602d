"""What `prefixlint explain` does with its arguments (cli.py keeps only the option list)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefixlint.api import read_text
from prefixlint.engines import Engine, load_engines
from prefixlint.jinja.template import ChatTemplate
from prefixlint.settings import Options
from prefixlint.sources import ConfigError, source_kind, templates_in_tokenizer_config
from prefixlint.tokens import LoadedTokenizer, choose_tokenizer, load_tokenizer, special_tokens_for

DEFAULT_ENGINES = ("vllm", "sglang", "openai")
TEMPLATE_SUFFIXES = (".jinja", ".j2")


class ExplainError(Exception):
    """A usage problem (exit 2) with the message to show."""


def _template_from(path: Path, tokenizer: LoadedTokenizer) -> ChatTemplate:
    if source_kind(path) == "gguf":
        from prefixlint.gguf import GGUFError, source_name, template_named

        try:
            found = template_named(path)
        except GGUFError as exc:
            raise ExplainError(f"{path}: {exc}") from exc
        return ChatTemplate(
            found.source, source_name(str(path), found.name), special_tokens=tokenizer.special_tokens
        )
    text = read_text(str(path))
    if path.name.endswith(".json"):
        named = templates_in_tokenizer_config(text)
        if not named:
            raise ExplainError(f"{path}: no chat_template in it")
        special = special_tokens_for(str(path), tokenizer)
        return ChatTemplate(named[0].source, str(path), special_tokens=special, fixed_line=named[0].line)
    return ChatTemplate(text, str(path), special_tokens=special_tokens_for(str(path), tokenizer))


def resolve(
    template: str | None, model_dir: str | None, tokenizer: str | None
) -> tuple[ChatTemplate | None, LoadedTokenizer]:
    """The template (from --template, else the model folder's chat_template.jinja or
    tokenizer_config.json, else none) and the tokenizer (--tokenizer, else the model folder's, else
    the one beside the template, else the embedded default)."""
    loaded = load_tokenizer(tokenizer or model_dir) if (tokenizer or model_dir) else None
    candidates: list[Path] = []
    if template:
        candidates.append(Path(template))
    for folder in (model_dir, tokenizer):
        if folder and source_kind(folder) == "gguf" and Path(folder).is_file():
            candidates.append(Path(folder))  # a GGUF model holds its chat template
        if folder and Path(folder).is_dir():
            candidates += [Path(folder) / "chat_template.jinja", Path(folder) / "tokenizer_config.json"]
    for path in candidates:
        if path.is_file():
            if loaded is None:
                loaded = choose_tokenizer(str(path), None)[0]
            try:
                return _template_from(path, loaded), loaded
            except ConfigError as exc:
                if template and path == Path(template):
                    raise ExplainError(f"{path}: {exc}") from exc
    return None, loaded or load_tokenizer(None)


def engines_for(names: tuple[str, ...], **server: int | None) -> list[Engine]:
    """The engines to simulate; `server` (slots, cache_ram_mib) overrides the llama-server settings
    of the engines that replay one."""
    known = load_engines()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ExplainError(f"unknown engine {unknown[0]!r}; known: {', '.join(sorted(known))}")
    chosen = [known[n] for n in names or DEFAULT_ENGINES]
    given = {key: value for key, value in server.items() if value is not None}
    if given:
        from dataclasses import replace

        if "slots" in given:  # -np N given: no unified KV cache unless asked for
            given.setdefault("kv_unified", False)
        chosen = [replace(e, server=replace(e.server, **given)) if e.server else e for e in chosen]
    return chosen


def is_template(path: str) -> bool:
    name = Path(path).name
    return name.endswith((*TEMPLATE_SUFFIXES, ".gguf")) or name == "tokenizer_config.json"


def run(
    paths: tuple[str, ...],
    *,
    log: str | None,
    template: str | None,
    model_dir: str | None,
    tokenizer: str | None,
    engines: tuple[str, ...],
    cache_tokens: int | None,
    top: int,
    what_if: int,
    interval: float,
    fmt: str,
    html_path: str | None,
    template_vars: dict[str, Any] | None = None,
    llamacpp_slots: int | None = None,
    llamacpp_cache_ram: int | None = None,
) -> str:
    """The text (or JSON) to print; raises ExplainError for usage problems. `template_vars`
    (`--var`, `--chat-template-kwargs`) are passed to every render, as vLLM's chat_template_kwargs."""
    template_vars = template_vars or {}
    chosen = engines_for(engines, slots=llamacpp_slots, cache_ram_mib=llamacpp_cache_ram)
    if log is None and len(paths) == 1 and is_template(paths[0]):
        from prefixlint.api import lint_paths
        from prefixlint.explain.narrate import narrate, narrate_json

        options = Options(tokenizer=tokenizer, engine=chosen[0].name, template_vars=template_vars)
        report = lint_paths([paths[0]], options)
        if fmt == "json":
            return json.dumps(narrate_json(report.sources), indent=2) + "\n"
        return narrate(report.sources)
    if log is None and len(paths) != 2:
        raise ExplainError("give two requests (A B), a template, or --log FILE")
    if log is not None and paths:
        raise ExplainError("give either --log FILE or requests, not both")
    chat_template, loaded = resolve(template, model_dir, tokenizer)
    from prefixlint.explain.requests import Renderer, RequestError, read_request_file

    renderer = Renderer(chat_template)
    renderer.template.extra_kwargs.update(template_vars)
    if log is None:
        from prefixlint.explain.pair import explain_pair, pair_text

        try:
            a, b = read_request_file(paths[0]), read_request_file(paths[1])
        except (OSError, RequestError) as exc:
            raise ExplainError(str(exc)) from exc
        result = explain_pair(a, b, renderer, loaded, chosen)
        result["tokenizer"] = loaded.name
        result["template"] = chat_template.path if chat_template else None
        result["template_variables"] = template_vars
        if fmt == "json":
            return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
        return pair_text(result, (paths[0], paths[1]))

    from prefixlint.explain.log import explain_log, log_text

    report = explain_log(
        log, renderer, loaded, chosen, capacity=cache_tokens, top=top, what_ifs=what_if, interval=interval
    )
    data: dict[str, Any] = report.to_json()
    data["tokenizer"] = loaded.name
    data["template"] = chat_template.path if chat_template else None
    data["template_variables"] = template_vars
    if html_path:
        from prefixlint.explain.html import render_html

        Path(html_path).write_text(render_html(data, report.representative, report.primary), encoding="utf-8")
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return log_text(report)
