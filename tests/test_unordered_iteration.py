"""A set is a cause only where its iteration order reaches prompt text (a join, a loop adding text,
`str()` or an f-string field, `json.dumps`), reported at that iteration; membership, size and values
merely computed from it (an attribute of the same object, a path) are silent."""

from __future__ import annotations

import pytest
from conftest import FIXTURES

from prefixlint.api import Options
from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.python import analyze_python

_HEAD = (
    "from openai import OpenAI\n\nclient = OpenAI()\n"
    'GUIDE = ("You are a careful coding assistant. Keep every file name, function name and decision "\n'
    '         "the user made, answer in plain prose without lists or headings, cite the file you rely "\n'
    '         "on by its path, and never invent a function, a file or a decision nobody made.")\n'
    "TOOLS = {'search', 'calculator', 'calendar'}\n\n\n"
    "def ask(question):\n"
)  # the function body starts at line 11
_SEND = (
    "    return client.chat.completions.create(model='m', messages=[\n"
    "        {'role': 'system', 'content': system}, {'role': 'user', 'content': question}])\n"
)


def _diagnostics(body: str) -> list[Diagnostic]:
    return analyze_python("app.py", _HEAD + body + _SEND, Options()).diagnostics


@pytest.mark.parametrize(
    ("body", "column"),
    [
        ("    system = 'Tools: ' + ', '.join(TOOLS) + '.\\n' + GUIDE\n", 36),
        ("    system = f'Tools: {TOOLS}.\\n' + GUIDE\n", 24),
        ("    system = 'Tools: ' + str(TOOLS) + '.\\n' + GUIDE\n", 30),
        ("    system = ''.join(f'- {t}\\n' for t in TOOLS) + GUIDE\n", 42),
    ],
    ids=["join", "f-string", "str", "comprehension"],
)
def test_a_set_iterated_into_the_system_prompt_is_reported_at_the_iteration(body: str, column: int) -> None:
    [diag] = _diagnostics(body)
    assert (diag.code, diag.span.line, diag.span.column) == ("PFX201", 11, column)
    assert "an unordered iteration (`TOOLS`)" in diag.message
    assert diag.severity is Severity.INFO  # a module constant: made at import, it splits per process


def test_a_loop_adding_text_is_reported_at_the_loop() -> None:
    [diag] = _diagnostics(
        "    system = ''\n    for t in TOOLS:\n        system += f'- {t}\\n'\n    system += GUIDE\n"
    )
    assert (diag.code, diag.span.line) == ("PFX201", 12)
    assert "an unordered iteration (`TOOLS`)" in diag.message and diag.span.column == 14


@pytest.mark.parametrize(
    "body",
    [
        "    system = f'{len(TOOLS)} tools.\\n' + GUIDE\n",
        "    system = ('Search is on. ' if 'search' in TOOLS else '') + GUIDE\n",
        "    system = 'Tools: ' + ', '.join(sorted(TOOLS)) + '.\\n' + GUIDE\n",
        "    system = f'Tools: {sorted(TOOLS)}.\\n' + GUIDE\n",
        "    system = f'Common: {os.path.commonpath(list(TOOLS))}.\\n' + GUIDE\n",
    ],
    ids=["size", "membership", "sorted-join", "sorted-str", "order-free-call"],
)
def test_membership_size_and_sorted_uses_are_silent(body: str) -> None:
    assert [d for d in _diagnostics(body) if d.code == "PFX201"] == []


def test_a_set_made_and_only_tested_on_an_object_is_silent() -> None:
    path = FIXTURES / "python" / "set_iterations.py"
    found = analyze_python(str(path), path.read_text(encoding="utf-8"), Options()).diagnostics
    assert [(d.code, d.span.line) for d in found] == [("PFX201", 26)]
    assert "`self.fnames`" in found[0].message and "self.root" not in found[0].message


def test_a_set_comprehension_joined_is_reported_where_it_is_written_not_at_its_iterable() -> None:
    # the list it walks is ordered; the set it builds is what loses the order
    [diag] = _diagnostics(
        "    system = '\\n'.join(\n        {f'- {t}' for t in question.split()}\n    ) + GUIDE\n"
    )
    assert (diag.code, diag.span.line, diag.span.column) == ("PFX201", 12, 9)
    assert "an unordered iteration (`a set built and iterated here`)" in diag.message


_REDUCED = (
    "import os\n\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
    'GUIDE = ("You are a careful coding assistant. Keep every file name, function name and decision "\n'
    '         "the user made, answer in plain prose without lists or headings, cite the file you rely "\n'
    '         "on by its path, and never invent a function, a file or a decision nobody made.")\n'
    "OPEN = {'src/app.py', 'src/models.py', 'tests/test_app.py'}\n\n\n"
    "def ask(question):\n"
    "    root = os.path.commonpath(list(OPEN))\n"
    "    system = (f\"Files: {', '.join(OPEN)}; root {root}; {len(OPEN)} files; \"\n"  # line 14
    "              f'last {max(os.listdir(root))}, {min(OPEN)}\\n' + GUIDE)\n"
    "    return client.chat.completions.create(model='m', messages=[\n"
    "        {'role': 'system', 'content': system}, {'role': 'user', 'content': question}])\n"
)


def test_order_free_reductions_of_a_set_carry_no_order_and_the_sorted_fix_holds(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """`os.path.commonpath(list(s))`, `len(s)`, `max(os.listdir(d))`, `min(s)` give the same text
    in any order (the table's order-free reductions): only the join is a cause, with no co-value
    beside it, and sorting it is a fix that verifies."""
    from prefixlint.api import lint_source
    from prefixlint.core.edits import apply_edits
    from prefixlint.fixes.verify import Verifier, first_verified
    from prefixlint.plan import fix_part
    from prefixlint.run.sources import Source

    path = tmp_path / "reduced.py"
    path.write_text(_REDUCED, encoding="utf-8")
    source = Source(str(path), "python")
    results = lint_source(source, Options())
    [diag] = [d for r in results for d in r.diagnostics]
    assert (diag.code, diag.span.line, diag.span.column) == ("PFX201", 14, 35)
    assert "an unordered iteration (`OPEN`)" in diag.message
    assert "both must move" not in diag.message and "commonpath" not in diag.message
    verifier = Verifier(source, lambda fixed: lint_source(source, Options(), fixed))
    fix, _ = first_verified("python", source, _REDUCED, results, diag, fix_part(Options()), verifier)
    assert fix is not None and fix.verified
    assert "', '.join(sorted(OPEN))" in apply_edits(_REDUCED, fix.edits)


def test_a_project_function_reducing_its_parameter_order_free_carries_no_order() -> None:
    """`newest(TOOLS)` returns `max(...)` of its parameter's items: followed into the function,
    the reduction gives the same text in any order (before the table's row: PFX201 at line 17)."""
    helper = "\n\ndef newest(names):\n    return max(n.lower() for n in names)\n"
    source = _HEAD + "    system = f'Newest: {newest(TOOLS)}.\\n' + GUIDE\n" + _SEND + helper
    assert analyze_python("app.py", source, Options()).diagnostics == []
