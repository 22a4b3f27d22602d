"""What a new user hits following the README (issue 27, point 2): a misspelt `--var`, rules by
name, the severity on every concise line, plurals, the engines listed."""

from __future__ import annotations

import json

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


def test_counts_read_as_english(tmp_path) -> None:
    # One static token after the date: "ahead of 1 static token that is", not "1 static tokens".
    one = tmp_path / "p.j2"
    one.write_text("You answer questions about our hotel.\nDate: {{ current_date }}!{{ question }}", "utf-8")
    result = invoke("check", "--no-cache", str(one))
    assert "ahead of 1 static token that is computed again" in result.stdout
    assert (
        result.stdout.splitlines()[-1]
        == "Found 1 finding in 1 file: 1 info (tokenizer: deepseek (embedded default))."
    )
    many = invoke("check", "--no-cache", str(FIXTURES / "templates" / "request_id.jinja"), CLEAN)
    assert many.stdout.splitlines()[-1].startswith("Found 2 findings in 2 files: 1 error, 1 info (")
    assert "(s)" not in many.stdout


def test_the_engines_that_engine_takes_are_listed() -> None:
    from prefixlint.engines import load_engines

    help_text = invoke("check", "--help").output
    assert "`prefixlint engines`" in " ".join(help_text.split())
    listed = invoke("engines")
    assert listed.exit_code == 0
    names = [line.split()[0] for line in listed.output.splitlines()[:-1]]
    assert names == list(load_engines())
    assert "vllm       whole blocks of 16 tokens; the last prompt token always recomputed" in listed.output
    assert "openai     nothing under 1,024 tokens, then steps of 128" in listed.output
    as_json = json.loads(invoke("engines", "--format", "json").output)
    assert {e["name"]: e["block_size"] for e in as_json}["vllm"] == 16
    for name in names:  # each name listed is one --engine takes
        assert invoke("check", "--no-cache", "--engine", name, CLEAN).exit_code == 0
