"""Anthropic's breakpoint cache (explain/breakpoints.py) on hand-computed cases, and PFX503 on logs
written in the Messages API's documented request shape (`system` blocks, content blocks with
`cache_control`, a top-level `cache_control`), one harness fault each; a clean conversation with a
rolling breakpoint reports nothing. Also OpenAI's `prompt_cache_key`, which keys its cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from prefixlint.cli import cli
from prefixlint.engines import Breakpoints, load_engines
from prefixlint.explain.breakpoints import BreakpointCache, blocks_of, breakpoints_of

RULES = Breakpoints()  # the data's numbers: 4 breakpoints, 20 blocks, 300 s, 3600 s
EPHEMERAL = {"type": "ephemeral"}


def chain(n: int) -> tuple[list[bytes], list[int]]:
    """n blocks of 100 tokens each, hashed as one request's prefixes."""
    return [b"p%d" % i for i in range(n)], [100 * (i + 1) for i in range(n)]


def test_a_breakpoint_reads_an_entry_19_blocks_back_but_not_20() -> None:
    hashes, cum = chain(60)
    cache = BreakpointCache(RULES)
    assert cache.serve(hashes, cum, [(10, EPHEMERAL)], 0, 1024).read == 0  # written: 1,100 tokens
    # Its own block and the 19 before it are looked at: block 10 from 29, not from 30.
    assert cache.serve(hashes, cum, [(29, None)], 1, 99_999).read == 1100
    assert cache.serve(hashes, cum, [(30, None)], 2, 99_999).read == 0
    # A second breakpoint within reach of the entry reads it; the latest entry found wins.
    assert cache.serve(hashes, cum, [(12, EPHEMERAL), (50, None)], 3, 1024).read == 1100
    assert cache.serve(hashes, cum, [(31, None)], 4, 99_999).read == 1300  # block 12's entry now


def test_nothing_under_the_minimum_is_written() -> None:
    hashes, cum = chain(30)
    cache = BreakpointCache(RULES)
    served = cache.serve(hashes, cum, [(9, EPHEMERAL)], 0, 1024)  # 1,000 tokens < 1,024
    assert (served.read, served.written) == (0, 0)
    assert cache.serve(hashes, cum, [(9, EPHEMERAL)], 1, 1024).read == 0
    assert cache.serve(hashes, cum, [(10, EPHEMERAL)], 2, 1024).written == 1100
    assert cache.serve(hashes, cum, [(10, EPHEMERAL)], 3, 1024).read == 1100


def test_the_minimum_follows_the_model_name() -> None:
    anthropic = load_engines()["anthropic"]
    assert anthropic.minimum_for("claude-sonnet-4-5-20250929") == 1024
    assert anthropic.minimum_for("claude-opus-4-1-20250805") == 1024
    assert anthropic.minimum_for("claude-opus-4-5-20251101") == 4096
    assert anthropic.minimum_for("claude-haiku-4-5") == 4096
    assert anthropic.minimum_for("claude-3-5-haiku-20241022") == 2048
    assert anthropic.minimum_for("some-other-model") == anthropic.minimum_tokens == 1024


def test_an_entry_lives_five_minutes_from_its_last_read() -> None:
    hashes, cum = chain(20)
    cache = BreakpointCache(RULES)
    cache.serve(hashes, cum, [(15, EPHEMERAL)], 0, 1024)
    assert cache.serve(hashes, cum, [(15, None)], 299, 99_999).read == 1600  # and refreshed
    assert cache.serve(hashes, cum, [(15, None)], 598, 99_999).read == 1600  # 299 s after that read
    assert cache.serve(hashes, cum, [(15, None)], 898, 99_999).read == 0  # 300 s unread: gone


def test_an_hour_ttl_outlives_five_minutes() -> None:
    hashes, cum = chain(20)
    cache = BreakpointCache(RULES)
    cache.serve(hashes, cum, [(15, {"type": "ephemeral", "ttl": "1h"})], 0, 1024)
    assert cache.serve(hashes, cum, [(15, None)], 3599, 99_999).read == 1600
    assert cache.serve(hashes, cum, [(15, None)], 3599 + 3600, 99_999).read == 0


def test_more_than_four_breakpoints_is_refused() -> None:
    hashes, cum = chain(20)
    served = BreakpointCache(RULES).serve(hashes, cum, [(i, EPHEMERAL) for i in (11, 12, 13, 14, 15)], 0, 1)
    assert served.refused and served.written == 0


def test_blocks_and_breakpoints_in_the_documented_order() -> None:
    body = {
        "tools": [{"name": "read", "input_schema": {}, "cache_control": EPHEMERAL}],
        "system": "You are terse.",
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]},
            {"role": "assistant", "content": "c"},
        ],
        "cache_control": EPHEMERAL,  # automatic: the last block
    }
    blocks = blocks_of(body)
    assert [b.where() for b in blocks] == [
        "tools[0]",
        "system[0]",
        "messages[0].content[0]",
        "messages[0].content[1]",
        "messages[1]",
    ]
    assert [at for at, _ in breakpoints_of(body, blocks)] == [0, 4]
    # A string content and a single text block are the same prefix.
    assert blocks_of({"system": "x"})[0].key == blocks_of({"system": [{"type": "text", "text": "x"}]})[0].key


# --- logs ------------------------------------------------------------------------------------------

LONG = " ".join(f"Rule {i}: read the file before you edit it, then run the tests." for i in range(150))


def body(messages: list[dict[str, Any]], *, system: Any = None, **extra: Any) -> dict[str, Any]:
    system = system if system is not None else [{"type": "text", "text": LONG, "cache_control": EPHEMERAL}]
    return {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": system, "messages": messages, **extra}


def record(b: dict[str, Any], minute: float) -> dict[str, Any]:
    seconds = int(minute * 60)
    return {"timestamp": f"2026-01-01T00:{seconds // 60:02d}:{seconds % 60:02d}Z", "body": b}


def marked(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text, "cache_control": EPHEMERAL}]}


def findings(tmp_path: Path, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    result = CliRunner().invoke(cli, ["explain", "--log", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)["breakpoints"]
    assert all(f["code"] == "PFX503" for f in data["findings"])
    return data["findings"]


def place(f: dict[str, Any]) -> tuple[Any, ...]:
    return (f["reason"], f["request"], f["next_request"], f["part"], f["message_index"], f["count"])


def rolling(turns: int, gap_minutes: float = 1.0) -> list[dict[str, Any]]:
    """A clean agent loop: the breakpoint moves to the newest user message each turn."""
    out, history = [], []
    for k in range(turns):
        history.append(marked(f"question {k}"))
        out.append(record(body(list(history)), k * gap_minutes))
        history[-1] = {"role": "user", "content": [{"type": "text", "text": f"question {k}"}]}
        history.append({"role": "assistant", "content": f"answer {k}"})
    return out


def test_a_clean_conversation_with_a_rolling_breakpoint_reports_none(tmp_path: Path) -> None:
    assert findings(tmp_path, rolling(5)) == []


def test_a_breakpoint_on_a_trailing_reminder_the_history_drops(tmp_path: Path) -> None:
    records, history = [], []
    for k in range(3):
        question = {"type": "text", "text": f"question {k}"}
        reminder = {
            "type": "text",
            "text": "<system-reminder>todo</system-reminder>",
            "cache_control": EPHEMERAL,
        }
        records.append(record(body([*history, {"role": "user", "content": [question, reminder]}]), k))
        history += [{"role": "user", "content": [question]}, {"role": "assistant", "content": f"answer {k}"}]
    [found] = findings(tmp_path, records)
    assert place(found) == ("trailing-message", 1, 2, "messages", 0, 2)
    assert found["block_index"] == 1


def test_a_breakpoint_after_a_clock_in_the_system_prompt(tmp_path: Path) -> None:
    def system(minute: int) -> list[dict[str, Any]]:
        return [
            {"type": "text", "text": f"Current time: 00:{minute:02d}"},
            {"type": "text", "text": LONG, "cache_control": EPHEMERAL},
        ]

    records = []
    history: list[dict[str, Any]] = []
    for k in range(3):
        history.append({"role": "user", "content": f"question {k}"})
        records.append(record(body(list(history), system=system(k)), k))
        history.append({"role": "assistant", "content": f"answer {k}"})
    [found] = findings(tmp_path, records)
    assert place(found) == ("after-volatile", 1, 2, "system", 1, 2)
    assert "after system[0]" in found["message"]


def tool_turn(calls: int) -> list[dict[str, Any]]:
    """Two requests: a question, then the same question with `calls` tool calls and their results
    in one turn, the breakpoint on the last result."""
    uses = [
        {"type": "tool_use", "id": f"t{i}", "name": "read", "input": {"path": f"f{i}.py"}}
        for i in range(calls)
    ]
    results = [
        {"type": "tool_result", "tool_use_id": f"t{i}", "content": f"contents {i}"} for i in range(calls)
    ]
    results[-1]["cache_control"] = EPHEMERAL
    second = [
        {"role": "user", "content": "list the files"},
        {"role": "assistant", "content": uses},
        {"role": "user", "content": results},
    ]
    return [record(body([marked("list the files")]), 0), record(body(second), 1)]


def test_a_turn_of_many_tool_results_is_beyond_the_lookback(tmp_path: Path) -> None:
    # The first request's breakpoint is block 1 (system, then its message); the second's is
    # 1 + calls + results: with 12 and 12, 24 blocks on, past the 20 looked at (its own and 19).
    [found] = findings(tmp_path, tool_turn(12))
    assert place(found) == ("beyond-lookback", 1, 2, "messages", 0, 1)
    assert "24 blocks on" in found["message"]
    assert findings(tmp_path, tool_turn(9)) == []  # 18 blocks on: within its own and the 19 before
    [edge] = findings(tmp_path, tool_turn(10))  # 20 on: block 1 is the 21st position back
    assert edge["reason"] == "beyond-lookback" and "20 blocks on" in edge["message"]


def test_a_turn_after_the_ttl_finds_its_entry_expired(tmp_path: Path) -> None:
    found = findings(tmp_path, rolling(3, gap_minutes=6))
    # Six minutes apart: both breakpoints of turns 1 and 2 (the system prompt and the newest
    # message) expired before the next turn, which reads nothing.
    assert sorted(place(f) for f in found) == [
        ("expired", 1, 2, "messages", 0, 2),
        ("expired", 1, 2, "system", 0, 2),
    ]
    assert "360 s later, after its 300 s TTL" in found[0]["message"]
    assert findings(tmp_path, rolling(3, gap_minutes=4.9)) == []


def test_a_breakpoint_under_the_minimum_is_never_written(tmp_path: Path) -> None:
    short = [{"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}]
    haiku = body([{"role": "user", "content": "hi"}], system=short, model="claude-haiku-4-5")
    [found] = findings(tmp_path, [record(haiku, 0)])
    assert place(found) == ("below-minimum", 1, None, "system", 0, 1)
    assert "claude-haiku-4-5's minimum of 4,096" in found["message"]


def test_automatic_caching_reads_the_previous_turn(tmp_path: Path) -> None:
    records, history = [], []
    system = [{"type": "text", "text": LONG}]
    for k in range(3):
        history.append({"role": "user", "content": f"question {k}"})
        records.append(record(body(list(history), system=system, cache_control=EPHEMERAL), k))
        history.append({"role": "assistant", "content": f"answer {k}"})
    log = tmp_path / "auto.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    data = json.loads(CliRunner().invoke(cli, ["explain", "--log", str(log), "--format", "json"]).output)
    assert data["breakpoints"]["findings"] == []
    # Turns 2 and 3 each read the whole previous request.
    assert data["breakpoints"]["read_tokens"] > 2 * 2000


def test_openai_reuses_only_requests_of_the_same_prompt_cache_key(tmp_path: Path) -> None:
    system = {"role": "system", "content": LONG}

    def req(key: str, question: str) -> dict[str, Any]:
        return {
            "model": "gpt-4o",
            "messages": [system, {"role": "user", "content": question}],
            "prompt_cache_key": key,
        }

    def openai_hits(records: list[dict[str, Any]]) -> int:
        log = tmp_path / "openai.jsonl"
        log.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
        result = CliRunner().invoke(cli, ["explain", "--log", str(log), "--format", "json"])
        return json.loads(result.output)["engines"]["openai"]["hit_tokens"]

    assert openai_hits([req("a", "one"), req("b", "two")]) == 0
    assert openai_hits([req("a", "one"), req("a", "two")]) >= 1024


def test_odd_bodies_are_read_without_a_traceback(tmp_path: Path) -> None:
    # A lone surrogate in a tool name (JSON allows it), a breakpoint that is not an object, a
    # top-level cache_control on a request whose last block is marked already, a numeric system.
    log = tmp_path / "odd.jsonl"
    log.write_text(
        '{"body": {"model": "claude-sonnet-4-5", "tools": [{"name": "a\\ud800", "input_schema": {}}], '
        '"system": [{"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}], '
        '"messages": [{"role": "user", "content": [{"type": "text", "text": "q", "cache_control": "x"}]}], '
        '"cache_control": 7}}\n'
        '{"body": {"system": 5, "anthropic_version": "1", '
        '"messages": [{"role": "user", "content": [1, null]}]}}\n',
        encoding="utf-8",
    )
    result = CliRunner().invoke(cli, ["explain", "--log", str(log), "--format", "json"])
    assert result.exit_code == 0, result.output
    found = json.loads(result.output)["breakpoints"]["findings"]
    assert sorted((f["reason"], f["part"]) for f in found) == [
        ("below-minimum", "messages"),
        ("below-minimum", "system"),
    ]
