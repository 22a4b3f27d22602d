"""`prefixlint render`: a prompt exactly as the serving stack renders it."""

from __future__ import annotations

import json
import os

import click

from prefixlint.cli.app import cli, fail
from prefixlint.cli.options import parse_template_vars, template_var_options, tokenizer_spec


def _render_target(path: str) -> str:
    """What `render` renders for PATH: a template file, a tokenizer_config.json, or a model folder's
    chat_template.jinja (else its tokenizer_config.json); anything else exits 2 naming it."""
    from prefixlint.run.sources import source_kind

    if os.path.isdir(path):
        for name in ("chat_template.jinja", "chat_template.j2", "tokenizer_config.json"):
            candidate = os.path.join(path, name)
            if os.path.isfile(candidate):
                return candidate
        fail(f"{path}: a folder without chat_template.jinja or tokenizer_config.json: nothing to render")
    kind = source_kind(path)
    if kind not in ("jinja", "tokenizer_config", "gguf"):
        what = "a Python file" if kind == "python" else "not a file prefixlint renders"
        fail(
            f"{path}: {what} (render takes a .jinja/.j2/.jinja2 template, a tokenizer_config.json, "
            "a .gguf model or a model folder)"
        )
    return path


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
@template_var_options
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

    template_vars = parse_template_vars(chat_template_kwargs, template_var)
    template_path = _render_target(template_path)
    tokenizer = tokenizer_spec(tokenizer)

    from prefixlint.core.files import read_text
    from prefixlint.jinja.inputs import BASE_TIME, USER_TURNS, conversation
    from prefixlint.jinja.template import ChatTemplate, describe_error, error_line, unread_variables
    from prefixlint.models.tokens import TokenizerError, choose_tokenizer, special_tokens_for
    from prefixlint.run.sources import ConfigError, source_kind, templates_in_tokenizer_config

    try:
        loaded = choose_tokenizer(template_path, tokenizer)[0]
        if source_kind(template_path) == "gguf":
            from prefixlint.models.gguf import GGUFError, source_name, template_named

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
                fail(f"{template_path}: no chat template named {template_name!r}")
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
        fail(f"{template_path}: {exc}")
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
        fail(f"{template_path}:{error_line(exc)}: {describe_error(exc)}")
    for warning in unread_variables(list(template_vars), [template.reads]):
        click.echo(f"prefixlint: warning: {warning}", err=True)
    click.echo(rendered.text, nl=not rendered.text.endswith("\n"))
    if tokens:
        enc = loaded.encode(rendered.text)
        click.echo(f"--- {len(enc.ids)} tokens ({loaded.name})")
        for i, (tid, piece) in enumerate(zip(enc.ids, enc.tokens, strict=True)):
            click.echo(f"{i:>6} {tid:>8} {piece!r}")
