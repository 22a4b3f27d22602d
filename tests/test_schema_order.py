"""Unordered values followed into generated tool schemas (issue 28, langflow review A-M1): a set
in a JSON schema's `enum`, in `Literal[...]` or `Enum(name, names)`, in the annotations of a class
or function handed to a request as a tool, is PFX201 where the set is made, with a verified
`sorted(...)` fix; sorted, or written out, it is silent. The `[[schema]]` rows' own examples run in
tests/test_frameworks.py."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli

HEAD = '''\
from enum import Enum
from typing import Literal
from zoneinfo import available_timezones

from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent
from openai import OpenAI

client = OpenAI()
RULES = """You are the support assistant of Acme Cloud. Answer from the documents you are given, quote the
passage you rely on, answer in at most three sentences, never invent order numbers, and hand refunds to a
human. Keep a friendly tone and prefer short lists to long paragraphs."""
'''
LINE = HEAD.count("\n") + 1  # the first line after HEAD

# A JSON schema written out: the set's order is the `enum`'s, and the static text after it (the
# other parameter's description, the system prompt) follows it in the request.
JSON_TOOL = """\
TOOL = {"type": "function", "function": {
    "name": "get_time", "description": "The time in a zone.", "parameters": {"type": "object", "properties": {
        "zone": {"type": "string", "enum": list(ZONES)},
        "format": {"type": "string", "description": "a strftime format, such as %H:%M on a 24-hour clock"}}}}}


def answer(question: str, history: list) -> str:
    messages = [{"role": "system", "content": RULES}, *history, {"role": "user", "content": question}]
    return client.chat.completions.create(model="gpt-4o", tools=[TOOL], messages=messages)
"""
# A `@tool` function whose parameter annotation spells the choices.
TOOL_FUNCTION = """\


@tool
def get_time(zone: Literal[tuple(ZONES)], format: str = "%H:%M") -> str:
    \"\"\"The current time in a time zone.\"\"\"
    return zone


agent = create_react_agent("openai:gpt-4o", [get_time], prompt=RULES)
"""


def check(path: Path, *args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--format", "json", *args, str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return json.loads(result.stdout)["diagnostics"]


@pytest.mark.parametrize(
    ("zones", "fixed"),
    [
        ('ZONES = {"UTC", "Europe/Paris", "Asia/Tokyo"}', "sorted(ZONES)"),
        ("ZONES = available_timezones()", "sorted(ZONES)"),
    ],
)
@pytest.mark.parametrize("shape", [JSON_TOOL, TOOL_FUNCTION], ids=["json-schema", "tool-function"])
def test_a_set_in_a_tool_schema_is_found_where_it_is_made_and_sorted(
    zones: str, fixed: str, shape: str, tmp_path: Path
) -> None:
    path = tmp_path / "agent.py"
    path.write_text(f"{HEAD}{zones}\n{shape}")
    [found] = check(path)
    assert (found["code"], found["line"]) == ("PFX201", LINE)
    assert (found["fix"]["applicability"], found["fix"]["verified"]) == ("safe", True)
    assert f"`{fixed}`" in found["fix"]["message"]
    check(path, "--fix")
    assert fixed in path.read_text()
    assert check(path) == []


@pytest.mark.parametrize("shape", [JSON_TOOL, TOOL_FUNCTION], ids=["json-schema", "tool-function"])
def test_choices_written_out_are_silent(shape: str, tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(f'{HEAD}ZONES = ("UTC", "Europe/Paris", "Asia/Tokyo")\n{shape}')
    assert check(path) == []


def test_the_enum_functional_api_is_sorted_in_its_call(tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    zone = 'Zone = Enum("Zone", {"UTC", "Europe/Paris", "Asia/Tokyo"})\n'
    path.write_text(HEAD + zone + TOOL_FUNCTION.replace("Literal[tuple(ZONES)]", "Zone"))
    [found] = check(path)
    assert (found["code"], found["line"], found["fix"]["verified"]) == ("PFX201", LINE, True)
    check(path, "--fix")
    assert 'Enum("Zone", sorted({"UTC", "Europe/Paris", "Asia/Tokyo"}))' in path.read_text()
    assert check(path) == []


def test_a_class_with_a_set_in_its_annotations_that_reaches_no_request_is_silent(tmp_path: Path) -> None:
    path = tmp_path / "models.py"
    path.write_text(
        HEAD + 'ZONES = {"UTC", "Europe/Paris", "Asia/Tokyo"}\n\n\n'
        "class Meeting:\n    zone: Literal[tuple(ZONES)]\n\n\n"
        "def is_meeting(value: object) -> bool:\n    return isinstance(value, Meeting)\n"
    )
    assert check(path) == []


def test_a_set_in_a_nested_schema_keeps_the_text_after_it(tmp_path: Path) -> None:
    """The `inputs` of a smolagents tool: a dict of parameter schemas, one of them with the set in
    its `enum`; the parameters after it are static text the set's order is ahead of."""
    path = tmp_path / "tools.py"
    path.write_text(
        "from smolagents import Tool\n\n"
        'ZONES = {"UTC", "Europe/Paris", "America/New_York", "Asia/Tokyo"}\n\n\n'
        "class TimeTool(Tool):\n"
        '    name = "time"\n'
        '    description = "Returns the current time in a zone."\n'
        "    inputs = {\n"
        '        "zone": {"type": "string", "enum": list(ZONES), "description": "an IANA name"},\n'
        '        "format": {"type": "string", "description": "a strftime format, such as %H:%M on a 24-hour '
        'clock, or %I:%M %p on a 12-hour one"},\n'
        "    }\n"
        '    output_type = "string"\n'
    )
    [found] = check(path)
    assert (found["code"], found["line"], found["fix"]["verified"]) == ("PFX201", 3, True)
