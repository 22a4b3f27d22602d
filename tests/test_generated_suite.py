"""The generated generalisation suite (issue 28, point 5): every row of the models table, every
source kind, every way text is built and every position in the request, combined pairwise
(tests/generalisation_cases.py), each case asserting the findings the loss rule gives it (code,
line and severity) or silence. The code is analysed, never run."""

from __future__ import annotations

from pathlib import Path

import pytest
from generalisation_cases import POSITIONS, SOURCES, WAYS, Case, cases

from prefixlint.python import analyze_python
from prefixlint.python.frameworks import builtin
from prefixlint.settings import Options

CASES = cases()
OWNED = ("PFX0", "PFX1", "PFX2")  # PFX003: a generated file that does not parse


def findings(case: Case, root: Path) -> dict[tuple[str, int], str]:
    for name, content in case.files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    path = root / case.checked
    result = analyze_python(str(path), case.files[case.checked], Options(project_root=str(root)))
    return {(d.code, d.span.line): d.severity.label for d in result.diagnostics if d.code.startswith(OWNED)}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    found = findings(case, tmp_path)
    assert found == case.expected, f"{case.id}\n{case.source()}"


def test_every_row_source_way_and_position_is_generated() -> None:
    ids = [c.id.split("/") for c in CASES]
    from generalisation_cases import _slug

    assert {i[0] for i in ids} == {_slug(r.name) for r in builtin().sinks}
    assert {i[1] for i in ids} == {s.name for s in SOURCES}
    assert {i[2] for i in ids} == set(WAYS)
    assert {i[3] for i in ids} == {p.name for p in POSITIONS}
    assert len({c.id for c in CASES}) == len(CASES)


def test_findings_and_silences_are_both_expected() -> None:
    assert sum(bool(c.expected) for c in CASES) >= 100
    assert sum(not c.expected for c in CASES) >= 30
