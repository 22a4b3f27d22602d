"""Prompt templates kept in config files and read through a settings object (`[[settings]]` rows,
prefixlint/python/evaluate/settings.py): the key path the code reads is found in the files the
settings call loads, and a value rendered into that text is judged with the text after it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.api import Options
from prefixlint.python import analyze_python
from prefixlint.python.frameworks import TableError, parse_table

PROJECT = FIXTURES / "python_project"
SETTINGS = PROJECT / "settings_prompts"


def _findings(path: Path, root: Path) -> list[tuple[str, int, str]]:
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options(project_root=str(root)))
    return [(d.code, d.span.line, d.message) for d in result.diagnostics if d.code.startswith("PFX1")]


def _line(path: Path, needle: str) -> int:
    return next(i for i, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if needle in t)


def test_a_date_rendered_into_a_system_template_kept_in_dynaconf_settings() -> None:
    """`get_settings().review_prompt.system` is the TOML text; the date the constructor puts in the
    variables (copied with `copy.deepcopy`) is ahead of its rules, and the finding names the file and key."""
    path = SETTINGS / "reviewer.py"
    ((code, line, message),) = _findings(path, PROJECT)
    assert (code, line) == ("PFX101", _line(path, '"date": datetime'))
    assert (
        "filled into `{{ date }}` of settings_prompts/settings/prompts.toml (key `review_prompt.system`"
        in message
    )
    assert "`litellm.acompletion()`" in message  # sent through the project's own handler


def test_templates_that_are_no_prompts_stay_silent() -> None:
    """An HTML mail and a log line rendered from the same settings, with the clock, are no prompts."""
    assert _findings(SETTINGS / "mailer.py", PROJECT) == []


def test_a_date_at_the_end_of_the_user_template_costs_nothing() -> None:
    assert _findings(SETTINGS / "questions.py", PROJECT) == []


def test_dotted_get_and_items_read_the_same_keys(tmp_path: Path) -> None:
    """`settings.get("ask_prompt.system", "")` and `settings["ask_prompt"]["user"]` read the TOML keys:
    with the date moved to the head of the system text, it is reported."""
    copy = tmp_path / "settings_prompts"
    shutil.copytree(SETTINGS, copy)
    prompts = copy / "settings" / "prompts.toml"
    toml = prompts.read_text(encoding="utf-8")
    prompts.write_text(toml.replace('system = """You answer', 'system = """Today is {{ date }}. You answer'))
    path = copy / "questions.py"
    ((code, line, message),) = _findings(path, tmp_path)
    assert (code, line) == ("PFX101", _line(path, '"date": datetime'))
    assert "(key `ask_prompt.system`" in message


_APP = """
from datetime import datetime

from dynaconf import Dynaconf
from openai import OpenAI

settings = Dynaconf(settings_files=["base.toml", "local.toml"])
client = OpenAI()


def answer(question: str) -> str:
    system = settings.prompt.system.format(now=datetime.now())
    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]
    return client.chat.completions.create(model="gpt-4o", messages=messages).choices[0].message.content
"""
_RULES = (
    "You answer questions about the billing system. Quote the invoice number the customer gives, say "
    "which plan the invoice belongs to, explain every line item in plain words, and never guess a price."
)


@pytest.mark.parametrize(
    ("local", "want"),
    [
        ("[other]\nkey = 1\n", [("PFX101", 12)]),  # the base file's template
        (f'[prompt]\nsystem = """{_RULES}\\nNow: {{now}}"""\n', []),  # the later file's replaces it
    ],
)
def test_a_later_settings_file_overrides_an_earlier_one(tmp_path: Path, local: str, want: list) -> None:  # type: ignore[type-arg]
    (tmp_path / "base.toml").write_text(
        f'[prompt]\nsystem = """Now: {{now}}\\n{_RULES}"""\n', encoding="utf-8"
    )
    (tmp_path / "local.toml").write_text(local, encoding="utf-8")
    path = tmp_path / "app.py"
    path.write_text(_APP, encoding="utf-8")
    assert [(c, n) for c, n, _ in _findings(path, tmp_path)] == want


def test_an_unknown_key_is_no_text(tmp_path: Path) -> None:
    """A key the files do not hold is read from the deployment's own settings: unknown, no finding."""
    (tmp_path / "base.toml").write_text('[prompt]\nuser = "{now}"\n', encoding="utf-8")
    (tmp_path / "local.toml").write_text("", encoding="utf-8")
    path = tmp_path / "app.py"
    path.write_text(_APP, encoding="utf-8")
    assert _findings(path, tmp_path) == []


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ('[[settings]]\nname = "x"\ncalls = ["pkg.Load"]\n', "needs `calls`, and `files` or `data`"),
        ('[[settings]]\nname = "x"\ncalls = ["pkg.Load"]\nfiles = ["a-b"]\n', "name positions or keywords"),
        ('[[settings]]\nname = "x"\ncalls = ["pkg.Load"]\nfiles = ["0"]\ndotted = "yes"\n', "true or false"),
    ],
)
def test_a_broken_settings_row_is_named(row: str, message: str) -> None:
    with pytest.raises(TableError, match=message):
        parse_table(row, "table.toml")


def test_crewbase_agents_read_their_fields_from_the_yaml_the_class_names() -> None:
    """`Agent(config=self.agents_config["researcher"])` of a `@CrewBase` class: the backstory is
    config/agents.yaml's, its `{current_date}` ahead of the rest of the agent's system prompt; the
    writer's and the task's texts hold only `{topic}`."""
    path = PROJECT / "crew_config" / "crew.py"
    ((code, line, message),) = _findings(path, PROJECT)
    assert (code, line) == ("PFX101", _line(path, 'self.agents_config["researcher"]'))
    assert "crew_config/config/agents.yaml (key `researcher.backstory`, loaded by CrewAI CrewBase" in message


def test_a_crewbase_attribute_left_unset_loads_the_default_file(tmp_path: Path) -> None:
    """Without `agents_config = ...` in the class, CrewAI loads config/agents.yaml beside the module."""
    copy = tmp_path / "crew_config"
    shutil.copytree(PROJECT / "crew_config", copy)
    path = copy / "crew.py"
    source = path.read_text(encoding="utf-8").replace('    agents_config = "config/agents.yaml"\n', "")
    path.write_text(source, encoding="utf-8")
    assert [(c, n) for c, n, _ in _findings(path, tmp_path)] == [("PFX101", _line(path, '["researcher"]'))]
