"""What a new user hits following the README (issue 27, point 2): a misspelt `--var`, rules by
name, the severity on every concise line, plurals, the engines listed."""

from __future__ import annotations

from click.testing import CliRunner
from conftest import FIXTURES

from prefixlint.cli import cli

CLEAN = str(FIXTURES / "templates" / "clean.jinja")
THINKING = str(FIXTURES / "multiturn" / "hint_precedence.jinja")  # reads enable_thinking


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


def test_a_var_no_template_reads_is_a_warning_naming_what_it_reads() -> None:
    result = invoke("check", "--no-cache", THINKING, "--var", "enable_thinkng=false")
    assert (
        "prefixlint: warning: --var enable_thinkng: no template checked reads `enable_thinkng`; "
        "did you mean `enable_thinking`? (the template reads: " in result.stderr
    )
    assert "enable_thinking, " in result.stderr.split("the template reads: ")[1]
    # Spelt right, nothing is said; -q says nothing either.
    assert "warning" not in invoke("check", "--no-cache", THINKING, "--var", "enable_thinking=false").stderr
    quiet = invoke("check", "--no-cache", "-q", THINKING, "--var", "enable_thinkng=false")
    assert quiet.stderr == ""
    rendered = invoke("render", CLEAN, "--var", "persona=pirate")
    assert rendered.exit_code == 0
    assert (
        "--var persona: no template checked reads `persona` "
        "(the template reads: add_generation_prompt, messages)" in rendered.stderr
    )
    explained = invoke("explain", CLEAN, "--var", "persona=pirate")
    assert "--var persona: no template checked reads `persona`" in explained.stderr


def test_a_var_beside_python_code_only_says_no_template_was_checked() -> None:
    result = invoke("check", "--no-cache", str(FIXTURES / "python" / "clean.py"), "--var", "x=1")
    assert "--var x: no template was checked, so nothing reads it" in result.stderr
