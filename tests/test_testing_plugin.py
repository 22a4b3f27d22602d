"""The pytest plugin in real pytest sessions (pytester): the marker and the fixture fail and pass
as they should, and a session that uses neither never loads the analysis."""

from __future__ import annotations

import sys
import tomllib

import pytest
from conftest import REPO

pytest_plugins = ["pytester"]

PLUGIN = "prefixlint.testing.plugin"

APP = """
from datetime import datetime

POLICY = "Answer questions about orders and returns of Northwind Books, politely and briefly. " * 6


def stamp():
    return datetime.now().strftime("%Y-%m-%d %H:%M:%S")


def system_prompt():
    return f"Now: {stamp()}\\n" + POLICY


def stable_prompt():
    return [{"role": "system", "content": POLICY}, {"role": "user", "content": f"Today is {stamp()}"}]
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    pytester.makepyfile(shopapp=APP)
    pytester.syspathinsert()
    return pytester


def test_marker_fails_with_the_cause_and_passes_a_stable_prompt(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_prompts="""
        import pytest
        from shopapp import stable_prompt, system_prompt


        @pytest.mark.prefix_stable
        def test_unstable():
            return [{"role": "system", "content": system_prompt()}, {"role": "user", "content": "hi"}]


        @pytest.mark.prefix_stable(engine="sglang")
        def test_stable():
            return stable_prompt()


        @pytest.fixture
        def question():
            return "Where is my parcel?"


        @pytest.mark.prefix_stable
        def test_yields_with_a_fixture(question):
            yield [{"role": "system", "content": "Be brief. " * 40}, {"role": "user", "content": question}]


        @pytest.mark.prefix_stable
        async def test_async_unstable():
            return system_prompt()
        """
    )
    result = project.runpytest("-p", PLUGIN)
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*PrefixUnstableError: shopapp.py:7 datetime.now() → token * of *; * static tokens recomputed "
            "per request on vllm",
            "*FAILED test_prompts.py::test_unstable - *",
            "*FAILED test_prompts.py::test_async_unstable - *",
        ]
    )


def test_fixture_with_defaults_from_the_ini_file(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nprefix_stability_engine = openai\n")
    project.makepyfile(
        test_fixture="""
        from shopapp import stable_prompt, system_prompt


        def test_unstable(prefix_stability):
            prefix_stability(system_prompt, min_static_tokens=1)


        def test_stable(prefix_stability):
            assert prefix_stability(stable_prompt).stable


        def test_engine_default(prefix_stability):
            assert prefix_stability.check(system_prompt).engine == "openai"
        """
    )
    result = project.runpytest("-p", PLUGIN)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["*shopapp.py:7 datetime.now() → token *recomputed per request on openai"])


def test_inert_unless_used(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_plain="""
        import sys


        def test_plain():
            assert "prefixlint.testing.plugin" in sys.modules
            assert "prefixlint.testing.stability" not in sys.modules
            assert "tokenizers" not in sys.modules


        def test_returns_a_string_unchecked():
            return "not a prompt test"
        """
    )
    result = project.runpytest_subprocess("-p", PLUGIN, "-W", "ignore::pytest.PytestReturnNotNoneWarning")
    result.assert_outcomes(passed=2)


def test_marker_takes_keywords_only(project: pytest.Pytester) -> None:
    project.makepyfile(
        test_args="""
        import pytest


        @pytest.mark.prefix_stable("vllm")
        def test_positional():
            return "x"
        """
    )
    result = project.runpytest("-p", PLUGIN)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*keyword options only*"])


def test_entry_point_is_named_as_its_module() -> None:
    data = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert data["project"]["entry-points"]["pytest11"] == {PLUGIN: PLUGIN}
    assert "time-machine>=2.14" in data["project"]["optional-dependencies"]["testing"]
