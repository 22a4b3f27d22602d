"""prefixlint.python.reachability: code that cannot run sends no request. The fixture project
`fixtures/reach_project` (copied, so each test may change it) has builders nothing that runs
reaches and constant-false arms, beside live builders that keep their findings."""

from __future__ import annotations

import shutil
import textwrap
from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.api import analyse_source
from prefixlint.python import analyze_python, reachability
from prefixlint.run.sources import Source
from prefixlint.settings import Options

PROJECT = FIXTURES / "reach_project"
# Every clock of shop/prompts.py, by line: what the check reports when nothing is judged dead.
EVERY_BUILDER = [22, 68, 74, 82, 94, 103]


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "reach_project"
    shutil.copytree(PROJECT, root)
    return root


def _found(root: Path, relative: str, text: str | None = None) -> list[tuple[str, int, int]]:
    path = root / relative
    text = path.read_text(encoding="utf-8") if text is None else text
    result = analyze_python(str(path), text, Options(project_root=str(root)))
    return sorted((d.code, d.span.line, d.span.column) for d in result.diagnostics)


def _expected(relative: str) -> list[tuple[str, int]]:
    lines = (PROJECT / relative).read_text(encoding="utf-8").splitlines()
    return [
        (line.split("# expect: ")[1].strip(), n) for n, line in enumerate(lines, 1) if "# expect: " in line
    ]


def test_only_the_builders_that_can_run_keep_their_findings(project: Path) -> None:
    found = _found(project, "shop/prompts.py")
    # the private builder nothing calls (56) and the clock of the helper only it calls (68), the
    # builder only a test calls (74), the public one nothing calls (82), the private method (103)
    # and the constant-false arms (35, 37, 43, 48) give none
    assert found == [("PFX101", 22, 55), ("PFX101", 94, 62)]
    assert [(c, line) for c, line, _ in found] == _expected("shop/prompts.py")


def test_a_public_builder_of_a_module_nothing_imports_is_an_entry(project: Path) -> None:
    assert _found(project, "shop/script.py") == [("PFX101", 21, 54)]  # the private one (32): none


def test_a_folder_that_is_no_whole_project_judges_no_function_dead(project: Path) -> None:
    (project / "pyproject.toml").unlink()
    lines = [line for _, line, _ in _found(project, "shop/prompts.py")]
    assert lines == EVERY_BUILDER  # the constant-false arms still give none
    assert [line for _, line, _ in _found(project, "shop/script.py")] == [21, 32]


def test_a_call_written_in_another_module_brings_a_builder_back(project: Path) -> None:
    (project / "shop" / "jobs.py").write_text(
        "from shop.prompts import _retired_reply, forgotten_reply\n\n\n"
        "def nightly() -> None:\n    _retired_reply('x')\n    forgotten_reply('y')\n",
        encoding="utf-8",
    )
    lines = [line for _, line, _ in _found(project, "shop/prompts.py")]
    # the helper `_retired_stamp` is live again with its caller: the clock it returns (68) too
    assert lines == [22, 68, 82, 94]


def test_a_reference_from_a_docs_page_counts(project: Path) -> None:
    (project / "docs.md").write_text(
        "Call `forgotten_reply(question)` for a quick answer.\n", encoding="utf-8"
    )
    assert 82 in [line for _, line, _ in _found(project, "shop/prompts.py")]


def test_the_text_analysed_is_judged_not_the_file_on_disk(project: Path) -> None:
    path = project / "shop" / "prompts.py"
    disk = path.read_text(encoding="utf-8")
    # on disk nothing calls `_retired_reply`; the analysed text calls it at import
    calling = disk + "\n\n_retired_reply('warm up')\n"
    assert 68 in [line for _, line, _ in _found(project, "shop/prompts.py", calling)]
    # and the other way round: on disk a call, in the analysed text none
    path.write_text(calling, encoding="utf-8")
    assert 68 not in [line for _, line, _ in _found(project, "shop/prompts.py", disk)]


def test_fixes_are_verified_beside_dead_code(project: Path) -> None:
    # the verifier analyses each fixed text, never on disk: the dead builders stay dead there
    results = analyse_source(
        Source(str(project / "shop" / "prompts.py"), "python"), Options(project_root=str(project))
    )
    fixed = [(d.span.line, d.fix is not None and d.fix.verified) for r in results for d in r.diagnostics]
    assert fixed == [(22, True), (94, True)]


def test_a_test_module_is_never_judged(project: Path) -> None:
    text = textwrap.dedent(
        """\
        from datetime import datetime
        from openai import OpenAI

        POLICY = "Answer from the records only, in plain English, one short paragraph. " * 20


        def _unused_helper() -> str:
            return OpenAI().chat.completions.create(
                model="gpt-4o", messages=[{"role": "system", "content": f"{datetime.now()} {POLICY}"}]
            )
        """
    )
    (project / "shop" / "tests" / "test_helpers.py").write_text(text, encoding="utf-8")
    assert [(c, line) for c, line, _ in _found(project, "shop/tests/test_helpers.py")] == [("PFX101", 9)]


@pytest.mark.parametrize(
    ("test", "dead_arm"),
    [
        ("False", "body"),
        ("0", "body"),
        ("None", "body"),
        ('""', "body"),
        ("not True", "body"),
        ("flag and False", "body"),
        ("False and flag", "body"),
        ("True", "else"),
        ("flag or True", "else"),
        ("1", "else"),
    ],
)
def test_an_arm_literals_decide_never_runs(tmp_path: Path, test: str, dead_arm: str) -> None:
    text = textwrap.dedent(
        f"""\
        from datetime import datetime
        from openai import OpenAI

        POLICY = "Answer from the records only, in plain English, one short paragraph. " * 20


        def reply(flag: bool) -> object:
            if {test}:
                system = f"body {{datetime.now()}} {{POLICY}}"
            else:
                system = f"else {{datetime.now()}} {{POLICY}}"
            return OpenAI().chat.completions.create(
                model="gpt-4o", messages=[{{"role": "system", "content": system}}]
            )
        """
    )
    path = tmp_path / "agent.py"
    result = analyze_python(str(path), text, Options(project_root=str(tmp_path)))
    live_line = 11 if dead_arm == "body" else 9
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("PFX101", live_line)]


@pytest.mark.parametrize("test", ["flag", "DEBUG", "flag and True", "not flag", "TYPE_CHECKING"])
def test_an_arm_literals_do_not_decide_may_run(tmp_path: Path, test: str) -> None:
    text = textwrap.dedent(
        f"""\
        from datetime import datetime
        from openai import OpenAI

        DEBUG = False
        POLICY = "Answer from the records only, in plain English, one short paragraph. " * 20


        def reply(flag: bool) -> object:
            if {test}:
                system = f"body {{datetime.now()}} {{POLICY}}"
            else:
                system = POLICY
            return OpenAI().chat.completions.create(
                model="gpt-4o", messages=[{{"role": "system", "content": system}}]
            )
        """
    )
    path = tmp_path / "agent.py"
    result = analyze_python(str(path), text, Options(project_root=str(tmp_path)))
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("PFX101", 10)]


def test_an_import_of_another_module_of_the_same_name_leaves_it_an_entry(project: Path) -> None:
    (project / "tools").mkdir()
    (project / "tools" / "script.py").write_text("def run() -> None:\n    pass\n", encoding="utf-8")
    (project / "shop" / "cli.py").write_text("from tools.script import run\n\nrun()\n", encoding="utf-8")
    assert _found(project, "shop/script.py") == [("PFX101", 21, 54)]
    # imported for real, its public builder that nothing calls is dead
    (project / "shop" / "cli.py").write_text("from shop import script\n\nscript.BRIEF\n", encoding="utf-8")
    assert _found(project, "shop/script.py") == []


def test_a_call_only_a_constant_false_arm_makes_is_no_caller(project: Path) -> None:
    path = project / "shop" / "prompts.py"
    text = path.read_text(encoding="utf-8") + "\n\nif False:\n    _retired_reply('never')\n"
    assert 68 not in [line for _, line, _ in _found(project, "shop/prompts.py", text)]


def test_a_module_a_package_imports_whole_keeps_its_public_names(project: Path) -> None:
    (project / "shop" / "__init__.py").write_text("from shop.prompts import *\n", encoding="utf-8")
    assert [line for _, line, _ in _found(project, "shop/prompts.py")] == [22, 74, 82, 94]


def test_a_call_in_another_modules_constant_false_arm_is_no_caller(project: Path) -> None:
    jobs = project / "shop" / "jobs.py"
    jobs.write_text("import shop.prompts\n\nif 0:\n    shop.prompts._retired_reply('x')\n", encoding="utf-8")
    assert 68 not in [line for _, line, _ in _found(project, "shop/prompts.py")]
    jobs.write_text("import shop.prompts\n\nif 1:\n    shop.prompts._retired_reply('x')\n", encoding="utf-8")
    reachability.forget()  # as a new run does
    assert 68 in [line for _, line, _ in _found(project, "shop/prompts.py")]
