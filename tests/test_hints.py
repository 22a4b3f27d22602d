"""Hints that hold (issue 23, point 2): a "`--var X=Y` keeps the prefix stable" hint holds when a
user applies it, `--var X=Y` on every render. Three causes kept them from holding, each reproduced
on a template of the project's own: the reasoning scenarios forced `enable_thinking=True` over the
user's `--var`; hints were printed in Python spelling (`True`), which `--var` reads as a string;
and they were verified by the multi-turn replay alone, not by the check."""

from __future__ import annotations

import json
import re

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from prefixlint.cli import cli

MULTITURN = FIXTURES / "multiturn"


def _check(name: str, *args: str) -> list[dict]:
    """`prefixlint check FIXTURE ARGS --format json`, as a user runs it."""
    argv = ["check", str(MULTITURN / name), "--format", "json", "--no-cache", "--exit-zero", *args]
    result = CliRunner().invoke(cli, argv)
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)["diagnostics"]


def _hints(message: str) -> list[list[str]]:
    """The `--var` arguments of each setting a message offers, as printed."""
    m = re.search(r"; ((?:`--var [^`]+`(?: or )?)+) keeps the prefix stable \(verified", message)
    return [re.findall(r"--var (\S+)", o) for o in re.findall(r"`([^`]+)`", m.group(1))] if m else []


def _applied(name: str, setting: list[str]) -> list[dict]:
    return _check(name, *(a for assignment in setting for a in ("--var", assignment)))


def test_the_users_var_wins_over_the_mode_a_scenario_runs_in() -> None:
    """Thinking is off by default; reasoning replies are replayed with thinking switched on, and
    history drops them. The user's `--var enable_thinking=false` must switch that mode off too."""
    [diag] = _check("hint_precedence.jinja")
    assert (diag["code"], diag["line"]) == ("PFX401", 6)
    assert "enable_thinking=true)" in diag["message"]  # the mode the reasoning scenario ran in
    assert _hints(diag["message"]) == [["enable_thinking=false"]]
    assert _applied("hint_precedence.jinja", ["enable_thinking=false"]) == []
    # And the user's own setting is what every scenario runs with: thinking on, the break stays.
    [kept] = _applied("hint_precedence.jinja", ["enable_thinking=true"])
    assert kept["code"] == "PFX401" and "enable_thinking=true)" not in kept["message"]


def test_a_hint_is_spelled_as_var_reads_it() -> None:
    """`is true` accepts only the boolean: `--var preserve_thinking=True` passes the string "True"
    and leaves the finding; the hint says `true`, which holds."""
    [diag] = _check("hint_is_true.jinja")
    assert diag["code"] == "PFX401"
    assert _hints(diag["message"]) == [["preserve_thinking=true"]]
    assert [d["code"] for d in _applied("hint_is_true.jinja", ["preserve_thinking=True"])] == ["PFX401"]
    assert _applied("hint_is_true.jinja", ["preserve_thinking=true"]) == []


def test_a_hint_is_offered_only_when_the_check_run_again_with_it_passes() -> None:
    """`keep_thinking` removes the multi-turn break but puts the clock at the head of the system
    prompt: replaying the turns alone would offer it; the check run again with it finds a PFX101
    error, so no setting is offered."""
    [diag] = _check("hint_full_check.jinja")
    assert diag["code"] == "PFX401"
    assert _hints(diag["message"]) == []
    assert "no setting of `keep_thinking` keeps it stable" in diag["message"]
    after = _applied("hint_full_check.jinja", ["keep_thinking=true"])
    assert not [d for d in after if d["code"] == "PFX401"]  # the replay alone would have offered it
    assert [(d["code"], d["severity"]) for d in after] == [("PFX101", "warning")]  # a date


@pytest.mark.parametrize(
    "name", ["hint_precedence.jinja", "hint_is_true.jinja", "defaulted_switch.jinja", "channel_thought.jinja"]
)
def test_every_hint_holds_when_applied_as_printed(name: str) -> None:
    offered = [(d, s) for d in _check(name) for s in _hints(d["message"])]
    assert offered
    for diag, setting in offered:
        after = _applied(name, setting)
        assert not [d for d in after if d["code"] == diag["code"]], (name, setting)
        assert not [d for d in after if d["code"] == "PFX002"], (name, setting)
