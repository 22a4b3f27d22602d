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
    reachability.forget()  # as a new run does
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


# --- module-level values only dead code uses (shop/templates.py, shop/legacy.py) ----------------


def test_a_constant_only_dead_code_uses_gives_none(project: Path) -> None:
    # LEGACY_PROMPT (15): only `legacy_messages` in shop/legacy.py, which nothing calls, returns it;
    # _DRAFT_PROMPT (16): only the private `_draft_messages` nothing calls; ANSWER_PROMPT (14): a
    # live builder of shop/legacy.py returns it
    assert _found(project, "shop/templates.py") == [("PFX101", 14, 34)]
    assert [(c, line) for c, line, _ in _found(project, "shop/templates.py")] == _expected(
        "shop/templates.py"
    )


def test_a_live_use_of_a_constant_keeps_it(project: Path) -> None:
    app = project / "shop" / "app.py"
    app.write_text(
        app.read_text(encoding="utf-8").replace(
            "from shop.legacy import current_messages",
            "from shop.legacy import current_messages, legacy_messages",
        )
        + "\n\ndef old_client(question: str) -> str:\n    return str(legacy_messages(question))\n",
        encoding="utf-8",
    )
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 15]


def test_a_constant_read_at_module_level_elsewhere_is_live(project: Path) -> None:
    (project / "shop" / "banner.py").write_text(
        "from shop.templates import _DRAFT_PROMPT, LEGACY_PROMPT\n\nBANNER = LEGACY_PROMPT[:10]\n",
        encoding="utf-8",
    )
    # the value is read at import: LEGACY_PROMPT is live; _DRAFT_PROMPT is only imported there
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 15]
    (project / "shop" / "banner.py").write_text(
        "from shop.templates import _DRAFT_PROMPT\n\n\ndef banner() -> str:\n    return _DRAFT_PROMPT\n",
        encoding="utf-8",
    )
    reachability.forget()
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 16]


def test_a_constant_named_in_all_of_a_star_imported_module_is_kept(project: Path) -> None:
    templates = project / "shop" / "templates.py"
    templates.write_text(
        templates.read_text(encoding="utf-8") + '\n\n__all__ = ["LEGACY_PROMPT"]\n', encoding="utf-8"
    )
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 15]
    (project / "shop" / "__init__.py").write_text("from shop.templates import *\n", encoding="utf-8")
    reachability.forget()
    # a package's star import makes every public name an export: only the private one is judged
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 15]


def test_a_constant_a_package_reexports_is_kept(project: Path) -> None:
    (project / "shop" / "__init__.py").write_text(
        "from shop.templates import LEGACY_PROMPT\n", encoding="utf-8"
    )
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 15]


def test_a_constant_of_a_module_nothing_imports_is_an_entry(project: Path) -> None:
    (project / "shop" / "legacy.py").unlink()
    # templates.py is imported by no module now: its public constants are its API
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 15]


# --- arguments no caller passes (shop/replies.py, called by shop/app.py) -------------------------


def test_an_arm_only_a_default_no_caller_overrides_decides_never_runs(project: Path) -> None:
    # `use_input_language` (11) and `mode` (13, 15) hold their defaults on every call: their arms
    # cannot run; `dated=True` leaves the clock of 27 live
    assert _found(project, "shop/replies.py") == [("PFX101", 27, 26)]
    assert [(c, line) for c, line, _ in _found(project, "shop/replies.py")] == _expected("shop/replies.py")


def _calling(root: Path, call: str, extra: str = "") -> None:
    app = root / "shop" / "app.py"
    text = app.read_text(encoding="utf-8").replace("translated_reply(question)", call)
    app.write_text(text + extra, encoding="utf-8")


@pytest.mark.parametrize(
    ("call", "extra", "live"),
    [
        ("translated_reply(question, use_input_language=True)", "", [11]),
        ("translated_reply(question, True)", "", [11]),
        ('translated_reply(question, mode="slow")', "", [13, 15]),
        ("translated_reply(question, **options)", "\noptions: dict = {}\n", [11, 13, 15]),
        ("translated_reply(*[question])", "", [11, 13, 15]),
        ("HANDLERS['t'](question)", "\nHANDLERS = {'t': translated_reply}\n", [11, 13, 15]),
        ("str(map(translated_reply, [question]))", "", [11, 13, 15]),
        ("getattr(replies, 'translated_reply')(question)", "\nfrom shop import replies\n", [11, 13, 15]),
    ],
)
def test_a_caller_that_may_pass_the_argument_keeps_the_arm(
    project: Path, call: str, extra: str, live: list[int]
) -> None:
    _calling(project, call, extra)
    assert [line for _, line, _ in _found(project, "shop/replies.py")] == [*live, 27]


def test_an_aliased_import_decides_nothing(project: Path) -> None:
    app = project / "shop" / "app.py"
    text = app.read_text(encoding="utf-8")
    text = text.replace("dated_reply, translated_reply", "dated_reply, translated_reply as reply_in")
    app.write_text(text.replace("translated_reply(question)", "reply_in(question)"), encoding="utf-8")
    assert [line for _, line, _ in _found(project, "shop/replies.py")] == [11, 13, 15, 27]


def test_a_caller_passing_it_in_another_module_the_analysed_text_does_not(project: Path) -> None:
    (project / "shop" / "jobs.py").write_text(
        "from shop.replies import translated_reply\n\n\ndef nightly() -> None:\n"
        "    translated_reply('x', use_input_language=True)\n",
        encoding="utf-8",
    )
    assert [line for _, line, _ in _found(project, "shop/replies.py")] == [11, 27]


def test_a_test_passing_the_argument_sends_no_request(project: Path) -> None:
    (project / "shop" / "tests" / "test_replies.py").write_text(
        "from shop.replies import translated_reply\n\n\ndef test_it() -> None:\n"
        "    assert translated_reply('x', use_input_language=True)\n",
        encoding="utf-8",
    )
    assert [line for _, line, _ in _found(project, "shop/replies.py")] == [27]


def test_a_default_is_judged_on_the_analysed_text(project: Path) -> None:
    path = project / "shop" / "replies.py"
    text = path.read_text(encoding="utf-8") + "\n\ntranslated_reply('warm up', mode='slow')\n"
    assert [line for _, line, _ in _found(project, "shop/replies.py", text)] == [13, 15, 27]


def test_a_method_whose_flag_no_call_passes(project: Path) -> None:
    (project / "shop" / "counter.py").write_text(
        textwrap.dedent(
            """\
            from datetime import datetime

            from openai import OpenAI

            POLICY = "Answer from the records only, in plain English, one short paragraph. " * 20


            class Counter:
                def reply(self, q: str, stamped: bool = False) -> object:
                    system = POLICY
                    if stamped:
                        system = f"{datetime.now()} {POLICY}"
                    return OpenAI().chat.completions.create(
                        model="gpt-4o",
                        messages=[{"role": "system", "content": system}, {"role": "user", "content": q}],
                    )
            """
        ),
        encoding="utf-8",
    )
    jobs = project / "shop" / "jobs.py"
    jobs.write_text("from shop.counter import Counter\n\nCounter().reply('x')\n", encoding="utf-8")
    assert _found(project, "shop/counter.py") == []
    # any call of a method of that name counts, whatever the object: the class is not pinned
    jobs.write_text("from shop.counter import Counter\n\nCounter().reply('x')\nother.reply('y', True)\n")
    reachability.forget()
    assert [line for _, line, _ in _found(project, "shop/counter.py")] == [12]


def test_a_comment_above_a_definition_is_part_of_it(project: Path) -> None:
    path = project / "shop" / "templates.py"
    text = path.read_text(encoding="utf-8").replace(
        "LEGACY_PROMPT = f", "# LEGACY_PROMPT: kept for the old client only.\nLEGACY_PROMPT = f"
    )
    path.write_text(text, encoding="utf-8")
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14]
    # a comment elsewhere naming it is a reference, as a docs page is
    path.write_text(text + "\n# LEGACY_PROMPT is what the old client gets\n", encoding="utf-8")
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 16]


@pytest.mark.parametrize(
    ("module", "kept"),
    [
        (
            "from shop import templates\n\n\ndef prompt_for(kind: str) -> str:\n"
            "    return getattr(templates, kind.upper() + '_PROMPT')\n",
            True,
        ),
        (
            "import shop.templates as T\n\n\ndef prompt_for(kind: str) -> str:\n    return vars(T)[kind]\n",
            True,
        ),
        (
            "import importlib\n\n\ndef prompt_for(kind: str) -> str:\n"
            "    return getattr(importlib.import_module('shop.templates'), kind)\n",
            True,
        ),
        # another object's names read so say nothing of the module's
        (
            "from shop import templates\n\n\ndef field(config: object, name: str) -> object:\n"
            "    return getattr(config, name), config.__dict__\n",
            False,
        ),
    ],
)
def test_a_constant_looked_up_by_a_name_made_at_run_time_is_kept(
    project: Path, module: str, kept: bool
) -> None:
    (project / "shop" / "registry.py").write_text(module, encoding="utf-8")
    # no word names such a use: no value of the module is judged (its functions still are)
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == ([14, 15, 16] if kept else [14])


def test_a_module_reading_its_own_globals_keeps_its_constants(project: Path) -> None:
    path = project / "shop" / "templates.py"
    text = (
        path.read_text(encoding="utf-8")
        + "\n\ndef prompt_for(kind: str) -> str:\n    return globals()[kind]\n"
    )
    path.write_text(text, encoding="utf-8")
    assert [line for _, line, _ in _found(project, "shop/templates.py")] == [14, 15, 16]


def test_a_caller_module_too_large_to_search_decides_nothing(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # decided on the size alone, whether or not this process parsed the caller before
    app = project / "shop" / "app.py"
    app.write_text(app.read_text(encoding="utf-8") + "\n# padding\n" * 500, encoding="utf-8")
    replies = len((project / "shop" / "replies.py").read_text(encoding="utf-8"))
    monkeypatch.setattr(reachability, "MAX_SEARCHED_MODULE_BYTES", replies + 1)
    assert [line for _, line, _ in _found(project, "shop/replies.py")] == [11, 13, 15, 27]


# --- the screen before a project module is parsed for its constant-false arms -------------------

SCREENED_TESTS = [
    "False", "0", "None", '""', "not True", "flag and False", "False and flag", "True", "flag or True",
    "1", "(False)", "not (0)", '"a" == "b"', "1 < 2", "x and y and 0", "flag", "DEBUG", "x is None",
    "x is not None", "not flag", "flag and True", "a == b == 0", "-1", "f(False)", "x == None",
]  # fmt: skip


@pytest.mark.parametrize("test", SCREENED_TESTS)
def test_the_screen_lets_through_every_test_literals_decide(test: str) -> None:
    # the screen (CPython's parser) may let through a test the evaluator does not decide, never the
    # other way round: a module it stops keeps every word, as one without such an arm does
    from prefixlint.python.evaluate import Evaluator
    from prefixlint.python.scopes import index_module, parse_module

    text = f"def f(flag, x, y, a, b):\n    if {test}:\n        g()\n    else:\n        h()\n"
    index = index_module(parse_module(text), "m.py")
    decided = bool(reachability._false_arms(index, Evaluator(index)))
    if decided:
        assert reachability._may_have_false_arms("m.py", text)
    if test in ("flag", "DEBUG", "x is None", "x is not None", "not flag", "f(False)", "x == None"):
        assert not reachability._may_have_false_arms("m.py", text)


def test_a_module_whose_tests_literals_cannot_decide_is_not_parsed(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    jobs = project / "shop" / "jobs.py"
    jobs.write_text("import shop.prompts\n\nif shop.prompts is None:\n    pass\n", encoding="utf-8")
    parsed: list[str] = []
    real = reachability.parse_module
    monkeypatch.setattr(reachability, "parse_module", lambda text: parsed.append(text) or real(text))
    words = reachability._words_that_may_run(str(jobs), jobs.read_text(encoding="utf-8"))
    assert parsed == [] and {"shop", "prompts", "pass"} <= words
    jobs.write_text("import shop.prompts\n\nif 0:\n    shop.prompts._retired_reply('x')\n", encoding="utf-8")
    words = reachability._words_that_may_run(str(jobs), jobs.read_text(encoding="utf-8"))
    assert len(parsed) == 1 and "_retired_reply" not in words
