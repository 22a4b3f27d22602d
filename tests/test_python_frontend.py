"""The Python frontend on its fixtures: every `# expect: CODE` marker is reported at its line, and
nothing else from the families the frontend owns (PFX0xx, PFX1xx, PFX2xx, and PFX401/PFX402
for histories kept across turns)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.api import Options, lint_paths
from prefixlint.core.findings import Diagnostic, Severity
from prefixlint.python import analyze_python

PY_FIXTURES = sorted((FIXTURES / "python").glob("*.py"))
_EXPECT = re.compile(r"#\s*expect:\s*([A-Z0-9, ]+)$")
OWNED = ("PFX0", "PFX1", "PFX2", "PFX401", "PFX402")


def expected(path: Path) -> set[tuple[str, int]]:
    out = set()
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if m := _EXPECT.search(line):
            out |= {(code.strip(), number) for code in m.group(1).split(",") if code.strip()}
    return out


def found(path: Path, text: str | None = None) -> set[tuple[str, int]]:
    text = path.read_text(encoding="utf-8") if text is None else text
    result = analyze_python(str(path), text, Options())
    assert result.kind == "python"
    return {(d.code, d.span.line) for d in result.diagnostics if d.code.startswith(OWNED)}


@pytest.mark.parametrize("path", PY_FIXTURES, ids=lambda p: p.name)
def test_fixture(path: Path) -> None:
    assert found(path) == expected(path)


def test_fixtures_cover_every_rule() -> None:
    codes = {code for path in PY_FIXTURES for code, _ in expected(path)}
    assert {"PFX003", "PFX101", "PFX102", "PFX103", "PFX104", "PFX105", "PFX201"} <= codes
    assert any(not expected(p) for p in PY_FIXTURES), "a clean fixture must stay silent"


def test_module_without_prompts_is_silent_and_loads_no_tokenizer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import prefixlint.models.tokens

    def boom(*args: object) -> None:
        raise AssertionError("the tokenizer is only needed for a prompt's numbers or a finding")

    monkeypatch.setattr(prefixlint.models.tokens, "choose_tokenizer", boom)
    module = tmp_path / "geometry.py"
    module.write_text("import math\n\ndef area(r: float) -> float:\n    return math.pi * r * r\n")
    result = analyze_python(str(module), module.read_text(), Options())
    assert result.diagnostics == [] and result.total_tokens is None


def test_clean_file_is_silent() -> None:
    assert found(FIXTURES / "python" / "clean.py") == set()


def test_unknown_follower_no_model_is_seen_to_receive_is_info() -> None:
    path = FIXTURES / "python" / "attribute_append.py"
    [diag] = analyze_python(str(path), path.read_text(encoding="utf-8"), Options()).diagnostics
    assert diag.severity is Severity.INFO and "built elsewhere" in diag.message
    assert "no call that sends it to a model was found" in diag.message


def test_a_method_call_is_named_with_its_receiver() -> None:
    """`role_prompt.set(template=...)` is labelled by the call it is, not as the builtin `set()`."""
    text = (
        "import datetime\n\n\ndef build(role_prompt) -> None:\n    role_prompt.set(\n"
        '        template="Today is {today}. You are a careful assistant. Answer every question "\n'
        '        "with care, cite your sources, keep the answer short and polite, and never invent facts "\n'
        '        "you cannot check in the documents given to you below.",\n'
        "        today=datetime.datetime.now(),\n    )\n"
    )
    [diag] = analyze_python("role.py", text, Options()).diagnostics
    assert (diag.code, diag.span.line) == ("PFX101", 6)
    assert "of `template=` of `role_prompt.set()` (line 5)" in diag.message


_FIELD_PROMPT = """\
from openai import OpenAI

client = OpenAI()


def write({param}) -> str:
    prompt = (
        f"Query or Topic: {{{read}}}\\n"
        "Your task is to write an in depth, well written and detailed introduction and conclusion to the "
        "research report based on the provided research data. Do not include headers in the results. You "
        "MUST include any relevant sources to the introduction and conclusion as markdown hyperlinks, for "
        "example: 'This is a sample text. ([url website](url))'. Keep it short and precise, and cite."
    )
    return client.chat.completions.create(model="gpt-4o", messages=[{{"role": "user", "content": prompt}}])
"""


@pytest.mark.parametrize(
    "read",
    ['research_state.get("title")', "research_state['title']", "research_state.title"],
)
def test_a_field_of_a_parameter_is_judged_by_its_key(read: str) -> None:
    """A LangGraph-style `state` parameter says nothing by its name; its `title` field is a
    per-request input at info, as a parameter named `title` is."""
    text = _FIELD_PROMPT.format(param="research_state: dict", read=read)
    [diag] = analyze_python("write.py", text, Options()).diagnostics
    assert (diag.code, diag.span.line, diag.severity) == ("PFX105", 8, Severity.INFO)
    assert "(`title` of `research_state`, a parameter of `write()`)" in diag.message


@pytest.mark.parametrize(
    ("param", "read"),
    [
        ("config: dict", 'config["title"]'),  # the app's settings
        ("settings", 'settings.get("title")'),  # the app's settings too
        ("self", "self.title"),  # an object's own state: its class says what it holds
        ("research_state: dict", 'research_state["model"]'),  # a key that names configuration
    ],
)
def test_a_field_of_settings_or_named_as_configuration_is_silent(param: str, read: str) -> None:
    text = _FIELD_PROMPT.format(param=param, read=read)
    assert analyze_python("write.py", text, Options()).diagnostics == []


def test_close_values_are_one_finding_at_the_first() -> None:
    path = FIXTURES / "python" / "anthropic_system_env.py"
    [diag] = analyze_python(str(path), path.read_text(encoding="utf-8"), Options()).diagnostics
    assert (diag.code, diag.span.line, diag.severity) == ("PFX104", 15, Severity.ERROR)
    assert "`operating_system.getcwd()` (line 16, per process): less than a cache block apart" in diag.message
    assert "both must move" in diag.message
    assert diag.group == (("operating_system.getcwd()", 16, 24),)


def test_message_counts_static_tokens_after_the_hole() -> None:
    path = FIXTURES / "python" / "openai_alias_clock.py"
    [diag] = analyze_python(str(path), path.read_text(encoding="utf-8"), Options()).diagnostics
    assert re.search(r"ahead of \d+ static tokens", diag.message)
    assert diag.severity is Severity.ERROR


# Static text long enough to lose a whole cache block (less loses nothing the engine would keep).
TAIL = (
    "static text follows here, long enough to fill at least one whole cache block of the engine, "
    "sixteen tokens"
)


@pytest.mark.parametrize(
    ("source", "want"),
    [
        # The same clock under every import spelling.
        (
            "import datetime\nPROMPT = f'{datetime.datetime.now()} " + TAIL + "'\n",
            {("PFX101", 2)},
        ),
        (
            "from datetime import datetime as D\nPROMPT = f'{D.utcnow()} " + TAIL + "'\n",
            {("PFX101", 2)},
        ),
        ("import time as t\nSYSTEM = t.ctime() + ' " + TAIL + "'\n", {("PFX101", 2)}),
        ("from uuid import uuid4\nPROMPT = f'{uuid4()} " + TAIL + "'\n", {("PFX102", 2)}),
        ("import os\nPROMPT = f\"{os.environ['HOME']} " + TAIL + '"\n', {("PFX104", 2)}),
        ("import getpass\nPROMPT = f'{getpass.getuser()} " + TAIL + "'\n", {("PFX104", 2)}),
        # Sorted, or at the very end: nothing.
        ("import time\nPROMPT = 'static text first, then ' + time.ctime()\n", set()),
        ("import json\nT = {'a', 'b'}\nPROMPT = json.dumps(sorted(T)) + ' static text follows'\n", set()),
        # A set of one element has one order; of two, none.
        ("import json\nR = 'x'\nPROMPT = ', '.join({R}) + ' " + TAIL + "'\n", set()),
        ("import json\nR = 'x'\nPROMPT = ', '.join({R, 'y'}) + ' " + TAIL + "'\n", {("PFX201", 3)}),
        # A setting from the environment handed to an object by keyword configures it; as the text
        # of a prompt keyword, or written into the text, it is text.
        (
            "import os\nfrom agents import Agent\nagent = Agent(instructions='" + TAIL + "', "
            "tools=[Search(driver=Google(api_key=os.environ['K'], search_id=os.environ['S']))])\n",
            set(),
        ),
        (
            "import os\nfrom agents import Agent\n"
            "agent = Agent(instructions=Persona(instructions=os.environ['P']).text + ' " + TAIL + "')\n",
            {("PFX104", 3)},
        ),
        (
            "import os\nfrom agents import Agent\n"
            "agent = Agent(instructions=Note(f\"{os.environ['HOST']}\").text + ' " + TAIL + "')\n",
            {("PFX104", 3)},
        ),
        # A local variable that is not a prompt and never reaches one.
        ("import time\ndef f():\n    label = f'{time.time()} static text follows'\n    return 1\n", set()),
    ],
)
def test_sources(source: str, want: set[tuple[str, int]], tmp_path: Path) -> None:
    assert found(tmp_path / "m.py", source) == want


def test_syntax_error_is_a_finding_not_a_traceback() -> None:
    path = FIXTURES / "python" / "broken.py"
    [diag] = analyze_python(str(path), path.read_text(encoding="utf-8"), Options()).diagnostics
    assert (diag.code, diag.span.line, diag.severity) == ("PFX003", 6, Severity.ERROR)


def test_one_run_mixes_python_and_templates(tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text(
        (FIXTURES / "python" / "openai_alias_clock.py").read_text(encoding="utf-8"), encoding="utf-8"
    )
    (tmp_path / "chat.jinja").write_text(
        "{{ 'Today is ' + strftime_now('%Y-%m-%d') + '. You are the assistant of a big hotel chain.' }}\n"
        "{% for m in messages %}{{ m.role }}: {{ m.content }}\n{% endfor %}",
        encoding="utf-8",
    )
    report = lint_paths([str(tmp_path)], Options())
    kinds = {s.kind for s in report.sources}
    assert kinds == {"python", "jinja"}
    assert {(Path(d.span.path).name, d.code) for d in report.diagnostics} >= {
        ("app.py", "PFX101"),
        ("chat.jinja", "PFX101"),
    }


# --- a multi-file project: each module checked alone, its imports and prompt files found on disk ---
PROJECT = FIXTURES / "python_project"
PROJECT_MODULES = sorted(p for p in PROJECT.rglob("*.py") if p.name != "__init__.py")


@pytest.mark.parametrize("path", PROJECT_MODULES, ids=lambda p: p.name)
def test_project_module_checked_alone(path: Path) -> None:
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options(project_root=str(PROJECT)))
    got = {(d.code, d.span.line) for d in result.diagnostics if d.code.startswith(OWNED)}
    assert got == expected(path)
    assert all(d.span.path == str(path) for d in result.diagnostics)


def test_findings_from_another_module_name_where_the_value_comes_from() -> None:
    path = PROJECT / "assistant" / "agent.py"
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options(project_root=str(PROJECT)))
    line = next(i for i, t in enumerate(path.read_text().splitlines(), 1) if "head = today_line()" in t)
    clock = [d for d in result.diagnostics if d.code == "PFX101" and d.span.line == line]
    assert len(clock) == 1
    assert "datetime.now()" in clock[0].message and "assistant/clock.py:7" in clock[0].message


@pytest.mark.parametrize(("guess", "want"), [("info", Severity.INFO), ("warning", Severity.WARNING)])
def test_a_name_alone_is_at_most_the_guess_severity(guess: str, want: Severity) -> None:
    path = FIXTURES / "python" / "langchain_templates.py"  # `{current_date}` in a ChatPromptTemplate
    options = Options(python_guess_severity=guess)
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), options)
    (finding,) = [d for d in result.diagnostics if d.code == "PFX101"]
    assert finding.severity == want and "named like a date" in finding.message


def test_a_name_alone_in_text_no_model_receives_is_info_whatever_the_guess_severity() -> None:
    path = PROJECT / "assistant" / "placeholders.py"
    options = Options(project_root=str(PROJECT), python_guess_severity="warning")
    (finding,) = analyze_python(str(path), path.read_text(encoding="utf-8"), options).diagnostics
    assert finding.severity == Severity.INFO and "named like a date" in finding.message


def test_static_calls_on_constants_are_static_text() -> None:
    import libcst as cst

    from prefixlint.python.evaluate import Env, Evaluator
    from prefixlint.python.project import Project
    from prefixlint.python.scopes import index_module
    from prefixlint.python.segments import Text, expand

    path = str((PROJECT / "assistant" / "agent.py").resolve())
    index = index_module(cst.parse_module(Path(path).read_text(encoding="utf-8")), path)
    project = Project(str(PROJECT.resolve()))
    project.add_module(path, index)
    output = Evaluator(index, project).function_output(index.functions["rules_prompt"], None, Env())
    (value,) = expand(output)
    system = value[1]  # after the system role's Break
    assert isinstance(system, Text)
    assert "Answer in the customer's language.\nKeep answers under 200 words" in system.text
    assert '{"properties": {"answer": {"type": "string"}, "articles": {"type": "array"}}' in system.text


def test_python_sources_have_prefix_numbers() -> None:
    """The main prompt's static text ahead of its first volatile value, in tokens of the tokenizer."""
    from prefixlint.api import tokenizer_for

    path = FIXTURES / "python" / "helpers_and_constants.py"
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options())
    count = tokenizer_for(str(path), Options()).count
    persona = "You are {name}, a careful research assistant.\n".replace("{name}", "")
    tools = "\n## Tools\n- search(query): look something up\n- calculator(expression): do arithmetic\n"
    assert result.cacheable_prefix_tokens == count("Date: ")
    assert result.total_tokens == count("Date: \n" + persona + tools)
    clean = FIXTURES / "python" / "broken.py"
    assert analyze_python(str(clean), clean.read_text(encoding="utf-8"), Options()).total_tokens is None


def test_configured_sink_is_a_prompt(tmp_path: Path) -> None:
    """`[tool.prefixlint.python] sinks` names a project's own message builder."""
    from prefixlint.config import build_options, load_config

    (tmp_path / "pyproject.toml").write_text(
        '[tool.prefixlint.python]\nsinks = ["chat.format_chat_message"]\n', encoding="utf-8"
    )
    module = tmp_path / "bot.py"
    module.write_text(
        "import time\n"
        "from chat import format_chat_message\n\n"
        "def build(question):\n"
        "    return format_chat_message('system', 'Now: ' + time.ctime() + '. You are a careful "
        "assistant that answers questions about the opening hours of the city library and its branches.')\n",
        encoding="utf-8",
    )
    text = module.read_text(encoding="utf-8")
    assert analyze_python(str(module), text, Options()).diagnostics == []  # not a known sink
    options = build_options(load_config(tmp_path / "pyproject.toml"))
    assert options.python_sinks == ("chat.format_chat_message",)
    assert [(d.code, d.span.line) for d in analyze_python(str(module), text, options).diagnostics] == [
        ("PFX101", 5)
    ]


def test_a_project_row_of_the_models_table(tmp_path: Path) -> None:
    """`[[tool.prefixlint.python.sink]]`: the project's own API, a row of the same table, with
    which argument is which part of the request."""
    from prefixlint.config import ConfigError, build_options, load_config

    config = tmp_path / "pyproject.toml"
    config.write_text(
        '[[tool.prefixlint.python.sink]]\nname = "our gateway"\ncalls = ["gateway.Gateway.ask"]\n'
        'arguments = { system = "system", question = "user" }\n',
        encoding="utf-8",
    )
    module = tmp_path / "bot.py"
    module.write_text(
        "import uuid\nfrom gateway import Gateway\n\n\ndef answer(question):\n"
        "    return Gateway.ask(\n"
        "        system=f'Run {uuid.uuid4()}. You answer questions about the opening hours of the city "
        "library and its branches, in English, citing the web site.',\n"
        "        question=question,\n    )\n",
        encoding="utf-8",
    )
    options = build_options(load_config(config))
    found = analyze_python(str(module), module.read_text(encoding="utf-8"), options).diagnostics
    assert [(d.code, d.span.line, d.severity) for d in found] == [("PFX102", 7, Severity.ERROR)]
    assert "(our gateway)" in found[0].message
    config.write_text('[[tool.prefixlint.python.sink]]\nname = "x"\ncalls = ["a.b"]\nwhen = "daily"\n')
    with pytest.raises(ConfigError, match="python.sink` 1 .x.: `when` is one of"):
        load_config(config)


def test_a_prompt_file_read_in_a_with_block(tmp_path: Path) -> None:
    """`with open(path) as f: f.read()`: the file's text is static text of the prompt."""
    (tmp_path / "rules.txt").write_text(
        "You are a careful assistant. Answer in full sentences, cite sources, and never guess numbers.\n",
        encoding="utf-8",
    )
    module = tmp_path / "bot.py"
    module.write_text(
        "import datetime\nfrom pathlib import Path\n\n\ndef system_prompt():\n"
        '    with open(Path(__file__).parent / "rules.txt") as f:\n'
        "        rules = f.read()\n"
        '    return f"Today {datetime.date.today()}\\n" + rules\n',
        encoding="utf-8",
    )
    result = analyze_python(
        str(module), module.read_text(encoding="utf-8"), Options(project_root=str(tmp_path))
    )
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("PFX101", 8)]


HANDLER = """from litellm import acompletion


class Handler:
    async def chat_completion(self, model: str, system: str, user: str):
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        kwargs = {"model": model, "messages": messages, "temperature": 0}
        return await acompletion(**kwargs)
"""
RULES_LINE = (
    'RULES = "Answer in English, cite the knowledge base, never invent order numbers, escalate '
    'refunds to a human."\n'
)


@pytest.mark.parametrize(
    ("wiring", "call"),
    [
        # the handler class is a parameter's default, constructed in __init__
        ("def __init__(self, ai_handler: type = Handler):\n        self.ai = ai_handler()", "self.ai"),
        # a parameter annotated with the class
        ("def __init__(self, ai: Handler):\n        self.ai = ai", "self.ai"),
        # injected from elsewhere, its class unknown: found by the method's name in the project
        ("def __init__(self, ai):\n        self.ai = ai", "self.ai"),
    ],
    ids=["default", "annotation", "by-name"],
)
def test_a_wrapper_of_a_modelled_api_in_another_module_is_a_sink(
    wiring: str, call: str, tmp_path: Path
) -> None:
    (tmp_path / "handler.py").write_text(HANDLER, encoding="utf-8")
    reviewer = tmp_path / "reviewer.py"
    reviewer.write_text(
        "from datetime import datetime\n\nfrom handler import Handler\n\n"
        + RULES_LINE
        + f"\n\nclass Reviewer:\n    {wiring}\n\n    async def run(self, diff: str):\n"
        + '        system = f"Now {datetime.now()}. {RULES}"\n'
        + f'        return await {call}.chat_completion(model="gpt-4o", system=system, user=diff)\n',
        encoding="utf-8",
    )
    options = Options(project_root=str(tmp_path))
    found = analyze_python(str(reviewer), reviewer.read_text(encoding="utf-8"), options).diagnostics
    assert [(d.code, d.span.line, d.severity) for d in found] == [("PFX101", 13, Severity.ERROR)]
    assert "the request `chat_completion()` sends (`acompletion()` (LiteLLM completion))" in found[0].message


def test_a_branch_no_caller_takes_sends_nothing(tmp_path: Path) -> None:
    """Without the caller that passes `pick=True`, the random example is on no path to a request."""
    text = (FIXTURES / "python" / "branch_not_taken.py").read_text(encoding="utf-8")
    text = text[: text.index("def ask_with_a_random_example")]
    path = tmp_path / "one_caller.py"
    path.write_text(text, encoding="utf-8")
    assert analyze_python(str(path), text, Options()).diagnostics == []


def test_a_prompt_module_checked_alone_is_judged_by_the_modules_that_send_it(tmp_path: Path) -> None:
    """`prompts.py` sends nothing itself; `agent.py` imports its constant into a chat request, so
    the clock in it is a finding at its own line with the loss that request really has."""
    (tmp_path / "prompts.py").write_text(
        "from datetime import datetime\n\n"
        'SYSTEM_PROMPT = """You are a support assistant for ACME. Answer in English, cite the knowledge\n'
        'base, never invent order numbers, and escalate refunds above 100 EUR to a human agent."""\n\n\n'
        "def system_prompt() -> str:\n"
        '    return f"Now: {datetime.now()}\\n{SYSTEM_PROMPT}"\n',
        encoding="utf-8",
    )
    (tmp_path / "agent.py").write_text(
        "from openai import OpenAI\n\nfrom prompts import system_prompt\n\nclient = OpenAI()\n\n\n"
        "def answer(question: str) -> str:\n"
        "    return client.chat.completions.create(\n"
        '        model="gpt-4o",\n'
        '        messages=[{"role": "system", "content": system_prompt()},\n'
        '                  {"role": "user", "content": question}],\n'
        "    )\n",
        encoding="utf-8",
    )
    prompts = tmp_path / "prompts.py"
    options = Options(project_root=str(tmp_path))
    (finding,) = analyze_python(str(prompts), prompts.read_text(encoding="utf-8"), options).diagnostics
    assert (finding.code, finding.span.line, finding.severity) == ("PFX101", 8, Severity.ERROR)
    assert "in agent.py (line 9)" in finding.message and "no call that sends it" not in finding.message
    (tmp_path / "agent.py").unlink()  # nothing sends it: a candidate only
    (alone,) = analyze_python(str(prompts), prompts.read_text(encoding="utf-8"), options).diagnostics
    assert alone.severity == Severity.INFO and "no call that sends it to a model was found" in alone.message


@pytest.mark.parametrize(
    ("clock", "daily"),
    [
        ("datetime.now()", False),
        ("datetime.now():%Y-%m-%d", True),
        ("datetime.now().strftime('%d %B %Y')", True),
        ("datetime.now().strftime('%H:%M')", False),
        ("date.today()", True),
        ("datetime.now().date()", True),
    ],
)
def test_a_clock_read_to_the_day_splits_the_cache_per_day(clock: str, daily: bool, tmp_path: Path) -> None:
    """A date changes once a day: the requests of a day still share the prefix, a lower kind of
    loss than a time, which changes on every request."""
    source = (
        "from datetime import date, datetime\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
        + RULES_LINE
        + "\n\ndef answer(question):\n    return client.chat.completions.create(model='m', messages=[\n"
        + f"        {{'role': 'system', 'content': f'Now {{{clock}}}. {{RULES}}'}},\n"
        + "        {'role': 'user', 'content': question}])\n"
    )
    path = tmp_path / "app.py"
    (finding,) = analyze_python(str(path), source, Options()).diagnostics
    assert finding.code == "PFX101" and finding.span.line == 10
    assert finding.severity == (Severity.WARNING if daily else Severity.ERROR)
    assert ("once a day" in finding.message) == daily


@pytest.mark.parametrize(
    ("source", "want"),
    [
        # a lambda passed as instructions runs on every request, not at import
        (
            "from datetime import datetime\nfrom agents import Agent\n"
            + RULES_LINE
            + 'agent = Agent(\n    name="a",\n'
            + '    instructions=lambda ctx, a: f"Time: {datetime.now():%H:%M}. {RULES}",\n)\n',
            [("PFX101", 6, Severity.ERROR)],
        ),
        # the static text of a tool's schema after the value counts
        (
            "from datetime import date\nfrom openai import OpenAI\nclient = OpenAI()\n\n\ndef ask(q):\n"
            "    return client.chat.completions.create(\n"
            "        model='m', messages=[{'role': 'user', 'content': q}],\n"
            "        tools=[{'type': 'function', 'function': {'name': 'search', 'description':\n"
            "            f'Search flights after {date.today()}; give the origin and destination airport "
            "codes, the number of travellers, and whether the dates are flexible.'}}])\n",
            [("PFX101", 10, Severity.WARNING)],
        ),
        # a batch of prompts is several requests, not one prompt after another
        (
            "from vllm import LLM\n" + RULES_LINE + "llm = LLM(model='m')\n"
            "out = llm.generate([f'Summarise: {RULES}', f'Translate into French: {RULES}'])\n",
            [],
        ),
    ],
    ids=["lambda-instructions", "tool-schema", "batch"],
)
def test_shapes_the_models_table_brings(source: str, want: list, tmp_path: Path) -> None:
    path = tmp_path / "app.py"
    found = analyze_python(str(path), source, Options()).diagnostics
    assert [(d.code, d.span.line, d.severity) for d in found] == want


def test_a_module_calling_a_modelled_api_is_analysed_without_a_prompt_word() -> None:
    from prefixlint.python import may_hold_prompts

    assert may_hold_prompts("from camel.agents import ChatAgent\nagent = ChatAgent(text)\n")
    assert not may_hold_prompts("import math\nprint(math.pi)\n")
    assert may_hold_prompts("from myapp.llm import ask_model\n\nask_model(text)\n", ("myapp.llm.ask_model",))


def test_an_agent_class_that_keeps_its_first_argument_as_a_path_is_no_prompt(tmp_path: Path) -> None:
    """`ReportAgent(f"out/{datetime.now():...}")` names an output folder: its constructor keeps the
    argument as `output_dir`, which no prompt reads; `PlannerAgent`'s is its system prompt."""
    source = (
        "from datetime import datetime\n\n\nclass ReportAgent:\n    def __init__(self, output_dir):\n"
        "        self.output_dir = output_dir\n\n\nclass PlannerAgent:\n    def __init__(self, text):\n"
        "        self.system_prompt = text\n\n\n"
        "writer = ReportAgent(\n"
        '    f"out/{datetime.now():%Y%m%d-%H%M%S} reports of the research team, kept a month"\n)\n'
        "planner = PlannerAgent(\n"
        '    f"It is {datetime.now()}. You plan research: pick a tool, say why, list gaps."\n)\n'
    )
    path = tmp_path / "agents.py"
    found = analyze_python(str(path), source, Options()).diagnostics
    assert [(d.code, d.span.line) for d in found] == [("PFX101", 18)]


def test_a_prompt_file_named_by_a_config_default_is_read_through_the_config_object() -> None:
    """`self.config.prompt_file_path` of a config class whose getter's literal default is a YAML file
    beside the module: the clock filled into the template's head is ahead of the file's rules, counted
    from the text after the placeholder, and the finding says an override replaces that text."""
    import yaml

    from prefixlint.api import tokenizer_for

    folder = PROJECT / "configured"
    path = folder / "planner.py"
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options(project_root=str(PROJECT)))
    (finding,) = result.diagnostics
    assert (finding.code, finding.span.line) == ("PFX101", expected(path).pop()[1])
    template = yaml.safe_load((folder / "planner_prompt.yaml").read_text())["instruction_template"]
    head, tail = template.split("{environment_context}")
    count = tokenizer_for(str(path), Options()).count
    assert result.cacheable_prefix_tokens == count(head + "- Current time: ")
    assert f"ahead of {count(tail)} static tokens" in finding.message
    assert "`{environment_context}` of configured/planner_prompt.yaml" in finding.message
    assert "the default of config `prompt_file_path`; a configured override replaces" in finding.message


# --- values close together are one loss (fixtures/python/close_values.py) -------------------------
CLOSE = FIXTURES / "python" / "close_values.py"


def _close_values() -> dict[int, Diagnostic]:
    found = analyze_python(str(CLOSE), CLOSE.read_text(encoding="utf-8"), Options()).diagnostics
    return {d.span.line: d for d in found}


def test_a_date_then_a_parameter_close_after_it_is_one_finding_at_the_date() -> None:
    """The date opens the user message and the per-run summary follows 8 tokens later, ahead of
    ~170 static tokens: one finding, at the date (where requests part), naming both with their
    lines and how often they vary; the loss is counted after the summary, and its severity is that
    loss's (a warning: an error lowered once, the date changes once a day), not the info a
    parameter alone gets."""
    found = _close_values()
    date = found[37]
    assert (date.code, date.severity) == ("PFX101", Severity.WARNING)
    assert date.group == (("initial_research", 38, 69),)
    assert date.static_tokens == 168  # after `initial_research`, not after the date
    assert "`datetime.now()` (line 37, per day), `initial_research` (line 38, per request if its callers" in (
        date.message
    )
    assert "both must move" in date.message
    assert "known only as a parameter, but `datetime.now()` is seen at its source" in date.message
    assert 38 not in found  # the parameter is a member of the date's finding, not a finding of its own


def test_a_date_behind_a_per_request_question_is_an_info_co_cause() -> None:
    found = _close_values()
    question, date = found[48], found[49]
    assert (question.code, question.severity, question.static_tokens) == ("PFX105", Severity.INFO, 99)
    assert (date.code, date.severity, date.static_tokens) == ("PFX101", Severity.INFO, 39)
    assert date.group == ()
    assert "but `question` (line 48, a per-request input by its name) before it already parts" in date.message
    assert "(a co-cause)" in date.message


def test_two_values_a_long_way_apart_are_two_findings() -> None:
    """A per-process value, then ~170 static tokens, then a per-second clock: the clock varies more
    often, so it costs what follows it on its own; neither is the other's group. The requests the
    pid parts differ at the clock too, so the pid loses the text up to the clock (171 tokens), not
    what follows the clock."""
    found = _close_values()
    pid, clock = found[56], found[57]
    assert (pid.code, pid.severity, pid.static_tokens, pid.group) == ("PFX104", Severity.ERROR, 171, ())
    assert (clock.code, clock.severity, clock.static_tokens, clock.group) == (
        "PFX101",
        Severity.ERROR,
        54,
        (),
    )
    assert "less than a cache block apart" not in pid.message + clock.message


# --- settings of the deployment (fixtures/python/deployment_settings.py) ---------------------------
SETTINGS = FIXTURES / "python" / "deployment_settings.py"


def _settings() -> dict[int, Diagnostic]:
    found = analyze_python(str(SETTINGS), SETTINGS.read_text(encoding="utf-8"), Options()).diagnostics
    return {d.span.line: d for d in found}


def test_a_setting_is_info_and_names_its_variable() -> None:
    """Read per call ahead of the instructions and the conversation (an Anthropic `system=` with
    the history after it), or at import: info, naming the variable, and no "every turn" loss."""
    found = _settings()
    for line, variable in ((29, "OPERATOR_ITERATIONS"), (25, "APP_REGION")):
        setting = found[line]
        assert (setting.code, setting.severity) == ("PFX104", Severity.INFO)
        assert setting.message.startswith("a deployment setting (")
        assert f"read from the deployment's configuration (`{variable}`)" in setting.message
        assert "splits the cache between deployments, never within one" in setting.message
        assert "every turn" not in setting.message and "per-machine" not in setting.message


def test_a_clock_close_after_a_setting_is_its_own_finding() -> None:
    """`Build {os.environ['BUILD_ID']}, asked at {datetime.now()}`: the requests of one deployment
    part at the clock, which gets the whole loss; the setting before it, a few tokens from the
    clock, costs nothing of its own."""
    found = _settings()
    clock = found[43]
    assert (clock.code, clock.severity, clock.span.column, clock.group) == ("PFX101", Severity.ERROR, 58, ())
    assert "less than a cache block apart" not in clock.message


def test_a_machine_value_stays_per_machine() -> None:
    host = _settings()[60]
    assert (host.code, host.severity) == ("PFX104", Severity.ERROR)
    assert "a per-machine value (`socket.gethostname()`)" in host.message


# --- a group's frequency is its most frequent member's (fixtures/python/close_values_per_user.py) --
PER_USER = FIXTURES / "python" / "close_values_per_user.py"


def test_a_date_beside_per_user_values_is_not_said_to_change_once_a_day() -> None:
    """The date, the location with its literal fallback and the user's name, less than a block
    apart: one finding at the date whose message says the group varies as often as its most
    frequent member (the location, per request), not once a day; the severity is the date's (the
    only member seen at its source), a warning."""
    (date,) = analyze_python(str(PER_USER), PER_USER.read_text(encoding="utf-8"), Options()).diagnostics
    assert (date.code, date.span.line, date.severity) == ("PFX101", 21, Severity.WARNING)
    assert date.group == (("location", 22, 16), ("user_name", 23, 78))
    assert "it changes once a day" not in date.message
    assert (
        "`date.today()` alone changes once a day, but `location` (line 22, per request if its callers "
        "pass one) beside it varies more often: the group parts the requests as often as its most "
        "frequent member"
    ) in date.message
    assert "`user_name` (line 23, a per-request input by its name)" in date.message


def test_a_project_getter_over_the_environment_is_a_setting_named_by_its_key(tmp_path: Path) -> None:
    """`get_str("planner.role_name", "Planner")` of the project reads `os.environ` under a computed
    name: a setting of the deployment (info), named by the key the call passes."""
    (tmp_path / "settings_source.py").write_text(
        "import os\n\n\ndef get_str(key: str, default: str) -> str:\n"
        '    return os.environ.get(key.upper().replace(".", "_"), default)\n',
        encoding="utf-8",
    )
    source = (
        "from openai import OpenAI\n\nfrom settings_source import get_str\n\nclient = OpenAI()\n"
        + RULES_LINE
        + "\n\ndef plan(question):\n"
        + '    role = get_str("planner.role_name", "Planner")\n'
        + "    return client.chat.completions.create(model='m', messages=[\n"
        + "        {'role': 'system', 'content': f'You are {role}. {RULES}'},\n"
        + "        {'role': 'user', 'content': question}])\n"
    )
    path = tmp_path / "app.py"
    path.write_text(source, encoding="utf-8")
    (finding,) = analyze_python(str(path), source, Options(project_root=str(tmp_path))).diagnostics
    assert (finding.code, finding.span.line, finding.severity) == ("PFX104", 10, Severity.INFO)
    assert "read from the deployment's configuration (`planner.role_name`)" in finding.message


@pytest.mark.parametrize("field", ["title", "count", "name"])
def test_a_template_field_named_like_a_str_method_is_the_passed_value(tmp_path: Path, field: str) -> None:
    # `{{ ticket.title }}` of a passed value: its field, as `{{ ticket.name }}` is, never the str
    # method of the stand-in (printed with its address: token counts that changed from run to run)
    path = tmp_path / "review.py"
    path.write_text(
        "from jinja2 import Template\nfrom openai import OpenAI\n\nclient = OpenAI()\n"
        f'PROMPT = Template("Ticket: {{{{ ticket.{field} }}}}\\n" + "You review pull requests. " * 40)\n\n\n'
        "def review(ticket):\n    text = PROMPT.render(ticket=ticket)\n"
        "    return client.chat.completions.create(\n"
        '        model="m", messages=[{"role": "system", "content": text}]\n    )\n',
        encoding="utf-8",
    )
    result = analyze_python(str(path), path.read_text(encoding="utf-8"), Options())
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("PFX105", 9)]
    assert (result.cacheable_prefix_tokens, result.total_tokens) == (3, 204)
