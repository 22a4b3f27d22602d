"""How a chat template's model reasons, as the template itself says (issue 23, point 6): the tags
around its reasoning (`<think>`…`</think>`, `<think:opensource>`, `[THINK]`, Gemma 4's
`<|channel>thought`…`<channel|>`), where a reply's reasoning comes back in the next request (the
message field the template reads, or inline in the content when it reads none), and how the
model writes a reasoning reply (the template's own rendering of one, else the tags with Qwen's
newlines).

A template that names no reasoning tags and reads no reasoning field is not a reasoning model's:
no reasoning replies are replayed for it.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes

from prefixlint.jinja.environment import REASONING_FIELDS
from prefixlint.jinja.template import ChatTemplate

# Pairs that are not `<x>`/`</x>`-shaped; `<think>`, `<think:opensource>`, `<seed:think>`,
# `<thinking>`, `<|think|>`/`<|/think|>` are found by shape (_XML_CLOSE, _BAR_CLOSE).
KNOWN_TAGS = (
    ("[THINK]", "[/THINK]"),
    ("<|channel>thought", "<channel|>"),
    ("<|START_THINKING|>", "<|END_THINKING|>"),
    ("<|begin_of_thought|>", "<|end_of_thought|>"),
    ("◁think▷", "◁/think▷"),
)
_XML_CLOSE = re.compile(r"</([\w:]*(?:think|thought|reason)[\w:]*)>", re.IGNORECASE)
_BAR_CLOSE = re.compile(r"<\|/([\w:]*(?:think|thought)[\w:]*)\|>", re.IGNORECASE)
DEFAULT_TAGS = ("<think>", "</think>")
PROBE_REASONING = "Paris is the capital and largest city of France."
PROBE_REPLY = "It is Paris."


@dataclass(frozen=True)
class ReasoningFormat:
    """How replies carry reasoning: `opening` + reasoning + `closing` + the answer is what the
    model writes (`opening` may begin with the assistant header the template prints), `field` the
    message field the template reads it back from (None: it reads none; reasoning goes back
    inline in the content)."""

    opening: str
    closing: str
    field: str | None
    tags: tuple[str, str]

    def written(self, reasoning: str, answer: str) -> str:
        return f"{self.opening}{reasoning}{self.closing}{answer}"

    def inline(self, reasoning: str, answer: str) -> str:
        """The content of a reply that keeps its reasoning inline (no header)."""
        return f"{self.tags[0]}\n{reasoning}\n{self.tags[1]}\n\n{answer}"

    def closes(self, prompt: str) -> bool:
        """Whether a prompt ends by closing the think block (thinking off: the model answers)."""
        return prompt.rstrip().endswith(self.tags[1])


def tag_pair(source: str) -> tuple[str, str] | None:
    """The reasoning tags a template names: of the pairs whose both tags are in its text, the one
    whose closing tag occurs most often (the first found on a tie)."""
    pairs = [(f"<{m.group(1)}>", m.group(0)) for m in _XML_CLOSE.finditer(source)]
    pairs += [(f"<|{m.group(1)}|>", m.group(0)) for m in _BAR_CLOSE.finditer(source)]
    pairs += [pair for pair in KNOWN_TAGS if pair[1] in source]
    found = [pair for pair in dict.fromkeys(pairs) if pair[0] in source]
    return max(found, key=lambda pair: source.count(pair[1])) if found else None


def fields_read(template: ChatTemplate) -> frozenset[str]:
    """The reasoning fields the template reads from a message (`message.reasoning_content`,
    `message['reasoning']`)."""
    out = set()
    for node in template.env.parse(template.traced.source).find_all((nodes.Getattr, nodes.Getitem)):
        key = node.attr if isinstance(node, nodes.Getattr) else getattr(node.arg, "value", None)
        if key in REASONING_FIELDS:
            out.add(key)
    return frozenset(out)


Render = Callable[[list[dict[str, Any]], bool], str | None]


def reasoning_format(template: ChatTemplate, render: Render, user: str) -> ReasoningFormat | None:
    """The template's reasoning format, or None for a template that is not a reasoning model's.
    `render(messages, add_generation_prompt)` renders in the mode analysed (None if it raises);
    `user` is a user turn's text. A reply with its reasoning in a field is rendered as the last
    message: where the template renders it, that rendering is how the model writes it."""
    source = template.traced.source
    tags = tag_pair(source)
    read = fields_read(template)
    if tags is None and not read:
        return None
    tags = tags or DEFAULT_TAGS
    asked = [{"role": "user", "content": user}]
    for field in ("reasoning_content", "reasoning"):
        reply = {"role": "assistant", "content": PROBE_REPLY, field: PROBE_REASONING}
        text = render([*asked, reply], False)
        if text is not None and PROBE_REASONING in text and PROBE_REPLY in text:
            before = render(asked, False) or ""  # where the assistant message starts
            at = text.index(PROBE_REASONING)
            found = before and text.startswith(before) and len(before) <= at
            start = len(before) if found else text.rfind(tags[0], 0, at)
            answer = text.find(PROBE_REPLY, at + len(PROBE_REASONING))
            if start >= 0 and answer >= 0:
                return ReasoningFormat(text[start:at], text[at + len(PROBE_REASONING) : answer], field, tags)
    field = None
    if read:  # read but not rendered here (say, only for turns after the last user message)
        field = "reasoning" if read == {"reasoning"} else "reasoning_content"
    return ReasoningFormat(f"{tags[0]}\n", f"\n{tags[1]}\n\n", field, tags)
