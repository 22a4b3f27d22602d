"""`check --fix`, `--unsafe-fixes`, `--show-fixes`, `--add-noqa` as a user runs them (ruff's
semantics), and the fix in every output format."""

from __future__ import annotations

import ast
import json
import re
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, run_prefixlint

from prefixlint.cli import cli
from prefixlint.jinja.inputs import USER_TURNS, conversation
from prefixlint.jinja.template import ChatTemplate

TEMPLATES = FIXTURES / "templates"
# An app's system prompt that opens with the date: its fix moves the line to the end (verified).
DATED = FIXTURES / "fixes" / "dated_system.j2"
MOVED = "Today: {{ current_date }}\n"
# A support bot that joins a set of tool names into its system prompt: `sorted()` there (safe).
TOOL_SET = FIXTURES / "fixes" / "tool_set.py"
HELP = "Move `Today: {{ current_date }}` (line 1) to the end of the template (before line 5)"


def run(*args: str) -> tuple[int, str]:
    """Exit code and stdout (the fix summary of a machine format goes to stderr)."""
    result = CliRunner().invoke(cli, ["check", "--no-cache", *args])
    return result.exit_code, result.stdout


@pytest.fixture
def clock(tmp_path: Path) -> Path:
    path = tmp_path / "system.j2"
    shutil.copy(DATED, path)
    return path


def fixed_clock_text() -> str:
    text = DATED.read_text(encoding="utf-8")
    return text.replace(MOVED, "", 1) + MOVED


def test_concise_shows_the_severity_and_a_help_line(clock: Path) -> None:
    code, out = run(str(clock))
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith(f"{clock}:1:8: PFX101 clock-in-prefix: `current_date` is named like")
    assert lines[0].endswith("(where its value comes from is not visible here) [warning]")
    assert lines[1] == f"  help: {HELP} (unsafe fix: `--fix --unsafe-fixes` applies it)"
    assert lines[-1] == "1 fixable with `--fix --unsafe-fixes`."


def test_a_chat_template_that_prints_the_date_itself_has_no_fix_and_says_why(tmp_path: Path) -> None:
    """Moved to the end of the generation prompt, the date would cost the previous reply on every
    turn (PFX403): the help says what to do instead."""
    path = tmp_path / "chat_template.jinja"
    shutil.copy(TEMPLATES / "clock_in_system.jinja", path)
    code, out = run(str(path))
    lines = out.splitlines()
    assert code == 1 and lines[0].endswith("[warning]") and "split once a day" in lines[0]
    assert lines[1].startswith("  help: leave the date or time to the caller's last user message")
    assert "did not hold: it adds PFX403 (warning) at line 25)" in lines[1]


def test_unsafe_fixes_mark_the_finding_fixable(clock: Path) -> None:
    _, out = run(str(clock), "--unsafe-fixes")
    lines = out.splitlines()
    assert lines[0].startswith(f"{clock}:1:8: PFX101 [*] clock-in-prefix: ")
    assert lines[1] == f"  help: {HELP} (`--fix` applies it)"
    assert lines[-1] == "[*] 1 fixable with `--fix`."


def test_fix_alone_applies_no_unsafe_fix(clock: Path) -> None:
    before = clock.read_text(encoding="utf-8")
    code, out = run(str(clock), "--fix")
    assert code == 1 and clock.read_text(encoding="utf-8") == before
    assert "Fixed" not in out


def test_fix_with_unsafe_fixes_writes_the_fix_and_passes(clock: Path) -> None:
    code, out = run(str(clock), "--fix", "--unsafe-fixes", "--show-fixes")
    assert code == 0, out
    assert clock.read_text(encoding="utf-8") == fixed_clock_text()
    lines = out.splitlines()
    at = lines.index("Fixed 1 finding.")
    assert lines[at + 1 : at + 3] == [f"- {clock}:", f"    1:8 PFX101 clock-in-prefix (unsafe): {HELP}"]
    assert lines[0].startswith("No findings in 1 file")
    assert run(str(clock))[0] == 0  # green


def test_fixed_findings_do_not_fail_the_run_what_is_left_does(tmp_path: Path) -> None:
    shutil.copy(DATED, tmp_path / "system.j2")
    shutil.copy(FIXTURES / "multiturn" / "system_in_last_user.jinja", tmp_path / "relocated.jinja")
    code, out = run(str(tmp_path), "--fix", "--unsafe-fixes")
    assert code == 1
    findings = [line for line in out.splitlines() if line.startswith(str(tmp_path))]
    assert [f.split(": ")[1].split()[0] for f in findings] == ["PFX402"]
    assert "Fixed 1 finding." in out
    assert (tmp_path / "relocated.jinja").read_bytes() == (
        FIXTURES / "multiturn" / "system_in_last_user.jinja"
    ).read_bytes()


def test_show_fixes_without_fix_lists_what_fix_would_write(clock: Path) -> None:
    before = clock.read_text(encoding="utf-8")
    code, out = run(str(clock), "--show-fixes")
    assert code == 1 and clock.read_text(encoding="utf-8") == before
    assert out.splitlines()[-2] == f"- {clock}:1:8 PFX101 (--fix --unsafe-fixes): {HELP}"


def test_fix_is_a_real_process_exit_code(clock: Path) -> None:
    result = run_prefixlint("check", "--no-cache", "--fix", "--unsafe-fixes", str(clock))
    assert result.returncode == 0, result.stderr
    assert clock.read_text(encoding="utf-8") == fixed_clock_text()


def test_fix_does_not_go_with_diff_or_add_noqa(clock: Path) -> None:
    assert run(str(clock), "--fix", "--diff", "HEAD")[0] == 2
    assert run(str(clock), "--fix", "--add-noqa")[0] == 2


def test_a_gguf_is_never_written(tmp_path: Path) -> None:
    from gguf_files import write_gguf

    from prefixlint.models.tokens import _embedded_dir

    model = write_gguf(
        tmp_path / "tiny.gguf",
        _embedded_dir() / "tokenizer.json",
        pre="deepseek-v3",
        templates={"": (TEMPLATES / "clock_in_system.jinja").read_text(encoding="utf-8")},
    )
    before = model.read_bytes()
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}  # not a `prefixlint/` folder in the working dir
    result = run_prefixlint(
        "check",
        "--no-cache",
        "--fix",
        "--unsafe-fixes",
        "--format",
        "json",
        "tiny.gguf",
        cwd=tmp_path,
        env=env,
    )
    assert result.returncode == 1
    (d,) = json.loads(result.stdout)["diagnostics"]
    assert "fix" not in d and d["hint"].endswith("no automatic fix was found (a GGUF model is never written)")
    noqa = run_prefixlint("check", "--no-cache", "--add-noqa", "tiny.gguf", cwd=tmp_path, env=env)
    assert noqa.returncode == 1 and "not suppressed: tiny.gguf[chat_template]:3: PFX101" in noqa.stderr
    assert model.read_bytes() == before


# -- --add-noqa --------------------------------------------------------------------------------------


def _render(path: Path) -> str:
    template = ChatTemplate(path.read_text(encoding="utf-8"), str(path))
    messages = conversation(USER_TURNS[0], system=True)
    template.supply_required_variables(messages, None)
    return template.render(messages).text


def test_add_noqa_suppresses_every_template_finding_without_changing_a_render(tmp_path: Path) -> None:
    names = ["clock_in_system.jinja", "request_id.jinja", "whitespace.jinja", "user_name_optional.jinja"]
    for name in names:
        shutil.copy(TEMPLATES / name, tmp_path / name)
    shutil.copytree(TEMPLATES / "tokenizer_config_list", tmp_path / "model")
    renders = {name: _render(tmp_path / name) for name in names}
    code, out = run(str(tmp_path), "--add-noqa")
    assert (code, out) == (0, "Added 7 suppressions in 5 files.\n")
    assert {name: _render(tmp_path / name) for name in names} == renders
    lines = (tmp_path / "clock_in_system.jinja").read_text(encoding="utf-8").splitlines()
    assert lines[2:4] == [
        "{#- prefixlint: ignore[PFX101] #}",
        '    {%- set today = strftime_now("%d %B %Y") %}',
    ]
    config = json.loads((tmp_path / "model" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"][0]["template"].startswith("{# prefixlint: ignore[PFX101] #}")
    code, out = run(str(tmp_path))
    assert code == 0 and out.startswith("No findings in 5 files"), out


def test_add_noqa_in_python_adds_to_the_line_or_the_file(tmp_path: Path) -> None:
    shutil.copy(FIXTURES / "python" / "set_tools.py", tmp_path / "set_tools.py")
    inside = tmp_path / "inside_string.py"
    inside.write_text(
        'from datetime import datetime\n\ndef system_prompt():\n    return f"""Now: {datetime.now()}\n'
        "You are a helpful assistant for a hardware shop. Answer in one short paragraph and quote prices\n"
        'in euros, with tax included, and never promise delivery dates."""\n\n\n'
        'def messages(q):\n    return [{"role": "system", "content": system_prompt()},'
        ' {"role": "user", "content": q}]\n',
        encoding="utf-8",
    )
    trees = {
        p: ast.dump(ast.parse(p.read_text(encoding="utf-8"))) for p in (tmp_path / "set_tools.py", inside)
    }
    assert run(str(tmp_path), "--fail-on", "info")[0] == 1
    code, out = run(str(tmp_path), "--add-noqa")
    assert code == 0, out
    assert {p: ast.dump(ast.parse(p.read_text(encoding="utf-8"))) for p in trees} == trees  # comments only
    text = (tmp_path / "set_tools.py").read_text(encoding="utf-8")
    assert "  # noqa: PFX201" in text
    first = inside.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# prefixlint: ignore-file[PFX101]"  # the finding's line ends inside a string
    assert run(str(tmp_path), "--fail-on", "info")[0] == 0


# -- every format shows the fix --------------------------------------------------------------------------


def test_json_has_the_fix_object_and_what_was_fixed(clock: Path) -> None:
    _, out = run(str(clock), "--format", "json")
    (d,) = json.loads(out)["diagnostics"]
    assert d["fix"] == {
        "applicability": "unsafe",
        "verified": True,
        "message": HELP,
        "edits": [
            {
                "path": str(clock),
                "start_line": 1,
                "start_column": 1,
                "end_line": 2,
                "end_column": 1,
                "replacement": "",
            },
            {
                "path": str(clock),
                "start_line": 5,
                "start_column": 1,
                "end_line": 5,
                "end_column": 1,
                "replacement": MOVED,
            },
        ],
    }
    _, out = run(str(clock), "--format", "json", "--fix", "--unsafe-fixes")
    (fixed,) = json.loads(out)["fixed"]
    assert (fixed["code"], fixed["line"], fixed["applicability"]) == ("PFX101", 1, "unsafe")


def test_sarif_has_fixes_with_replacements(clock: Path) -> None:
    _, out = run(str(clock), "--format", "sarif")
    (result,) = json.loads(out)["runs"][0]["results"]
    (fix,) = result["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 1, "startColumn": 1, "endLine": 2, "endColumn": 1},
            "insertedContent": {"text": ""},
        },
        {
            "deletedRegion": {"startLine": 5, "startColumn": 1, "endLine": 5, "endColumn": 1},
            "insertedContent": {"text": MOVED},
        },
    ]
    assert fix["description"]["text"] == f"{HELP} (unsafe)"
    assert f"\nhelp: {HELP}" in result["message"]["text"]


def test_github_annotations_carry_the_help(clock: Path) -> None:
    _, out = run(str(clock), "--format", "github")
    assert f"%0Ahelp: {HELP}" in out


def test_full_shows_the_fix_as_a_diff(clock: Path) -> None:
    _, out = run(str(clock), "--format", "full")
    lines = [line.strip() for line in out.splitlines()]
    at = lines.index(f"--- {clock}")
    assert lines[at : at + 9] == [
        f"--- {clock}",
        f"+++ {clock} (fixed)",
        "@@ -1,2 +1 @@",
        "-Today: {{ current_date }}",
        "You are the support assistant of Northwind Outfitters, a shop for hiking and camping gear.",
        "@@ -4 +3,2 @@",
        "Returns: 60 days, unused, with the receipt; refunds go back to the original payment method.",
        "+Today: {{ current_date }}",
        "",
    ]


@pytest.mark.parametrize(
    ("fixture", "shown_as", "fixing"),
    [(DATED, "/tmp/system.j2", ["--fix", "--unsafe-fixes"]), (TOOL_SET, "/tmp/tools.py", ["--fix"])],
    ids=["template", "python"],
)
def test_the_readme_loop_runs_as_written(
    tmp_path: Path, fixture: Path, shown_as: str, fixing: list[str]
) -> None:
    """README "Find, fix, green": the commands print what the README shows (lines it shortens with
    `…` are compared up to it)."""
    readme = (FIXTURES.parent / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Find, fix, green", 1)[1].split("\n## ", 1)[0]
    [block] = [
        b
        for b in re.findall(r"^```\n(.*?)^```$", section, re.MULTILINE | re.DOTALL)
        if b.startswith(f"$ cp fixtures/fixes/{fixture.name} {shown_as}\n")
    ]
    target = tmp_path / Path(shown_as).name
    steps = block.replace(shown_as, str(target)).split("$ ")[1:]
    shutil.copy(fixture, target)
    for step, args, code in (
        (steps[1], ["check", str(target)], 1),
        (steps[2], ["check", *fixing, str(target)], 0),
    ):
        command, *expected = step.rstrip("\n").split("\n")
        assert command.split(";")[0] == "prefixlint " + " ".join(args)
        result = run_prefixlint(*args, cwd=FIXTURES.parent)
        assert result.returncode == code, result.stderr
        lines = result.stdout.splitlines() + ([f"exit {code}"] if "echo" in command else [])
        assert len(lines) == len(expected)
        for got, want in zip(lines, expected, strict=True):
            if "…" in want:
                assert got.startswith(want.split("…")[0]) and got.endswith(want.split("…")[-1])
            else:
                assert got == want
