"""Single agent files checked alone, as a pre-commit hook checks them (`prefixlint check FILE`, no
project around them): each file of fixtures/python/single/ is written the way a framework's users
write it, with a volatile value ahead of long static instructions at each `# expect: CODE` line,
and each `NAME_clean.py` twin has the value moved after the static text (or gone) and must be silent;
each `clean_NAME.py` is a file with volatile values only where they reach no prompt text (logging, file
names, headers, metadata, stored records, the very end of the prompt) and must be silent too.
Findings at info are no alarm (the default `--fail-on warning` passes them); a cache-buster found only
at info (a per-request input known by its name: `python-guess-severity`) is listed in FOUND_AT_INFO."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES
from test_python_frontend import expected

from prefixlint.api import Options, lint_paths
from prefixlint.core.findings import Severity

SINGLE = FIXTURES / "python" / "single"
FILES = sorted(SINGLE.glob("*.py"))
CLEAN = [p for p in FILES if p.stem.startswith("clean_")]
BUSTERS = [p for p in FILES if not p.stem.endswith("_clean") and p not in CLEAN]
# A per-request input the file shows only as a parameter of the function that builds the prompt
# (`review_clause(clause, ...)`, a Haystack template's `{{ question }}`): found, but a guess, so at
# info; its line cannot carry a marker when it opens a multi-line string.
FOUND_AT_INFO = {
    "bedrock_converse_clause_first": {("PFX105", 29)},
    "haystack_question_first": {("PFX105", 9)},
}


def findings(path: Path, alarm: bool = True) -> set[tuple[str, int]]:
    """(code, line) of each finding at warning or above (`alarm`), else below, when `path` is
    checked alone."""
    report = lint_paths([str(path)], Options())
    return {(d.code, d.span.line) for d in report.diagnostics if (d.severity >= Severity.WARNING) == alarm}


def alarms(path: Path) -> set[tuple[str, int]]:
    return findings(path)


@pytest.mark.parametrize("path", BUSTERS, ids=lambda p: p.stem)
def test_cache_buster_found_at_its_line(path: Path) -> None:
    at_info = FOUND_AT_INFO.get(path.stem, set())
    assert bool(expected(path)) != bool(at_info), "a cache-buster fixture marks the line of its finding"
    assert alarms(path) == expected(path)
    assert at_info <= findings(path, alarm=False)


@pytest.mark.parametrize("path", CLEAN, ids=lambda p: p.stem)
def test_clean_file_silent(path: Path) -> None:
    assert not expected(path)
    assert alarms(path) == set()


@pytest.mark.parametrize("path", BUSTERS, ids=lambda p: p.stem + "_clean")
def test_clean_twin_silent(path: Path) -> None:
    twin = path.with_name(path.stem + "_clean.py")
    assert not expected(twin)
    assert alarms(twin) == set()


def test_every_fixture_has_its_twin() -> None:
    twins = {p.stem + "_clean" for p in BUSTERS}
    assert {p.stem for p in FILES} == {p.stem for p in BUSTERS} | twins | {p.stem for p in CLEAN}
    assert set(FOUND_AT_INFO) <= {p.stem for p in BUSTERS}
