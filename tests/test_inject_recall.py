"""bench/inject_recall.py: where it puts the clock (the system text of each modelled sink call,
the entries of a `**mapping` built in the module included), and how it maps the original's lines."""

from __future__ import annotations

import sys
from pathlib import Path

import libcst

from prefixlint.python.frameworks import builtin
from prefixlint.python.scopes import index_module

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
import inject_recall  # noqa: E402

_HEAD = (
    '"""A docstring\non two lines."""\n\n'
    "from __future__ import annotations\n\n"
    "import anthropic\nimport litellm\n\n"
)


def _inject(body: str) -> tuple[str, str, list[inject_recall.Site]]:
    text = _HEAD + body
    sites: list[inject_recall.Site] = []
    index = index_module(libcst.parse_module(text), "app.py")
    new = inject_recall.inject_module(libcst, builtin(), index, "app.py", sites, [0])
    assert new is not None
    compile(new, "app.py", "exec", dont_inherit=True)
    return text, new, sites


def _line(code: str, number: int) -> str:
    return inject_recall.source_lines(code)[number - 1]


def test_one_line_added_after_the_docstring_and_future_imports_and_the_rest_shifted() -> None:
    text, new, [site] = _inject(
        "def ask(client, question):\n"
        "    return client.chat.completions.create(\n"
        '        model="m",\n'
        '        messages=[{"role": "user", "content": question}],\n'
        "    )\n"
    )
    assert _line(new, 5) == inject_recall.IMPORT
    mapping = inject_recall.line_map(text, new)
    assert (mapping[4], mapping[5], mapping[13]) == (4, 6, 14)
    assert (site.line, site.how, site.clock_lines) == (10, "leading message", [13])
    assert _line(new, 13).startswith('        messages=[{"role": "system", "content": f"Now (1): ')


def test_a_dict_built_for_the_call_gets_the_clock_in_its_messages_entry() -> None:
    _, new, [built, setitem] = _inject(
        "def ask(question):\n"
        '    kwargs = dict(model="m", messages=[{"role": "user", "content": question}])\n'
        "    return litellm.completion(**kwargs)\n\n\n"
        "def ask_set(question):\n"
        '    kwargs = {"model": "m"}\n'
        '    kwargs["messages"] = [{"role": "user", "content": question}]\n'
        "    return litellm.completion(**kwargs)\n"
    )
    assert (built.line, built.how, built.clock_lines) == (11, "messages in **kwargs", [11])
    assert _line(new, 11).startswith(
        '    kwargs = dict(model="m", messages=[{"role": "system", "content": f"Now (1)'
    )
    assert (setitem.how, setitem.clock_lines) == ("messages in **kwargs", [17])
    assert "litellm.completion(**kwargs)" in _line(new, 18)  # nothing added beside the mapping


def test_a_helper_s_returned_dict_and_a_spread_entry_and_a_shared_dict() -> None:
    _, new, [run, stream] = _inject(
        "class Driver:\n"
        "    def _params(self, question, system):\n"
        "        return {\n"
        '            "messages": [{"role": "user", "content": question}],\n'
        '            **({"system": system} if system else {}),\n'
        "        }\n\n"
        "    def run(self, question):\n"
        '        params = self._params(question, "Review.")\n'
        "        return anthropic.Anthropic().messages.create(**params)\n\n"
        "    def stream(self, question):\n"
        '        params = {**self._params(question, "Review."), "stream": True}\n'
        "        return anthropic.Anthropic().messages.create(**params)\n"
    )
    assert (run.how, run.clock_lines) == ("system in **params", [14])
    assert '**({"system": f"Now (1): ' in _line(new, 14)
    assert (stream.shares, stream.clock_lines) == (run, [])  # the same dict: the same clock


def test_a_kwargs_parameter_is_followed_to_this_module_s_callers_or_left_alone() -> None:
    _, new, [forwarded, alone] = _inject(
        "class Handler:\n"
        "    def _send(self, **kwargs):\n"
        "        return litellm.completion(**kwargs)\n\n"
        "    def chat(self, messages, fast):\n"
        "        if fast:\n"
        '            kwargs = {"model": "a", "messages": messages}\n'
        "        else:\n"
        '            kwargs = {"model": "b", "messages": messages}\n'
        "        return self._send(**kwargs)\n\n\n"
        "def forward(**kwargs):\n"
        "    return litellm.completion(**kwargs)\n"
    )
    assert (forwarded.how, forwarded.clock_lines) == ("messages in **kwargs", [16, 18])
    assert _line(new, 16).endswith("*(messages)]}")
    assert (alone.how, alone.note) == ("", "its text comes through **kwargs, built out of sight")
    assert "completion(**kwargs)" in _line(new, 23)
