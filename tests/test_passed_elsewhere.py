"""A parameter of a prompt-building function that a caller in another module fills with a clock, an
id or the machine's name (evaluate/parameters.volatile_passed_elsewhere): reported where the value
enters the prompt, naming the caller's line, though the calling module holds no prompt text of its
own and is never checked itself. A per-request input or a literal passed from elsewhere changes
nothing: the parameter stays a guess at info;
when every such caller passes a constant, it is static text."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from prefixlint.api import Options, lint_paths

ASK = '''from openai import OpenAI

RULES = """You are a careful reviewer. Follow the rules below in every review you write for a change.
1. Read the whole diff before you write anything, and name the files you looked at first.
2. Never invent facts, names, numbers or quotations; say when you do not know something.
3. Point at the exact line of each problem you find and explain why it is one in a sentence.
"""


def ask(when, diff):
    system = f"At {when}.\\n" + RULES
    return OpenAI().chat.completions.create(
        model="x", messages=[{"role": "system", "content": system}, {"role": "user", "content": diff}]
    )
'''
CLOCK_CALLER = """import time

from app.ask import ask


def review(diff):
    return ask(time.time(), diff)
"""
HOST_CALLER = """import socket

from .ask import ask


def review(diff):
    host = socket.gethostname()
    return ask(when=host, diff=diff)
"""
INPUT_CALLER = """from app.ask import ask


def review(request):
    return ask(request.json["sent_at"], request.json["diff"])


def example():
    return ask("2024-01-01", "diff --git a/x b/x")
"""
CONSTANT_CALLER = """from app.ask import ask

RELEASE = "release 4.2"


def review(diff):
    return ask(RELEASE, diff)
"""


def _project(tmp_path: Path, caller: str) -> Path:
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "ask.py").write_text(ASK, encoding="utf-8")
    (package / "review.py").write_text(caller, encoding="utf-8")
    (tmp_path / ".git").mkdir()
    return tmp_path


def _findings(paths: list[str], options: Options | None = None) -> list[tuple[str, int, int, str, str]]:
    report = lint_paths(paths, options or Options(multiturn=False))
    return [
        (Path(d.span.path).name, d.span.line, d.span.column, d.code, d.message) for d in report.diagnostics
    ]


def _at_when() -> tuple[int, int]:
    line = next(n for n, text in enumerate(ASK.splitlines(), 1) if "At {when}" in text)
    return line, ASK.splitlines()[line - 1].index("{when}") + 2  # 1-based, at `when`


@pytest.mark.parametrize(
    ("caller", "code", "named"),
    [
        (CLOCK_CALLER, "PFX101", "`time.time()` in app/review.py:7"),
        (HOST_CALLER, "PFX104", "`socket.gethostname()` in app/review.py:7"),
    ],
    ids=["clock-positional", "host-by-keyword-through-a-local"],
)
def test_a_volatile_value_passed_from_another_module_is_reported_where_it_enters_the_prompt(
    tmp_path: Path, caller: str, code: str, named: str
) -> None:
    root = _project(tmp_path, caller)
    (found,) = _findings([str(root)])
    line, column = _at_when()
    assert found[:4] == ("ask.py", line, column, code)
    assert named in found[4]
    # checked alone, as a pre-commit hook does when only ask.py changed: the caller is still read
    assert _findings([str(root / "app" / "ask.py")]) == [found]


def test_a_per_request_input_or_a_literal_passed_from_elsewhere_stays_a_guess(tmp_path: Path) -> None:
    root = _project(tmp_path, INPUT_CALLER)
    found = _findings([str(root)])
    assert [f[:4] for f in found] == [("ask.py", *_at_when(), "PFX105")]
    assert "if its callers pass one" in found[0][4]


def test_a_constant_every_caller_elsewhere_passes_is_static_text(tmp_path: Path) -> None:
    assert _findings([str(_project(tmp_path, CONSTANT_CALLER))]) == []


def test_a_relative_project_root_given_to_the_api(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # os.path.commonpath refuses to mix relative and absolute paths: the root is made absolute
    root = _project(tmp_path, CLOCK_CALLER)
    monkeypatch.chdir(root)
    found = _findings([os.path.join("app", "ask.py")], Options(multiturn=False, project_root="."))
    assert [f[:4] for f in found] == [("ask.py", *_at_when(), "PFX101")]
