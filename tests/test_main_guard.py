"""A script's `if __name__ == "__main__":` block tries its functions with literals: examples of what
callers pass, not what every request holds. The request a wrapper sends from there keeps the
wrapper's parameters where the literals stand (prefixlint/python/summaries.py)."""

from __future__ import annotations

from prefixlint.api import Options
from prefixlint.python import analyze_python

RUNBOOK = (
    "You triage production alerts. Answer with a JSON object with the keys severity, owner, summary and "
    "next_steps. Severity is sev1 for outages, sev2 for degraded service, sev3 for internal tooling, and "
    "noise for flapping checks. Never guess an owner outside the list you were given."
)


def _script(system: str, main: str) -> str:
    return (
        "import json\nimport socket\nimport time\n\nimport anthropic\n\nclient = anthropic.Anthropic()\n"
        f"RUNBOOK = {RUNBOOK!r}\n\n\n"
        "def triage(alert: dict) -> str:\n"
        "    return client.messages.create(\n"
        '        model="claude-3-5-haiku-latest",\n'
        "        max_tokens=300,\n"
        f"        system={system},\n"
        '        messages=[{"role": "user", "content": json.dumps(alert)}],\n'
        "    )\n\n\n"
        f'if __name__ == "__main__":\n    {main}\n'
    )


def _findings(source: str) -> set[tuple[str, int]]:
    return {(d.code, d.span.line) for d in analyze_python("triage.py", source, Options()).diagnostics}


def test_a_literal_tried_in_main_is_no_static_text_after_the_system_prompt() -> None:
    """The worker's hostname ends the system prompt; the user turn is the alert, whatever `__main__`
    tries it with: nothing static follows the hostname."""
    source = _script('RUNBOOK + f"\\nWorker: {socket.gethostname()}"', 'print(triage({"name": "DiskFull"}))')
    assert _findings(source) == set()


def test_a_value_ahead_of_static_text_is_still_found_from_main() -> None:
    source = _script('f"Now: {time.time()}\\n" + RUNBOOK', 'print(triage({"name": "DiskFull"}))')
    line = next(n for n, text in enumerate(source.splitlines(), start=1) if "system=" in text)
    assert _findings(source) == {("PFX101", line)}
