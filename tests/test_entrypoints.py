"""Request entry points decide the severity of per-request inputs known by their names (issue 28,
point 4): a prompt builder's parameter reported "if its callers pass one" is judged by its loss
once a request entry point is seen to pass it one, and stays at info otherwise."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from test_frameworks import _expected

from prefixlint.core.findings import Severity
from prefixlint.python import analyze_python
from prefixlint.python.frameworks import TableError, builtin, parse_table
from prefixlint.settings import Options

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "entry_project"


def _findings(root: Path, relative: str) -> dict[int, tuple[str, Severity, str]]:
    path = root / relative
    text = path.read_text(encoding="utf-8")
    result = analyze_python(str(path), text, Options(project_root=str(root)))
    return {d.span.line: (d.code, d.severity, d.message) for d in result.diagnostics}


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "entry_project")
    return tmp_path / "entry_project"


def test_a_route_that_passes_the_query_raises_the_builder_to_its_loss(project: Path) -> None:
    found = _findings(project, "research/prompts.py")
    code, severity, message = found[19]
    assert (code, severity) == ("PFX105", Severity.WARNING)
    assert "request entry point passes (`ask()` at research/server.py:17, FastAPI route)" in message


def test_a_builder_no_entry_point_reaches_stays_at_info(project: Path) -> None:
    found = _findings(project, "research/prompts.py")
    code, severity, message = found[27]
    assert (code, severity) == ("PFX105", Severity.INFO)
    assert "if its callers pass one" in message


def test_an_entry_point_that_passes_a_constant_leaves_it_at_info(project: Path) -> None:
    found = _findings(project, "research/prompts.py")
    code, severity, message = found[35]
    assert (code, severity) == ("PFX105", Severity.INFO)
    assert "entry point" not in message


def test_without_the_routes_the_query_is_a_guess_again(project: Path) -> None:
    server = project / "research" / "server.py"
    text = server.read_text(encoding="utf-8")
    server.write_text(
        text.replace('@app.post("/ask")\n', "").replace('@app.post("/report")\n', ""), encoding="utf-8"
    )
    code, severity, _ = _findings(project, "research/prompts.py")[19]
    assert (code, severity) == ("PFX105", Severity.INFO)


def test_a_command_line_argument_is_seen_through_a_constructor(project: Path) -> None:
    (project / "research" / "cli.py").write_text(
        "import argparse\n\nfrom research.service import Researcher\n\n\n"
        "def main(args):\n    return Researcher(query=args.query).run()\n\n\n"
        "parser = argparse.ArgumentParser()\nparser.add_argument('query')\nmain(parser.parse_args())\n",
        encoding="utf-8",
    )
    server = project / "research" / "server.py"
    server.unlink()
    code, severity, message = _findings(project, "research/prompts.py")[19]
    assert (code, severity) == ("PFX105", Severity.WARNING)
    assert "at research/cli.py:12, argparse command line" in message


ROWS = [r for r in (*builtin().entries, *builtin().requests) if r.examples]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_an_entry_rows_invalid_example_is_judged_by_its_loss(row, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """Every marked finding of the example is above info: the row, not a name guess, makes it one."""
    source = row.examples["invalid"]
    path = tmp_path / "example.py"
    path.write_text(source, encoding="utf-8")
    result = analyze_python(str(path), source, Options(project_root=str(tmp_path)))
    found = {(d.code, d.span.line): d.severity for d in result.diagnostics if d.code.startswith("PFX1")}
    want = _expected(source, [])
    assert set(found) == want
    assert all(found[k] > Severity.INFO for k in want)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[entry]]\nname = "E"\n', "an entry row needs `decorators`, `callbacks` or `parameter`"),
        ('[[entry]]\nname = "E"\nparameter = "request"\n', "says its `imports`"),
        ('[[entry]]\nname = "E"\nparameter = "a b"\nimports = ["x"]\n', "`parameter` is a parameter's name"),
        (
            '[[entry]]\nname = "E"\ndecorators = [".x"]\ninputs = ["ctx"]\n',
            "`inputs` is a list of parameter positions",
        ),
        ('[[request]]\nname = "R"\n', "a request row needs `calls` or `reads`"),
        ('[[request]]\nname = "R"\ncalls = [".x"]\ncolour = 1\n', "unknown key `colour`"),
    ],
)
def test_a_broken_entry_or_request_row_is_named(text: str, message: str) -> None:
    with pytest.raises(TableError, match=message.replace("(", r"\(").replace(")", r"\)").replace("`", "`")):
        parse_table(text, "table.toml")


def test_two_inputs_a_route_passes_are_both_named(project: Path) -> None:
    """`Notes: {context}\nQuestion: {question}`: two inputs a route passes, less than a block apart,
    are one group, named at the first (where the requests part), and both must move."""
    code, severity, message = _findings(project, "research/prompts.py")[43]
    assert (code, severity) == ("PFX105", Severity.WARNING)
    assert message.startswith("`context` (a parameter of `report_prompt()`)")
    assert "`question` (line 43, a per-request input" in message and "both must move" in message


def test_an_attribute_of_an_object_nobody_makes_stays_at_info(project: Path) -> None:
    code, severity, message = _findings(project, "research/writer.py")[17]
    assert (code, severity) == ("PFX105", Severity.INFO)
    assert "entry point" not in message


def test_an_attribute_of_the_object_a_route_makes_is_seen(project: Path) -> None:
    service = project / "research" / "service.py"
    report = "    def report(self, notes: str) -> str:\n"
    outline = "    def outline(self) -> str:\n        return Writer(self).outline()\n\n"
    text = service.read_text(encoding="utf-8").replace(report, outline + report)
    service.write_text("from research.writer import Writer\n" + text, encoding="utf-8")
    code, severity, message = _findings(project, "research/writer.py")[17]
    assert (code, severity) == ("PFX105", Severity.WARNING)
    assert "(`ask()` at research/server.py:17, FastAPI route)" in message


_RULES = (
    "Answer questions about invoices and plans, quote amounts with their currency, never promise a "
    "refund, and hand anything about cancelling the contract to a human colleague."
)


def _agents_sdk(text: str) -> str:
    return (
        "from agents import Agent, RunContextWrapper\n\n\n"
        "def instructions(ctx: RunContextWrapper, agent: Agent) -> str:\n"
        f'    return f"{text} {_RULES}"\n\n\n'
        'billing = Agent[dict](name="Billing", instructions=instructions)\n'
    )


def _severities(tmp_path: Path, source: str) -> dict[tuple[str, int], Severity]:
    path = tmp_path / "example.py"
    path.write_text(source, encoding="utf-8")
    result = analyze_python(str(path), source, Options(project_root=str(tmp_path)))
    return {(d.code, d.span.line): d.severity for d in result.diagnostics}


def test_the_run_context_of_an_instructions_function_is_per_request(tmp_path: Path) -> None:
    """The Agents SDK calls `instructions(context, agent)` on each run: the context is the caller's."""
    found = _severities(tmp_path, _agents_sdk("You are helping {ctx.context.owner}."))
    assert found == {("PFX105", 5): Severity.WARNING}


def test_the_agent_an_instructions_function_is_given_is_the_apps(tmp_path: Path) -> None:
    """The row's `inputs` name the context alone: the agent passed beside it is the same on every run."""
    assert _severities(tmp_path, _agents_sdk("You are {agent.name}.")) == {}
