"""prefixlint renders byte for byte what transformers' own `render_jinja_template` renders.

For every corpus template and every fixture, the same conversations, tools and a fixed clock go
through both; the traced render (markers stripped) must equal transformers' output exactly.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

import pytest
from conftest import FIXTURES, corpus_templates

from prefixlint.jinja.inputs import ASSISTANT_REPLY, BASE_TIME, FOLLOW_UP, SYSTEM_PROMPT, TOOLS
from prefixlint.jinja.template import ChatTemplate

transformers_ctu = pytest.importorskip("transformers.utils.chat_template_utils")

SPECIAL = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "pad_token": "<pad>"}

CONVERSATIONS = {
    "sys": [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "What is the capital?"},
    ],
    "nosys": [{"role": "user", "content": "Quelle est la capitale ? 日本"}],
    "multi": [
        {"role": "system", "content": SYSTEM_PROMPT},
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": ASSISTANT_REPLY},
        {"role": "user", "content": FOLLOW_UP},
    ],
    "reasoning": [
        {"role": "user", "content": "What is the capital of France?"},
        {"role": "assistant", "content": ASSISTANT_REPLY, "reasoning_content": "France's capital is Paris."},
        {"role": "user", "content": FOLLOW_UP},
    ],
}


class _FixedDatetime(datetime):
    @classmethod
    def now(cls, tz=None):  # noqa: ANN001 - mirrors datetime.now
        return BASE_TIME if tz is None else BASE_TIME.astimezone(tz)


def _templates() -> list[Path]:
    # fixtures/hostile/ is where prefixlint deliberately differs: an attribute walk that HF prints
    # as '' raises in ours, so it is reported (tests/test_sandbox.py).
    own = [p for p in sorted(FIXTURES.rglob("*.jinja")) if "hostile" not in p.relative_to(FIXTURES).parts]
    return corpus_templates() + own


def _reference(source: str, messages, tools, gen: bool, extra: dict) -> str:
    rendered, _ = transformers_ctu.render_jinja_template(
        conversations=[messages],
        tools=tools,
        chat_template=source,
        add_generation_prompt=gen,
        **SPECIAL,
        **extra,
    )
    return rendered[0]


@pytest.mark.parametrize("path", _templates(), ids=lambda p: str(p.relative_to(p.parents[1])))
def test_render_matches_transformers_byte_for_byte(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transformers_ctu, "datetime", _FixedDatetime)
    source = path.read_text(encoding="utf-8")
    template = ChatTemplate(source, str(path), special_tokens=dict(SPECIAL))
    # Variables a template cannot render without (e.g. `functions`) get the same value on both sides.
    template.supply_required_variables(CONVERSATIONS["sys"], None)
    compared = 0
    for messages in CONVERSATIONS.values():
        for tools in (None, TOOLS):
            for gen in (True, False):
                try:
                    expected = _reference(source, messages, tools, gen, template.extra_kwargs)
                except Exception:
                    continue  # transformers itself cannot render these inputs
                ours = template.render(messages, tools=tools, add_generation_prompt=gen, now=BASE_TIME).text
                assert ours == expected, (
                    f"{path.name}: differs for {messages[0]['role']}/{tools is not None}/{gen}"
                )
                compared += 1
    if compared == 0:
        pytest.skip("transformers itself cannot render this template with these inputs")
