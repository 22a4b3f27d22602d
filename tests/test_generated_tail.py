"""Generated cases for what follows a value in the final request (issue 28 point 3): text a library
appends or fills after the last input (the models table's `[[appended]]` rows), and where a
template lands when its formatted text goes into another request.

Each appended-text kind × each value (a clock, an id, a per-request input, each known by its
name as a template placeholder, or a clock read in the code) × the value at the head or at the tail of the
template, written as a small module (tests/generalisation_cases.py's `Case` and `findings`):

- at the head, a value is ahead of the template's own static text: a finding at its line;
- at the tail, a value is followed by what the library appends after the template (format
  instructions, an output schema: "at least N tokens") when the kind lands at the end or fills a
  placeholder after the value: a finding at its line; when it lands ahead of the messages (a
  provider's structured-output schema, a tool), or with no parser at all, nothing follows the
  value: silence.

And the landing rule: a template whose placeholder is filled and sent as the last message after
messages that already carry that value (or a per-request input) is silent; the same template sent
first in the request is a finding at the placeholder; checked from the module that defines it,
with the request in a module that imports it, alike. The code is analysed, never run."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pytest
from generalisation_cases import CONSTANTS, Case, findings

from prefixlint.python.frameworks import builtin

RULES = CONSTANTS["RULES"]
# A placeholder named so is guessed from its name (`findings.py`: a guess is info); a clock read in
# the code is seen at its source.
PLACEHOLDERS = {
    "clock": ("{today}", "PFX101"),
    "id": ("{session_id}", "PFX102"),
    "input": ("{question}", "PFX105"),
}


@dataclass(frozen=True)
class Kind:
    """One way text follows (or does not follow) the template: its imports, the module-level setup,
    and how the template `T` (a string holding `{value}` where the value goes) is sent."""

    name: str
    imports: tuple[str, ...]
    build: str  # code with `<T>` for the template, `<V>` for the placeholder's name (or `<SYSTEM>`, `<USER>`)
    tail_costs: bool  # at the tail, text the library adds still follows the value
    row: str = ""  # the `[[appended]]` row it exercises ("" for the controls)
    placeholder: bool = True  # the value is a placeholder of the template (else an f-string)


_LANGCHAIN_PARSER = (
    "from langchain_core.output_parsers import CommaSeparatedListOutputParser",
    "from langchain_core.prompts import PromptTemplate",
)
_LLAMAINDEX_PARSER = (
    "from llama_index.core import PromptTemplate",
    "from llama_index.core.output_parsers import PydanticOutputParser",
    "from pydantic import BaseModel",
)
_ANSWER = "class Answer(BaseModel):\n    text: str\n\n\n"
KINDS = [
    Kind(
        "langchain-partial-variables",
        _LANGCHAIN_PARSER,
        "parser = CommaSeparatedListOutputParser()\n"
        "prompt = PromptTemplate(\n"
        '    template=<T> + "\\n{format_instructions}",\n'
        '    input_variables=["<V>"],\n'
        '    partial_variables={"format_instructions": parser.get_format_instructions()},\n'
        ")",
        True,
        "LangChain output parser format instructions",
    ),
    Kind(
        "langchain-partial-method",
        _LANGCHAIN_PARSER,
        "parser = CommaSeparatedListOutputParser()\n"
        'prompt = PromptTemplate.from_template(<T> + "\\n{format_instructions}")\n'
        "prompt = prompt.partial(format_instructions=parser.get_format_instructions())",
        True,
        "LangChain output parser format instructions",
    ),
    Kind(
        "llamaindex-output-parser",
        _LLAMAINDEX_PARSER,
        _ANSWER
        + "prompt = PromptTemplate(\n    <T>,\n    output_parser=PydanticOutputParser(output_cls=Answer),\n)",
        True,
        "LlamaIndex output parser format string",
    ),
    Kind(
        "llamaindex-output-parser-set-later",
        _LLAMAINDEX_PARSER,
        _ANSWER + "PROMPT = PromptTemplate(\n    <T>,\n)\n\n\n"
        "class Judge:\n"
        "    def __init__(self, template=None):\n"
        "        self._template = template or PROMPT\n"
        "        self._template.output_parser = PydanticOutputParser(output_cls=Answer)",
        True,
        "LlamaIndex output parser format string",
    ),
    Kind(
        "llamaindex-text-completion-program",
        ("from llama_index.core.program import LLMTextCompletionProgram", "from pydantic import BaseModel"),
        _ANSWER + "program = LLMTextCompletionProgram.from_defaults(\n"
        "    output_cls=Answer,\n"
        "    prompt_template_str=<T>,\n"
        ")",
        True,
        "LlamaIndex text-completion program output schema (an LLM without function calling)",
    ),
    Kind(
        "llamaindex-plain-template",  # the control: no parser, nothing after the tail
        ("from llama_index.core import PromptTemplate",),
        "prompt = PromptTemplate(\n    <T>,\n)",
        False,
    ),
    Kind(
        "openai-response-format",
        ("from datetime import datetime", "from openai import OpenAI", "from pydantic import BaseModel"),
        "client = OpenAI()\n\n\n" + _ANSWER + "def respond(question: str):\n"
        "    return client.chat.completions.parse(\n"
        '        model="gpt-4o",\n'
        "        messages=[\n"
        '            {"role": "system", "content": <SYSTEM>},\n'
        '            {"role": "user", "content": <USER>},\n'
        "        ],\n"
        "        response_format=Answer,\n"
        "    )",
        False,
        "OpenAI structured output schema",
        placeholder=False,
    ),
    Kind(
        "langchain-with-structured-output",
        (
            "from datetime import datetime",
            "from langchain_core.messages import HumanMessage, SystemMessage",
            "from langchain_openai import ChatOpenAI",
            "from pydantic import BaseModel",
        ),
        _ANSWER + "def respond(question: str):\n"
        '    llm = ChatOpenAI(model="gpt-4o-mini").with_structured_output(Answer)\n'
        "    return llm.invoke([SystemMessage(<SYSTEM>), HumanMessage(<USER>)])",
        False,
        "LangChain structured output",
        placeholder=False,
    ),
]


def _module(imports: tuple[str, ...], body: str) -> str:
    return "\n".join([*sorted(imports), "", f"RULES = {RULES!r}", "", "", body, ""])


def _line_of(source: str, needle: str) -> int:
    (line,) = [i for i, text in enumerate(source.splitlines(), start=1) if needle in text]
    return line


def appended_case(kind: Kind, value: str, position: str) -> Case:
    """The template holds the value at the head or the tail; the finding is expected at the line
    of the value (the template's line, or the f-string's)."""
    if kind.placeholder:
        placeholder, code = PLACEHOLDERS[value]
        name = placeholder.strip("{}")
        template = f'"{placeholder}\\n" + RULES' if position == "head" else f'RULES + "\\n{placeholder}"'
        body = kind.build.replace("<T>", template).replace("<V>", name)
        needle = placeholder
    else:  # a clock read where the request is built: in the system text (head) or after the user's text
        code = "PFX101"
        system, user = (
            ('f"Now: {datetime.now()}\\n" + RULES', "question")
            if position == "head"
            else ("RULES", 'f"{question}\\n(now: {datetime.now()})"')
        )
        body = kind.build.replace("<SYSTEM>", system).replace("<USER>", user)
        needle = "datetime.now()"
    source = _module(kind.imports, body)
    costs = position == "head" or kind.tail_costs
    expected = {(code, _line_of(source, needle)): _severity(kind, value, position)} if costs else {}
    return Case(f"{kind.name}/{value}/{position}", {"app.py": source}, expected)


def _severity(kind: Kind, value: str, position: str) -> str:
    if kind.placeholder:
        return "info"  # a placeholder is a name guessed: `python.guess_severity`
    return "error"  # a clock seen at its source ahead of the system text (RULES, over a block)


def appended_cases() -> list[Case]:
    out = []
    for kind, position in itertools.product(KINDS, ("head", "tail")):
        values = list(PLACEHOLDERS) if kind.placeholder else ["clock-call"]
        out += [appended_case(kind, value, position) for value in values]
    return out


# --- where a template lands -------------------------------------------------------------------
RERANK = """"Search query: {query}.\\nRank the passages above by their relevance to the query, "
    "the most relevant first, as a list of their identifiers in brackets ([2] > [1] > [3]). "
    "Answer with the list only: no explanation, no apology, and no passage that was not given."
"""
LANDINGS = {
    # the template's text as the last message, after messages that already carry the query: silent
    "tail-after-the-same-value": (
        '[ChatMessage(role="system", content=RULES),\n'
        '         ChatMessage(role="user", content=f"Rank passages for the query: {query}"),\n'
        '         ChatMessage(role="user", content=passages),\n'
        '         ChatMessage(role="user", content=RERANK.format(query=query))]',
        False,
    ),
    # after a per-request input known as one (the user's question): silent
    "tail-after-an-input": (
        '[ChatMessage(role="system", content=RULES),\n'
        '         ChatMessage(role="user", content=question),\n'
        '         ChatMessage(role="user", content=RERANK.format(query=query))]',
        False,
    ),
    # the template's text first, the static system text after it: its placeholder is a finding
    "head": (
        '[ChatMessage(role="user", content=RERANK.format(query=query)),\n'
        '         ChatMessage(role="user", content=RULES)]',
        True,
    ),
}
_IMPORTS = ("from llama_index.core import PromptTemplate", "from llama_index.core.llms import ChatMessage")


def _request(messages: str) -> str:
    return f"def rerank(llm, query, question, passages):\n    return llm.chat(\n        {messages}\n    )"


def landing_case(name: str, where: str) -> Case:
    """The template in the checked module; the request in it ("same-module") or in a module that
    imports the template ("other-module"), as pre-commit checks a prompts module alone."""
    messages, costs = LANDINGS[name]
    template = f"RERANK = PromptTemplate(\n    {RERANK}\n)"
    if where == "same-module":
        source = _module(_IMPORTS, template + "\n\n\n" + _request(messages))
        files = {"app.py": source}
    else:
        source = _module(_IMPORTS[:1], template)
        user = _module((*_IMPORTS[1:], "from app import RERANK"), _request(messages))
        files = {"app.py": source, "ranking.py": user}
    # A template filled in the project is judged where it is filled (fills.py): the module that
    # sends the request is checked, and its fill is the finding when the template lands first.
    checked = "app.py" if where == "same-module" else "ranking.py"
    line = _line_of(files[checked], "RERANK.format(query=query)")
    expected = {("PFX105", line): "info"} if costs else {}
    return Case(f"landing/{name}/{where}", files, expected, checked=checked)


def landing_cases() -> list[Case]:
    return [landing_case(n, w) for n in LANDINGS for w in ("same-module", "other-module")]


CASES = appended_cases() + landing_cases()


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(case: Case, tmp_path: Path) -> None:
    assert findings(case, tmp_path) == case.expected, f"{case.id}\n{case.source()}"


def test_every_appended_row_is_generated_at_the_head_and_the_tail() -> None:
    rows = {k.row for k in KINDS if k.row}
    assert rows == {r.name for r in builtin().appended}
    positions = {(c.id.split("/")[0], c.id.split("/")[2]) for c in CASES if not c.id.startswith("landing/")}
    assert positions == {(k.name, p) for k in KINDS for p in ("head", "tail")}


def test_findings_and_silences_are_both_expected() -> None:
    tails = [c for c in CASES if c.id.endswith("/tail")]
    assert any(c.expected for c in tails) and any(not c.expected for c in tails)
    landed = [c for c in CASES if c.id.startswith("landing/")]
    assert any(c.expected for c in landed) and any(not c.expected for c in landed)
