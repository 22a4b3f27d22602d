"""The models table (prefixlint/data/frameworks.toml): every row's examples run as tests, as Fixit
runs its rules' VALID/INVALID cases, and a broken row is an error that names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prefixlint.python import analyze_python
from prefixlint.python.frameworks import TableError, builtin, parse_table
from prefixlint.settings import Options

_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")
OWNED = ("PFX1", "PFX2")


def _expected(source: str, listed: list[str]) -> set[tuple[str, int]]:
    out = {(c.split(":")[0], int(c.split(":")[1])) for c in listed}
    for number, line in enumerate(source.splitlines(), start=1):
        if m := _EXPECT.search(line):
            out |= {(code.strip(), number) for code in m.group(1).split(",") if code.strip()}
    return out


def _found(tmp_path: Path, source: str) -> set[tuple[str, int]]:
    path = tmp_path / "example.py"
    path.write_text(source, encoding="utf-8")
    result = analyze_python(str(path), source, Options(project_root=str(tmp_path)))
    return {(d.code, d.span.line) for d in result.diagnostics if d.code.startswith(OWNED)}


ROWS = [row for row in [*builtin().sinks, *builtin().configs, *builtin().entries] if row.examples]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_invalid_example_has_its_findings(row, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = row.examples.get("invalid")
    if source is None:
        pytest.skip(f"{row.name}: a config row has only a valid example")
    want = _expected(source, row.examples.get("expect", []))
    assert want, f"{row.name}: an invalid example marks at least one finding"
    assert _found(tmp_path, source) == want


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_valid_example_is_silent(row, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert _found(tmp_path, row.examples["valid"]) == set()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[sink]]\ncalls = [".x"]\n', "sink 1: every row needs a `name`"),
        ('[[sink]]\nname = "X"\n', "sink 1 (X): a row needs `calls` or `decorators`"),
        ('[[sink]]\nname = "X"\ncalls = [".x"]\narguments = { a = "body" }\n', "unknown part `body`"),
        ('[[sink]]\nname = "X"\ncalls = [".x"]\ncolour = 1\n', "sink 1: unknown key `colour`"),
        ('[[sink]]\nname = "X"\ndecorators = [".x"]\n', "says which part its function `returns`"),
        ('[[sink]]\nname = "X"\ncalls = [".x"]\nwhen = "daily"\n', "`when` is one of request, construction"),
    ],
)
def test_a_broken_row_is_named(text: str, message: str) -> None:
    with pytest.raises(TableError, match=re.escape(message)):
        parse_table(text, "table.toml")
