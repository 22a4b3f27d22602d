"""PFX503 in Python code (prefixlint/python/breakpoints.py): each `cache_control` breakpoint written
in an Anthropic call is judged over the blocks before it, in the order the provider caches them."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.api import Options
from prefixlint.python import analyze_python

HEADER = """\
import socket
from datetime import date, datetime

import anthropic

client = anthropic.Anthropic()
HOST = socket.gethostname()
RULES = "You are the support assistant of an online bookshop. Answer questions about orders. " * 80
TOOLS = [{"name": "order", "description": "Look up an order.", "input_schema": {"type": "object"}}]
MARK = {"type": "ephemeral"}


"""
LINE = HEADER.count("\n") + 1  # the first line after the header


def breakpoints(tmp_path: Path, body: str) -> list[tuple[int, str, str]]:
    """(line, severity, message) of each PFX503 in a module of HEADER + `body`."""
    path = tmp_path / "agent.py"
    path.write_text(HEADER + body)
    result = analyze_python(str(path), path.read_text(), Options())
    return [
        (d.span.line, d.severity.name.lower(), d.message) for d in result.diagnostics if d.code == "PFX503"
    ]


USER = '[{"role": "user", "content": question}]'
CLOCK = '{"type": "text", "text": f"Now: {datetime.now()}"}'
MARKED = '{"type": "text", "text": RULES, "cache_control": MARK}'


def call(system: str, messages: str = USER, model: str = "claude-sonnet-4-5", tools: str = "TOOLS") -> str:
    """A module-level function sending one request; `system=` is on line LINE + 5."""
    return (
        "def answer(question: str, history: list):\n"
        "    return client.messages.create(\n"
        f'        model="{model}",\n'
        "        max_tokens=512,\n"
        f"        tools={tools},\n"
        f"        system={system},\n"
        f"        messages={messages},\n"
        "    )\n"
    )


def test_a_clock_before_the_breakpoint_means_it_is_never_read(tmp_path: Path) -> None:
    [(line, severity, message)] = breakpoints(tmp_path, call(f"[{CLOCK}, {MARKED}]"))
    assert (line, severity) == (LINE + 5, "warning")
    assert "follows `datetime.now()`" in message and "never read" in message


def test_a_breakpoint_on_the_conversation_after_a_clock_in_the_system_prompt(tmp_path: Path) -> None:
    system = 'f"Now: {datetime.now()}\\n{RULES}"'
    messages = (
        '[*history, {"role": "user", "content": [{"type": "text", "text": question, "cache_control": MARK}]}]'
    )
    [(line, severity, _)] = breakpoints(tmp_path, call(system, messages))
    assert (line, severity) == (LINE + 6, "warning")


@pytest.mark.parametrize(
    "before",
    [
        'f"Host: {HOST}"',  # made once per process: read back within it
        'f"Today: {date.today()}"',  # once a day: read back within the day
        '"Answer in the language of the question."',
    ],
)
def test_what_is_the_same_across_requests_does_not_unread_it(before: str, tmp_path: Path) -> None:
    system = f'[{{"type": "text", "text": {before}}}, {MARKED}]'
    assert breakpoints(tmp_path, call(system)) == []


@pytest.mark.parametrize(
    ("model", "reported"),
    [("claude-sonnet-4-5", False), ("claude-3-5-haiku-latest", True), ("claude-opus-4-5", True)],
)
def test_a_static_prefix_under_the_models_minimum_is_never_written(
    model: str, reported: bool, tmp_path: Path
) -> None:
    # RULES is about 1,300 tokens: over the 1,024 of Sonnet 4.x, under the 2,048 of Haiku 3.5 and
    # the 4,096 of Opus 4.5
    # (no tools: constant data is static text of unseen length, never called short)
    found = breakpoints(tmp_path, call(f"[{MARKED}]", model=model, tools="[]"))
    assert [(line, severity) for line, severity, _ in found] == ([(LINE + 5, "info")] if reported else [])
    if reported:
        assert f"under {model}'s minimum" in found[0][2]


def test_a_prefix_with_unseen_content_is_not_called_short(tmp_path: Path) -> None:
    messages = (
        '[*history, {"role": "user", "content": [{"type": "text", "text": "Go on.", "cache_control": MARK}]}]'
    )
    assert breakpoints(tmp_path, call('"Be brief."', messages)) == []


def test_more_breakpoints_than_the_provider_takes_is_refused(tmp_path: Path) -> None:
    system = "[" + ", ".join([MARKED] * 5) + "]"
    [(line, severity, message)] = breakpoints(tmp_path, call(system))
    assert (line, severity) == (LINE + 5, "error")
    assert "5 `cache_control` breakpoints, more than the 4" in message


def test_a_client_without_breakpoints_is_not_judged(tmp_path: Path) -> None:
    body = (
        "from openai import OpenAI\n\n"
        "def answer(question: str):\n"
        '    return OpenAI().chat.completions.create(model="gpt-4o", messages=[\n'
        '        {"role": "system", "content": [{"type": "text", "text": f"Now: {datetime.now()}"},\n'
        '                                       {"type": "text", "text": RULES, "cache_control": MARK}]},\n'
        '        {"role": "user", "content": question}])\n'
    )
    assert breakpoints(tmp_path, body) == []
