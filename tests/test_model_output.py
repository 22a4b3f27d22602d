"""A model's reply reused as prompt text (the `model_output` source: what a request row's call gives
back): per request wherever it lands, at the line of the call that wrote it, its severity from what
it costs; no prompt text when only logged, returned, or tested in a condition."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.core.findings import Severity
from prefixlint.python import analyze_python
from prefixlint.settings import Options

FIXTURE = FIXTURES / "python" / "model_output.py"
RULES = (
    "Write the report in markdown, with a title, an introduction, three to five sections and a conclusion. "
    "Cite every source you rely on with its URL in brackets after the sentence that uses it, prefer recent "
    "sources to old ones, never invent a figure, and keep each section under three hundred words."
)


def _found(path: Path, text: str, **options: object) -> list[tuple[str, int, str]]:
    result = analyze_python(str(path), text, Options(project_root=str(path.parent), **options))
    return [(d.code, d.span.line, d.severity.label) for d in result.diagnostics if d.code.startswith("PFX1")]


def test_the_fixture_reports_each_reply_ahead_of_static_text_at_the_call_that_wrote_it() -> None:
    """A reply as the system message of a later call (through a helper's return, and stored on
    `self` by one method, read by another), ahead of the rules: a warning at the model call. The
    reply at the end of the user message, one only logged or tested, and a constant role: silent."""
    text = FIXTURE.read_text(encoding="utf-8")
    marked = [n for n, line in enumerate(text.splitlines(), start=1) if line.endswith("# expect: PFX105")]
    result = analyze_python(str(FIXTURE), text, Options(project_root=str(FIXTURE.parent)))
    assert len(marked) == 2
    assert [(d.code, d.span.line, d.severity) for d in result.diagnostics] == [
        ("PFX105", line, Severity.WARNING) for line in marked
    ]
    first = result.diagnostics[0].message
    assert f"the reply of the model call at model_output.py:{marked[0]} (OpenAI chat completions)" in first
    assert "`client.chat.completions.create(...)`" in first


def _chain(tmp_path: Path, tail: str, read: str = "made.choices[0].message.content") -> str:
    module = tmp_path / "chain.py"
    module.write_text(
        "from openai import OpenAI\n\n"
        "client = OpenAI()\n\n\n"
        "def run(task: str, notes: str):\n"
        "    made = client.chat.completions.create(\n"
        "        model='gpt-4o', messages=[{'role': 'user', 'content': task}])\n"
        f"    plan = {read}\n"
        "    return client.chat.completions.create(model='gpt-4o', messages=[\n"
        f"        {{'role': 'user', 'content': plan + {tail!r} + notes}}])\n",
        encoding="utf-8",
    )
    return module.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    "read",
    [
        "made.choices[0].message.content",
        "made.choices[0].message.content.strip()",
        "json.loads(made.choices[0].message.content)['plan']",
        "made.output_text",
        "str(made)",
    ],
)
def test_what_is_read_of_a_reply_is_the_reply(read: str, tmp_path: Path) -> None:
    text = _chain(tmp_path, "\n\n" + RULES + "\n\n", read).replace("from openai", "import json\nfrom openai")
    assert _found(tmp_path / "chain.py", text) == [("PFX105", 8, "warning")]


def test_the_severity_is_the_loss(tmp_path: Path) -> None:
    """Less than a cache block after the reply loses nothing: silent; the rules after it: a warning;
    with OpenAI's 1,024-token minimum the same rules are not cached anyway: silent."""
    short = _chain(tmp_path, "\nNotes: ")
    assert _found(tmp_path / "chain.py", short) == []
    long = _chain(tmp_path, "\n\n" + RULES + "\n\n")
    assert _found(tmp_path / "chain.py", long) == [("PFX105", 7, "warning")]
    assert _found(tmp_path / "chain.py", long, engine="openai") == []


def test_a_call_that_builds_an_object_gives_no_reply(tmp_path: Path) -> None:
    """`model.start_chat()` (the row's `objects`) makes a chat session, not text a model wrote; a
    method of a request row called on plain data (`CACHE = {}`) sends no request."""
    module = tmp_path / "chat.py"
    module.write_text(
        "import google.generativeai as genai\n"
        "from langchain_openai import ChatOpenAI\n\n"
        "model = genai.GenerativeModel('gemini-1.5-pro')\n"
        "llm = ChatOpenAI()\n"
        "CACHE = {}\n\n\n"
        "def run(task: str):\n"
        "    chat = model.start_chat()\n"
        "    cached = CACHE.invoke(task)\n"
        f"    return llm.invoke([('system', f'{{chat}} {{cached}} ' + {RULES!r}), ('user', task)])\n",
        encoding="utf-8",
    )
    assert _found(module, module.read_text(encoding="utf-8")) == []


def test_a_project_row_of_a_gateway_gives_its_reply(tmp_path: Path) -> None:
    """A `[[tool.prefixlint.python.sink]]` row is a request like the built-in ones: its call's
    result is a reply; `python.sinks` names only build text, and give none."""
    from prefixlint.config import build_options, load_config

    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[[tool.prefixlint.python.sink]]\nname = "our gateway"\ncalls = [".gateway.ask"]\n'
        'arguments = { system = "system", question = "user" }\n',
        encoding="utf-8",
    )
    module = tmp_path / "bot.py"
    module.write_text(
        "from myapp import gateway\n\n\n"
        "def run(task: str):\n"
        "    outline = gateway.ask(system='Outline the answer.', question=task)\n"
        f"    return gateway.ask(system=outline + {RULES!r}, question=task)\n",
        encoding="utf-8",
    )
    options = build_options(load_config(config))
    found = analyze_python(str(module), module.read_text(encoding="utf-8"), options).diagnostics
    assert [(d.code, d.span.line) for d in found] == [("PFX105", 5)]
    assert "our gateway" in found[0].message


def test_a_role_chosen_by_one_object_and_written_with_by_another(tmp_path: Path) -> None:
    """As agents chain calls across modules: `choose_agent` (re-exported by its package) returns
    the reply's fields, or what a fallback returns; the researcher unpacks them onto `self`; a
    generator it constructs with `Generator(self)` reads `self.researcher.role` as the system
    message. The class of `researcher` is told by that constructor call."""
    package = tmp_path / "app"
    (package / "actions").mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "actions" / "__init__.py").write_text("from .creator import choose_agent\n", encoding="utf-8")
    (package / "actions" / "creator.py").write_text(
        "import json\n\nfrom openai import AsyncOpenAI\n\nclient = AsyncOpenAI()\n\n\n"
        "async def choose_agent(task: str):\n"
        "    try:\n"
        "        made = await client.chat.completions.create(\n"
        "            model='gpt-4o', messages=[{'role': 'user', 'content': task}])\n"
        "        found = json.loads(made.choices[0].message.content)\n"
        "        return found['server'], found['role']\n"
        "    except ValueError:\n"
        "        return await fallback()\n\n\n"
        "async def fallback():\n"
        "    return 'Default', 'You are a careful researcher.'\n",
        encoding="utf-8",
    )
    (package / "agent.py").write_text(
        "from .actions import choose_agent\nfrom .generator import Generator\n\n\n"
        "class Researcher:\n"
        "    def __init__(self, query: str, role: str | None = None):\n"
        "        self.query = query\n"
        "        self.role = role\n"
        "        self.generator = Generator(self)\n\n"
        "    async def conduct(self):\n"
        "        self.agent, self.role = await choose_agent(self.query)\n",
        encoding="utf-8",
    )
    generator = package / "generator.py"
    generator.write_text(
        f"from openai import OpenAI\n\nclient = OpenAI()\nRULES = {RULES!r}\n\n\n"
        "class Generator:\n"
        "    def __init__(self, researcher):\n"
        "        self.researcher = researcher\n\n"
        "    def write(self, notes: str):\n"
        "        return client.chat.completions.create(model='gpt-4o', messages=[\n"
        "            {'role': 'system', 'content': self.researcher.role},\n"
        "            {'role': 'user', 'content': RULES + notes}])\n",
        encoding="utf-8",
    )
    text = generator.read_text(encoding="utf-8")
    found = analyze_python(str(generator), text, Options(project_root=str(tmp_path))).diagnostics
    assert [(d.code, d.span.line, d.severity.label) for d in found] == [("PFX105", 13, "warning")]
    assert "the reply of the model call at app/actions/creator.py:10" in found[0].message


LOOP = '''from openai import OpenAI

client = OpenAI()
SYSTEM = """You edit code by writing unified diffs. Keep every hunk small, never touch lines the request
does not need, keep the file's style and imports, and end with a one-line summary of the change."""


def edit(code: str, request: str, check) -> str:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": code + "\\n\\n" + request}]
    response = client.chat.completions.create(model="gpt-4o", messages=messages)
    messages.append(response.choices[0].message)
    for _ in range(3):
        errors = check(messages[-1])
        if not errors:
            break
        retry = "Some diffs did not apply. Rewrite only the failing ones, on the exact format, and do not "
        retry += "repeat earlier mistakes:\\n" + errors
        messages.append({"role": "user", "content": retry})
        response = client.chat.completions.create(model="gpt-4o", messages=messages)
        messages.append(response.choices[0].message)
    return messages[-1].content
'''


def test_a_reply_appended_as_the_assistants_turn_costs_nothing_after_it(tmp_path: Path) -> None:
    """`messages.append(reply)`, then the next user turn: that turn can only come after the reply
    (the conversation going on, not its loss): no finding for the reply. The same reply put in a
    system message ahead of static text is one (the fixture's first test)."""
    path = tmp_path / "loop.py"
    assert _found(path, LOOP) == []
