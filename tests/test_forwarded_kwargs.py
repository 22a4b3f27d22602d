"""A request that reaches the API through wrappers passing their `**kwargs` on (a private `_send`,
a retry wrapper made at run time, a name bound to the SDK call in one arm), as client classes of
agent frameworks do: what the public method is given is what the API call sends."""

from __future__ import annotations

from conftest import FIXTURES

from prefixlint.api import Options
from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.python import analyze_python

FIXTURE = FIXTURES / "python" / "forwarded_kwargs.py"

_HEAD = (
    "from datetime import datetime\n"
    "from openai import OpenAI\n\n"
    'RULES = ("Answer in English, cite the knowledge base for every claim, never invent order numbers, "\n'
    '         "escalate refunds to a human, and keep each answer under two hundred words.")\n\n\n'
)


def _diagnostics(path: str, text: str) -> list[Diagnostic]:
    return analyze_python(path, text, Options()).diagnostics


def _line_of(text: str, start: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if line.lstrip().startswith(start))


def test_a_set_of_tools_reaches_the_request_through_every_forwarding_layer() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    found = _diagnostics(str(FIXTURE), text)
    line = _line_of(text, 'tools = [{"name": name, "parameters": {"type": "object"}} for name in enabled]')
    assert [(d.code, d.span.line, d.severity) for d in found] == [("PFX201", line, Severity.WARNING)]
    assert "called as `call`" in found[0].message
    assert "no call that sends it" not in found[0].message


def test_a_clock_passed_as_a_keyword_the_wrapper_forwards() -> None:
    text = _HEAD + (
        "class Client:\n"
        "    def __init__(self) -> None:\n"
        "        self.client = OpenAI()\n\n"
        "    def _send(self, **kwargs):\n"
        "        return self.client.chat.completions.create(**kwargs)\n\n\n"
        "def ask(question: str):\n"
        '    system = f"Now: {datetime.now():%H:%M:%S}\\n" + RULES\n'
        '    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]\n'
        '    return Client()._send(model="gpt-4o", messages=messages)\n'
    )
    [diag] = _diagnostics("app.py", text)
    assert (diag.code, diag.span.line, diag.severity) == ("PFX101", 17, Severity.ERROR)
    assert "`self.client.chat.completions.create()`" in diag.message


def test_a_forwarder_chain_deeper_than_the_wrapper_limit_still_reaches_the_api() -> None:
    # four layers that only pass `**kwargs` on cost no wrapper depth
    layers = "".join(
        f"    def _l{i}(self, **kwargs):\n        return self._l{i + 1}(**kwargs)\n\n" for i in range(4)
    )
    text = _HEAD + (
        "class Client:\n"
        "    def __init__(self) -> None:\n"
        "        self.client = OpenAI()\n\n"
        f"{layers}"
        "    def _l4(self, **kwargs):\n"
        "        return self.client.chat.completions.create(**kwargs)\n\n\n"
        "def ask(question: str):\n"
        '    system = f"Now: {datetime.now():%H:%M:%S}\\n" + RULES\n'
        '    messages = [{"role": "system", "content": system}, {"role": "user", "content": question}]\n'
        '    return Client()._l0(model="gpt-4o", messages=messages)\n'
    )
    [diag] = _diagnostics("app.py", text)
    assert (diag.code, diag.severity) == ("PFX101", Severity.ERROR)
    assert (
        diag.span.line
        == text.splitlines().index('    system = f"Now: {datetime.now():%H:%M:%S}\\n" + RULES') + 1
    )


def test_a_sorted_set_through_the_same_layers_is_silent() -> None:
    text = FIXTURE.read_text(encoding="utf-8")
    found = _diagnostics(str(FIXTURE), text)
    assert found and all(d.span.line < _line_of(text, "def answer_sorted(") for d in found)
