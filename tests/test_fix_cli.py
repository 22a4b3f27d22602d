"""`check --fix`, `--unsafe-fixes`, `--show-fixes`, `--add-noqa` as a user runs them (ruff's
semantics), and the fix in every output format."""

from __future__ import annotations

import ast
import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES, run_prefixlint

from prefixlint.cli import cli
from prefixlint.jinja.inputs import USER_TURNS, conversation
from prefixlint.jinja.template import ChatTemplate

TEMPLATES = FIXTURES / "templates"
MOVED = "Today is {{ today }}.\n"


def run(*args: str) -> tuple[int, str]:
    """Exit code and stdout (the fix summary of a machine format goes to stderr)."""
    result = CliRunner().invoke(cli, ["check", "--no-cache", *args])
    return result.exit_code, result.stdout


@pytest.fixture
def clock(tmp_path: Path) -> Path:
    path = tmp_path / "clock.jinja"
    shutil.copy(TEMPLATES / "clock_in_system.jinja", path)
    return path


def fixed_clock_text() -> str:
    text = (TEMPLATES / "clock_in_system.jinja").read_text(encoding="utf-8").replace(MOVED, "", 1)
    return text.replace("<|assistant|>\n{% endif %}", f"<|assistant|>\n{MOVED}{{% endif %}}")


def test_concise_shows_the_severity_and_a_help_line(clock: Path) -> None:
    code, out = run(str(clock))
    lines = out.splitlines()
    assert code == 1
    assert lines[0].startswith(f"{clock}:3:21: PFX101 clock-in-prefix: `strftime_now")
    assert lines[0].endswith("every request after midnight misses the cache [error]")
    assert lines[1] == (
        "  help: Move `Today is {{ today }}.` (line 6) to the end of the generation prompt (before line 26)"
        " (unsafe fix: `--fix --unsafe-fixes` applies it)"
    )
    assert lines[-1] == "1 fixable with `--fix --unsafe-fixes`."


def test_unsafe_fixes_mark_the_finding_fixable(clock: Path) -> None:
    _, out = run(str(clock), "--unsafe-fixes")
    lines = out.splitlines()
    assert lines[0].startswith(f"{clock}:3:21: PFX101 [*] clock-in-prefix: ")
    assert lines[1].endswith("(before line 26) (`--fix` applies it)")
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
    at = lines.index("Fixed 1 finding(s).")
    assert lines[at + 1 : at + 3] == [
        f"- {clock}:",
        "    3:21 PFX101 clock-in-prefix (unsafe): Move `Today is {{ today }}.` (line 6) to the end of the "
        "generation prompt (before line 26)",
    ]
    # What is left is the info the moved date costs the generation prompt, below --fail-on.
    assert [line.split(": ")[1].split()[0] for line in lines if line.startswith(str(clock))] == ["PFX403"]
    assert run(str(clock))[0] == 0  # green


def test_fixed_findings_do_not_fail_the_run_what_is_left_does(tmp_path: Path) -> None:
    shutil.copy(TEMPLATES / "clock_in_system.jinja", tmp_path / "clock.jinja")
    shutil.copy(FIXTURES / "multiturn" / "system_in_last_user.jinja", tmp_path / "relocated.jinja")
    code, out = run(str(tmp_path), "--fix", "--unsafe-fixes")
    assert code == 1
    findings = [line for line in out.splitlines() if line.startswith(str(tmp_path))]
    assert [f.split(": ")[1].split()[0] for f in findings] == ["PFX403", "PFX402"]
    assert "Fixed 1 finding(s)." in out
    assert (tmp_path / "relocated.jinja").read_bytes() == (
        FIXTURES / "multiturn" / "system_in_last_user.jinja"
    ).read_bytes()


def test_show_fixes_without_fix_lists_what_fix_would_write(clock: Path) -> None:
    before = clock.read_text(encoding="utf-8")
    code, out = run(str(clock), "--show-fixes")
    assert code == 1 and clock.read_text(encoding="utf-8") == before
    assert (
        f"- {clock}:3:21 PFX101 (--fix --unsafe-fixes): Move `Today is {{{{ today }}}}.` (line 6)"
        in out.splitlines()[-2]
    )


def test_fix_is_a_real_process_exit_code(clock: Path) -> None:
    result = run_prefixlint("check", "--no-cache", "--fix", "--unsafe-fixes", str(clock))
    assert result.returncode == 0, result.stderr
    assert clock.read_text(encoding="utf-8") == fixed_clock_text()


def test_fix_does_not_go_with_diff_or_add_noqa(clock: Path) -> None:
    assert run(str(clock), "--fix", "--diff", "HEAD")[0] == 2
    assert run(str(clock), "--fix", "--add-noqa")[0] == 2


def test_a_gguf_is_never_written(tmp_path: Path) -> None:
    from gguf_files import write_gguf

    from prefixlint.tokens import _embedded_dir

    model = write_gguf(
        tmp_path / "tiny.gguf",
        _embedded_dir() / "tokenizer.json",
        pre="deepseek-v3",
        templates={"": (TEMPLATES / "clock_in_system.jinja").read_text(encoding="utf-8")},
    )
    before = model.read_bytes()
    env = {"XDG_CACHE_HOME": str(tmp_path)}
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
    assert (code, out) == (0, "Added 7 suppression(s) in 5 file(s).\n")
    assert {name: _render(tmp_path / name) for name in names} == renders
    lines = (tmp_path / "clock_in_system.jinja").read_text(encoding="utf-8").splitlines()
    assert lines[2:4] == [
        "{#- prefixlint: ignore[PFX101] #}",
        '    {%- set today = strftime_now("%d %B %Y") %}',
    ]
    config = json.loads((tmp_path / "model" / "tokenizer_config.json").read_text(encoding="utf-8"))
    assert config["chat_template"][0]["template"].startswith("{# prefixlint: ignore[PFX101] #}")
    code, out = run(str(tmp_path))
    assert code == 0 and out.startswith("No findings in 5 file(s)"), out


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
    assert run(str(tmp_path))[0] == 1
    code, out = run(str(tmp_path), "--add-noqa")
    assert code == 0, out
    assert {p: ast.dump(ast.parse(p.read_text(encoding="utf-8"))) for p in trees} == trees  # comments only
    text = (tmp_path / "set_tools.py").read_text(encoding="utf-8")
    assert "  # noqa: PFX201" in text
    first = inside.read_text(encoding="utf-8").splitlines()[0]
    assert first == "# prefixlint: ignore-file[PFX101]"  # the finding's line ends inside a string
    assert run(str(tmp_path))[0] == 0


# -- every format shows the fix --------------------------------------------------------------------------


def test_json_has_the_fix_object_and_what_was_fixed(clock: Path) -> None:
    _, out = run(str(clock), "--format", "json")
    (d,) = json.loads(out)["diagnostics"]
    assert d["fix"] == {
        "applicability": "unsafe",
        "verified": True,
        "message": "Move `Today is {{ today }}.` (line 6) to the end of the generation prompt"
        " (before line 26)",
        "edits": [
            {
                "path": str(clock),
                "start_line": 6,
                "start_column": 1,
                "end_line": 7,
                "end_column": 1,
                "replacement": "",
            },
            {
                "path": str(clock),
                "start_line": 26,
                "start_column": 1,
                "end_line": 26,
                "end_column": 1,
                "replacement": MOVED,
            },
        ],
    }
    _, out = run(str(clock), "--format", "json", "--fix", "--unsafe-fixes")
    (fixed,) = json.loads(out)["fixed"]
    assert (fixed["code"], fixed["line"], fixed["applicability"]) == ("PFX101", 3, "unsafe")


def test_sarif_has_fixes_with_replacements(clock: Path) -> None:
    _, out = run(str(clock), "--format", "sarif")
    (result,) = json.loads(out)["runs"][0]["results"]
    (fix,) = result["fixes"]
    (change,) = fix["artifactChanges"]
    assert change["replacements"] == [
        {
            "deletedRegion": {"startLine": 6, "startColumn": 1, "endLine": 7, "endColumn": 1},
            "insertedContent": {"text": ""},
        },
        {
            "deletedRegion": {"startLine": 26, "startColumn": 1, "endLine": 26, "endColumn": 1},
            "insertedContent": {"text": MOVED},
        },
    ]
    assert fix["description"]["text"].endswith("(before line 26) (unsafe)")
    assert "\nhelp: Move `Today is {{ today }}.`" in result["message"]["text"]


def test_github_annotations_carry_the_help(clock: Path) -> None:
    _, out = run(str(clock), "--format", "github")
    assert "%0Ahelp: Move `Today is {{ today }}.` (line 6) to the end of the generation prompt" in out


def test_full_shows_the_fix_as_a_diff(clock: Path) -> None:
    _, out = run(str(clock), "--format", "full")
    lines = [line.strip() for line in out.splitlines()]
    at = lines.index(f"--- {clock}")
    assert lines[at : at + 11] == [
        f"--- {clock}",
        f"+++ {clock} (fixed)",
        "@@ -5,3 +5,2 @@",
        "<|system|>",
        "-Today is {{ today }}.",
        "You are a careful assistant for a travel company. Follow the company policy below in every answer.",
        "@@ -25,2 +24,3 @@",
        "<|assistant|>",
        "+Today is {{ today }}.",
        "{% endif %}",
        "",
    ]


def test_the_readme_loop_runs_as_written(tmp_path: Path) -> None:
    """README "Find, fix, green": the commands print what the README shows (lines it shortens with
    `…` are compared up to it)."""
    readme = (FIXTURES.parent / "README.md").read_text(encoding="utf-8")
    block = readme.split("## Find, fix, green", 1)[1].split("```\n", 2)[1]
    target = tmp_path / "chat_template.jinja"
    shown = block.replace("/tmp/chat_template.jinja", str(target))
    steps = shown.split("$ ")[1:]
    assert steps[0].startswith("cp fixtures/templates/clock_in_system.jinja ")
    shutil.copy(TEMPLATES / "clock_in_system.jinja", target)
    for step, args, code in (
        (steps[1], ["check", str(target)], 1),
        (steps[2], ["check", "--fix", "--unsafe-fixes", str(target)], 0),
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
