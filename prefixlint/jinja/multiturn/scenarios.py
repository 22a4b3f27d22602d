"""The conversations the multi-turn analysis replays: fixed data, so findings are reproducible.

A scenario is a first request and a list of steps; each step is the assistant message the model
generated for the request before it and the message that comes next (a user turn or a tool
result). Turn k's request is the system message (if any), the first messages and k-1 steps.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from typing import Any

from prefixlint.jinja.inputs import ASSISTANT_REPLY, FOLLOW_UP, SYSTEM_PROMPT, TOOLS, USER_TURNS
from prefixlint.jinja.reasoning import ReasoningFormat
from prefixlint.jinja.switches import spelled

REPLIES = (ASSISTANT_REPLY, "The capital of Germany is Berlin.")
USERS = (USER_TURNS[0], FOLLOW_UP, "And what about Japan?")
# Distinct per reply, so that a reasoning missing from the next turn can be found by its text.
REASONING = (
    "The user asks for the capital of France; that is Paris.",
    "Now Germany: its capital is Berlin.",
)
WEATHER_QUESTION = "What is the weather in Paris right now?"
TOOL_CALL_ID = "call00001"  # Mistral templates want 9 alphanumeric characters
TOOL_ARGUMENTS = {"city": "Paris"}
TOOL_RESULT = '{"temperature": 18, "condition": "sunny"}'
FINAL_REPLY = "It is 18 degrees and sunny in Paris."
TOOL_CALL_REASONING = "The user wants live weather; I should call get_weather for Paris."
FINAL_REASONING = "The tool says 18 degrees and sunny."


@dataclass(frozen=True)
class Step:
    reply: dict[str, Any]  # what the model generated for the previous request
    follow: dict[str, Any]  # the next user turn or tool result
    reply_text: str  # the plain text of the reply, to find where it ends ("" for a tool call)
    reasoning: str  # the reasoning the reply carries ("" if none)


@dataclass(frozen=True)
class Scenario:
    name: str  # short, used in messages
    label: str  # how a message describes it
    system: bool
    tools: list[dict[str, Any]] | None
    first: tuple[dict[str, Any], ...]
    steps: tuple[Step, ...]
    # Template variables the scenario is rendered with: the mode it runs in (`enable_thinking=true`
    # for reasoning replies when the template closes the think block by default). The caller's
    # own `--var`s win over them.
    kwargs: tuple[tuple[str, Any], ...] = ()

    def with_kwargs(self, kwargs: dict[str, Any]) -> Scenario:
        shown = ", ".join(f"{k}={spelled(v)}" for k, v in kwargs.items())
        return replace(self, kwargs=tuple(kwargs.items()), label=f"{self.label}, {shown}")

    def with_reasoning_field(self, name: str) -> Scenario:
        """The same replies with their reasoning in field `name` instead of the one they have."""
        label = self.label
        steps = []
        for step in self.steps:
            reply = step.reply
            for old in _FIELDS:
                if old in reply and old != name:
                    reply, label = _rename(reply, old, name), label.replace(old, name)
            steps.append(replace(step, reply=reply))
        return replace(self, steps=tuple(steps), label=label)

    def turn(self, k: int) -> list[dict[str, Any]]:
        """The messages of turn k (1-based)."""
        messages = [{"role": "system", "content": SYSTEM_PROMPT}] if self.system else []
        messages.extend(self.first)
        for step in self.steps[: k - 1]:
            messages.extend((step.reply, step.follow))
        return messages

    @property
    def turns(self) -> int:
        return len(self.steps) + 1


_FIELDS = ("reasoning_content", "reasoning")


def _rename(message: dict[str, Any], old: str, new: str) -> dict[str, Any]:
    return {(new if k == old else k): v for k, v in message.items()}


def _user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def _plain(i: int) -> dict[str, Any]:
    return {"role": "assistant", "content": REPLIES[i]}


def _inline(fmt: ReasoningFormat) -> Any:
    return lambda i: {"role": "assistant", "content": fmt.inline(REASONING[i], REPLIES[i])}


def _field(fmt: ReasoningFormat) -> Any:
    return lambda i: {
        "role": "assistant",
        "content": REPLIES[i],
        fmt.field or "reasoning_content": REASONING[i],
    }


def _chat(name: str, label: str, system: bool, tools: list | None, reply: Any, reasoning: bool) -> Scenario:
    steps = tuple(
        Step(reply(i), _user(USERS[i + 1]), REPLIES[i], REASONING[i] if reasoning else "") for i in range(2)
    )
    return Scenario(name, label, system, tools, (_user(USERS[0]),), steps)


def tool_call_message(
    arguments_as: str, content: str | None, reasoning: str, field: str = "reasoning_content"
) -> dict[str, Any]:
    arguments: Any = TOOL_ARGUMENTS if arguments_as == "dict" else json.dumps(TOOL_ARGUMENTS)
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {
                "id": TOOL_CALL_ID,
                "type": "function",
                "function": {"name": "get_weather", "arguments": arguments},
            }
        ],
    }
    if reasoning:
        message[field] = reasoning
    return message


def agentic(arguments_as: str, content: str | None, reasoning: ReasoningFormat | None = None) -> Scenario:
    """Ask → tool call → tool result → final answer → next user turn; with `reasoning` (a format
    whose field the template reads), each assistant message carries its reasoning there."""
    field = reasoning.field if reasoning is not None and reasoning.field else "reasoning_content"
    call = tool_call_message(arguments_as, content, TOOL_CALL_REASONING if reasoning else "", field)
    result = {"role": "tool", "tool_call_id": TOOL_CALL_ID, "name": "get_weather", "content": TOOL_RESULT}
    final: dict[str, Any] = {"role": "assistant", "content": FINAL_REPLY}
    if reasoning:
        final[field] = FINAL_REASONING
    steps = (
        Step(call, result, "", TOOL_CALL_REASONING if reasoning else ""),
        Step(final, _user(FOLLOW_UP), FINAL_REPLY, FINAL_REASONING if reasoning else ""),
    )
    name = "agentic+reasoning" if reasoning else "agentic"
    label = "agent loop with tool calls" + (" and reasoning" if reasoning else "")
    return Scenario(
        f"{name}[arguments={arguments_as}, content={content!r}]",
        label,
        True,
        TOOLS,
        (_user(WEATHER_QUESTION),),
        steps,
    )


# Tool-call shapes differ between templates: the first that renders is kept.
TOOL_CALL_SHAPES = (("dict", ""), ("dict", None), ("str", ""), ("str", None))


def chat_scenarios(
    *, reads_tools: bool, tools_required: bool, reasoning: ReasoningFormat | None = None
) -> list[Scenario]:
    """The chat scenarios that apply to a template (agent loops are built by the caller, which
    needs to try the tool-call shapes). A reasoning model's replies carry their reasoning where
    the template reads it back (`reasoning`): in its field, or inline in the content when it
    reads none (a client without a reasoning parser sends the reply as the model wrote it)."""
    forced = TOOLS if tools_required else None
    out = [
        _chat("plain+sys", "plain chat with a system message", True, forced, _plain, False),
        _chat("plain-nosys", "plain chat without a system message", False, forced, _plain, False),
    ]
    if reads_tools and not tools_required:
        out += [
            _chat("tools+sys", "chat with tools and a system message", True, TOOLS, _plain, False),
            _chat("tools-nosys", "chat with tools, without a system message", False, TOOLS, _plain, False),
        ]
    if reasoning is not None and reasoning.field is None:
        out.append(
            _chat(
                "reasoning-inline+sys",
                f"replies with {reasoning.tags[0]} reasoning in the content",
                True,
                forced,
                _inline(reasoning),
                True,
            )
        )
    elif reasoning is not None:
        label = f"replies with a {reasoning.field} field"
        out.append(_chat("reasoning-field+sys", label, True, forced, _field(reasoning), True))
    return out
