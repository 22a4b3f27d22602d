"""The real routers' policies (data/routers.toml): sglang-router's cache-aware policy on text with its
balance thresholds, the Gateway API Inference Extension's prefix scorer on 64-byte blocks of the
first 16 KiB, and a consistent-hash ring; each on small request sequences whose routing differs
between policies, and the hit rates `explain --replicas` reports for them."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

from click.testing import CliRunner
from test_explain import TAIL, write_log

from prefixlint.cli import cli
from prefixlint.explain.routers import CacheAware, ConsistentHash, Fleet, GiePrefix, load_routers, resolve
from prefixlint.explain.routing import POLICIES, route_request

START = datetime(2026, 1, 1, tzinfo=UTC)
SIMPLE = ("round-robin", "random", "session")


def request(user: str, *, system: str | None = None, at: float = 0.0, session: str | None = None):
    messages = ([{"role": "system", "content": system}] if system else []) + [
        {"role": "user", "content": user}
    ]
    return route_request(b"", messages, None, session, START + timedelta(seconds=at))


def route(router, fleet: Fleet, req) -> int:
    fleet.advance(req.now)
    k = router.pick(req, fleet)
    fleet.dispatch(k, req.now)
    return k


def cache_aware(name: str, replicas: int = 4) -> tuple[CacheAware, Fleet]:
    spec = resolve(name)
    assert spec is not None
    return CacheAware(spec, replicas), Fleet(replicas, load_routers().service_seconds)


def test_every_data_policy_names_its_source_and_versions_differ_where_upstream_changed():
    for name in POLICIES:
        spec = resolve(name)
        assert (spec is None) == (name in SIMPLE), name
        if spec is not None:
            assert spec.source and ("v1." in spec.source or "0.1" in spec.source), name
    data = load_routers()
    assert set(data.routers) | set(data.aliases) == set(POLICIES) - set(SIMPLE)  # no name only one side knows
    assert resolve("sglang-cache-aware").get("cache_threshold") == 0.3
    assert resolve("sglang-cache-aware-0.1").get("cache_threshold") == 0.5
    assert resolve("prefix-aware") == resolve("sglang-cache-aware-0.1")  # the old name, an alias
    gie = resolve("gie-prefix")
    assert gie.get("block_size_tokens") * gie.get("chars_per_token") * gie.get("max_prefix_blocks") == 16384
    assert resolve("consistent-hash").get("virtual_nodes") == 150


def test_a_prefix_share_of_0_4_goes_to_the_holder_under_0_3_and_not_under_0_5():
    shared = "s" * 399  # the routing text is system + " " + user: 400 shared characters of 1,000
    first = request("a" * 600, system=shared)
    second = request("b" * 600, system=shared, at=1.0)
    now, now_fleet = cache_aware("sglang-cache-aware")
    old, old_fleet = cache_aware("sglang-cache-aware-0.1")
    assert route(now, now_fleet, first) == 0 and route(old, old_fleet, first) == 0
    assert route(now, now_fleet, second) == 0  # 0.4 > 0.3: the replica that holds the prefix
    assert route(old, old_fleet, second) == 1  # 0.4 <= 0.5: the smallest tree, an empty one
    # A miss today goes to the least loaded replica (the first is still in flight on replica 0).
    third = request("c" * 1000, at=2.0)
    assert route(now, now_fleet, third) == 1


def test_the_balance_thresholds_override_the_prefix_once_a_burst_piles_onto_its_holder():
    burst = [request(f"{k:04d}", system="a long shared system prompt " * 20) for k in range(80)]
    for name, abs_threshold in (("sglang-cache-aware", 64), ("sglang-cache-aware-0.1", 32)):
        router, fleet = cache_aware(name)
        picks = [route(router, fleet, r) for r in burst]
        # All arrive at once: the holder takes them until it has abs_threshold + 1 more in flight than
        # an idle replica; the next goes to the least loaded one.
        assert picks[: abs_threshold + 1] == [0] * (abs_threshold + 1), name
        assert picks[abs_threshold + 1] == 1, name
        # Ten seconds later (service_seconds) the burst has finished: the prefix wins again.
        later = request("9999", system="a long shared system prompt " * 20, at=60.0)
        assert route(router, fleet, later) == 0 and fleet.loads == [1, 0, 0, 0], name


def gie(replicas: int = 2, capacity: int = 1_000_000) -> tuple[GiePrefix, Fleet]:
    return GiePrefix(resolve("gie-prefix"), replicas, capacity, 0), Fleet(replicas, 10.0)


def test_gie_sees_only_the_first_16_kib_so_a_longer_share_attracts_no_more_than_16_kib():
    base = "x" * 40_000
    a = request(base + "A" * 24_000)  # replica 0
    e = request(base[:20_000] + "E" * 44_000)  # replica 1: shares 20,000 bytes with a
    b = request(base + "B" * 24_000, at=1.0)  # shares 40,000 characters with a, 20,000 with e
    router, fleet = gie()
    router._add(router.hashes(a.body, None), 0)
    router._add(router.hashes(e.body, None), 1)
    # Both replicas hold all 256 blocks b's first 16 KiB hash to: equal prefix scores, so the emptier
    # cache (the KV score) decides, not the 40,000 characters only replica 0 shares.
    fleet.fill = [0.5, 0.0]
    assert router.pick(b, fleet) == 1
    aware, aware_fleet = cache_aware("sglang-cache-aware", 2)
    for r, k in ((a, 0), (e, 1)):
        aware.trees[k].insert(r.text)
    assert aware.pick(b, aware_fleet) == 0  # sglang-router's tree sees the whole text


def test_gie_attracts_a_request_sharing_16_kib_of_a_long_prompt_that_sglang_sends_elsewhere():
    head = "y" * 17_000
    first = request(head + "1" * 50_000)
    second = request(head + "2" * 50_000, at=1.0)  # shares 25% of its text
    router, fleet = gie(4)
    aware, aware_fleet = cache_aware("sglang-cache-aware")
    held = route(router, fleet, first)  # no scores apart yet: a seeded draw among equals
    assert route(aware, aware_fleet, first) == 0
    assert route(router, fleet, second) == held  # every hashed block matched: prefix score 1
    assert route(aware, aware_fleet, second) == 1  # 0.25 <= 0.3: the least loaded replica
    # A prompt under one block (64 bytes) has no blocks: no prefix score anywhere.
    assert router.hashes(request("hi").body, None) == []


def test_consistent_hash_keeps_a_session_on_one_replica_and_spreads_sessions():
    ring = ConsistentHash(resolve("consistent-hash"), 4, 0)
    fleet = Fleet(4, 10.0)
    picks = {
        s: {route(ring, fleet, request(f"q{k}", session=f"s{s}", at=k)) for k in range(5)} for s in range(40)
    }
    assert all(len(p) == 1 for p in picks.values())
    assert len({next(iter(p)) for p in picks.values()}) == 4
    anonymous = [request(f"q{k}") for k in range(20)]

    def run() -> list[int]:
        ring, fleet = ConsistentHash(resolve("consistent-hash"), 4, 0), Fleet(4, 10.0)
        return [route(ring, fleet, r) for r in anonymous]

    first = run()
    assert run() == first
    assert len(set(first)) > 1  # seeded random: spread, and the same on every run


def explain_json(tmp_path, lines: list, *extra: str) -> dict:
    log = write_log(tmp_path / "log.jsonl", lines)
    args = ["explain", "--log", log, "--template", str(TAIL), "--engine", "vllm", "--format", "json"]
    result = CliRunner().invoke(cli, [*args, "--replicas", "4", *extra])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_explain_reports_each_policy_with_its_source_and_the_0_4_share_hit_rates(tmp_path):
    shared = "Policy: " + "returns are accepted within thirty days of delivery. " * 8
    lines = [
        {
            "timestamp": f"2026-01-01T00:00:{k:02d}Z",
            "body": {"messages": [{"role": "system", "content": shared}, {"role": "user", "content": user}]},
        }
        for k, user in enumerate(["Alpha " * 100, "Bravo " * 100])
    ]
    share = (len(shared) + 1) / (len(shared) + 1 + 600)
    assert 0.3 < share < 0.5
    data = explain_json(tmp_path, lines, "--routing", "sglang-cache-aware")
    routing = data["routing"]
    assert list(routing) == ["sglang-cache-aware"] + [p for p in POLICIES if p != "sglang-cache-aware"]
    assert routing["sglang-cache-aware"]["current"] is True
    one_cache = data["engines"]["vllm"]["hit_tokens"]
    assert one_cache > 0
    assert routing["sglang-cache-aware"]["hit_tokens"] == one_cache  # the second follows the first
    assert routing["sglang-cache-aware-0.1"]["hit_tokens"] == 0  # the second goes to an empty replica
    assert routing["prefix-aware"] == {**routing["sglang-cache-aware-0.1"], "current": False}
    assert routing["gie-prefix"]["source"].startswith("gateway-api-inference-extension v1.5.0")
    assert routing["round-robin"]["source"] is None


def test_the_match_rate_counts_characters_not_bytes():
    shared = "s" * 399  # 400 shared characters (with the space) of 700; in UTF-8, 400 of 1,300 bytes
    first = request("一" * 300, system=shared)
    second = request("二" * 300, system=shared, at=1.0)
    old, fleet = cache_aware("sglang-cache-aware-0.1")
    assert route(old, fleet, first) == 0
    assert route(old, fleet, second) == 0  # 400 / 700 = 0.57 > 0.5 (by bytes, 0.31: a miss)
