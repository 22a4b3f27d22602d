"""llama-server's cache model (prefixlint/engines/llamacpp.py), on sequences whose answers follow by
hand from the server's rules; tests/test_llama_server.py checks the same rules against the server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conftest import run_prefixlint

from prefixlint.engines import load_engines
from prefixlint.engines.llamacpp import LlamaServer
from prefixlint.engines.packed import pack
from prefixlint.engines.simulate import Simulation


def seq(start: int, length: int) -> bytes:
    return pack(list(range(start, start + length)))


def with_tail(head: bytes, start: int, length: int) -> bytes:
    return head + seq(start, length)


def test_one_slot_without_prompt_cache_keeps_only_the_last_prompt() -> None:
    server = LlamaServer(slots=1, cache_ram=False)
    a = seq(0, 100)
    assert server.feed(a) == 0
    assert server.feed(with_tail(a[: 60 * 4], 1000, 40)) == 60  # shares 60 of 100: similarity 0.6
    assert server.feed(seq(5000, 80)) == 0  # nothing in common: the slot is overwritten
    assert server.feed(a) == 0  # A's state is gone
    assert server.feed(a) == 100  # identical: the engine rule then recomputes the last token


def test_prompt_cache_restores_an_older_prompt_after_two_others() -> None:
    server = LlamaServer(slots=1, cache_ram=True)
    a = seq(0, 111)
    server.feed(a)
    server.feed(seq(5000, 90))  # LRU choice: A is saved; nothing better to restore
    server.feed(seq(9000, 90))
    # Shares nothing with the slot's prompt: A (111 of 111 kept, 111/131 of the new prompt) is restored.
    assert server.feed(with_tail(a, 20000, 20)) == 111


def test_a_saved_prompt_that_keeps_under_a_quarter_is_never_restored() -> None:
    server = LlamaServer(slots=1, cache_ram=True)
    a = seq(0, 100)
    server.feed(a)
    server.feed(seq(5000, 50))
    # 24 of A's 100 tokens: f_keep 0.24 < 0.25, so A stays in the cache and the slot starts empty-handed.
    assert server.feed(with_tail(a[: 24 * 4], 30000, 10)) == 0
    server.feed(seq(7000, 50))
    # 25 of 100 is enough. The entry just saved (24 of its 34 kept) covers less of the new prompt
    # (24/35 against 25/35), so A is the one restored.
    assert server.feed(with_tail(a[: 25 * 4], 40000, 10)) == 25


def test_similar_slot_keeping_half_its_prompt_is_not_saved_or_replaced() -> None:
    server = LlamaServer(slots=1, cache_ram=True)
    a = seq(0, 100)
    server.feed(a)
    # B shares 60 (similarity 0.6 > 0.1, keeps 0.6 >= 0.5 of A): no save, no restore.
    b = with_tail(a[: 60 * 4], 1000, 40)
    assert server.feed(b) == 60
    # Back to A: the slot holds B (shares 60); A was never saved, so 60 it is.
    assert server.feed(a) == 60


def test_two_slots_each_keep_a_family() -> None:
    server = LlamaServer(slots=2, cache_ram=False)
    a, b = seq(0, 100), seq(5000, 100)
    server.feed(a)  # the last of two unused slots
    server.feed(b)  # no similarity with A: the least recently used slot, the other one
    assert server.feed(with_tail(a, 100000, 5)) == 100
    assert server.feed(with_tail(b, 200000, 5)) == 100


def test_unified_kv_clears_idle_slots_into_the_prompt_cache() -> None:
    server = LlamaServer(slots=2, cache_ram=True, kv_unified=True)
    a, b = seq(0, 100), seq(5000, 100)
    server.feed(a)
    server.feed(b)  # A's slot is idle: saved, then cleared
    # A comes back through the prompt cache into the least recently used (cleared) slot.
    assert server.feed(with_tail(a, 100000, 5)) == 100


def test_the_default_engine_data_replays_a_server() -> None:
    engine = load_engines()["llamacpp"]
    assert engine.server is not None
    assert (engine.server.slots, engine.server.cache_ram_mib, engine.server.kv_unified) == (4, 8192, True)
    sim = Simulation([engine], keep_hits=True)
    a = list(range(50))
    for ids in (a, a, list(range(100, 130)), a):
        sim.feed(ids)
    # Identical prompt: all but the last token; the 4th request finds A in its slot (or the cache).
    assert sim.tallies["llamacpp"].hits == [0, 49, 0, 49]


def test_server_args_set_the_servers_slots_and_cache_ram(tmp_path: Path) -> None:
    head = "You are a support assistant for the shop. " * 12
    prompts = [
        head + "Order 1?",
        "Completely different text about weather " * 6,
        "More weather " * 9,
        head + "Order 2?",
    ]
    log = tmp_path / "log.jsonl"
    log.write_text("".join(json.dumps({"prompt": p}) + "\n" for p in prompts), encoding="utf-8")

    def hits(*options: str) -> int:
        result = run_prefixlint(
            "explain", "--log", str(log), "--engine", "llamacpp", "--format", "json", *options
        )
        assert result.returncode == 0, result.stderr
        return json.loads(result.stdout)["engines"]["llamacpp"]["hit_tokens"]

    restored = hits("--server-args", "llama-server -m m.gguf -np 1")
    assert restored > 0  # the 4th prompt gets the 1st back from the prompt cache
    assert hits("--server-args", "llama-server -m m.gguf -np 1 --cache-ram 0") == 0


def test_the_prompt_cache_drops_its_oldest_prompts_past_its_capacity() -> None:
    # Room for 300 tokens. Each prompt is saved when the next one takes the slot, before the best
    # entry is restored: saving D pushes A (the oldest) out, and B comes back.
    server = LlamaServer(slots=1, cache_ram=True, capacity=300)
    a, b, c = seq(0, 100), seq(5000, 100), seq(9000, 100)
    for prompt in (a, b, c, seq(13000, 100)):
        server.feed(prompt)
    assert server.feed(with_tail(b, 100000, 5)) == 100  # B is still there
    assert server.feed(with_tail(a, 200000, 5)) == 0  # A was dropped
    assert LlamaServer(capacity=50)._save(a) is None and not LlamaServer(capacity=50)._saved  # too large


def test_engine_data_turns_mib_into_tokens() -> None:
    from dataclasses import replace

    server = load_engines()["llamacpp"].server
    assert server is not None
    assert server.model().capacity == 8192 * 2**20 // 131_072 == 65_536
    assert replace(server, cache_ram_mib=-1).model().capacity is None
    assert replace(server, cache_ram_mib=0).model().cache_ram is False


def test_server_args_read_llama_servers_cache_flags() -> None:
    from prefixlint.explain.server import ServerArgsError, parse_server_args

    config = parse_server_args(
        "llama-server -m m.gguf -np 2 --cache-ram -1 -sps 0.5 --kv-unified --no-cache-idle-slots"
    )
    assert config.llama_server == {
        "slots": 2,
        "kv_unified": True,
        "cache_ram_mib": -1,
        "slot_prompt_similarity": 0.5,
        "cache_idle_slots": False,
    }
    engine = config.apply(load_engines()["llamacpp"])
    assert engine.server is not None and engine.server.model().capacity is None  # -1: no limit
    assert parse_server_args("llama-server -np 3").llama_server == {"slots": 3, "kv_unified": False}
    assert parse_server_args("llama-server --cache-ram=0").llama_server == {"cache_ram_mib": 0}
    with pytest.raises(ServerArgsError, match="--cache-ram 'lots': expected MiB"):
        parse_server_args("llama-server --cache-ram lots")
