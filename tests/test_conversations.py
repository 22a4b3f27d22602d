"""`explain --log` conversations: logs of agent loops written here in the providers' documented
request shapes (OpenAI chat completions, Anthropic messages; bare bodies, gateway records and
LiteLLM payloads), each with one harness fault, checked for the conversation, the request, the
part, the message index and the kind of the break; tokens lost are derived from the ChatML text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli
from prefixlint.explain.body_diff import compare, difference
from prefixlint.explain.conversations import Conversations
from prefixlint.models.tokens import load_tokenizer

ROOT = Path(__file__).resolve().parent.parent
SYSTEM = "You are a coding agent working in the user's repository. Read before you edit; run the tests."
REMINDER = "<system-reminder>Keep the todo list up to date.</system-reminder>"
TOOLS_OPENAI = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} a file of the repository",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string"}},
                "required": ["path"],
            },
        },
    }
    for name in ("read", "write", "grep")
]
TOOLS_ANTHROPIC = [
    {
        "name": name,
        "description": f"{name} a file of the repository",
        "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}},
    }
    for name in ("read", "write", "grep")
]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(None)


def n_tokens(tok: Any, text: str) -> int:
    return len(tok.encode(text).ids)


def chatml(messages: list[tuple[str, str]]) -> str:
    """The default template's rendering (requests.DEFAULT_TEMPLATE), with the generation prompt."""
    return "".join(f"<|im_start|>{r}\n{c}<|im_end|>\n" for r, c in messages) + "<|im_start|>assistant\n"


def lost_between(tok: Any, a: str, b: str) -> int:
    """Tokens of prompt `a` after the characters it shares with `b`: what `b` computes again."""
    k = 0
    while k < min(len(a), len(b)) and a[k] == b[k]:
        k += 1
    return n_tokens(tok, a) - n_tokens(tok, a[:k])


def openai(messages: list[dict[str, Any]], *, user: str | None = "u-1", tools: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"model": "gpt-4o", "messages": messages}
    if user is not None:
        body["user"] = user
    if tools is not None:
        body["tools"] = tools
    return body


def anthropic(
    messages: list[dict[str, Any]], *, system: Any = None, session: str = "sess-1"
) -> dict[str, Any]:
    """A gateway record around an Anthropic body, as fixtures/explain/anthropic_gateway.jsonl."""
    if system is None:
        system = [{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}]
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 1024,
        "system": system,
        "messages": messages,
        "metadata": {"user_id": session},
    }
    return {"request": body, "response": {"usage": {"input_tokens": 10}}, "timestamp": "2025-04-01T10:00:00Z"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def blocks(*texts: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": t} for t in texts]


def explain(tmp_path: Path, records: list[Any], *args: str) -> dict[str, Any]:
    log = tmp_path / "agent.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = CliRunner().invoke(cli, ["explain", "--log", str(log), "--format", "json", *args])
    assert result.exit_code == 0, result.output
    return json.loads(result.output)["conversations"]


def only_break(conversations: dict[str, Any]) -> dict[str, Any]:
    assert len(conversations["breaks"]) == 1, conversations["breaks"]
    return conversations["breaks"][0]


def where(b: dict[str, Any]) -> tuple[Any, ...]:
    return b["conversation"], b["request"], b["previous"], b["part"], b["message_index"], b["kind"]


# --- one test per kind -------------------------------------------------------------------------


def test_a_reminder_moved_from_the_first_message_into_the_newest_is_moved(tmp_path: Path) -> None:
    first = {"role": "user", "content": blocks(REMINDER, "Fix the failing test in app.py")}
    turn2 = [first, reply("Reading app.py."), user("The test is test_login.")]
    turn3 = [
        {"role": "user", "content": blocks("Fix the failing test in app.py")},
        *turn2[1:],
        reply("Fixed the assertion."),
        {"role": "user", "content": blocks(REMINDER, "Now run the suite.")},
    ]
    conv = explain(tmp_path, [anthropic([first]), anthropic(turn2), anthropic(turn3)])
    assert conv["count"] == 1 and conv["requests_checked"] == 2
    b = only_break(conv)
    assert where(b) == ("sess-1", 3, 2, "messages", 0, "moved")
    assert REMINDER in b["difference"].splitlines()[0] and REMINDER not in b["difference"].splitlines()[1]


def test_a_system_replayed_as_a_string_is_shape_and_loses_its_breakpoint(tmp_path: Path, tok: Any) -> None:
    turn1 = [user("Where is the config read?")]
    turn2 = [*turn1, reply("In settings.py."), user("Change its default.")]
    conv = explain(tmp_path, [anthropic(turn1), anthropic(turn2, system=SYSTEM)])
    b = only_break(conv)
    assert where(b) == ("sess-1", 2, 1, "system", 0, "shape")
    assert '"cache_control"' in b["difference"]
    # The text is unchanged, so the tokens are too: what is lost is what the vanished breakpoint
    # cached, the prompt through the system text.
    assert b["tokens_lost"] == n_tokens(tok, f"<|im_start|>system\n{SYSTEM}")


def test_a_vanished_cache_control_alone_is_cache_control(tmp_path: Path) -> None:
    turn1 = [user("Where is the config read?")]
    turn2 = [*turn1, reply("In settings.py."), user("Change its default.")]
    conv = explain(tmp_path, [anthropic(turn1), anthropic(turn2, system=blocks(SYSTEM))])
    b = only_break(conv)
    assert where(b) == ("sess-1", 2, 1, "system", 0, "cache-control")
    assert b["tokens_lost"] > 0


def test_a_trailing_newline_present_then_absent_is_whitespace(tmp_path: Path, tok: Any) -> None:
    sys_msg = {"role": "system", "content": SYSTEM}
    turn1 = [sys_msg, user("Summarise README.md\n")]
    turn2 = [*turn1, reply("It describes a linter."), user("And CONTRIBUTING.md?")]
    turn3 = [sys_msg, user("Summarise README.md"), *turn2[2:], reply("It asks for tests."), user("Thanks")]
    conv = explain(tmp_path, [openai(turn1), openai(turn2), openai(turn3)])
    b = only_break(conv)
    assert where(b) == ("u-1", 3, 2, "messages", 1, "whitespace")
    assert b["difference"] == '-"user\\nSummarise README.md\\n"\n+"user\\nSummarise README.md"'
    prev = chatml(
        [
            ("system", SYSTEM),
            ("user", "Summarise README.md\n"),
            *[(m["role"], m["content"]) for m in turn2[2:]],
        ]
    )
    cur = chatml([(m["role"], m["content"]) for m in turn3])
    assert b["tokens_lost"] == lost_between(tok, prev, cur)
    # A break in message 1 loses at least every token of the messages after it.
    assert b["tokens_lost"] >= n_tokens(tok, chatml([(m["role"], m["content"]) for m in turn2[2:]]))


def test_an_environment_block_only_in_the_newest_message_edits_the_one_before(tmp_path: Path) -> None:
    def env(clock: str) -> str:
        return f"<environment_details>\nTime: {clock}\nOpen tabs: app.py\n</environment_details>"

    turn1 = [{"role": "user", "content": blocks("Add a --verbose flag.", env("10:00:01"))}]
    turn2 = [
        {"role": "user", "content": blocks("Add a --verbose flag.")},
        reply("Added it to cli.py."),
        {"role": "user", "content": blocks("Document it.", env("10:00:09"))},
    ]
    turn3 = [
        *turn2[:2],
        {"role": "user", "content": blocks("Document it.")},
        reply("Documented."),
        {"role": "user", "content": blocks("Commit.", env("10:00:17"))},
    ]
    conv = explain(tmp_path, [anthropic(turn1), anthropic(turn2), anthropic(turn3)])
    assert conv["requests_checked"] == 2
    found = [where(b) for b in conv["breaks"]]
    assert sorted(found, key=lambda w: w[1]) == [
        ("sess-1", 2, 1, "messages", 0, "edited"),
        ("sess-1", 3, 2, "messages", 2, "edited"),
    ]


def test_tools_re_sent_in_another_order_are_reordered(tmp_path: Path, tok: Any) -> None:
    turn1 = [user("List the modules.")]
    turn2 = [*turn1, reply("There are three."), user("Open the first.")]
    shuffled = [TOOLS_OPENAI[2], TOOLS_OPENAI[0], TOOLS_OPENAI[1]]
    conv = explain(tmp_path, [openai(turn1, tools=TOOLS_OPENAI), openai(turn2, tools=shuffled)])
    b = only_break(conv)
    assert where(b) == ("u-1", 2, 1, "tools", 0, "reordered")
    assert b["difference"] == '-["read", "write", "grep"]\n+["grep", "read", "write"]'
    # The default ChatML template renders no tools; the server puts them first: the whole
    # previous prompt is computed again.
    assert b["tokens_lost"] == n_tokens(tok, chatml([(m["role"], m["content"]) for m in turn1]))


def test_tools_of_an_anthropic_body_in_another_order_are_reordered(tmp_path: Path) -> None:
    turn1 = [user("List the modules.")]
    turn2 = [*turn1, reply("There are three."), user("Open the first.")]
    first, second = anthropic(turn1), anthropic(turn2)
    first["request"]["tools"] = TOOLS_ANTHROPIC
    second["request"]["tools"] = TOOLS_ANTHROPIC[::-1]
    b = only_break(explain(tmp_path, [first, second]))
    assert where(b) == ("sess-1", 2, 1, "tools", 0, "reordered")


def test_a_dropped_message_is_removed(tmp_path: Path, tok: Any) -> None:
    turn1 = [user("Plan the refactor."), reply("Step one: split models.py."), user("Go.")]
    turn2 = [*turn1, reply("Split it."), user("Next step.")]
    turn3 = [turn2[0], *turn2[2:], reply("Moved the helpers."), user("Run the tests.")]
    conv = explain(tmp_path, [openai(turn1), openai(turn2), openai(turn3)])
    b = only_break(conv)
    assert where(b) == ("u-1", 3, 2, "messages", 1, "removed")
    prev = chatml([(m["role"], m["content"]) for m in turn2])
    cur = chatml([(m["role"], m["content"]) for m in turn3])
    assert b["tokens_lost"] == lost_between(tok, prev, cur)
    # Everything from message 1 on, but the `<|im_start|>` both prompts have there.
    from_message_1 = chatml([(m["role"], m["content"]) for m in turn2[1:]])
    assert b["tokens_lost"] == n_tokens(tok, prev) - n_tokens(
        tok, prev[: len(prev) - len(from_message_1)] + "<|im_start|>"
    )


def test_a_message_inserted_before_the_end_is_added(tmp_path: Path) -> None:
    turn1 = [user("Find the slow query."), reply("It is in reports.py."), user("Why is it slow?")]
    turn2 = [
        *turn1[:2],
        {"role": "user", "content": "[compacted context]"},
        turn1[2],
        reply("No index."),
        user("Add one."),
    ]
    b = only_break(explain(tmp_path, [openai(turn1), openai(turn2)]))
    assert where(b) == ("u-1", 2, 1, "messages", 2, "added")


# --- clean conversations, grouping --------------------------------------------------------------


def clean_openai(n: int, who: str, *, user_key: str | None) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}, user(f"{who}: open issue 1")]
    out = []
    for k in range(n):
        out.append(openai(list(messages), user=user_key, tools=TOOLS_OPENAI))
        messages += [reply(f"{who}: done step {k}."), user(f"{who}: now step {k + 1}")]
    return out


def test_a_clean_multi_turn_conversation_reports_no_break(tmp_path: Path) -> None:
    conv = explain(tmp_path, clean_openai(5, "ana", user_key="u-1"))
    assert conv == {"count": 1, "requests_checked": 4, "breaks_by_kind": {}, "breaks": []}


def test_a_clean_anthropic_conversation_with_tool_use_reports_no_break(tmp_path: Path) -> None:
    call = {"type": "tool_use", "id": "toolu_1", "name": "read", "input": {"path": "app.py"}}
    result = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "print('hi')"}
    turn1 = [{"role": "user", "content": blocks(REMINDER, "What does app.py print?")}]
    turn2 = [*turn1, {"role": "assistant", "content": [call]}, {"role": "user", "content": [result]}]
    turn3 = [*turn2, reply("It prints hi."), user("Thanks.")]
    records = [anthropic(t) for t in (turn1, turn2, turn3)]
    for r in records:
        r["request"]["tools"] = TOOLS_ANTHROPIC
    conv = explain(tmp_path, records)
    assert (conv["count"], conv["requests_checked"], conv["breaks"]) == (1, 2, [])


def test_a_breakpoint_moved_to_the_newest_message_each_turn_is_no_break(tmp_path: Path) -> None:
    """Anthropic's documented multi-turn caching: `cache_control` on the newest user message, so
    a message sent as a string comes back as a block list and loses its marker a turn later."""

    def marked(text: str) -> dict[str, Any]:
        return {
            "role": "user",
            "content": [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}],
        }

    turn1 = [marked("Read app.py.")]
    turn2 = [user("Read app.py."), reply("Read it."), marked("Now tests.py.")]
    turn3 = [
        *turn2[:2],
        {"role": "user", "content": blocks("Now tests.py.")},
        reply("Read it too."),
        marked("Run them."),
    ]
    tools = [*TOOLS_ANTHROPIC[:2], {**TOOLS_ANTHROPIC[2], "cache_control": {"type": "ephemeral"}}]
    records = [anthropic(turn1, system=SYSTEM), anthropic(turn2), anthropic(turn3)]
    for r in records[1:]:
        r["request"]["tools"] = tools  # a breakpoint added on the tools loses nothing either
    records[0]["request"]["tools"] = TOOLS_ANTHROPIC
    conv = explain(tmp_path, records)
    assert (conv["requests_checked"], conv["breaks"]) == (2, [])


def test_a_breakpoint_dropped_from_the_history_with_none_after_it_is_cache_control(tmp_path: Path) -> None:
    marked = {
        "role": "user",
        "content": [{"type": "text", "text": "Read app.py.", "cache_control": {"type": "ephemeral"}}],
    }
    turn1 = [marked]
    turn2 = [{"role": "user", "content": blocks("Read app.py.")}, reply("Read it."), user("Now tests.py.")]
    b = only_break(explain(tmp_path, [anthropic(turn1), anthropic(turn2)]))
    assert where(b) == ("sess-1", 2, 1, "messages", 0, "cache-control")


def test_a_shape_change_the_template_renders_differently_is_a_break(tmp_path: Path) -> None:
    """`content: null` and `""` are one text to most templates, not to one that prints it as is."""
    template = tmp_path / "raw.jinja"
    template.write_text(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        encoding="utf-8",
    )
    call = {"id": "call_1", "type": "function", "function": {"name": "read", "arguments": '{"path": "a.py"}'}}
    turn1 = [user("Read a.py."), {"role": "assistant", "content": None, "tool_calls": [call]}]
    turn1.append({"role": "tool", "tool_call_id": "call_1", "content": "x = 1"})
    turn2 = [turn1[0], {**turn1[1], "content": ""}, turn1[2], reply("x is 1."), user("Thanks.")]
    records = [openai(turn1), openai(turn2)]
    assert explain(tmp_path, records)["breaks"] == []  # the default template prints `content or ''`
    b = only_break(explain(tmp_path, records, "--template", str(template)))
    assert where(b) == ("u-1", 2, 1, "messages", 1, "shape")
    assert b["tokens_lost"] > 0


def test_interleaved_conversations_without_keys_are_chained_by_their_history(tmp_path: Path) -> None:
    ana, bo = clean_openai(3, "ana", user_key=None), clean_openai(3, "bo", user_key=None)
    # bo's last turn drops its first reply: the one break, in bo's conversation.
    bo[2]["messages"] = [m for m in bo[2]["messages"] if m.get("content") != "bo: done step 0."]
    records = [ana[0], bo[0], ana[1], bo[1], ana[2], bo[2]]
    conv = explain(tmp_path, records)
    assert (conv["count"], conv["requests_checked"]) == (2, 4)
    assert where(only_break(conv)) == ("line 2", 6, 4, "messages", 2, "removed")


def test_two_conversations_of_one_user_key_are_told_apart_by_their_history(tmp_path: Path) -> None:
    ana, bo = clean_openai(3, "ana", user_key="u-1"), clean_openai(3, "bo", user_key="u-1")
    bo[2]["messages"] = [m for m in bo[2]["messages"] if m.get("content") != "bo: done step 0."]
    conv = explain(tmp_path, [ana[0], bo[0], ana[1], bo[1], ana[2], bo[2]])
    assert (conv["count"], conv["requests_checked"]) == (2, 4)
    assert where(only_break(conv)) == ("u-1#2", 6, 4, "messages", 2, "removed")


def test_litellm_payloads_are_grouped_and_checked_too(tmp_path: Path) -> None:
    def payload(messages: list[dict[str, Any]], k: int) -> dict[str, Any]:
        return {
            "call_type": "acompletion",
            "status": "success",
            "startTime": 1743465550.0 + k,
            "messages": messages,
            "model": "gpt-4o",
            "metadata": {"user_api_key_user_id": "u-1"},
        }

    turn1 = [{"role": "system", "content": SYSTEM}, user("Explain the cache.")]
    turn2 = [
        {"role": "system", "content": SYSTEM + " Be brief."},
        turn1[1],
        reply("It reuses prefixes."),
        user("More."),
    ]
    conv = explain(tmp_path, [payload(turn1, 0), payload(turn2, 1)], "--log-format", "litellm")
    assert where(only_break(conv)) == ("line 1", 2, 1, "system", 0, "edited")


def test_a_plain_prompt_log_has_no_conversations(tmp_path: Path) -> None:
    conv = explain(tmp_path, [{"prompt": "a"}, {"prompt": "ab"}])
    assert conv == {"count": 0, "requests_checked": 0, "breaks_by_kind": {}, "breaks": []}


def test_a_request_without_history_starts_a_conversation_even_in_a_session(tmp_path: Path) -> None:
    first = clean_openai(2, "ana", user_key="u-1")
    again = clean_openai(2, "ana", user_key="u-1")
    conv = explain(tmp_path, first + again)
    assert (conv["count"], conv["requests_checked"], conv["breaks"]) == (2, 2, [])


# --- the pieces ---------------------------------------------------------------------------------


def test_key_order_of_a_tool_schema_is_reordered() -> None:
    tool = {"name": "read", "input_schema": {"type": "object", "properties": {}}}
    swapped = {"input_schema": {"properties": {}, "type": "object"}, "name": "read"}
    found = compare({"tools": [tool], "messages": []}, {"tools": [swapped], "messages": []})
    assert found is not None and (found.part, found.index, found.kind) == ("tools", 0, "reordered")


def test_the_difference_is_the_smallest_span_with_context() -> None:
    a = "x" * 40 + "Time: 10:00:01\n" + "y" * 40
    b = "x" * 40 + "Time: 10:00:09\n" + "y" * 40
    assert difference(a, b) == (
        '-"…xxxxxxxxxxxTime: 10:00:01\\nyyyyyyyyyyyyyyyyyyyyyyy…"\n'
        '+"…xxxxxxxxxxxTime: 10:00:09\\nyyyyyyyyyyyyyyyyyyyyyyy…"'
    )


def test_open_conversations_are_bounded() -> None:
    assert Conversations(max_open=2).max_open == 2


def dropped_reply_log(tmp_path: Path) -> str:
    """Two turns; the second drops the first reply."""
    turn1 = [user("Plan the refactor."), reply("Step one."), user("Go.")]
    turn2 = [turn1[0], turn1[2], reply("Done."), user("Next.")]
    log = tmp_path / "agent.jsonl"
    log.write_text("".join(json.dumps(openai(t)) + "\n" for t in (turn1, turn2)), encoding="utf-8")
    return str(log)


def test_the_text_report_shows_the_top_breaks_with_their_difference(tmp_path: Path) -> None:
    log = dropped_reply_log(tmp_path)
    text = CliRunner().invoke(cli, ["explain", "--log", log]).output
    assert (
        "1 conversation(s); 1 request(s) checked against the previous one of their conversation: 1 break(s)"
        in text
    )
    assert "1. conversation u-1: line 2 does not extend line 1 at messages[1] (removed):" in text
    assert '   -"assistant\\nStep one."' in text


def test_the_html_page_lists_the_breaks(tmp_path: Path) -> None:
    log = dropped_reply_log(tmp_path)
    page = tmp_path / "report.html"
    assert CliRunner().invoke(cli, ["explain", "--log", log, "--html", str(page)]).exit_code == 0
    html = page.read_text(encoding="utf-8")
    assert 'id="conversations"' in html and '<tr class="break">' in html and "removed" in html
