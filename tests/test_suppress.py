"""Inline suppressions: a suppressed finding is gone, an unused suppression warns (PFX004)."""

from __future__ import annotations

import json
from pathlib import Path

from prefixlint.api import Options, lint_paths
from prefixlint.run.suppress import jinja_directives, python_directives

SYSTEM = "{{- 'You are the assistant of a hotel chain. Answer questions about rooms and breakfast.\\n' }}\n"
TURNS = (
    "{%- for message in messages %}\n{{- message.role + ': ' + message.content + '\\n' }}\n{%- endfor %}\n"
)
CLOCK = "{{- 'Today is ' + strftime_now('%d %B %Y') + '.\\n' }}\n"

PY_CLOCK = """from datetime import datetime

RULES = "You are the assistant of a hotel chain. Answer questions about bookings, rooms and breakfast."


def messages(question: str) -> list[dict]:
    now = datetime.now().strftime("%Y-%m-%d %H:%M"){comment}
    return [
        {{"role": "system", "content": f"Current time: {{now}}\\n\\n{{RULES}}"}},
        {{"role": "user", "content": question}},
    ]
"""


WATCHED = {"PFX101", "PFX102", "PFX004"}  # the examples also have a harmless PFX302 (': ' + content)


def codes(tmp_path: Path, name: str, text: str, **options: object) -> list[tuple[str, int]]:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    report = lint_paths([str(path)], Options(**options))
    return [(d.code, d.span.line) for d in report.diagnostics if d.code in WATCHED]


def test_unsuppressed_clock_is_reported(tmp_path: Path) -> None:
    assert ("PFX101", 1) in codes(tmp_path, "t.jinja", CLOCK + SYSTEM + TURNS)


def test_jinja_suppression_on_the_line_above_hides_the_finding(tmp_path: Path) -> None:
    found = codes(tmp_path, "t.jinja", "{# prefixlint: ignore[PFX101] #}\n" + CLOCK + SYSTEM + TURNS)
    assert found == []


def test_jinja_suppression_on_the_same_line_and_noqa_form(tmp_path: Path) -> None:
    same_line = CLOCK.rstrip("\n") + "{# prefixlint: ignore[PFX1] #}\n"
    assert codes(tmp_path, "a.jinja", same_line + SYSTEM + TURNS) == []
    noqa = CLOCK.rstrip("\n") + "{# noqa: PFX101 #}\n"
    assert codes(tmp_path, "b.jinja", noqa + SYSTEM + TURNS) == []


def test_suppression_of_another_code_does_not_hide_and_warns(tmp_path: Path) -> None:
    found = codes(tmp_path, "t.jinja", "{# prefixlint: ignore[PFX102] #}\n" + CLOCK + SYSTEM + TURNS)
    assert ("PFX101", 2) in found
    assert ("PFX004", 1) in found


def test_unused_suppression_warns_at_its_line(tmp_path: Path) -> None:
    path = tmp_path / "t.jinja"
    path.write_text(SYSTEM + "{# prefixlint: ignore[PFX101] #}\n" + TURNS, encoding="utf-8")
    [d] = lint_paths([str(path)], Options(select=("PFX0",))).diagnostics
    assert (d.code, d.span.line, d.severity.label) == ("PFX004", 2, "warning")
    assert "PFX101" in d.message


def test_unknown_code_in_a_suppression_warns(tmp_path: Path) -> None:
    found = codes(tmp_path, "t.jinja", "{# prefixlint: ignore[PFX999] #}\n" + SYSTEM + TURNS)
    assert found == [("PFX004", 1)]


def test_file_level_suppression(tmp_path: Path) -> None:
    text = CLOCK + SYSTEM + TURNS + "{# prefixlint: ignore-file[PFX101] #}\n"
    assert codes(tmp_path, "t.jinja", text) == []
    assert codes(tmp_path, "u.jinja", SYSTEM + TURNS + "{# prefixlint: ignore-file[PFX101] #}\n") == [
        ("PFX004", 5)
    ]


def test_unused_suppression_can_be_ignored_by_config(tmp_path: Path) -> None:
    text = SYSTEM + "{# prefixlint: ignore[PFX101] #}\n" + TURNS
    assert codes(tmp_path, "t.jinja", text, ignore=("PFX004",)) == []


def test_python_noqa_and_prefixlint_ignore(tmp_path: Path) -> None:
    assert ("PFX101", 7) in codes(tmp_path, "a.py", PY_CLOCK.format(comment=""))
    assert codes(tmp_path, "b.py", PY_CLOCK.format(comment="  # noqa: PFX101")) == []
    assert codes(tmp_path, "c.py", PY_CLOCK.format(comment="  # prefixlint: ignore[PFX101]")) == []
    assert codes(tmp_path, "d.py", "# prefixlint: ignore-file[PFX1]\n" + PY_CLOCK.format(comment="")) == []
    unused = codes(tmp_path, "e.py", "x = 1  # prefixlint: ignore[PFX101]\n")
    assert unused == [("PFX004", 1)]


def test_tokenizer_config_directive_covers_the_file(tmp_path: Path) -> None:
    template = "{# prefixlint: ignore[PFX101] #}" + CLOCK + SYSTEM + TURNS
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "tokenizer_config.json").write_text(json.dumps({"chat_template": template}, indent=1))
    assert lint_paths([str(folder)], Options(select=("PFX1", "PFX004"))).diagnostics == []


def test_directive_parsing() -> None:
    [d] = jinja_directives("{{ x }}{#- prefixlint: ignore[PFX101, PFX3] -#}\n")
    assert (d.codes, d.line, d.column, d.standalone, d.file_level) == (("PFX101", "PFX3"), 1, 8, False, False)
    [above] = jinja_directives("text\n  {# noqa #}\n{{ y }}\n")
    assert above.standalone and above.applies_to(3) and above.codes == ()
    # Other tools' noqa and noqa inside prose are not ours; a string that looks like one is not a comment.
    assert python_directives("x = 1  # noqa: E501\n") == []
    assert python_directives("x = 1  # see the noqa docs\n") == []
    assert python_directives("s = '# prefixlint: ignore[PFX101]'\n") == []
    [mixed] = python_directives("x = 1  # noqa: E501, PFX102\n")
    assert mixed.codes == ("PFX102",)
    [bare] = python_directives("x = 1  # noqa\n")
    assert not bare.ours  # a bare noqa may be another linter's: never reported as unused
