"""Unordered values followed into generated tool schemas (issue 28): a set in the `enum` of a
nested JSON schema is PFX201 where the set is made, ahead of the schema text after it."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from prefixlint.cli import cli


def check(path: Path, *args: str) -> list[dict]:
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--format", "json", *args, str(path)])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.output
    return json.loads(result.stdout)["diagnostics"]


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
