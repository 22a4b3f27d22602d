"""The models table (prefixlint/data/frameworks.toml): every row's examples run as tests, as Fixit
runs its rules' VALID/INVALID cases, and a broken row is an error that names it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from prefixlint.python import analyze_python
from prefixlint.python.frameworks import MemoryModel, TableError, builtin, parse_table
from prefixlint.settings import Options

_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")
OWNED = ("PFX1", "PFX2")


def _expected(source: str, listed: list[str]) -> set[tuple[str, int]]:
    out = {(c.split(":")[0], int(c.split(":")[1])) for c in listed}
    for number, line in enumerate(source.splitlines(), start=1):
        if m := _EXPECT.search(line):
            out |= {(code.strip(), number) for code in m.group(1).split(",") if code.strip()}
    return out


def _found(
    tmp_path: Path, source: str, owned: tuple[str, ...] = OWNED, files: dict[str, str] | None = None
) -> set[tuple[str, int]]:
    for name, content in (files or {}).items():  # prompt files a row's example reads
        (tmp_path / name).write_text(content, encoding="utf-8")
    path = tmp_path / "example.py"
    path.write_text(source, encoding="utf-8")
    result = analyze_python(str(path), source, Options(project_root=str(tmp_path)))
    return {(d.code, d.span.line) for d in result.diagnostics if d.code.startswith(owned)}


def _owned(row: object) -> tuple[str, ...]:
    """A memory row's examples are about the history (PFX4xx) as well."""
    return (*OWNED, "PFX4") if isinstance(row, MemoryModel) else OWNED


ROWS = [
    row
    for row in [
        *builtin().sinks,
        *builtin().configs,
        *builtin().entries,
        *builtin().requests,
        *builtin().memories,
        *builtin().appended,
        *builtin().sources,
        *builtin().fields,
        *builtin().schemas,
        *builtin().getters,
        *builtin().orders,
        *builtin().settings,
    ]
    if row.examples
]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_invalid_example_has_its_findings(row, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    source = row.examples.get("invalid")
    if source is None:
        pytest.skip(f"{row.name}: a config row (or an append-only memory) has only a valid example")
    want = _expected(source, row.examples.get("expect", []))
    assert want, f"{row.name}: an invalid example marks at least one finding"
    assert _found(tmp_path, source, _owned(row), row.examples.get("files")) == want


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_valid_example_is_silent(row, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    assert _found(tmp_path, row.examples["valid"], _owned(row), row.examples.get("files")) == set()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[sink]]\ncalls = [".x"]\n', "sink 1: every row needs a `name`"),
        (
            '[[ordering]]\nname = "R"\n',
            "ordering 1 (R): an ordering row needs `methods`, `keywords` or `calls`",
        ),
        (
            '[[ordering]]\nname = "R"\ncalls = ["os.path.common path"]\n',
            "`calls` are builtins or dotted names",
        ),
        ('[[sink]]\nname = "X"\n', "sink 1 (X): a row needs `calls`, `decorators` or `bases`"),
        ('[[sink]]\nname = "X"\ncalls = [".x"]\narguments = { a = "body" }\n', "unknown part `body`"),
        ('[[sink]]\nname = "X"\ncalls = [".x"]\ncolour = 1\n', "sink 1: unknown key `colour`"),
        ('[[sink]]\nname = "X"\ndecorators = [".x"]\n', "says which part its function `returns`"),
        ('[[sink]]\nname = "X"\ncalls = [".x"]\nwhen = "daily"\n', "`when` is one of request, construction"),
        ('[[sink]]\nname = "X"\ncalls = [".x"]\narguments = { "a.b.c" = "system" }\n', "cannot name `a.b.c`"),
        (
            '[[sink]]\nname = "X"\nbases = ["a.B"]\n',
            "a class row (`bases`) says which `attributes` are its text",
        ),
        ('[[sink]]\nname = "X"\ncalls = [".Llama.__call__"]\n', "a `.__call__` pattern names what builds"),
        ('[[sink]]\nname = "X"\ncalls = ["autogen.*Agent"]\n', "its last name is written out"),
        (
            '[[memory]]\nname = "M"\ncalls = ["a.M"]\nrewrites = "forget"\nreads = ["get"]\n',
            "`rewrites` is one of",
        ),
        ('[[memory]]\nname = "M"\ncalls = ["a.M"]\nrewrites = "window"\n', "says how it is reached"),
        (
            '[[memory]]\nname = "M"\ncalls = ["a.M"]\nrewrites = "window"\nreads = ["get"]\nalways = false\n',
            "only when told (`always = false`) names its `trigger`",
        ),
        (
            '[[source]]\nname = "X"\ncalls = [".get"]\n',
            "source 1 (X): `kind` is one of context, memory, tools",
        ),
        ('[[source]]\nname = "X"\nkind = "context"\n', "a source row needs `calls` or `placeholders`"),
        (
            '[[source]]\nname = "X"\nkind = "memory"\ncalls = [".get"]\nprovenance = "daily"\n',
            "`provenance` is one of request, clock",
        ),
        (
            '[[source]]\nname = "X"\nkind = "tools"\ncalls = [".x"]\ncolour = 1\n',
            "source 1: unknown key `colour`",
        ),
        (
            '[[sink]]\nname = "X"\ncalls = [".x"]\narguments = { a = "system" }\nfollows = { b = 3 }\n',
            "`follows` names `b`, which is not one of its `arguments`",
        ),
        (
            '[[sink]]\nname = "X"\ncalls = [".x"]\narguments = { a = "system" }\nfollows = { a = 0 }\n',
            "`follows.a` is the literal text or a count of tokens",
        ),
        (
            '[[fields]]\nname = "F"\nrequest = ["a.In"]\n',
            "fields 1 (F): `attribute` names the class attribute",
        ),
        ('[[fields]]\nname = "F"\nattribute = "inputs"\n', "names its per-request classes (`request`)"),
        (
            '[[fields]]\nname = "F"\nattribute = "inputs"\nrequest = ["a.In"]\nconstant = ["b.In"]\n',
            "`In` is per request or constant, not both",
        ),
        (
            '[[source]]\nname = "X"\nkind = "rows"\ncalls = [".x"]\ntiming = "daily"\n',
            "`timing` is `edit` or left out",
        ),
        (
            '[[source]]\nname = "X"\nkind = "context"\ncalls = [".x"]\nreplies = true\n',
            "a `model_output` row has `replies = true`, and no other kind does",
        ),
        ('[[source]]\nname = "X"\nkind = "model_output"\n', "has `replies = true`, and no other kind does"),
        (
            '[[source]]\nname = "X"\nkind = "rows"\ncalls = [".x"]\nordered = ["order_by"]\n',
            "`ordered` applies to a query row",
        ),
        ('[[schema]]\nname = "S"\n', "schema 1 (S): a schema row needs `calls`"),
        ('[[schema]]\nname = "S"\ncalls = ["x.*Input"]\n', "its last name is written out"),
        ('[[schema]]\nname = "S"\ncalls = ["x.In"]\narguments = ["a.b"]\n', "are keywords, positions or `*`"),
    ],
)
def test_a_broken_row_is_named(text: str, message: str) -> None:
    with pytest.raises(TableError, match=re.escape(message)):
        parse_table(text, "table.toml")


def test_every_row_has_both_examples() -> None:
    """A sink row shows one call that is reported and one that is not; a config row shows a volatile
    value passed to the constructor that is not."""
    missing = [f"{s.name}: {k}" for s in builtin().sinks for k in ("valid", "invalid") if k not in s.examples]
    missing += [f"{c.name}: valid" for c in builtin().configs if "valid" not in c.examples]
    for m in builtin().memories:  # an append-only memory has no finding to show
        missing += [
            f"{m.name}: {k}"
            for k in ("valid", "invalid")[: 1 if m.keeps_prefix else 2]
            if k not in m.examples
        ]
    missing += [
        f"{s.name}: {k}"
        for s in [
            *builtin().sources,
            *builtin().fields,
            *builtin().schemas,
            *builtin().requests,
            *builtin().settings,
        ]
        for k in ("valid", "invalid")
        if k not in s.examples
    ]
    assert missing == []


# --- what a row can say, each on a table of its own ----------------------------------------------------

_LONG = "Follow the house style: short sentences, no jargon, and one example for every rule you state."


def _with_table(monkeypatch: pytest.MonkeyPatch, table: str) -> None:
    from prefixlint.python import analyze

    frameworks = parse_table(table, "test.toml")
    monkeypatch.setattr(analyze, "for_project", lambda *declared: frameworks)


@pytest.mark.parametrize(
    ("order", "found"),
    [('b = "system", a = "system"', set()), ('a = "system", b = "system"', {("PFX101", 6)})],
)
def test_a_part_follows_the_rows_order(
    order: str, found: set, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[type-arg]
    """CrewAI renders `backstory` before `goal` whatever order a call writes them in."""
    _with_table(monkeypatch, f'[[sink]]\nname = "X"\ncalls = ["acme.send"]\narguments = {{ {order} }}\n')
    source = (
        "import acme\nfrom datetime import datetime\n\n\ndef send_prompt():\n"
        f'    acme.send(a=f"{{datetime.now()}}", b="{_LONG}")\n'
    )
    assert _found(tmp_path, source) == found


@pytest.mark.parametrize(
    "argument",
    [
        f'Config(system=f"{{datetime.now()}} {_LONG}", temperature=0)',
        f'{{"system": f"{{datetime.now()}} {_LONG}", "temperature": 0}}',
        "body",  # a name assigned `json.dumps` of a name assigned a dict
    ],
)
def test_a_field_of_an_argument(argument: str, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    _with_table(
        monkeypatch,
        '[[sink]]\nname = "X"\ncalls = ["acme.send"]\narguments = { "config.system" = "system" }\n',
    )
    source = (
        "import json\nimport acme\nfrom datetime import datetime\n\n\ndef send_prompt():\n"
        f'    payload = {{"system": f"{{datetime.now()}} {_LONG}"}}\n    body = json.dumps(payload)\n'
        f"    acme.send(config={argument})\n"
    )
    line = 7 if argument == "body" else 9
    assert _found(tmp_path, source) == {("PFX101", line)}


@pytest.mark.parametrize(("imported", "found"), [("acme_llm", {("PFX101", 6)}), ("other", set())])
def test_imports_are_globs(
    imported: str, found: set, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[type-arg]
    _with_table(
        monkeypatch,
        '[[sink]]\nname = "X"\ncalls = [".ask"]\nimports = ["acme*"]\narguments = { "0" = "prompt" }\n',
    )
    source = (
        f"import {imported}\nfrom datetime import datetime\n\n\ndef send_prompt(llm):\n"
        f'    llm.ask(f"{{datetime.now()}} {_LONG}")\n'
    )
    assert _found(tmp_path, source) == found


@pytest.mark.parametrize(
    ("order", "found"),
    [
        ('"*.desc" = "system", "__doc__" = "system"', {("PFX101", 8)}),
        ('"__doc__" = "system", "*.desc" = "system"', set()),
    ],
)
def test_a_class_row(order: str, found: set, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:  # type: ignore[type-arg]
    """DSPy renders the fields' descriptions ahead of the docstring (the instructions)."""
    _with_table(
        monkeypatch, f'[[sink]]\nname = "X"\nbases = ["acme.Signature"]\nattributes = {{ {order} }}\n'
    )
    source = (
        "import acme\nfrom datetime import date\n\n\nclass AnswerPrompt(acme.Signature):\n"
        f'    """{_LONG}"""\n\n'
        '    context = acme.InputField(desc=f"retrieved {date.today()}")\n'
        "    question: str = acme.InputField()\n"
    )
    assert _found(tmp_path, source) == found


@pytest.mark.parametrize(("built", "found"), [("acme.Model(path)", {("PFX101", 9)}), ("other(path)", set())])
def test_a_call_of_a_built_object(
    built: str, found: set, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[type-arg]
    """`llm = Llama(...)` then `llm(prompt)`: `llama_cpp.Llama.__call__`."""
    _with_table(
        monkeypatch, '[[sink]]\nname = "X"\ncalls = ["acme.Model.__call__"]\narguments = { "0" = "prompt" }\n'
    )
    source = (
        "import acme\nfrom datetime import datetime\n\npath = 'm.gguf'\nllm = " + built + "\n\n\n"
        f'def send_prompt():\n    return llm(f"{{datetime.now()}} {_LONG}")\n'
    )
    assert _found(tmp_path, source) == found


def test_a_module_that_names_only_a_modelled_package_is_analysed() -> None:
    """The table's packages and call chains open a module to analysis, as the prompt words do."""
    from prefixlint.python import may_hold_prompts

    assert may_hold_prompts("import dspy\n\n\nclass QA(dspy.Signature):\n    question = dspy.InputField()\n")
    assert may_hold_prompts("def go(c, m):\n    return c.converse(modelId=m)\n")
    assert not may_hold_prompts("import os\n\nprint(os.getcwd())\n")


def test_a_method_passed_as_instructions_is_what_it_returns(tmp_path: Path) -> None:
    """The Agents SDK calls `instructions` on every run: a bound method is followed as a function is."""
    source = (
        "from datetime import datetime\n\nfrom agents import Agent\n\n\nclass Bot:\n"
        "    def instructions(self, ctx, agent) -> str:\n"
        f'        return f"The time is {{datetime.now():%H:%M}}. {_LONG}"\n\n'
        '    def build(self):\n        return Agent(name="Triage", instructions=self.instructions)\n'
    )
    found = analyze_python(str(tmp_path / "bot.py"), source, Options(project_root=str(tmp_path))).diagnostics
    assert [(d.code, d.span.line, "Agents SDK" in d.message) for d in found] == [("PFX101", 8, True)]


def test_a_subscripted_generic_class_is_that_class(tmp_path: Path) -> None:
    """`Agent[UserContext](...)`, as the Agents SDK documents a typed context, builds an `Agent`; a
    local table of callables indexed and called is no import, so no row's call."""
    source = (
        "from datetime import datetime\n\nfrom agents import Agent\n\n"
        f'bot = Agent[dict](name="Triage", instructions=f"The time is {{datetime.now():%H:%M}}. {_LONG}")\n'
        'BUILDERS = {"agent": Agent}\n'
        f'other = BUILDERS["agent"](name="x", instructions=f"{{datetime.now()}} {_LONG}")\n'
    )
    found = analyze_python(str(tmp_path / "bot.py"), source, Options(project_root=str(tmp_path))).diagnostics
    assert [(d.code, d.span.line, "Agents SDK agent" in d.message) for d in found if d.span.line == 5] == [
        ("PFX101", 5, True)
    ]
    assert all("Agents SDK" not in d.message for d in found if d.span.line == 7)


def test_a_parameter_named_like_a_function_is_not_that_function(tmp_path: Path) -> None:
    source = (
        "from datetime import datetime\n\nimport anthropic\n\nclient = anthropic.Anthropic()\n\n\n"
        f'def system_prompt():\n    return f"Now {{datetime.now()}}. {_LONG}"\n\n\n'
        "def review(system_prompt: str, diff: str):\n"
        '    return client.messages.create(model="m", max_tokens=9, system=system_prompt, messages=[])\n'
    )
    found = analyze_python(str(tmp_path / "r.py"), source, Options(project_root=str(tmp_path))).diagnostics
    assert all("Anthropic messages" not in d.message for d in found)


def test_a_config_object_made_by_a_helper(tmp_path: Path) -> None:
    source = (
        "from datetime import datetime\n\nfrom google import genai\nfrom google.genai import types\n\n"
        "client = genai.Client()\n\n\ndef make_config():\n"
        "    return types.GenerateContentConfig(\n"
        f'        system_instruction=f"Local time: {{datetime.now()}}. {_LONG}"\n    )\n\n\n'
        "def ask(city: str):\n"
        '    return client.models.generate_content(model="m", contents=city, config=make_config())\n'
    )
    assert _found(tmp_path, source) == {("PFX101", 11)}


# --- what a framework writes after an argument (`follows`) ----------------------------------------------


@pytest.mark.parametrize(
    ("follows", "found"),
    [
        ("", set()),  # the prompt's own tail is one word: less than a block is lost
        ("follows = { goal = 40 }\n", {("PFX101", 6)}),  # at least 40 tokens the library writes
        (f'follows = {{ goal = "{_LONG}" }}\n', {("PFX101", 6)}),  # its literal text
    ],
)
def test_what_a_framework_writes_after_an_argument_is_lost_too(
    follows: str, found: set, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:  # type: ignore[type-arg]
    _with_table(
        monkeypatch,
        '[[sink]]\nname = "X"\ncalls = ["acme.Agent"]\narguments = { goal = "system" }\n' + follows,
    )
    source = (
        "import acme\nfrom datetime import datetime\n\n\ndef build_prompt():\n"
        '    return acme.Agent(goal=f"Answer as of {datetime.now()} now")\n'
    )
    assert _found(tmp_path, source) == found


def test_crewai_agent_goal_is_followed_by_its_format_instructions(tmp_path: Path) -> None:
    """CrewAI writes its format instructions after the goal: a question in it costs them."""
    source = (
        "from crewai import Agent\n\n\ndef make(question: str) -> Agent:\n    return Agent(\n"
        '        role="Researcher",\n        backstory="You have covered equity markets for years.",\n'
        '        goal=f"Find the facts the question asks for: {question}",\n    )\n'
    )
    assert _found(tmp_path, source) == {("PFX105", 8)}


# --- declared fields (`[[fields]]`) ---------------------------------------------------------------------

_COMPONENT = """from lfx.custom import Component
from lfx.io import HandleInput, MessageTextInput, MultilineInput
{extra}

class {name}({base}):
    inputs = [
        HandleInput(name="llm", input_types=["LanguageModel"]),
        MessageTextInput(name="question"),
        MultilineInput(name="system_prompt", value="You answer in {{language}}. " + {long!r}),
    ]
{body}"""


def test_a_constant_field_is_its_default_text(tmp_path: Path) -> None:
    body = (
        "\n    def run(self):\n"
        "        return self.llm.invoke(f\"{self.system_prompt}\\n{getattr(self, 'question', '')}\")\n"
    )
    source = _COMPONENT.format(extra="", name="Answer", base="Component", long=_LONG, body=body)
    assert _found(tmp_path, source) == set()


def test_a_request_field_read_with_getattr_is_per_request(tmp_path: Path) -> None:
    body = (
        "\n    def run(self):\n"
        "        question = getattr(self, 'question', '')\n"
        '        return self.llm.invoke(f"Question: {question}\\n{self.system_prompt}")\n'
    )
    source = _COMPONENT.format(extra="", name="Answer", base="Component", long=_LONG, body=body)
    assert _found(tmp_path, source) == {("PFX105", 13)}  # where the field is read


def test_a_field_declared_by_a_base_class(tmp_path: Path) -> None:
    base = _COMPONENT.format(extra="", name="Answer", base="Component", long=_LONG, body="")
    sub = (
        "from lfx.io import HandleInput\n\nfrom base_component import Answer\n\n\nclass Loud(Answer):\n"
        "    def run(self):\n"
        '        return self.llm.invoke(f"Question: {self.question}\\n{self.system_prompt}")\n'
    )
    (tmp_path / "base_component.py").write_text(base, encoding="utf-8")
    assert _found(tmp_path, sub) == {("PFX105", 8)}


# --- LangChain's history placeholders ---------------------------------------------------------------------

_AGENT_SYSTEM = (
    "You are a helpful assistant. Question: {input}\\n\\nYou have access to the following tools: {tools}. "
    "To use a tool, write <tool></tool> and <tool_input></tool_input> tags; you will get back a response "
    "in the form <observation></observation>. When you are done, respond with a final answer."
)


def _messages_found(tmp_path: Path, history: str, human: str = "{input}") -> list[str]:
    source = (
        "from langchain.agents import create_xml_agent\n"
        "from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder\n\n\n"
        "def build(llm, tools):\n"
        "    prompt = ChatPromptTemplate.from_messages(\n"
        f'        [("system", "{_AGENT_SYSTEM}"), {history}, ("human", "{human}")]\n'
        "    )\n"
        "    return create_xml_agent(llm, tools, prompt)\n"
    )
    path = tmp_path / "agent.py"
    path.write_text(source, encoding="utf-8")
    result = analyze_python(str(path), source, Options(project_root=str(tmp_path)))
    return [f"{d.code}:{d.span.line} {d.message}" for d in result.diagnostics]


@pytest.mark.parametrize(
    "history", ['("placeholder", "{chat_history}")', 'MessagesPlaceholder("chat_history")']
)
def test_a_per_run_value_in_the_system_template_costs_the_history_after_it(
    history: str, tmp_path: Path
) -> None:
    (found,) = _messages_found(tmp_path, history)
    assert found.startswith("PFX105:7 `{input}`")
    assert "nor can the conversation history after it" in found


def test_the_agent_steps_after_the_users_turn_are_no_history(tmp_path: Path) -> None:
    """`("placeholder", "{agent_scratchpad}")` after the human turn is the run's own steps, filled by
    the agent: nothing after the user's input is shared anyway."""
    source = (
        "from langchain.agents import create_tool_calling_agent\n"
        "from langchain_core.prompts import ChatPromptTemplate\n\n\n"
        "def build(llm, tools):\n"
        "    prompt = ChatPromptTemplate.from_messages(\n"
        f'        [("system", "{_LONG}"), ("placeholder", "{{chat_history}}"), ("human", "{{input}}"),\n'
        '         ("placeholder", "{agent_scratchpad}")]\n'
        "    )\n"
        "    return create_tool_calling_agent(llm, tools, prompt)\n"
    )
    assert _found(tmp_path, source) == set()
