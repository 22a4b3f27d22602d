"""Library calls that are volatile by what they are (prefixlint/python/volatile.py's tables): each
found at its line, with its rule's code, when it heads a system prompt, and silent when the same
value follows all the static text."""

from __future__ import annotations

import pytest

from prefixlint.api import Options
from prefixlint.python import analyze_python

RULES = (
    "You answer questions about the orders of a small online bookshop. Be brief and precise.\n"
    "- Quote the order number exactly as the customer gives it, with its dashes and leading zeros.\n"
    "- Never promise a refund: say that the support team decides within two working days.\n"
    "- Shipping inside the country takes three to five days; abroad, up to two weeks.\n"
    "- When the question is not about an order, say politely that you only handle orders.\n"
)

# import, expression, the code its finding has
CASES = {
    "django.utils.timezone.now": ("from django.utils import timezone", "timezone.now()", "PFX101"),
    "pandas.Timestamp.now": ("import pandas as pd", "pd.Timestamp.now()", "PFX101"),
    "pandas.Timestamp.utcnow": ("import pandas as pd", "pd.Timestamp.utcnow()", "PFX101"),
    "time.monotonic": ("import time", "time.monotonic()", "PFX101"),
    "time.perf_counter": ("from time import perf_counter", "perf_counter()", "PFX101"),
    "bson.ObjectId": ("from bson import ObjectId", "ObjectId()", "PFX102"),
    "ulid": ("import ulid", "ulid.new()", "PFX102"),
    "shortuuid": ("import shortuuid", "shortuuid.uuid()", "PFX102"),
    "nanoid": ("from nanoid import generate", "generate()", "PFX102"),
    "tempfile.mkdtemp": ("import tempfile", "tempfile.mkdtemp()", "PFX103"),
    "tempfile.gettempdir": ("import tempfile", "tempfile.gettempdir()", "PFX104"),
    "os.cpu_count": ("import os", "os.cpu_count()", "PFX104"),
    "sys.executable": ("import sys", "sys.executable", "PFX104"),
    "threading.get_ident": ("import threading", "threading.get_ident()", "PFX104"),
}


def _module(imports: str, expression: str, head: bool) -> str:
    text = 'f"{value}\\n{RULES}"' if head else 'f"{RULES}\\n{value}"'
    return (
        f"{imports}\nfrom openai import OpenAI\n\nclient = OpenAI()\nRULES = {RULES!r}\n\n\n"
        f"def ask(question: str) -> str:\n"
        f"    value = {expression}\n"
        f"    system = {text}\n"
        f'    messages = [{{"role": "system", "content": system}}, {{"role": "user", "content": question}}]\n'
        f'    return client.chat.completions.create(model="gpt-4o", messages=messages)\n'
    )


def _findings(source: str) -> set[tuple[str, int]]:
    result = analyze_python("agent.py", source, Options())
    return {(d.code, d.span.line) for d in result.diagnostics}


@pytest.mark.parametrize("name", sorted(CASES))
def test_volatile_call_found_at_its_line(name: str) -> None:
    imports, expression, code = CASES[name]
    source = _module(imports, expression, head=True)
    line = next(n for n, text in enumerate(source.splitlines(), start=1) if text.startswith("    value = "))
    assert _findings(source) == {(code, line)}


@pytest.mark.parametrize("name", sorted(CASES))
def test_volatile_call_after_static_text_silent(name: str) -> None:
    imports, expression, _ = CASES[name]
    assert _findings(_module(imports, expression, head=False)) == set()
