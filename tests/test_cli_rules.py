"""`prefixlint rules` and `prefixlint rule CODE`: every rule has a page, and the commands show it."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner
from conftest import REPO

from prefixlint.cli import cli
from prefixlint.rules import RULES


@pytest.mark.parametrize("code", sorted(RULES))
def test_every_rule_has_a_page_that_rule_prints(code: str) -> None:
    page = REPO / "rules" / f"{code}.md"
    assert page.is_file(), f"{code} has no page rules/{code}.md"
    assert page.read_text(encoding="utf-8").startswith(f"# {code} {RULES[code].name}")
    result = CliRunner().invoke(cli, ["rule", code.lower()])
    assert result.exit_code == 0
    assert result.output == page.read_text(encoding="utf-8")  # the shipped page is the repository's


def test_every_page_is_a_rule() -> None:
    assert {p.stem for p in (REPO / "rules").glob("*.md")} <= set(RULES)


def test_unknown_rule_exits_2() -> None:
    result = CliRunner().invoke(cli, ["rule", "PFX999"])
    assert result.exit_code == 2 and "unknown rule" in result.output


def test_rules_lists_every_rule_as_text_and_json() -> None:
    text = CliRunner().invoke(cli, ["rules"])
    assert text.exit_code == 0
    assert [line.split()[0] for line in text.output.splitlines()] == list(RULES)
    as_json = CliRunner().invoke(cli, ["rules", "--format", "json"])
    items = json.loads(as_json.output)
    assert [i["code"] for i in items] == list(RULES)
    assert all({"code", "name", "summary", "severity"} <= set(i) for i in items)
    assert {i["code"]: i["name"] for i in items}["PFX004"] == "unused-suppression"
