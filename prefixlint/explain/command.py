"""What `prefixlint explain` does with its arguments (cli.py keeps only the option list)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from prefixlint.api import Options, read_text, special_tokens_for, tokenizer_for
from prefixlint.engines import Engine, load_engines
from prefixlint.jinja.template import ChatTemplate
from prefixlint.sources import ConfigError, templates_in_tokenizer_config
from prefixlint.tokens import LoadedTokenizer, load_tokenizer

DEFAULT_ENGINES = ("vllm", "sglang", "openai")
TEMPLATE_SUFFIXES = (".jinja", ".j2")


class ExplainError(Exception):
    """A usage problem (exit 2) with the message to show."""


def _template_from(path: Path, tokenizer: LoadedTokenizer) -> ChatTemplate:
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
        if folder and Path(folder).is_dir():
            candidates += [Path(folder) / "chat_template.jinja", Path(folder) / "tokenizer_config.json"]
    for path in candidates:
        if path.is_file():
            if loaded is None:
                loaded = tokenizer_for(str(path), Options())
            try:
                return _template_from(path, loaded), loaded
            except ConfigError as exc:
                if template and path == Path(template):
                    raise ExplainError(f"{path}: {exc}") from exc
    return None, loaded or load_tokenizer(None)


def engines_for(names: tuple[str, ...]) -> list[Engine]:
    known = load_engines()
    unknown = [n for n in names if n not in known]
    if unknown:
        raise ExplainError(f"unknown engine {unknown[0]!r}; known: {', '.join(sorted(known))}")
    return [known[n] for n in names or DEFAULT_ENGINES]


def is_template(path: str) -> bool:
    name = Path(path).name
    return name.endswith(TEMPLATE_SUFFIXES) or name == "tokenizer_config.json"


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
    replicas: int | None = None,
    routing: str = "round-robin",
) -> str:
    """The text (or JSON) to print; raises ExplainError for usage problems."""
    chosen = engines_for(engines)
    if log is None and len(paths) == 1 and is_template(paths[0]):
        from prefixlint.api import lint_paths
        from prefixlint.explain.narrate import narrate, narrate_json

        report = lint_paths([paths[0]], Options(tokenizer=tokenizer, engine=chosen[0].name))
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
    if log is None:
        from prefixlint.explain.pair import explain_pair, pair_text

        try:
            a, b = read_request_file(paths[0]), read_request_file(paths[1])
        except (OSError, RequestError) as exc:
            raise ExplainError(str(exc)) from exc
        result = explain_pair(a, b, renderer, loaded, chosen)
        result["tokenizer"] = loaded.name
        result["template"] = chat_template.path if chat_template else None
        if fmt == "json":
            return json.dumps(result, indent=2, ensure_ascii=False) + "\n"
        return pair_text(result, (paths[0], paths[1]))

    from prefixlint.explain.log import explain_log, log_text

    report = explain_log(
        log,
        renderer,
        loaded,
        chosen,
        capacity=cache_tokens,
        top=top,
        what_ifs=what_if,
        interval=interval,
        replicas=replicas,
        routing=routing,
    )
    data: dict[str, Any] = report.to_json()
    data["tokenizer"] = loaded.name
    data["template"] = chat_template.path if chat_template else None
    if html_path:
        from prefixlint.explain.html import render_html

        Path(html_path).write_text(render_html(data, report.representative, report.primary), encoding="utf-8")
    if fmt == "json":
        return json.dumps(data, indent=2, ensure_ascii=False) + "\n"
    return log_text(report)
