"""The prefilter (prefixlint/python/prefilter.py): a module it says holds no prompt text must be one
the full analysis finds nothing in, and each shape a finder takes up must be seen."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from prefixlint.python import has_prompt_shapes
from prefixlint.python.analyze import analyze_python as full_analysis
from prefixlint.python.candidates import MESSAGE_KWARGS, PROMPT_METHODS, SYSTEM_KWARGS, TEXT_KWARGS
from prefixlint.python.frameworks import builtin
from prefixlint.python.prefilter import _PROMPT_KEYWORDS, _PROMPT_METHODS, has_shapes
from prefixlint.python.volatile import builder_role
from prefixlint.settings import Options
from tests.conftest import CORPUS, FIXTURES


def test_the_finders_keywords_and_methods_are_all_known() -> None:
    assert set(SYSTEM_KWARGS + TEXT_KWARGS + MESSAGE_KWARGS) - {"input"} <= _PROMPT_KEYWORDS
    assert PROMPT_METHODS | {"from_messages"} <= _PROMPT_METHODS


SHAPES = {
    "message dict": 'x = [{"role": "system", "content": text}]',
    "message tuple": 'chat.append(("user", text))',
    "role attribute tuple": "msgs = [(Role.USER, text)]",
    "message class": "m = SystemMessage(text)",
    "message builder": "m = make_user_message(content=text)",
    "role keyword": 'm = Msg(role="assistant", text=t)',
    "prompt keyword": "run(system_prompt=text)",
    "messages keyword": "client.send(messages=history)",
    "tools keyword": "agent = make(tools=TOOLS)",
    "prompt constant": 'SYSTEM_PROMPT = "You are helpful."',
    "class field": 'class Tool:\n    description = "Looks up orders."',
    "attribute field": "def f(self):\n    self.instructions = text",
    "prompt function": "def build_prompt(q):\n    return q",
    "prompt decorator": "@agent.system_prompt\ndef f():\n    return 'x'",
    "format of a prompt": "def f(q):\n    return prompts.plan.format(q=q)",
    "render in a function": "def f(t):\n    return t.render(x=1)",
    "agent first argument": 'a = ChatAgent("You are helpful.")',
    "prompt method": "out = llm.invoke(text)",
    "from_messages": "p = ChatPromptTemplate.from_messages(msgs)",
    "modelled API": "client.chat.completions.create(model=m, **kw)",
    "jinja template": "t = jinja2.Template(src)",
    "from_string": "t = env.from_string(src)",
}


@pytest.mark.parametrize("code", SHAPES.values(), ids=SHAPES.keys())
def test_each_shape_a_finder_takes_up_is_seen(code: str) -> None:
    assert has_shapes(ast.parse(code), builtin())


def test_plain_code_has_none() -> None:
    code = """
    import json
    import logging

    log = logging.getLogger(__name__)
    MESSAGE_LIMIT = 10


    class Store:
        def __init__(self, root):
            self.root = root
            self.messages = []

        def load(self, name):
            log.info("loading the message store %s", name)
            with open(name) as fh:
                return json.load(fh)

        def parts(self, reply):
            # a part of some message's content, named after the message: no message
            return [MessageBlock(kind="text", text=p.text) for p in reply.output]
    """
    assert not has_shapes(ast.parse(textwrap.dedent(code)), builtin())


def _modules() -> list[Path]:
    out = sorted(FIXTURES.rglob("*.py"))
    if (CORPUS / "python").is_dir():
        out += sorted((CORPUS / "python").rglob("*.py"))
    return out


def test_a_module_without_shapes_yields_nothing() -> None:
    """Every fixture and corpus module the prefilter skips gives no finding and no numbers when
    analysed in full anyway."""
    skipped = 0
    for path in _modules():
        text = path.read_text(encoding="utf-8")
        options = Options()
        if has_prompt_shapes(str(path), text, options):
            continue
        skipped += 1
        result = full_analysis(str(path), text, options)
        assert not result.diagnostics, path
        assert result.total_tokens is None, path
    assert skipped  # the check checks something


def test_a_module_is_screened_once_per_text_and_project_rows(monkeypatch: pytest.MonkeyPatch) -> None:
    """The pool's parse ahead screens each module before the fork and the worker asks again: the
    second answer is the first one, until the module's text or the project's sink rows change."""
    import prefixlint.python as frontend
    import prefixlint.python.prefilter as prefilter

    monkeypatch.setattr(frontend, "_SCREENED", {})
    walks: list[str] = []
    real = prefilter.has_shapes

    def counted(tree: ast.Module, *args: object) -> bool:
        walks.append("walk")
        return real(tree, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(prefilter, "has_shapes", counted)
    text = 'x = [{"role": "system", "content": text}]\n'
    plain = 'x = [{"kind": "system", "content": text}]\n'
    assert has_prompt_shapes("/m/a.py", text, Options())
    assert has_prompt_shapes("/m/a.py", text, Options())
    assert len(walks) == 1
    assert not has_prompt_shapes("/m/a.py", plain, Options())  # changed on disk: screened again
    assert len(walks) == 2
    assert has_prompt_shapes("/m/a.py", plain, Options(python_sinks=("x",))) is False
    assert len(walks) == 3  # another project's rows: screened again


@pytest.mark.parametrize(
    ("name", "role"),
    [
        ("make_user_message", "user"),
        ("createAssistantMessage", "assistant"),
        ("to_message", "unknown"),
        ("ChatCompletionUserMessageParam", "user"),  # an SDK's type suffix
        ("MessageBlock", None),  # a part of a message's content
        ("message_to_text", None),
        ("send_messages", None),
    ],
)
def test_a_builder_makes_a_message_when_its_name_ends_with_one(name: str, role: str | None) -> None:
    # The evaluator (`_message_role`) and this screen read builders with the same rule.
    assert builder_role(name) == role
