"""A project method passed to a call that is not the project's, which calls it with the rest of
its arguments (`executor.submit(model.inference, name, prompt)`, `asyncio.to_thread(self.ask, q)`):
what that method sends is the request (summaries._forwarded), the arguments after it bound to its
parameters; the object may be one picked from a dict of objects (registries.py)."""

from __future__ import annotations

from pathlib import Path

from prefixlint.python import analyze_python
from prefixlint.settings import Options

SOURCE = '''import asyncio
import concurrent.futures
import logging
from datetime import datetime

from openai import OpenAI

LONG = """You are a careful reviewer. Follow the rules below in every review you write for a change.
1. Read the whole diff before you write anything, and name the files you looked at first.
2. Never invent facts, names, numbers or quotations; say when you do not know something.
3. Point at the exact line of each problem you find and explain why it is one in a sentence.
"""


class OpenAiClient:
    def inference(self, model, prompt):
        return OpenAI().chat.completions.create(model=model, messages=[{"role": "user", "content": prompt}])


class Journal:
    def inference(self, model, prompt):
        logging.getLogger(__name__).info("%s %s", model, prompt)


def infer(prompt, which):
    clients = {"openai": OpenAiClient(), "journal": Journal()}
    client = clients[which]
    with concurrent.futures.ThreadPoolExecutor() as executor:
        future = executor.submit(client.inference, "gpt-4o", prompt)
    return future.result()


async def infer_async(prompt):
    return await asyncio.to_thread(OpenAiClient().inference, "gpt-4o", prompt)


def note(prompt):
    with concurrent.futures.ThreadPoolExecutor() as executor:
        return executor.submit(Journal().inference, "gpt-4o", prompt).result()


def review(diff):
    return infer(f"Now {datetime.now()}\\n" + LONG + diff, "openai")  # expect


async def review_async(diff):
    return await infer_async(f"Now {datetime.now()}\\n" + LONG + diff)  # expect


def log_review(diff):
    return note(f"Now {datetime.now()}\\n" + LONG + diff)
'''


def test_a_method_run_by_an_executor_or_a_thread_sends_its_request(tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    path.write_text(SOURCE, encoding="utf-8")
    result = analyze_python(str(path), SOURCE, Options(project_root=str(tmp_path)))
    expected = [n for n, line in enumerate(SOURCE.splitlines(), 1) if line.endswith("# expect")]
    # the journal's method, run the same way, sends nothing: `log_review` is silent
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("PFX101", n) for n in expected]
