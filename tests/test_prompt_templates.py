"""App prompt templates, skipped non-prompts and include-aware rendering (fixtures/prompt_templates/):
what each Jinja file is taken for, the findings traced into included files, and the silence of the
files that are not prompts."""

from __future__ import annotations

import json
import os
from pathlib import Path

import jinja2
import pytest
from click.testing import CliRunner
from conftest import FIXTURES, run_prefixlint

from prefixlint.api import Options, lint_paths
from prefixlint.cli import cli
from prefixlint.jinja.classify import classify_template
from prefixlint.jinja.loader import prompt_loader
from prefixlint.jinja.variables import clock_named
from prefixlint.run.sources import Source, classify_source

PROMPTS = FIXTURES / "prompt_templates"
OPTIONS = Options(multiturn=False)


@pytest.fixture(scope="module")
def report():
    return lint_paths([str(PROMPTS)], OPTIONS)


def _by_name(report) -> dict[str, object]:
    return {str(Path(s.path).relative_to(PROMPTS)): s for s in report.sources}


def _diagnostics(report, name: str) -> list:
    return [d for d in report.diagnostics if d.span.path == str(PROMPTS / name)]


def test_each_fixture_gets_its_kind(report) -> None:
    kinds = {name: s.kind for name, s in _by_name(report).items()}
    assert kinds == {
        "package.rst.jinja": "not_prompt",
        "status_page.jinja": "not_prompt",
        "scaffold/setup.py": "not_prompt",
        "slack_thread.j2": "prompt_template",
        "system.j2": "prompt_template",
        "missing_include.j2": "prompt_template",
        "fragments/rules.j2": "prompt_template",
        "fragments/tone.j2": "prompt_template",
        "steps/assistant_step.j2": "prompt_template",
        "steps/call_result.j2": "prompt_template",
    }


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("package.rst.jinja", "reStructuredText"),
        ("status_page.jinja", "HTML page"),
        ("scaffold/setup.py", "does not parse"),
    ],
)
def test_skipped_files_are_silent_and_say_why(report, name: str, why: str) -> None:
    source = _by_name(report)[name]
    assert source.diagnostics == [] and _diagnostics(report, name) == []
    assert source.total_tokens is None
    assert any(why in note for note in source.notes), source.notes


def test_date_in_an_included_fragment_is_reported_at_the_fragment_line(report) -> None:
    [d] = [d for d in report.diagnostics if d.code == "PFX101"]  # once, though two sources see it
    assert (d.span.path, d.span.line, d.span.column) == (str(PROMPTS / "fragments" / "rules.j2"), 2, 10)
    assert d.severity.label == "warning"  # named like a date: where it is filled is not visible
    assert "`current_date`" in d.message
    ev = d.evidence
    assert ev is not None and "Today is 0‖4 Mar 2025.\nFollow these rules" in ev.context_a
    assert ev.static_tokens_lost >= 16
    system = _by_name(report)["system.j2"]
    assert system.cacheable_prefix_tokens == ev.token_index < system.total_tokens


def test_app_configuration_and_the_slack_thread_are_silent(report) -> None:
    # `persona` says nothing about requests; the thread loops over `messages` to build ONE user
    # message: no conversation, so nothing multi-turn (PFX4xx) and nothing else.
    assert _diagnostics(report, "fragments/tone.j2") == []
    assert _diagnostics(report, "slack_thread.j2") == []
    slack = _by_name(report)["slack_thread.j2"]
    assert slack.total_tokens and slack.cacheable_prefix_tokens == slack.total_tokens
    assert slack.multiturn_reuse is None


def test_a_fragment_that_reads_no_conversation_is_an_app_prompt(report) -> None:
    # Two words of text and an object the caller passes (`step.calls_as_json()`): rendered as a
    # chat template, prefixlint's stand-in string for `step` raised (PFX002 at lines 1 and 4); as
    # an app prompt its stand-in has every attribute, and the fragment renders whole.
    assert _diagnostics(report, "steps/assistant_step.j2") == []
    step = _by_name(report)["steps/assistant_step.j2"]
    assert step.total_tokens and step.cacheable_prefix_tokens == step.total_tokens
    # Its twin puts an id ahead of its own static text: found as in any app prompt.
    [d] = _diagnostics(report, "steps/call_result.j2")
    assert (d.code, d.span.line, d.span.column, d.severity.label) == ("PFX102", 1, 6, "info")
    assert d.evidence is not None and 0 < d.evidence.static_tokens_lost < 16


def test_missing_include_is_a_render_error_at_the_include_line(report) -> None:
    [d] = _diagnostics(report, "missing_include.j2")
    assert (d.code, d.span.line, d.severity.label) == ("PFX002", 2, "error")
    assert "'fragments/signature.j2' not found in " in d.message
    assert os.path.join(os.path.relpath(PROMPTS), "") in d.message or str(PROMPTS) in d.message


def test_cli_summary_json_kinds_and_show_files() -> None:
    out = run_prefixlint("check", "--no-cache", str(PROMPTS))
    assert out.returncode == 1, out.stderr
    assert "3 skipped as not prompts" in out.stdout
    assert "skipped" not in out.stderr  # counted, not warned about one by one

    data = json.loads(run_prefixlint("check", "--no-cache", "--format", "json", str(PROMPTS)).stdout)
    kinds = {Path(s["path"]).name: s["kind"] for s in data["sources"]}
    assert kinds["system.j2"] == "prompt_template" and kinds["package.rst.jinja"] == "not_prompt"
    skipped = next(s for s in data["sources"] if s["kind"] == "not_prompt")
    assert skipped["notes"] and skipped["total_tokens"] is None

    shown = run_prefixlint("check", "--show-files", str(PROMPTS), str(FIXTURES / "templates" / "clean.jinja"))
    assert shown.returncode == 0, shown.stderr
    lines = dict(line.split(": ", 1) for line in shown.stdout.splitlines())
    assert lines[str(PROMPTS / "package.rst.jinja")].startswith("not_prompt (renders reStructuredText")
    assert lines[str(PROMPTS / "slack_thread.j2")].startswith("prompt_template")
    assert lines[str(FIXTURES / "templates" / "clean.jinja")] == "jinja (chat template: reads message roles)"
    assert "finding" not in shown.stdout  # nothing analysed


def _project(tmp_path: Path, config: str) -> Path:
    (tmp_path / "prefixlint.toml").write_text(config, encoding="utf-8")
    for folder in ("docs", "models", "prompts/support"):
        (tmp_path / folder).mkdir(parents=True)
    # Prose with a request id ahead of static text: a prompt by its text, a finding as a prompt.
    text = "Request {{ request_id }}.\nYou answer questions about the opening hours and loans of a library.\n"
    (tmp_path / "docs" / "page.jinja").write_text(text, encoding="utf-8")
    (tmp_path / "models" / "chat.jinja").write_text(text, encoding="utf-8")
    (tmp_path / "prompts" / "support" / "agent.j2").write_text(text, encoding="utf-8")
    return tmp_path


def test_config_template_kinds_override_the_classification(tmp_path: Path) -> None:
    root = _project(
        tmp_path,
        'template-kinds = {"docs/*.jinja" = "not-prompt", "models/*.jinja" = "chat", '
        '"prompts/**/*.j2" = "prompt"}\n',
    )
    result = CliRunner().invoke(cli, ["check", "--no-cache", "--format", "json", str(root)])
    data = json.loads(result.stdout)
    kinds = {Path(s["path"]).relative_to(root).as_posix(): s["kind"] for s in data["sources"]}
    assert kinds == {
        "docs/page.jinja": "not_prompt",
        "models/chat.jinja": "jinja",
        "prompts/support/agent.j2": "prompt_template",
    }
    found = {(Path(d["path"]).name, d["code"]) for d in data["diagnostics"]}
    assert ("agent.j2", "PFX102") in found and not any(name == "page.jinja" for name, _ in found)


def test_unknown_template_kind_is_a_config_error(tmp_path: Path) -> None:
    root = _project(tmp_path, 'template-kinds = {"docs/*.jinja" = "documentation"}\n')
    result = CliRunner().invoke(cli, ["check", "--no-cache", str(root)])
    assert result.exit_code == 2
    assert "prefixlint.toml" in result.output and "template-kinds" in result.output
    assert "'documentation'" in result.output and "not-prompt" in result.output


def test_includes_resolve_through_the_configured_search_path_and_are_not_cached(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "prefixlint.toml").write_text('template-search-path = ["shared"]\n', encoding="utf-8")
    (tmp_path / "app" / "system.j2").write_text(
        "You help hikers plan day trips in the Alps.\n{% include 'policy.txt' %}\n", encoding="utf-8"
    )
    policy = tmp_path / "shared" / "policy.txt"
    policy.write_text("Be careful with weather advice.\nAlways mention the mountain rescue number.\n")
    args = ["check", "--format", "json", str(tmp_path / "app")]
    first = json.loads(CliRunner().invoke(cli, args).stdout)
    assert first["diagnostics"] == []
    policy.write_text("Session {{ session_id }}.\n" + policy.read_text())  # the fragment changes
    second = json.loads(CliRunner().invoke(cli, args).stdout)
    [d] = second["diagnostics"]
    assert (d["code"], d["path"], d["line"]) == ("PFX102", str(policy), 1)


def test_loader_never_reads_outside_its_folders(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("CANARY-outside")
    app = tmp_path / "app"
    app.mkdir()
    (app / "link.txt").symlink_to(outside / "secret.txt")
    (app / "big.txt").write_bytes(b"x" * 64)
    (app / "ok.txt").write_text("fine")
    loader = prompt_loader(str(app / "system.j2"))
    env = jinja2.Environment(loader=loader)
    assert env.get_template("ok.txt").render() == "fine"
    for name in ("link.txt", "../outside/secret.txt", "/etc/hostname", "missing.txt"):
        with pytest.raises(jinja2.TemplateNotFound):
            env.get_template(name)
    loader.max_bytes = 16  # type: ignore[attr-defined]
    with pytest.raises(jinja2.TemplateError, match="too large"):
        env.get_template("big.txt")


def test_search_path_order(tmp_path: Path) -> None:
    for folder, text in (("own", "own"), ("a", "a"), ("b", "b")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "x.txt").write_text(text)
    (tmp_path / "b" / "y.txt").write_text("from b")
    env = jinja2.Environment(
        loader=prompt_loader(str(tmp_path / "own" / "t.j2"), [str(tmp_path / "a"), str(tmp_path / "b")])
    )
    assert env.get_template("x.txt").render() == "own"
    assert env.get_template("y.txt").render() == "from b"


def test_static_variables_from_the_config_are_held_fixed(tmp_path: Path) -> None:
    path = tmp_path / "p.j2"
    path.write_text(
        "Customer: {{ user_name }}\nYou answer questions about orders, returns and deliveries of the "
        "bookshop, in two sentences, and never share another customer's data or order history.\n"
    )
    [varied] = lint_paths([str(path)], OPTIONS).sources
    assert [(d.code, d.span.line, d.severity.label) for d in varied.diagnostics] == [("PFX105", 1, "warning")]
    [fixed] = lint_paths([str(path)], Options(multiturn=False, static_variables=("user_name",))).sources
    assert fixed.diagnostics == []


def test_less_than_a_cache_block_after_the_value_is_info(tmp_path: Path) -> None:
    path = tmp_path / "p.j2"
    path.write_text(
        "Answer the customer's question about the order politely.\nRequest {{ request_id }}: be brief.\n"
    )
    [result] = lint_paths([str(path)], OPTIONS).sources
    [d] = result.diagnostics
    assert (d.code, d.span.line, d.severity.label) == ("PFX102", 2, "info")
    assert d.evidence.static_tokens_lost < 16


def test_loops_and_attributes_of_unknown_inputs_render(tmp_path: Path) -> None:
    path = tmp_path / "agent.j2"
    path.write_text(
        "You are an AI agent named {{ agent.name }}.\n{% for memory in agent.memories %}"
        "{{ memory.get_prompt() | indent(4) }}\n{% endfor %}{{ tools | join(', ') }}\n"
        "Use the tools above only when the question needs them, and say which one you used.\n"
    )
    [result] = lint_paths([str(path)], OPTIONS).sources
    assert result.kind == "prompt_template" and result.diagnostics == []
    assert result.total_tokens and result.cacheable_prefix_tokens == result.total_tokens


def test_numbers_and_slices_of_unknown_inputs_render(tmp_path: Path) -> None:
    path = tmp_path / "list.j2"
    path.write_text(
        "List at most {{ max_items }} items.\n{% for i in range(max_items) %}- slot {{ i }}\n{% endfor %}"
        "{% if count > 3 %}Many.{% endif %}{{ items[:limit] | join(', ') }} {{ price | round(2) }} "
        "{{ ratio * 2 }}\nAlways reply in plain English and keep each item on one line.\n"
    )
    [result] = lint_paths([str(path)], OPTIONS).sources
    assert result.diagnostics == [] and result.total_tokens


def test_scaffolding_python(tmp_path: Path) -> None:
    (tmp_path / "templates").mkdir()
    (tmp_path / "templates" / "handler.py").write_text("def handler(event:\n    return event\n")
    (tmp_path / "broken.py").write_text("def handler(event:\n    return event\n")
    result = lint_paths([str(tmp_path)], OPTIONS)
    found = {Path(d.span.path).name: (d.code, d.severity.label) for d in result.diagnostics}
    assert found == {"handler.py": ("PFX003", "info"), "broken.py": ("PFX003", "error")}


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("t.jinja", "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}{% endfor %}", "jinja"),
        ("t.j2", "Hello there, assistant here.{% if add_generation_prompt %}x{% endif %}", "jinja"),
        ("chat_template.jinja", "Plain words in a model's own template file {{ x }}", "jinja"),
        ("t.j2", "<|im_start|>system\nYou are helpful and kind.<|im_end|>", "jinja"),
        ("t.jinja", "{{ ''.__class__ }}", "jinja"),  # no prose: rendered as before
        ("t.j2", "Actions: {{ subtask.actions_to_json() }}", "prompt_template"),  # reads no messages
        ("t.j2", "{% for m in messages %}{{ m.content }}{% endfor %}Done.", "jinja"),
        ("t.jinja", "{% include 'secret.txt' %}", "jinja"),
        ("t.j2", "{% extends 'base.j2' %}{% block body %}User: {{ name }}{% endblock %}", "prompt_template"),
        ("t.j2", "Hello {{ cookiecutter.author }}, this is your project readme.", "not_prompt"),
        ("Dockerfile.j2", "FROM python:3.12\nRUN pip install {{ pkg }}", "not_prompt"),
        ("t.j2", "import os\nfrom {{ pkg }} import app\ndef main():\n    app.run()\n", "not_prompt"),
        (
            "t.j2",
            "Review this code as a senior engineer.\n```python\nimport os\nfrom x import y\n```\n",
            "prompt_template",
        ),
    ],
)
def test_classification_rule(name: str, text: str, kind: str) -> None:
    assert classify_template(name, text).kind == kind


def test_python_with_placeholders_that_parses_is_python() -> None:
    source = Source("m.py", "python")
    assert classify_source(source, 'TEMPLATE = "Hello {{ name }}, welcome."\n').kind == "python"
    assert classify_source(source, "from {{ pkg }} import app\n").kind == "not_prompt"


@pytest.mark.parametrize(
    ("name", "clock"),
    [
        ("current_date", True),
        ("CURRENT_DATE", True),
        ("now", True),
        ("today", True),
        ("current_time", True),
        ("birth_date", False),
        ("tools_description", False),
        ("due_time", False),
    ],
)
def test_clock_named(name: str, clock: bool) -> None:
    assert clock_named(name) is clock


@pytest.mark.parametrize(
    ("name", "code"),
    [
        ("request_id", "PFX102"),
        ("session", "PFX102"),
        ("conversation_instructions", None),  # what a conversation holds, not its id
        ("conversation", "PFX105"),  # the turns so far (`{% for message in conversation %}`)
        ("chat_history", "PFX105"),
        ("thread_summary", None),
        ("user_name", "PFX105"),
        ("hostname", "PFX104"),
    ],
)
def test_provenance_by_name(name: str, code: str | None) -> None:
    from prefixlint.jinja.variables import provenance_code

    assert provenance_code(name) == code


def test_extends_and_a_missing_nested_include(tmp_path: Path) -> None:
    (tmp_path / "parts").mkdir()
    (tmp_path / "base.j2").write_text(
        "You are a helpful assistant for the city library.\n{% block body %}{% endblock %}\n"
        "Always answer in the language of the question, in two sentences, and cite the loan rules.\n"
    )
    (tmp_path / "child.j2").write_text(
        '{% extends "base.j2" %}\n{% block body %}\nUser: {{ user_name }}\n'
        '{% include "parts/notes.j2" %}\n{% endblock %}\n'
    )
    notes = tmp_path / "parts" / "notes.j2"
    notes.write_text("Notes for the lending desk.\n")
    [child] = lint_paths([str(tmp_path / "child.j2")], OPTIONS).sources
    assert [(d.code, d.span.path, d.span.line) for d in child.diagnostics] == [
        ("PFX105", str(tmp_path / "child.j2"), 3)
    ]
    notes.write_text('Notes for the lending desk.\n{% include "parts/gone.j2" %}\n')
    [child] = lint_paths([str(tmp_path / "child.j2")], OPTIONS).sources
    [d] = child.diagnostics
    assert (d.code, d.span.path, d.span.line) == ("PFX002", str(notes), 2)
    assert "'parts/gone.j2' not found in" in d.message


def test_diff_gate_leaves_out_files_that_are_not_prompts(tmp_path: Path) -> None:
    import subprocess

    from prefixlint.diffgate import diff_gate

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", *args],
            cwd=tmp_path,
            check=True,
            capture_output=True,
        )

    rst = (PROMPTS / "package.rst.jinja").read_text(encoding="utf-8")
    (tmp_path / "package.rst.jinja").write_text(rst, encoding="utf-8")
    # Longer than a vLLM block: the gate fails on a lost cache block (or a new finding at
    # --fail-on), not on a static prefix that merely changed.
    prompt = (
        "You help hikers plan day trips in the Alps. Name the trail, its length, the climb and the"
        " hut at the top; warn about weather, snow and the last cable car down, briefly.\n"
    )
    (tmp_path / "system.j2").write_text(prompt)
    git("init", "-q")
    git("add", ".")
    git("commit", "-q", "-m", "base")
    (tmp_path / "package.rst.jinja").write_text(rst + "\n.. note:: generated\n", encoding="utf-8")
    (tmp_path / "system.j2").write_text("Request {{ request_id }}.\n" + prompt)
    result = diff_gate("HEAD", [str(tmp_path)], OPTIONS)
    assert [Path(c.path).name for c in result.changes] == ["system.j2"]
    assert result.failed  # the request id in front: the prefix shrank and PFX102 is new


def test_a_var_fixes_an_app_prompt_template_s_variable() -> None:
    # `--var NAME=VALUE` renders NAME with the value the app passes and stops varying it: the
    # date named in fragments/rules.j2 is then part of the static prefix, and nothing is found.
    args = ["check", "--no-cache", "--no-multiturn", "--format", "json", str(PROMPTS / "system.j2")]
    fixed = json.loads(CliRunner().invoke(cli, [*args, "--var", "current_date=2026-01-05"]).stdout)
    assert fixed["diagnostics"] == [] and fixed["template_variables"] == {"current_date": "2026-01-05"}
    [source] = fixed["sources"]
    assert source["cacheable_prefix_tokens"] == source["total_tokens"] > 100
    unfixed = json.loads(CliRunner().invoke(cli, args).stdout)
    assert [d["code"] for d in unfixed["diagnostics"]] == ["PFX101"]


def test_a_stand_in_value_of_the_wrong_type_is_no_template_error(tmp_path: Path) -> None:
    # The template needs `subtask` and calls a method of it: prefixlint's made-up string has none,
    # which says nothing about the template. Info, naming the variable to pass with --var.
    # (A chat template: it reads `messages`; one that does not is an app prompt, whose stand-ins
    # have every attribute: test_a_fragment_that_reads_no_conversation_is_an_app_prompt.)
    path = tmp_path / "assistant_subtask.j2"
    path.write_text(
        "{% for m in messages %}{{ m.content }}{% endfor %}\n\nActions: {{ subtask.actions_to_json() }}\n"
    )
    [source] = lint_paths([str(path)], OPTIONS).sources
    failures = [d for d in source.diagnostics if d.code == "PFX002" and d.span.line == 3]
    assert [(d.severity.label, "stand-in value of `subtask`" in d.message) for d in failures] == [
        ("info", True)
    ]
    # A template that fails on a value nobody made up is still an error.
    path.write_text("Actions: {{ 'text'.actions_to_json() }}\n")
    [source] = lint_paths([str(path)], OPTIONS).sources
    assert [(d.code, d.severity.label) for d in source.diagnostics if d.code == "PFX002"] == [
        ("PFX002", "error")
    ]
