"""`prefixlint rules` and `prefixlint rule CODE`: every rule has a page, and the commands show it."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from conftest import REPO

from prefixlint.cli import cli
from prefixlint.core.rules import RULES


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_has_a_page_that_rule_prints(code: str) -> None:
    page = REPO / "rules" / f"{code}.md"
    assert page.is_file(), f"{code} has no page rules/{code}.md"
    assert page.read_text(encoding="utf-8").startswith(f"# {code} {RULES[code].name}")
    result = CliRunner().invoke(cli, ["rule", code.lower()])
    assert result.exit_code == 0
    # The shipped page is the repository's, less the examples' test metadata (```jinja {"expect": …}).
    text = page.read_text(encoding="utf-8")
    assert result.output == re.sub(r"^(```\w+) \{.*\}$", r"\1", text, flags=re.MULTILINE)
    assert '{"expect"' in text and "expect" not in result.output
    by_name = CliRunner().invoke(cli, ["rule", RULES[code].name])
    assert by_name.exit_code == 0 and by_name.output == result.output
    assert (
        CliRunner().invoke(cli, ["rule", RULES[code].name.upper().replace("-", "_")]).output == result.output
    )


def test_every_page_is_a_rule() -> None:
    assert {p.stem for p in (REPO / "rules").glob("*.md")} <= set(RULES)


def test_unknown_rule_exits_2() -> None:
    for key in ("PFX999", "clock-in-suffix"):
        result = CliRunner().invoke(cli, ["rule", key])
        assert result.exit_code == 2 and f"unknown rule {key!r}: give a code or a name" in result.output


def test_rules_lists_every_rule_as_text_and_json() -> None:
    text = CliRunner().invoke(cli, ["rules"])
    assert text.exit_code == 0
    assert [line.split()[0] for line in text.output.splitlines()] == list(RULES)
    as_json = CliRunner().invoke(cli, ["rules", "--format", "json"])
    items = json.loads(as_json.output)
    assert [i["code"] for i in items] == list(RULES)
    assert all({"code", "name", "summary", "severity"} <= set(i) for i in items)
    assert {i["code"]: i["name"] for i in items}["PFX004"] == "unused-suppression"


def test_rules_show_every_severity_a_finding_can_have() -> None:
    # PFX002 is an error when no input renders, a warning for an accidental raise, info for a
    # deliberate raise_exception: the listing shows that range, not only the default.
    text = CliRunner().invoke(cli, ["rules"]).output
    columns = {line.split()[0]: line.split()[2] for line in text.splitlines()}
    assert columns["PFX002"] == "info..error"
    assert columns["PFX101"] == "info..error"  # lowered to info below one cache block
    assert columns["PFX001"] == "error" and columns["PFX302"] == "info"
    items = {i["code"]: i for i in json.loads(CliRunner().invoke(cli, ["rules", "--format", "json"]).output)}
    assert items["PFX002"]["severity"] == "warning"
    assert items["PFX002"]["severities"] == ["info", "warning", "error"]
