"""A provider adapter forwarding the conversation, tools or system text it is given has no finding of
its own; one that writes a per-request value ahead of static text it adds does, and so does a caller
that builds the list it forwards."""

from __future__ import annotations

from conftest import FIXTURES

from prefixlint.api import Options
from prefixlint.core.findings import Diagnostic
from prefixlint.python import analyze_python

FIXTURE = FIXTURES / "python" / "provider_adapters.py"


def _diagnostics(path: str, text: str) -> list[Diagnostic]:
    return analyze_python(path, text, Options()).diagnostics


def test_forwarding_is_silent_and_adding_ahead_of_static_text_is_reported() -> None:
    found = [(d.code, d.span.line) for d in _diagnostics(str(FIXTURE), FIXTURE.read_text(encoding="utf-8"))]
    assert found == [("PFX105", 43), ("PFX105", 49)]


def test_the_caller_that_builds_the_forwarded_list_is_reported() -> None:
    text = FIXTURE.read_text(encoding="utf-8") + (
        "\n\ndef answer(question: str):\n"
        '    system = f"The question: {question}\\n{GUIDE}"\n'
        "    return ForwardingDriver().complete(system, [])\n"
    )
    lines = text.splitlines()
    at = next(i for i, line in enumerate(lines, 1) if "The question:" in line)
    found = [(d.code, d.span.line) for d in _diagnostics("app.py", text)]
    assert ("PFX105", at) in found
    assert all(line in (43, 49, at) for _, line in found)
