"""Generated cases for the argument at a template's fill (issue 28, point 3): for the sinks that fill
a template with what the call passes (prefixlint/python/fills.py, `Evaluator.format`), every kind
of value passed for a placeholder, at the head of the template or at its tail, each case asserting
the finding the loss rule gives it (code, line, severity) or silence. A constant passed for a
placeholder is static text (silent, and counted in what follows an earlier value); a parameter, a
parameter's attribute or an item of a loop around the sink is a per-request input (info: its
callers are not seen); a clock keeps its provenance. At the tail nothing static follows: silence.
Written with the builders of the generated suite (tests/generalisation_cases.py); never run."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pytest
from generalisation_cases import CONSTANTS, OTHER, Case, Module
from test_generated_suite import findings

from prefixlint.core.rules import RULES

SLOT = "slot"  # the placeholder the value fills
PARAMS = "query_str: str, bundle, nodes"  # `respond()`'s parameters: names that say nothing


@dataclass(frozen=True)
class Sink:
    """A way a template meets its values at a request: `imports`, module `setup` (it defines
    TEMPLATE from the text `{text}`), and the statement that sends it given the fill arguments
    written as keywords (`{keywords}`) or a dict (`{mapping}`)."""

    name: str
    imports: tuple[str, ...]
    setup: str
    send: str
    dollar: bool = False  # `$slot` placeholders (string.Template)


SINKS = [
    Sink(
        "llamaindex-predict",
        ("from llama_index.core import PromptTemplate", "from llama_index.llms.openai import OpenAI"),
        "llm = OpenAI()\nTEMPLATE = PromptTemplate({text})",
        "return llm.predict(TEMPLATE, {keywords})",
    ),
    Sink(
        "llamaindex-structured-predict",
        ("from llama_index.core import PromptTemplate", "from llama_index.llms.openai import OpenAI"),
        "llm = OpenAI()\nTEMPLATE = PromptTemplate(template={text})",
        "return llm.structured_predict(dict, TEMPLATE, {keywords})",
    ),
    Sink(
        "llamaindex-complete-format",
        ("from llama_index.core import PromptTemplate", "from llama_index.llms.openai import OpenAI"),
        "llm = OpenAI()\nTEMPLATE = PromptTemplate({text})",
        "return llm.complete(TEMPLATE.format({keywords}))",
    ),
    Sink(
        "langchain-format-messages",
        ("from langchain_core.prompts import ChatPromptTemplate", "from langchain_openai import ChatOpenAI"),
        "llm = ChatOpenAI()\nTEMPLATE = ChatPromptTemplate.from_template({text})",
        "return llm.invoke(TEMPLATE.format_messages({keywords}))",
    ),
    Sink(
        "langchain-invoke-dict",
        ("from langchain_core.prompts import PromptTemplate", "from langchain_openai import ChatOpenAI"),
        "llm = ChatOpenAI()\nTEMPLATE = PromptTemplate.from_template({text})",
        "return llm.invoke(TEMPLATE.invoke({mapping}))",
    ),
    Sink(
        "langchain-chain-invoke",
        ("from langchain_core.prompts import PromptTemplate", "from langchain_openai import ChatOpenAI"),
        "llm = ChatOpenAI()\nTEMPLATE = PromptTemplate.from_template({text})",
        "return (TEMPLATE | llm).invoke({mapping})",
    ),
    Sink(
        "langchain-partial",
        ("from langchain_core.prompts import PromptTemplate", "from langchain_openai import ChatOpenAI"),
        "llm = ChatOpenAI()\nTEMPLATE = PromptTemplate.from_template({text})",
        "return llm.invoke(TEMPLATE.partial({keywords}).format())",
    ),
    Sink(
        "str-format-mapping",
        ("from openai import OpenAI",),
        "client = OpenAI()\nTEMPLATE = {text}",
        'return client.chat.completions.create(model="gpt-4o", messages=[{{"role": "system", "content": '
        'TEMPLATE.format(**{mapping})}}, {{"role": "user", "content": query_str}}])',
    ),
    Sink(
        "string-template-substitute",
        ("import string", "from openai import OpenAI"),
        "client = OpenAI()\nTEMPLATE = string.Template({text})",
        'return client.chat.completions.create(model="gpt-4o", messages=[{{"role": "system", "content": '
        'TEMPLATE.substitute({keywords})}}, {{"role": "user", "content": query_str}}])',
        dollar=True,
    ),
]


@dataclass(frozen=True)
class Fill:
    """What is passed for the placeholder: the expression, what it needs (imports, module code,
    the loop it is in), and the finding it gives at the head (None: static text, silent)."""

    name: str
    expr: str
    code: str | None
    imports: tuple[str, ...] = ()
    module: str = ""  # module-level code before `respond()`
    other: str = ""  # the other module of the project
    loop: bool = False  # the request is sent once per item of `nodes`


FILLS = [
    Fill("keyword-literal", repr(CONSTANTS["LEAD"]), None),
    Fill("module-constant", "STYLE", None, module=f"STYLE = {CONSTANTS['LEAD']!r}"),
    Fill("class-attribute", "Voice.STYLE", None, module=f"class Voice:\n    STYLE = {CONSTANTS['LEAD']!r}"),
    Fill(
        "imported-constant",
        "STYLE",
        None,
        imports=(f"from {OTHER.removesuffix('.py')} import STYLE",),
        other=f"STYLE = {CONSTANTS['LEAD']!r}\n",
    ),
    Fill("parameter", "query_str", "PFX105"),
    Fill("parameter-attribute", "bundle.query_str", "PFX105"),
    Fill("loop-item", "node.text", "PFX105", loop=True),
    Fill("clock", "datetime.now().isoformat()", "PFX101", imports=("from datetime import datetime",)),
]
POSITIONS = ("head", "tail")


def _template(sink: Sink, position: str) -> str:
    slot = f"${SLOT}" if sink.dollar else "{" + SLOT + "}"
    rules = CONSTANTS["RULES"]
    return repr(f"{slot}\n{rules}" if position == "head" else f"{rules}\n{slot}")


def write(sink: Sink, fill: Fill, position: str, later: str = "") -> Case:
    """One project: TEMPLATE defined at module level, `respond()` fills it and sends it. `later`:
    a second placeholder after a short head, filled with a constant (its text counts)."""
    main = Module()
    main.need((*sink.imports, *fill.imports))
    main.needles["value"] = fill.expr
    text = _template(sink, position) if not later else repr("{" + SLOT + "}\n{later}")
    for line in sink.setup.format(text=text).split("\n"):
        main.add(line)
    if later:
        main.add(f"LATER = {later!r}")
    if fill.module:
        main.add(fill.module)
    main.add()
    arguments = {SLOT: fill.expr, **({"later": "LATER"} if later else {})}
    keywords = ", ".join(f"{k}={v}" for k, v in arguments.items())
    mapping = "{" + ", ".join(f'"{k}": {v}' for k, v in arguments.items()) + "}"
    send = sink.send.format(keywords=keywords, mapping=mapping)
    main.add(f"def respond({PARAMS}):")
    depth = 1
    if fill.loop:
        main.add("out = []", depth=1)
        main.add("for node in nodes:", depth=1)
        send = send.replace("return ", "out.append(", 1) + ")"
        depth = 2
    main.add(send, frozenset({"value"}), depth=depth)
    if fill.loop:
        main.add("return out", depth=1)
    files = {"app.py": main.text()}
    if fill.other:
        files[OTHER] = fill.other
    expected: dict[tuple[str, int], str] = {}
    if fill.code is not None and (position == "head" or later):
        severity = RULES[fill.code].default_severity.label if fill.code != "PFX105" else "info"
        expected[(fill.code, main.line_of("value"))] = severity
    name = f"{sink.name}/{fill.name}/{'later-constant' if later else position}"
    return Case(name, files, expected)


# A library that appends text after the template (structured predict's schema, `[[appended]]` rows)
# leaves no tail position with nothing after it: those cases are tests/test_generated_tail.py's.
APPENDS = {"llamaindex-structured-predict"}
CASES = [
    write(s, f, p) for s in SINKS for f in FILLS for p in POSITIONS if not (p == "tail" and s.name in APPENDS)
]
# The static text after a value includes constants passed for later placeholders (a clock, then a
# short line, then a constant of ~50 tokens: a finding only if the constant is counted).
LATER = [write(s, FILLS[-1], "head", later=CONSTANTS["RULES"]) for s in SINKS if not s.dollar]


@pytest.mark.parametrize("case", CASES + LATER, ids=[c.id for c in CASES + LATER])
def test_fill(case: Case, tmp_path: Path) -> None:
    assert findings(case, tmp_path) == case.expected, f"{case.id}\n{case.source()}"


def test_cases_expect_findings_and_silences() -> None:
    assert sum(bool(c.expected) for c in CASES) == len(SINKS) * 4  # the four volatile fills at the head
    assert sum(not c.expected for c in CASES) == len(SINKS) * (4 * 2 + 4) - len(APPENDS) * len(FILLS)


# --- hand fixtures: where the template lives, and how the fill reaches it --------------------------
LLAMA = "from llama_index.core import PromptTemplate\nfrom llama_index.llms.openai import OpenAI\n"
LONG = CONSTANTS["RULES"] + " " + CONSTANTS["MORE"]


def _check(files: dict[str, str], checked: str, tmp_path: Path) -> dict[tuple[str, int], str]:
    return findings(Case("hand", files, {}, checked), tmp_path)


def _line(source: str, needle: str) -> int:
    return next(i for i, line in enumerate(source.splitlines(), start=1) if needle in line)


def test_template_in_another_module_stored_on_self_and_filled_in_another_method(tmp_path: Path) -> None:
    prompts = (
        LLAMA
        + f"DEFAULT_TMPL = 'The original question is: {{query_str}}\\n' + {LONG!r} + '\\n{{context_str}}'\n"
    )
    prompts += "DEFAULT_PROMPT = PromptTemplate(DEFAULT_TMPL)\n"
    transform = (
        "from llama_index.llms.openai import OpenAI\n\nfrom pkg.prompts import DEFAULT_PROMPT\n\n\n"
        "class Decompose:\n"
        "    def __init__(self, llm: OpenAI, prompt=None) -> None:\n"
        "        self._llm = llm\n"
        "        self._prompt = prompt or DEFAULT_PROMPT\n\n"
        "    def run(self, query_bundle, summary: str) -> str:\n"
        "        return self._llm.predict(\n"
        "            self._prompt,\n"
        "            query_str=query_bundle.query_str,\n"
        "            context_str=summary,\n"
        "        )\n"
    )
    files = {"pkg/__init__.py": "", "pkg/prompts.py": prompts, "pkg/transform.py": transform}
    assert _check(files, "pkg/transform.py", tmp_path) == {("PFX105", _line(transform, "query_str=")): "info"}
    # the same template filled with a constant of the class: static text, nothing to report
    constant = transform.replace("query_bundle.query_str", "self.QUESTION").replace(
        "class Decompose:\n", f"class Decompose:\n    QUESTION = {CONSTANTS['LEAD']!r}\n\n"
    )
    assert _check({**files, "pkg/transform.py": constant}, "pkg/transform.py", tmp_path / "b") == {}


def test_a_template_filled_in_its_module_is_judged_at_the_fill_not_by_its_placeholder_names(
    tmp_path: Path,
) -> None:
    source = LLAMA + (
        "llm = OpenAI()\n"
        f"TEMPLATE = PromptTemplate('Now: {{now}}\\n' + {LONG!r})\n\n\n"
        "def ask():\n"
        f"    return llm.predict(TEMPLATE, now={CONSTANTS['LEAD']!r})\n"
    )
    assert _check({"app.py": source}, "app.py", tmp_path) == {}  # `{now}` is filled with a constant
    unfilled = source.replace(f"now={CONSTANTS['LEAD']!r}", "")
    # filled by nobody: the placeholder's name says a clock fills it (a guess: info)
    expected = {("PFX101", _line(unfilled, "return llm")): "info"}
    assert _check({"app.py": unfilled}, "app.py", tmp_path / "b") == expected


def test_a_template_parameter_is_its_default_and_a_loop_item_fills_it(tmp_path: Path) -> None:
    source = LLAMA + (
        f"DEFAULT_QA_TMPL = 'Context: {{context_str}}\\n' + {LONG!r}\n\n\n"
        "def generate(nodes, llm: OpenAI, qa_tmpl: str = DEFAULT_QA_TMPL):\n"
        "    out = []\n"
        "    for node_id, text in dict(nodes).items():\n"
        "        out.append(llm.complete(qa_tmpl.format(context_str=text)))\n"
        "    return out\n"
    )
    assert _check({"app.py": source}, "app.py", tmp_path) == {
        ("PFX105", _line(source, "for node_id")): "info"
    }
    fixed = source.replace("dict(nodes).items()", "[('a', 'formal'), ('b', 'casual')]")
    assert (
        _check({"app.py": fixed}, "app.py", tmp_path / "b") == {}
    )  # fixed items: the same requests each run


def test_each_item_the_caller_loops_over_is_a_request_and_a_method_of_it_is_its_data(tmp_path: Path) -> None:
    source = LLAMA + (
        f"QUESTIONS = 'Here is the context:\\n{{context_str}}\\n' + {LONG!r}\n\n\n"
        "class Node:\n"
        "    def __init__(self, text: str) -> None:\n"
        "        self.text = text\n\n"
        "    def get_content(self) -> str:\n"
        "        return self.text.strip()\n\n\n"
        "class Extractor:\n"
        "    def __init__(self, llm: OpenAI) -> None:\n"
        "        self.llm = llm\n\n"
        "    def one(self, node: Node) -> str:\n"
        "        return self.llm.predict(PromptTemplate(QUESTIONS), context_str=node.get_content())\n\n"
        "    def extract(self, nodes: list) -> list:\n"
        "        jobs = []\n"
        "        for node in nodes:\n"
        "            jobs.append(self.one(node))\n"
        "        return jobs\n"
    )
    found = _check({"app.py": source}, "app.py", tmp_path)
    assert found == {("PFX105", _line(source, "for node in nodes")): "info"}


def test_a_label_between_two_inputs_judged_alike_is_no_loss(tmp_path: Path) -> None:
    """`{prev}` then a short label then `{draft}`: less than a block apart, the two part the
    requests as one group, named at the first (where requests part); the label between them is no
    loss, the text after the second is the group's."""
    label = "\\nPrevious:\\n{prev}\\nDraft:\\n{draft}\\n"
    source = LLAMA + (
        "llm = OpenAI()\n"
        f"INSERT = PromptTemplate({LONG!r} + '{label}' + {LONG!r})\n\n\n"
        "def insert(prev, draft):\n"
        "    return llm.predict(\n"
        "        INSERT,\n"
        "        prev=prev,\n"
        "        draft=draft,\n"
        "    )\n"
    )
    # one finding, at the first input (the second is its group's other member)
    assert _check({"app.py": source}, "app.py", tmp_path) == {("PFX105", _line(source, "prev=prev")): "info"}


def test_a_template_another_module_uses_is_judged_there_not_by_its_placeholder_names(tmp_path: Path) -> None:
    prompts = LLAMA + f"KEYWORDS_TMPL = 'Question: {{question}}\\n' + {LONG!r}\n"
    prompts += "KEYWORDS_PROMPT = PromptTemplate(KEYWORDS_TMPL)\n"
    retriever = (
        "from llama_index.llms.openai import OpenAI\n\nfrom pkg.prompts import KEYWORDS_PROMPT\n\n\n"
        "def keywords(llm: OpenAI, query_str: str) -> str:\n"
        "    return llm.predict(KEYWORDS_PROMPT, question=query_str)\n"
    )
    files = {"pkg/__init__.py": "", "pkg/prompts.py": prompts}
    # alone, nothing fills it: `{question}` is a per-request input by its name
    assert _check(files, "pkg/prompts.py", tmp_path) == {("PFX105", 3): "info"}
    files["pkg/retriever.py"] = retriever
    assert _check(files, "pkg/prompts.py", tmp_path / "b") == {}  # filled in retriever.py, judged there
    assert _check(files, "pkg/retriever.py", tmp_path / "c") == {("PFX105", 7): "info"}
