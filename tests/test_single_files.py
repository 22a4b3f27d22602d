"""Single agent files checked alone, as a pre-commit hook checks them (`prefixlint check FILE`, no
project around them): each file of fixtures/python/single/ is written the way a framework's users
write it, with a volatile value ahead of long static instructions at each `# expect: CODE` line,
and each `NAME_clean.py` twin has the value moved after the static text (or gone) and must be silent.
Findings at info are no alarm (the default `--fail-on warning` passes them)."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES
from test_python_frontend import expected

from prefixlint.api import Options, lint_paths
from prefixlint.core.findings import Severity

SINGLE = FIXTURES / "python" / "single"
FILES = sorted(SINGLE.glob("*.py"))
BUSTERS = [p for p in FILES if not p.stem.endswith("_clean")]


def alarms(path: Path) -> set[tuple[str, int]]:
    """(code, line) of each finding at warning or above when `path` is checked alone."""
    report = lint_paths([str(path)], Options())
    return {(d.code, d.span.line) for d in report.diagnostics if d.severity >= Severity.WARNING}


@pytest.mark.parametrize("path", BUSTERS, ids=lambda p: p.stem)
def test_cache_buster_found_at_its_line(path: Path) -> None:
    assert expected(path), "a cache-buster fixture marks the line of its finding"
    assert alarms(path) == expected(path)


@pytest.mark.parametrize("path", BUSTERS, ids=lambda p: p.stem + "_clean")
def test_clean_twin_silent(path: Path) -> None:
    twin = path.with_name(path.stem + "_clean.py")
    assert not expected(twin)
    assert alarms(twin) == set()


def test_every_fixture_has_its_twin() -> None:
    assert {p.stem for p in FILES} == {p.stem for p in BUSTERS} | {p.stem + "_clean" for p in BUSTERS}
