"""ruff's everyday habits on `check` (issue 13): nothing checked is said, .gitignore is respected,
a default path of `.`, --exit-zero, -q, --statistics, engine names in any case, explicit files of
an unknown kind, --var errors."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FIXTURES

from prefixlint.cli import cli

TEMPLATES = FIXTURES / "templates"
CLOCK = TEMPLATES / "clock_in_system.jinja"
CLEAN = TEMPLATES / "clean.jinja"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")


def invoke(*args: str):
    return CliRunner().invoke(cli, list(args))


# Point 3: nothing checked is said.


def test_an_empty_folder_warns_that_nothing_was_checked(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a template", encoding="utf-8")
    result = invoke("check", "--no-cache", str(tmp_path))
    assert result.exit_code == 0
    assert result.stdout == "No findings in 0 files (no tokenizer used).\n"
    assert f"prefixlint: warning: no sources found under {tmp_path}" in result.stderr
    assert "nothing was checked" in result.stderr


def test_a_tokenizer_config_without_a_chat_template_is_said(tmp_path: Path) -> None:
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"bos_token": "<s>"}), encoding="utf-8")
    result = invoke("check", "--no-cache", str(config))
    assert result.exit_code == 0
    assert f"prefixlint: warning: {config}: no chat_template in this tokenizer_config.json" in result.stderr
    as_json = json.loads(invoke("check", "--no-cache", "--format", "json", str(config)).stdout)
    [source] = as_json["sources"]
    assert source["kind"] == "tokenizer_config" and source["cacheable_prefix_tokens"] is None
    assert "no chat_template" in source["notes"][0]


def test_only_skipped_files_warn_too(tmp_path: Path) -> None:
    (tmp_path / "index.html.jinja").write_text(
        "<!DOCTYPE html>\n<html><body>{{ title }}</body></html>\n", encoding="utf-8"
    )
    result = invoke("check", "--no-cache", str(tmp_path))
    assert result.exit_code == 0
    assert "nothing checked: the 1 file found are not prompts" in result.stderr


def test_quiet_drops_the_warning_and_the_summary(tmp_path: Path) -> None:
    result = invoke("check", "--no-cache", "-q", str(tmp_path))
    assert result.exit_code == 0 and result.stderr == "" and result.stdout == ""


# Point 4: .gitignore, .git/info/exclude, and `.` by default.


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def ignoring_repo(tmp_path: Path) -> Path:
    _git(tmp_path, "init", "-q")
    for rel in ("top.jinja", "venv2/lib/site.jinja", "sub/local.jinja", "sub/kept.jinja", "private/p.jinja"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(CLOCK, tmp_path / rel)
    (tmp_path / ".gitignore").write_text("venv2/\n", encoding="utf-8")
    (tmp_path / "sub" / ".gitignore").write_text("local.jinja\n", encoding="utf-8")
    with open(tmp_path / ".git" / "info" / "exclude", "a", encoding="utf-8") as fh:
        fh.write("private\n")
    return tmp_path


@needs_git
def test_git_ignored_files_are_not_reported(ignoring_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ignoring_repo)
    result = invoke("check", "--no-cache", "--no-multiturn")  # no path: `.`
    assert result.exit_code == 1
    reported = sorted({line.split(":")[0] for line in result.stdout.splitlines() if ": PFX" in line})
    assert reported == ["sub/kept.jinja", "top.jinja"]
    listed = invoke("check", "--show-files", "--no-cache", "sub")
    assert listed.stdout.splitlines()[0].startswith("sub/kept.jinja:") and "local" not in listed.stdout


@needs_git
def test_no_respect_gitignore_reads_them_again(ignoring_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ignoring_repo)
    result = invoke("check", "--no-cache", "--no-multiturn", "--no-respect-gitignore", ".")
    reported = {line.split(":")[0] for line in result.stdout.splitlines() if ": PFX" in line}
    assert reported == {
        "top.jinja",
        "venv2/lib/site.jinja",
        "sub/local.jinja",
        "sub/kept.jinja",
        "private/p.jinja",
    }
    config = ignoring_repo / "prefixlint.toml"
    config.write_text("respect-gitignore = false\n", encoding="utf-8")
    again = invoke("check", "--no-cache", "--no-multiturn", "--statistics", "-q", ".")
    assert again.stdout.split() == ["5", "PFX101", "clock-in-prefix", "warning"]


@needs_git
def test_a_file_named_explicitly_is_checked_even_if_ignored_and_without_git(
    ignoring_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import prefixlint.run.sources as sources

    def no_git(*args: object, **kwargs: object) -> None:
        raise AssertionError("git was run for files named explicitly")

    monkeypatch.chdir(ignoring_repo)
    monkeypatch.setattr(sources.subprocess, "run", no_git)
    result = invoke("check", "--no-cache", "--no-multiturn", "sub/local.jinja", "top.jinja")
    assert result.exit_code == 1 and "sub/local.jinja:3:21: PFX101" in result.stdout


# Point 6, the quick ones.


def test_exit_zero_keeps_the_findings_and_exits_zero() -> None:
    result = invoke("check", "--no-cache", "--no-multiturn", "--exit-zero", str(CLOCK))
    assert result.exit_code == 0 and "PFX101 clock-in-prefix" in result.stdout
    assert invoke("check", "--exit-zero", "--select", "PFX9", str(CLOCK)).exit_code == 2  # usage stays 2


def test_quiet_prints_findings_only() -> None:
    result = invoke("check", "--no-cache", "--no-multiturn", "-q", str(CLOCK))
    assert result.exit_code == 1
    finding, help_line = result.stdout.splitlines()  # the finding and what to do about it, no summary
    assert ": PFX101 " in finding and help_line.startswith("  help: Move `Today is {{ today }}.`")
    full = invoke("check", "--no-cache", "--no-multiturn", "--quiet", "--format", "full", str(CLOCK))
    assert "Found " not in full.stdout and "^" in full.stdout


def test_statistics_counts_per_code(tmp_path: Path) -> None:
    shutil.copy(CLOCK, tmp_path / "a.jinja")
    shutil.copy(CLOCK, tmp_path / "b.jinja")
    shutil.copy(TEMPLATES / "request_id.jinja", tmp_path / "c.jinja")
    result = invoke("check", "--no-cache", "--no-multiturn", "--statistics", str(tmp_path))
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].split("\t") == ["    2", "PFX101", "clock-in-prefix", "warning"]
    counts = {line.split("\t")[1]: int(line.split("\t")[0]) for line in lines[:-1]}
    assert counts["PFX102"] == 1 and list(counts.values()) == sorted(counts.values(), reverse=True)
    assert lines[-1].startswith(f"Found {sum(counts.values())} findings in 3 files")
    as_json = invoke(
        "check", "--no-cache", "--no-multiturn", "--statistics", "--format", "json", str(tmp_path)
    )
    items = json.loads(as_json.stdout)
    assert items[0] == {"code": "PFX101", "name": "clock-in-prefix", "count": 2, "severity": "warning"}


def test_engine_names_in_any_case(tmp_path: Path) -> None:
    result = invoke(
        "check", "--no-cache", "--no-multiturn", "--engine", "VLLM", "--format", "json", str(CLEAN)
    )
    assert result.exit_code == 0 and json.loads(result.stdout)["engine"] == "vllm"
    (tmp_path / "prefixlint.toml").write_text('engine = "SGLang"\n', encoding="utf-8")
    shutil.copy(CLEAN, tmp_path / "clean.jinja")
    from_config = invoke("check", "--no-cache", "--no-multiturn", "--format", "json", str(tmp_path))
    assert json.loads(from_config.stdout)["engine"] == "sglang"


def test_an_explicit_file_of_an_unknown_kind_is_a_usage_error(tmp_path: Path) -> None:
    log = tmp_path / "requests.jsonl"
    log.write_text('{"prompt": "hi"}\n', encoding="utf-8")
    result = invoke("check", "--no-cache", str(log))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"prefixlint: error: {log}: not a file prefixlint checks")
    assert invoke("check", "--show-files", str(log)).exit_code == 2


def test_var_errors_say_what_is_expected() -> None:
    result = invoke("render", str(CLEAN), "--var", "enable_thinking")
    assert result.exit_code == 2
    assert "BadParameter" not in result.stderr
    assert "prefixlint: error: --var 'enable_thinking': expected NAME=VALUE" in result.stderr


# Point 5: configuration like ruff.


def test_command_line_select_beats_the_config_ignore(tmp_path: Path) -> None:
    shutil.copy(CLOCK, tmp_path / "t.jinja")
    (tmp_path / "prefixlint.toml").write_text('ignore = ["PFX101"]\n', encoding="utf-8")
    quiet = invoke("check", "--no-cache", "--no-multiturn", str(tmp_path))
    assert "PFX101" not in quiet.stdout
    selected = invoke("check", "--no-cache", "--no-multiturn", "--select", "PFX101", str(tmp_path))
    assert selected.exit_code == 1 and ": PFX101 clock-in-prefix" in selected.stdout
    # The command line's own --ignore still counts.
    both = invoke(
        "check", "--no-cache", "--no-multiturn", "--select", "PFX1", "--ignore", "PFX101", str(tmp_path)
    )
    assert "PFX101" not in both.stdout


def test_config_option_reads_a_tool_prefixlint_table(tmp_path: Path) -> None:
    shutil.copy(CLOCK, tmp_path / "t.jinja")
    other = tmp_path / "other.toml"
    other.write_text('[tool.prefixlint]\nignore = ["PFX101"]\nengine = "SGLang"\n', encoding="utf-8")
    result = invoke("check", "--no-cache", "--no-multiturn", "--config", str(other), str(tmp_path))
    assert result.exit_code == 0, result.output
    assert "PFX101" not in result.stdout
    settings = invoke("check", "--show-settings", "--config", str(other), str(tmp_path))
    assert settings.exit_code == 0
    lines = dict(line.split(" = ", 1) for line in settings.stdout.splitlines())
    assert json.loads(lines["config-file"]) == str(other)
    assert json.loads(lines["engine"]) == "sglang" and "PFX101" not in json.loads(lines["enabled-rules"])
    bad = tmp_path / "bad.toml"
    bad.write_text("[tool.other]\nx = 1\n", encoding="utf-8")
    failed = invoke("check", "--config", str(bad), str(tmp_path))
    assert failed.exit_code == 2 and f"{bad}: no `[tool.prefixlint]` table" in failed.stderr


def test_show_settings_prints_the_resolved_settings(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.prefixlint]\nselect = ["PFX1"]\nfail-on = "error"\nrespect-gitignore = false\n',
        encoding="utf-8",
    )
    result = invoke("check", "--show-settings", "--extend-select", "PFX501", str(tmp_path))
    assert result.exit_code == 0
    lines = dict(line.split(" = ", 1) for line in result.stdout.splitlines())
    assert json.loads(lines["config-file"]) == str(tmp_path / "pyproject.toml")
    assert json.loads(lines["fail-on"]) == "error"
    assert json.loads(lines["respect-gitignore"]) is False
    assert json.loads(lines["enabled-rules"]) == ["PFX101", "PFX102", "PFX103", "PFX104", "PFX105", "PFX501"]
    assert json.loads(lines["tokenizer-file"]).endswith("tokenizer.json")


def test_a_config_tokenizer_that_is_missing_names_the_file_and_key(tmp_path: Path) -> None:
    shutil.copy(CLEAN, tmp_path / "t.jinja")
    (tmp_path / "pyproject.toml").write_text(
        '[tool.prefixlint]\ntokenizer = "models/my-model"\n', encoding="utf-8"
    )
    result = invoke("check", "--no-cache", str(tmp_path))
    assert result.exit_code == 2
    config = tmp_path / "pyproject.toml"
    expected = f"prefixlint: error: config: {config}: `tool.prefixlint.tokenizer`: models/my-model"
    assert result.stderr.startswith(expected)


# Point 7: the summary names the tokenizers used, not the policy.


def test_the_summary_names_each_tokenizer_used(tmp_path: Path) -> None:
    from prefixlint.models.tokens import EMBEDDED_NAME, _embedded_dir

    (tmp_path / "model").mkdir()
    shutil.copy(CLEAN, tmp_path / "model" / "chat.jinja")
    shutil.copy(CLEAN, tmp_path / "plain.jinja")
    shutil.copy(_embedded_dir() / "tokenizer.json", tmp_path / "model" / "tokenizer.json")
    result = invoke("check", "--no-cache", "--no-multiturn", str(tmp_path))
    summary = result.stdout.splitlines()[-1]
    assert "auto:" not in summary
    model = tmp_path / "model" / "tokenizer.json"
    assert summary.endswith(f"(tokenizers: {model}, {EMBEDDED_NAME}).")  # sorted by name at equal use
    python_only = invoke("check", "--no-cache", str(FIXTURES / "python" / "clean.py"))
    assert python_only.stdout.splitlines()[-1].startswith("No findings in 1 file (tokenizer: ")


# Point 6: template variables on check and diff, render takes what check takes, --tokenizer
# pointing at a tokenizer_config.json.

SWITCH = """{{- bos_token }}
{%- if show_date is not defined or show_date %}Today is {{ strftime_now("%Y-%m-%d") }}.
{% endif %}You are a careful assistant for a travel company. Follow the company policy below.
1. Quote prices in the customer's currency and say when a price is an estimate.
2. Never book, cancel or change a reservation without an explicit confirmation from the customer.
{%- for message in messages %}
<|{{ message.role }}|>
{{ message.content }}<|end|>
{%- endfor %}
{%- if add_generation_prompt %}
<|assistant|>
{% endif %}
"""


def test_var_and_chat_template_kwargs_reach_the_analysis_and_the_json(tmp_path: Path) -> None:
    template = tmp_path / "switch.jinja"
    template.write_text(SWITCH, encoding="utf-8")
    plain = invoke("check", "--no-cache", "--no-multiturn", str(template))
    assert plain.exit_code == 1 and "PFX101 clock-in-prefix" in plain.stdout
    off = invoke("check", "--no-cache", "--no-multiturn", "--var", "show_date=false", str(template))
    assert off.exit_code == 0, off.output
    kwargs = ["--chat-template-kwargs", '{"show_date": false, "persona": "x"}']
    as_json = invoke("check", "--no-cache", "--no-multiturn", *kwargs, "--format", "json", str(template))
    document = json.loads(as_json.stdout)
    assert as_json.exit_code == 0 and document["diagnostics"] == []
    assert document["template_variables"] == {"show_date": False, "persona": "x"}
    both = invoke("check", "--no-cache", "--no-multiturn", *kwargs, "--var", "show_date=true", str(template))
    assert both.exit_code == 1  # --var wins over --chat-template-kwargs
    bad = invoke("check", "--chat-template-kwargs", "[1]", str(template))
    assert bad.exit_code == 2 and "--chat-template-kwargs: expected a JSON object" in bad.stderr


@needs_git
def test_var_reaches_the_diff_gate(tmp_path: Path) -> None:
    _git(tmp_path, "init", "-q")
    (tmp_path / "t.jinja").write_text(SWITCH, encoding="utf-8")
    result = invoke(
        "diff", "HEAD", str(tmp_path), "--no-cache", "--var", "show_date=false", "--format", "json"
    )
    document = json.loads(result.stdout)
    assert result.exit_code == 0 and document["first_commit"] is True
    assert document["template_variables"] == {"show_date": False}
    assert invoke("diff", "HEAD", str(tmp_path), "--no-cache").exit_code == 1  # the date is a new finding


def test_render_takes_a_model_folder_and_refuses_other_files(tmp_path: Path) -> None:
    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer_config.json").write_text(
        json.dumps({"chat_template": "{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}"}),
        encoding="utf-8",
    )
    result = invoke("render", str(model))
    assert result.exit_code == 0 and result.stdout.startswith("[system] ")
    shutil.copy(CLEAN, model / "chat_template.jinja")  # chat_template.jinja comes first, as in transformers
    assert invoke("render", str(model)).stdout == invoke("render", str(model / "chat_template.jinja")).stdout
    log = tmp_path / "requests.jsonl"
    log.write_text("{}\n", encoding="utf-8")
    refused = invoke("render", str(log))
    assert refused.exit_code == 2 and refused.stderr.startswith(f"prefixlint: error: {log}: not a file")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert "nothing to render" in invoke("render", str(empty)).stderr


def test_tokenizer_option_naming_a_tokenizer_config(tmp_path: Path) -> None:
    from prefixlint.models.tokens import _embedded_dir

    model = tmp_path / "model"
    model.mkdir()
    (model / "tokenizer_config.json").write_text("{}", encoding="utf-8")
    lone = invoke("check", "--no-cache", "--tokenizer", str(model / "tokenizer_config.json"), str(CLEAN))
    assert lone.exit_code == 2
    assert (
        "a tokenizer_config.json holds no tokenizer, and there is no tokenizer.json beside it" in lone.stderr
    )
    assert "JSON" not in lone.stderr
    shutil.copy(_embedded_dir() / "tokenizer.json", model / "tokenizer.json")
    used = invoke(
        "check",
        "--no-cache",
        "--no-multiturn",
        "--tokenizer",
        str(model / "tokenizer_config.json"),
        str(CLEAN),
    )
    assert used.exit_code == 0, used.output
    assert f"using {model / 'tokenizer.json'}" in used.stderr


# Point 6: --block-size.

CLOCK_PY = """from datetime import datetime

from openai import OpenAI

client = OpenAI()


def answer(question: str) -> str:
    system = (
        f"Now: {datetime.now()}. "
        "You are a support assistant for ACME; answer in English and cite the knowledge base."
    )
    return client.chat.completions.create(
        model="gpt-4o",
        messages=[{"role": "system", "content": system}, {"role": "user", "content": question}],
    )
"""


def test_block_size_sets_the_engine_s_cache_block(tmp_path: Path) -> None:
    from prefixlint.engines import load_engines

    app = tmp_path / "app.py"
    app.write_text(CLOCK_PY, encoding="utf-8")
    # ~19 static tokens after the clock, then the user's question: more than a 16-token block (an
    # error), less than a 64-token one (nothing lost: the per-request question follows anyway).
    default = invoke("check", "--no-cache", "--format", "json", str(app))
    assert [d["severity"] for d in json.loads(default.stdout)["diagnostics"]] == ["error"]
    bigger = invoke("check", "--no-cache", "--format", "json", "--block-size", "64", str(app))
    assert bigger.exit_code == 0
    assert json.loads(bigger.stdout)["diagnostics"] == []
    assert load_engines()["vllm"].block_size == 16  # the profiles themselves are never changed
    settings = invoke("check", "--show-settings", "--block-size", "64", str(app)).stdout
    assert "block-size = 64\n" in settings


@needs_git
def test_block_size_sets_the_gate_s_unit(tmp_path: Path) -> None:
    diff_fixtures = FIXTURES / "ecosystem" / "diff"
    _git(tmp_path, "init", "-q")
    shutil.copy(diff_fixtures / "base.jinja", tmp_path / "chat_template.jinja")
    _git(tmp_path, "add", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-q", "-m", "base")
    shutil.copy(diff_fixtures / "timestamp_top.jinja", tmp_path / "chat_template.jinja")
    assert invoke("diff", "HEAD", str(tmp_path), "--no-cache").exit_code == 1
    # With 128-token blocks vLLM cached nothing of the 80-token prefix before either: no loss.
    wide = invoke("diff", "HEAD", str(tmp_path), "--no-cache", "--block-size", "128")
    assert wide.exit_code == 0, wide.output


def test_show_settings_prints_each_source_s_plan(tmp_path: Path) -> None:
    # One resolved plan per source (prefixlint/settings.py): its kind, the tokenizer file that
    # analyses it (a tokenizer.json beside it wins over the default), the engine block and the
    # rules reported for it after per-file ignores.
    (tmp_path / "pyproject.toml").write_text(
        '[tool.prefixlint]\nengine = "sglang"\n[tool.prefixlint.per-file-ignores]\n"legacy/*" = ["PFX1"]\n',
        encoding="utf-8",
    )
    (tmp_path / "legacy").mkdir()
    shutil.copy(CLOCK, tmp_path / "legacy" / "old.jinja")
    (tmp_path / "model").mkdir()
    shutil.copy(CLEAN, tmp_path / "model" / "chat_template.jinja")
    tokenizer = tmp_path / "model" / "tokenizer.json"
    tokenizer.write_text("{}", encoding="utf-8")  # only its path is planned: nothing is loaded
    result = invoke("check", "--show-settings", "--block-size", "32", str(tmp_path))
    assert result.exit_code == 0, result.output
    lines = dict(line.split(" = ", 1) for line in result.stdout.splitlines())
    legacy = json.loads(lines[f"source.{tmp_path / 'legacy' / 'old.jinja'}"])
    model = json.loads(lines[f"source.{tmp_path / 'model' / 'chat_template.jinja'}"])
    assert legacy["kind"] == model["kind"] == "jinja"
    assert (legacy["engine"], legacy["block-size"]) == ("sglang", 32)
    assert "PFX101" not in legacy["rules"] and "PFX101" in model["rules"] and "PFX001" in legacy["rules"]
    assert model["tokenizer-file"] == str(tokenizer)
    assert legacy["tokenizer-file"].endswith("tokenizer.json") and legacy["tokenizer-file"] != str(tokenizer)


def test_block_size_is_part_of_the_options_for_library_callers_too() -> None:
    # The block comes from Options (settings.Options.engine_profile), not from a profile swapped
    # by the command line: lint_paths gives what the CLI gives, evidence tables included.
    from prefixlint.api import lint_paths
    from prefixlint.settings import Options

    def clock_finding(block_size: int | None):
        report = lint_paths([str(CLOCK)], Options(multiturn=False, block_size=block_size))
        return next(d for d in report.diagnostics if d.code == "PFX101")

    default, narrow, wide = clock_finding(None), clock_finding(8), clock_finding(64)
    # The clock is at token 9: vLLM caches no whole 16-token block before it, one 8-token block.
    assert default.evidence.token_index == 9
    assert (default.evidence.engines["vllm"], narrow.evidence.engines["vllm"]) == (0, 8)
    # What it loses is counted in whole blocks of the chosen size: 96 with 16, 64 with 64, of the 102
    # static tokens after it (the turn markers in front of the user's text cost nothing shareable).
    assert (default.evidence.engines_lost["vllm"], wide.evidence.engines_lost["vllm"]) == (96, 64)
    assert wide.evidence.engines_lost["sglang"] == default.evidence.engines_lost["sglang"] == 102
