"""The examples of docs/prefix-stability.md run as pytest sessions (pytester): the bad ones fail at
the line and call their info string names, the good ones pass, and the failure shown is the real one."""

from __future__ import annotations

import json
import re
import sys

import pytest
from conftest import REPO

pytest_plugins = ["pytester"]

PAGE = REPO / "docs" / "prefix-stability.md"
BLOCK = re.compile(r"^```(\w*) ?(\{[^\n]*\})?\n(.*?)^```", re.MULTILINE | re.DOTALL)


def examples() -> list[tuple[dict, str]]:
    return [
        (json.loads(info), body) for lang, info, body in BLOCK.findall(PAGE.read_text()) if lang == "python"
    ]


@pytest.fixture(autouse=True)
def no_bytecode(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)


@pytest.mark.parametrize(
    ("info", "body"), examples(), ids=lambda v: v.get("expect") if isinstance(v, dict) else ""
)
def test_example(pytester: pytest.Pytester, info: dict, body: str) -> None:
    pytester.makepyfile(example=body)
    result = pytester.runpytest("-p", "prefixlint.testing.plugin", "example.py")
    tests = len(re.findall(r"^(?:async )?def test_", body, re.MULTILINE))
    if info["expect"] == "pass":
        result.assert_outcomes(passed=tests)
        return
    result.assert_outcomes(failed=tests)
    result.stdout.fnmatch_lines([f"*example.py:{info['line']} {info['call']} → token * of *"])


def test_the_failure_shown_is_the_real_one(pytester: pytest.Pytester) -> None:
    text = PAGE.read_text()
    bad = text.split("## Bad", 1)[1]
    code, shown = (body for _, _, body in BLOCK.findall(bad)[:2])
    pytester.makepyfile(example=code)
    pytester.syspathinsert()
    from prefixlint.testing import check_prefix_stable

    example = __import__("example")
    pytester.chdir()
    result = check_prefix_stable(lambda: example.build_messages("Where is my order?"))
    assert result.message + "\n" == shown
