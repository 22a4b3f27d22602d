"""`explain --replicas N --routing POLICY`: N caches behind a router, each policy's hit rate as a
what-if, checked against figures computed by hand from vLLM's block rule and real token counts."""

from __future__ import annotations

import json

from click.testing import CliRunner
from test_explain import TAIL, bodies, n_tokens, prefix_tokens, rendered_texts, template, write_log

from prefixlint.cli import cli
from prefixlint.explain.requests import parse_request
from prefixlint.explain.routing import POLICIES
from prefixlint.models.tokens import load_tokenizer


def run_json(log: str, *extra: str) -> dict:
    args = ["explain", "--log", log, "--template", str(TAIL), "--engine", "vllm", "--format", "json"]
    result = CliRunner().invoke(cli, [*args, *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_four_replicas_round_robin_lose_the_first_request_of_each(tmp_path):
    tok = load_tokenizer(None)
    n = 12
    lines = bodies(n)  # one static system prompt; the users' first words all differ
    texts = rendered_texts(template(TAIL), lines)
    total = sum(n_tokens(tok, t) for t in texts)
    blocks = prefix_tokens(tok, texts[0], "<|user|>\n") // 16 * 16  # what vLLM reuses of it
    data = run_json(write_log(tmp_path / "log.jsonl", lines), "--replicas", "4")
    # One cache: every request but the first finds the shared blocks.
    assert data["engines"]["vllm"]["hit_tokens"] == (n - 1) * blocks
    routing = data["routing"]
    assert list(routing) == list(POLICIES)  # the current policy (round-robin by default) first
    assert routing["round-robin"]["current"] is True
    # Round-robin over 4: requests 1-4 each meet an empty replica; 5-12 find the blocks.
    assert routing["round-robin"]["hit_tokens"] == (n - 4) * blocks
    assert routing["round-robin"]["hit_rate"] == round((n - 4) * blocks / total, 6)
    assert routing["round-robin"]["hit_rate"] < data["engines"]["vllm"]["hit_rate"]
    # No session key in these bodies: the first message (the same system prompt) keys them all to
    # one replica; prefix-aware follows the prefix to the replica that has it. Both: one cache.
    assert routing["session"]["hit_tokens"] == (n - 1) * blocks
    assert routing["prefix-aware"]["hit_tokens"] == (n - 1) * blocks
    # Random can do no better than one cache, and is the same on every run (seeded).
    assert routing["random"]["hit_tokens"] <= (n - 1) * blocks
    assert run_json(write_log(tmp_path / "again.jsonl", lines), "--replicas", "4")["routing"] == routing


def test_session_routing_keys_on_the_user_and_keeps_a_conversation_on_one_replica(tmp_path):
    tok = load_tokenizer(None)
    n = 8
    lines = bodies(n)
    for line in lines:
        line["body"]["user"] = "customer-42"  # OpenAI's `user`: one customer, one replica
    texts = rendered_texts(template(TAIL), lines)
    blocks = prefix_tokens(tok, texts[0], "<|user|>\n") // 16 * 16
    data = run_json(write_log(tmp_path / "log.jsonl", lines), "--replicas", "3", "--routing", "session")
    assert list(data["routing"])[0] == "session" and data["routing"]["session"]["current"] is True
    assert data["routing"]["session"]["hit_tokens"] == (n - 1) * blocks
    assert data["routing"]["round-robin"]["hit_tokens"] == (n - 3) * blocks


def test_without_replicas_routing_is_null_and_the_text_names_each_policy(tmp_path):
    log = write_log(tmp_path / "log.jsonl", bodies(5))
    assert run_json(log)["routing"] is None
    text = (
        CliRunner().invoke(cli, ["explain", "--log", log, "--template", str(TAIL), "--replicas", "2"]).output
    )
    assert "vllm over 2 replicas, by routing: round-robin" in text and "(now)" in text
    assert "prefix-aware" in text


def test_session_keys_from_the_formats_that_carry_them():
    def session(data: dict) -> str | None:
        return parse_request(data).session

    chat = {"messages": [{"role": "user", "content": "hi"}]}
    assert session({**chat, "user": "u-1"}) == "u-1"  # OpenAI
    assert session({**chat, "metadata": {"user_id": "u-2"}, "system": "s"}) == "u-2"  # Anthropic
    assert session({"body": chat, "session_id": "s-3"}) == "s-3"  # a gateway's log record
    assert session({**chat, "conversation_id": "c-4", "user": "u-4"}) == "c-4"  # the narrower one
    assert session({**chat, "prompt_cache_key": "k-5"}) == "k-5"
    assert session(chat) is None
    assert session({"prompt": "p", "user": 7}) == "7"


def test_cli_routing_choices_are_the_policies():
    command = cli.commands["explain"]
    option = next(p for p in command.params if p.name == "routing")
    assert tuple(option.type.choices) == POLICIES
