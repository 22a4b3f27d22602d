"""Reachability of prompt builders no sink is seen to send: dead code gives no finding, a builder
reached in a way the evaluator cannot follow stays one and says how it is reached
(prefixlint/python/references.py, fixtures/python_reach/)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from conftest import FIXTURES, expected_markers

from prefixlint.api import Options
from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.python import analyze_python
from prefixlint.python.references import enclosing

PROJECT = FIXTURES / "python_reach"
MODULES = sorted(p for p in PROJECT.rglob("*.py") if p.name != "__init__.py")


def _check(path: Path, root: Path) -> list[Diagnostic]:
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options(project_root=str(root)))
    return [d for d in result.diagnostics if d.code.startswith("PFX1")]


def _copy(tmp_path: Path) -> Path:
    """The fixture project copied, to be changed (each copy its own root: a process reads a
    root's files once)."""
    root = tmp_path / "project"
    shutil.copytree(PROJECT, root)
    return root


def _finding(path: Path, root: Path, text: str) -> Diagnostic:
    """The finding at the line of `path` that holds `text`."""
    return next(d for d in _check(path, root) if d.span.line == _line(path, text))


def _line(path: Path, text: str) -> int:
    return next(i for i, t in enumerate(path.read_text(encoding="utf-8").splitlines(), 1) if text in t)


@pytest.mark.parametrize("path", MODULES, ids=lambda p: p.name)
def test_each_module_checked_alone_gets_its_markers_and_nothing_in_dead_code(path: Path) -> None:
    found = _check(path, PROJECT)
    assert {(d.code, d.span.line) for d in found} == expected_markers(path)
    assert all(d.severity is Severity.INFO for d in found)  # no sink is seen: at most info


def test_a_builder_picked_by_getattr_through_a_name_in_a_table_says_so() -> None:
    path = PROJECT / "shop" / "prompts.py"
    table = _finding(path, PROJECT, "Table: {question}")
    assert "reached only through its name written as a string at shop/app.py:5" in table.message
    handled = _finding(path, PROJECT, "Question: {question}")  # a plain call: nothing more to say
    assert "written as a string" not in handled.message and "no caller" not in handled.message


def test_an_exported_builder_nothing_calls_is_api_kept_at_info() -> None:
    path = PROJECT / "shop" / "prompts.py"
    brief = _finding(path, PROJECT, "Brief: {question}")
    assert brief.severity is Severity.INFO
    assert "no caller in this repository" in brief.message


def test_the_dead_builder_is_a_finding_once_a_handler_calls_it(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    app = root / "shop" / "app.py"
    app.write_text(
        app.read_text(encoding="utf-8").replace(
            "text = prompts.answer_prompt(question)", "text = prompts.unused_prompt(question)"
        ),
        encoding="utf-8",
    )
    path = root / "shop" / "prompts.py"
    lines = {d.span.line for d in _check(path, root)}
    assert _line(path, "Unused: {question}") in lines
    assert _line(path, "Question: {question}") not in lines  # now nothing calls that one


def test_a_call_from_a_function_nothing_calls_does_not_keep_a_builder(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "shop" / "cli.py").write_text("from shop.prompts import outer\n\nprint(outer('q'))\n")
    path = root / "shop" / "prompts.py"
    assert _line(path, "Inner: {question}") in {d.span.line for d in _check(path, root)}
    assert _line(path, "Inner: {question}") not in {
        d.span.line for d in _check(PROJECT / "shop" / "prompts.py", PROJECT)
    }


def test_a_module_nothing_imports_is_dead_until_something_imports_it(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "shop" / "jobs.py").write_text("from shop import orphan\n")
    assert [d.code for d in _check(root / "shop" / "orphan.py", root)] == ["PFX101"]
    assert _check(PROJECT / "shop" / "orphan.py", PROJECT) == []


def test_a_module_with_no_project_around_it_keeps_its_findings(tmp_path: Path) -> None:
    alone = tmp_path / "alone.py"
    shutil.copy(PROJECT / "shop" / "prompts.py", alone)
    lines = {d.span.line for d in _check(alone, tmp_path)}
    assert _line(alone, "Unused: {question}") in lines and _line(alone, "Inner: {question}") in lines


def test_a_sink_in_a_function_nothing_calls_keeps_its_finding(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    sender = root / "shop" / "sender.py"
    sender.write_text(
        "from datetime import datetime\n\nfrom openai import OpenAI\n\nfrom shop.prompts import RULES\n\n\n"
        "def send(question):\n"
        "    return OpenAI().chat.completions.create(\n"
        '        model="m",\n'
        '        messages=[{"role": "system", "content": f"Now: {datetime.now()}\\n" + RULES * 3}],\n'
        "    )\n"
    )
    (root / "shop" / "jobs.py").write_text("from shop import sender\n")
    found = _check(sender, root)
    assert [(d.code, d.span.line) for d in found] == [("PFX101", 11)]


def test_a_dropped_finding_depends_on_the_files_that_decided_it() -> None:
    path = PROJECT / "shop" / "prompts.py"
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options(project_root=str(PROJECT)))
    stamped = {Path(d[0]).name for d in result.dependencies}
    assert {"app.py", "__init__.py", "README.md"} <= stamped  # a new caller there revives it


def test_the_function_around_a_line_is_read_past_a_multi_line_signature() -> None:
    lines = [
        "class A:",
        "    async def run(",
        "        self,",
        "        query: str,",
        "    ) -> str:",
        "        ",
        "        return self.build(query)",
        "",
        "x = A().run",
    ]
    assert enclosing(lines, 6) == (1, "run")
    assert enclosing(lines, 8) is None  # module level


def test_a_builder_whose_name_a_getattr_makes_at_run_time_is_kept_and_says_so(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "shop" / "kinds.py").write_text(
        "from shop import prompts\n\n\n"
        "def build(kind, question):\n"
        '    return getattr(prompts, f"{kind}_prompt")(question)\n\n\n'
        "build('x', 'q')\n"
    )
    path = root / "shop" / "prompts.py"
    unused = _finding(path, root, "Unused: {question}")
    assert "whose name is made at run time at shop/kinds.py:5" in unused.message


def test_a_method_of_a_class_with_a_framework_base_may_be_called_by_the_framework(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    tool = root / "shop" / "tool.py"
    tool.write_text(
        "from datetime import datetime\n\nfrom langchain.tools import BaseTool\n\n"
        "from shop.prompts import RULES\n\n\n"
        "class Search(BaseTool):\n"
        "    def render_prompt(self, question):\n"
        '        return f"Now: {datetime.now()}\\n" + RULES + question  # expect: PFX101\n\n\n'
        "class Plain:\n"
        "    def render_prompt(self, question):\n"
        '        return f"Now: {datetime.now()}\\n" + RULES + question\n'
    )
    (root / "shop" / "jobs.py").write_text("from shop import tool\n")
    assert {(d.code, d.span.line) for d in _check(tool, root)} == expected_markers(tool)


def test_a_folder_that_is_no_whole_project_keeps_every_finding(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "pyproject.toml").unlink()  # no marker: the code that refers to it may be elsewhere
    path = root / "shop" / "prompts.py"
    lines = {d.span.line for d in _check(path, root)}
    assert _line(path, "Unused: {question}") in lines and _line(path, "Inner: {question}") in lines


def test_a_module_a_root_json_config_names_is_no_dead_module(tmp_path: Path) -> None:
    root = _copy(tmp_path)
    (root / "langgraph.json").write_text('{"graphs": {"agent": "./shop/orphan.py:TEXT"}}')
    assert [d.code for d in _check(root / "shop" / "orphan.py", root)] == ["PFX101"]
