"""Agent loops that rewrite their own history, found in Python (issue 24, Python side): a history
kept across turns and sent to a model so that turn N+1 does not extend turn N is PFX401 at the
line of the truncation or filter (warning when a modelled sink sends it, info when none is in
reach), a per-turn block written into the last message of a copy is PFX402; append-only loops,
a truncation made once before the loop, slices for display and lists no sink sends are silent."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.api import Options, lint_paths

HEADER = """\
import copy
from collections import deque

from openai import OpenAI

client = OpenAI()
SYSTEM = {"role": "system", "content": "You are a careful assistant. Answer briefly and cite sources."}
"""
START = HEADER.count("\n") + 1  # the line of a snippet's first line


def findings(tmp_path: Path, body: str, codes: tuple[str, ...] = ("PFX401", "PFX402")) -> list[tuple]:
    path = tmp_path / "agent.py"
    path.write_text(HEADER + body, encoding="utf-8")
    report = lint_paths([str(path)], Options())
    return [
        (d.code, d.span.line - START + 1, d.severity.label) for d in report.diagnostics if d.code in codes
    ]


SLIDING = """\
class Agent:
    def __init__(self) -> None:
        self.history = [SYSTEM]

    def turn(self, question: str) -> str:
        self.history.append({"role": "user", "content": question})
        window = [SYSTEM] + self.history[-10:]
        reply = client.chat.completions.create(model="gpt-4o", messages=window)
        self.history.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply.choices[0].message.content
"""


def test_sliding_window_sent_is_a_warning_at_the_slice(tmp_path: Path) -> None:
    assert findings(tmp_path, SLIDING) == [("PFX401", 7, "warning")]


def test_the_message_says_what_is_recomputed(tmp_path: Path) -> None:
    path = tmp_path / "agent.py"
    path.write_text(HEADER + SLIDING, encoding="utf-8")
    (found,) = [d for d in lint_paths([str(path)], Options()).diagnostics if d.code == "PFX401"]
    assert "`self.history[-10:]`" in found.message
    assert "whole retained window is recomputed every turn" in found.message
    assert "append-only" in found.hint


@pytest.mark.parametrize(
    ("drop", "line"),
    [
        ("        if len(self.history) > 20:\n            self.history.pop(0)\n", 5),
        ("        if len(self.history) > 20:\n            self.history.pop(1)\n", 5),
        ("        if len(self.history) > 20:\n            del self.history[1:3]\n", 5),
        ("        while len(self.history) > 20:\n            del self.history[0]\n", 5),
        ("        self.history = self.history[:1] + self.history[-20:]\n", 4),
        ("        keep = self.limit\n        self.history = self.history[-keep:]\n", 5),
    ],
    ids=["pop0", "pop1", "del-slice", "del-head", "system-kept", "computed"],
)
def test_each_head_drop_on_a_kept_history(tmp_path: Path, drop: str, line: int) -> None:
    body = (
        "class Agent:\n"
        "    def turn(self, question: str) -> str:\n"
        '        self.history.append({"role": "user", "content": question})\n'
        f"{drop}"
        '        reply = client.chat.completions.create(model="gpt-4o", messages=self.history)\n'
        "        return reply.choices[0].message.content\n"
    )
    assert findings(tmp_path, body) == [("PFX401", line, "warning")]


@pytest.mark.parametrize(
    ("cut", "found"),
    [
        ("        if len(self.history) > 40:\n            self.history = self.history[-20:]\n", []),
        (
            "        if len(self.history) > LIMIT:\n"
            "            self.history = self.history[-(LIMIT // 2) :]\n",
            [],
        ),
        (
            "        if len(self.history) > 20:\n            self.history = self.history[-20:]\n",
            [("PFX401", 5, "warning")],
        ),
    ],
    ids=["halved", "halved-by-name", "one-per-turn"],
)
def test_cutting_in_large_steps_is_the_fix_not_a_finding(tmp_path: Path, cut: str, found: list) -> None:
    """Halving a full history keeps the prefix on most turns (the hint's fix); cutting it back to
    the limit drops one message on every turn once full."""
    body = (
        "LIMIT = 40\n\n\nclass Agent:\n"
        "    def turn(self, question: str) -> str:\n"
        '        self.history.append({"role": "user", "content": question})\n'
        f"{cut}"
        '        reply = client.chat.completions.create(model="gpt-4o", messages=self.history)\n'
        "        return reply.choices[0].message.content\n"
    )
    shifted = [(code, line + 3, severity) for code, line, severity in found]
    assert findings(tmp_path, body) == shifted


def test_deque_with_maxlen_is_reported_where_it_is_made(tmp_path: Path) -> None:
    body = """\
history = deque(maxlen=20)


def turn(question: str) -> str:
    history.append({"role": "user", "content": question})
    reply = client.chat.completions.create(model="gpt-4o", messages=[SYSTEM, *history])
    history.append({"role": "assistant", "content": reply.choices[0].message.content})
    return reply.choices[0].message.content
"""
    assert findings(tmp_path, body) == [("PFX401", 1, "warning")]


def test_a_loop_local_history_windowed_each_iteration(tmp_path: Path) -> None:
    body = """\
def chat(questions: list[str]) -> None:
    messages = [SYSTEM]
    for question in questions:
        messages.append({"role": "user", "content": question})
        reply = client.chat.completions.create(model="gpt-4o", messages=messages[-8:])
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
"""
    assert findings(tmp_path, body) == [("PFX401", 5, "warning")]


@pytest.mark.parametrize("build", ["fitted = [SYSTEM, *msg]", "fitted, error = fit(msg)"])
def test_a_list_built_anew_on_each_pass_is_not_kept(tmp_path: Path, build: str) -> None:
    """ragflow's structured-output retries: the messages are fitted again at the top of each
    pass, so dropping the system message after the call rewrites nothing the next pass sends."""
    body = """\
def ask(msg: list[dict], retries: int) -> None:
    for _ in range(retries):
        BUILD
        reply = client.chat.completions.create(model="gpt-4o", messages=fitted)
        fitted.pop(0)
        fitted.append({"role": "user", "content": "That was not JSON."})
"""
    assert findings(tmp_path, body.replace("BUILD", build)) == []


def test_append_only_loop_is_silent(tmp_path: Path) -> None:
    body = """\
def chat(questions: list[str]) -> None:
    messages = [SYSTEM]
    for question in questions:
        messages.append({"role": "user", "content": question})
        reply = client.chat.completions.create(model="gpt-4o", messages=messages)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
        print(messages[-3:])
"""
    assert findings(tmp_path, body) == []


def test_truncation_once_before_the_loop_is_silent(tmp_path: Path) -> None:
    body = """\
def chat(saved: list[dict], questions: list[str]) -> None:
    messages = saved[-50:]
    for question in questions:
        messages.append({"role": "user", "content": question})
        reply = client.chat.completions.create(model="gpt-4o", messages=messages)
        messages.append({"role": "assistant", "content": reply.choices[0].message.content})
"""
    assert findings(tmp_path, body) == []


def test_a_slice_that_skips_the_system_message_every_turn_is_silent(tmp_path: Path) -> None:
    body = """\
class Agent:
    def turn(self, question: str) -> str:
        self.history.append({"role": "user", "content": question})
        reply = client.chat.completions.create(model="gpt-4o", messages=[SYSTEM, *self.history[1:]])
        return reply.choices[0].message.content
"""
    assert findings(tmp_path, body) == []


def test_a_slice_that_only_feeds_a_query_is_silent(tmp_path: Path) -> None:
    """AutoGPT's chat loop: the last nine messages are a memory query; what the query returns is
    text in a system message, not the messages sent."""
    body = """\
def chat(history: list, memory) -> None:
    while True:
        relevant = memory.get_relevant(str(history[-9:]), 10)
        context = [SYSTEM, {"role": "system", "content": relevant}]
        reply = client.chat.completions.create(model="gpt-4o", messages=context)
        history.append({"role": "assistant", "content": reply.choices[0].message.content})
"""
    assert findings(tmp_path, body) == []


def test_deleting_from_a_computed_start_is_not_taken_for_the_head(tmp_path: Path) -> None:
    """langroid's `clear_history(start=-2)`: by default it deletes the last two messages."""
    body = """\
class Agent:
    def clear_history(self, start: int = -2) -> None:
        n = len(self.message_history)
        start = max(0, n + start) if start < 0 else start
        del self.message_history[start:n]

    def turn(self, question: str) -> str:
        self.message_history.append({"role": "user", "content": question})
        reply = client.chat.completions.create(model="gpt-4o", messages=self.message_history)
        return reply.choices[0].message.content
"""
    assert findings(tmp_path, body) == []


def test_a_list_that_never_grows_is_silent(tmp_path: Path) -> None:
    body = """\
class Agent:
    def __init__(self, examples: list[dict]) -> None:
        self.examples = examples

    def turn(self, question: str) -> str:
        shots = self.examples[-4:]
        reply = client.chat.completions.create(
            model="gpt-4o", messages=[SYSTEM, *shots, {"role": "user", "content": question}]
        )
        return reply.choices[0].message.content
"""
    assert findings(tmp_path, body) == []


ROLE_FILTER = """\
class Agent:
    def __init__(self) -> None:
        self.history = []

    def turn(self, question: str) -> str:
        self.history.append({"role": "user", "content": question})
        while True:
            reply = client.chat.completions.create(model="gpt-4o", messages=self.history, tools=TOOLS)
            message = reply.choices[0].message
            self.history.append(message)
            if not message.tool_calls:
                break
            for call in message.tool_calls:
                self.history.append({"role": "tool", "tool_call_id": call.id, "content": run(call)})
        self.history = [m for m in self.history if m["role"] in ("user", "assistant")]
        return message.content
"""


def test_role_filter_dropping_tool_results_is_a_warning(tmp_path: Path) -> None:
    assert findings(tmp_path, "TOOLS = []\n" + ROLE_FILTER) == [("PFX401", 16, "warning")]


def test_role_filter_at_the_sink(tmp_path: Path) -> None:
    body = """\
class Agent:
    def turn(self, question: str) -> str:
        self.history.append({"role": "user", "content": question})
        sent = [m for m in self.history if m["role"] != "tool"]
        reply = client.chat.completions.create(model="gpt-4o", messages=sent)
        return reply.choices[0].message.content
"""
    assert findings(tmp_path, body) == [("PFX401", 4, "warning")]


def test_setting_the_system_message_apart_is_silent(tmp_path: Path) -> None:
    body = """\
class Agent:
    def turn(self, question: str) -> str:
        self.history.append({"role": "user", "content": question})
        rest = [m for m in self.history if m["role"] != "system"]
        reply = client.chat.completions.create(model="gpt-4o", messages=[SYSTEM, *rest])
        return reply.choices[0].message.content
"""
    assert findings(tmp_path, body) == []


def test_role_filter_into_a_stored_history_without_a_sink_is_info(tmp_path: Path) -> None:
    body = """\
def restore(node, trace: list) -> None:
    for message in trace:
        if message.role not in ("user", "assistant"):
            continue
        node.append_input(message)
"""
    assert findings(tmp_path, body) == [("PFX401", 3, "info")]


def test_a_role_dispatch_that_handles_every_message_is_silent(tmp_path: Path) -> None:
    body = """\
class Memory:
    def store(self, trace: list) -> None:
        for message in trace:
            if message.role == "tool":
                self.tool_log.append(message)
                continue
            self.history.append(message)
"""
    assert findings(tmp_path, body) == []


def test_counter_that_skips_the_oldest_is_a_window(tmp_path: Path) -> None:
    body = """\
class Node:
    input: list[Message]

    def clear_input(self, window: int) -> None:
        drop = max(0, len(self.input) - window)
        kept = []
        for message in self.input:
            if drop > 0:
                drop -= 1
                continue
            kept.append(message)
        self.input = kept

    def append_input(self, message: Message) -> None:
        self.input.append(message)
"""
    assert findings(tmp_path, "Message = dict\n" + body) == [("PFX401", 9, "info")]


def test_truncation_that_reaches_no_sink_is_info(tmp_path: Path) -> None:
    body = """\
class Memory:
    def add(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})
        if len(self.messages) > 30:
            self.messages.pop(0)
"""
    assert findings(tmp_path, body) == [("PFX401", 5, "info")]


def test_a_deque_of_message_hashes_is_not_a_conversation(tmp_path: Path) -> None:
    """langroid's infinite-loop detector: `self.history: Deque[str] = deque(maxlen=...)` of hashes."""
    body = """\
class Task:
    def __init__(self, n: int) -> None:
        self.history: deque[str] = deque(maxlen=n)

    def step(self, message: str) -> None:
        self.history.append(hash(message))
"""
    assert findings(tmp_path, body) == []


def test_a_queue_that_is_not_a_conversation_and_reaches_no_sink_is_silent(tmp_path: Path) -> None:
    body = """\
class Worker:
    def push(self, job: str) -> None:
        self.jobs.append(job)
        if len(self.jobs) > 30:
            self.jobs.pop(0)
"""
    assert findings(tmp_path, body) == []


def test_summarising_the_head_is_info_and_says_so(tmp_path: Path) -> None:
    body = """\
class Agent:
    def turn(self, question: str) -> str:
        self.history.append({"role": "user", "content": question})
        if len(self.history) > 40:
            summary = summarize(self.history[:-10])
            self.history = [summary] + self.history[-10:]
        reply = client.chat.completions.create(model="gpt-4o", messages=self.history)
        return reply.choices[0].message.content
"""
    path = tmp_path / "agent.py"
    path.write_text(HEADER + body, encoding="utf-8")
    found = [d for d in lint_paths([str(path)], Options()).diagnostics if d.code == "PFX401"]
    assert [(d.span.line - START + 1, d.severity.label) for d in found] == [(6, "info")]
    assert "summary" in found[0].message and "as the code means them to" in found[0].message


def test_emptying_a_field_of_earlier_steps_is_a_rewrite(tmp_path: Path) -> None:
    """smolagents' screenshot callback: images of steps before the last two are set to None."""
    body = """\
def save_screenshot(memory_step, agent) -> None:
    for previous in agent.memory.steps:
        if previous.step_number <= memory_step.step_number - 2:
            previous.observations_images = None
"""
    assert findings(tmp_path, body) == [("PFX401", 4, "info")]


def test_emptying_a_field_of_a_cache_is_silent(tmp_path: Path) -> None:
    body = """\
def evict(store, now: float) -> None:
    for entry in store.entries:
        if entry.expires < now:
            entry.value = None
"""
    assert findings(tmp_path, body) == []


ENV_BLOCK = """\
class Agent:
    def turn(self, question: str, env: str) -> str:
        self.history.append({"role": "user", "content": question})
        messages = copy.deepcopy(self.history)
        messages[-1]["content"] += env
        reply = client.chat.completions.create(model="gpt-4o", messages=messages)
        self.history.append({"role": "assistant", "content": reply.choices[0].message.content})
        return reply.choices[0].message.content
"""


def test_env_block_in_the_last_message_of_a_copy_is_pfx402(tmp_path: Path) -> None:
    assert findings(tmp_path, ENV_BLOCK) == [("PFX402", 5, "warning")]


def test_env_block_kept_in_the_history_itself_is_silent(tmp_path: Path) -> None:
    body = ENV_BLOCK.replace("copy.deepcopy(self.history)", "self.history")
    assert findings(tmp_path, body) == []


def test_replacing_the_last_message_of_a_shallow_copy_is_pfx402(tmp_path: Path) -> None:
    body = """\
class Agent:
    def turn(self, question: str, env: str) -> str:
        self.history.append({"role": "user", "content": question})
        messages = list(self.history)
        messages[-1] = {"role": "user", "content": question + env}
        reply = client.chat.completions.create(model="gpt-4o", messages=messages)
        return reply.choices[0].message.content
"""
    assert findings(tmp_path, body) == [("PFX402", 5, "warning")]


def test_no_shapes_no_walk(tmp_path: Path) -> None:
    """A module none of whose text can make a finding is not walked (and reports nothing)."""
    from prefixlint.python.history.walk import NEEDLES as _NEEDLES

    assert _NEEDLES.search('client.chat.completions.create(messages=[{"content": q}])') is None
