"""`--capacity-curve`: the hit rate at every cache size from reuse distances in one pass, checked
against a list-based LRU and against vLLM's block pool simulated at each size."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

import prefixlint.engines.stackdist as stackdist
from prefixlint.cli import cli
from prefixlint.engines import load_engines
from prefixlint.engines.packed import pack
from prefixlint.engines.simulate import Simulation
from prefixlint.engines.stackdist import CapacityCurve, StackDistances

FIXTURES = Path(__file__).parent.parent / "fixtures" / "explain"
VLLM = load_engines()["vllm"]


def test_stack_distances_are_the_depths_of_a_list_lru(monkeypatch):
    monkeypatch.setattr(stackdist, "MIN_TIMES", 4)  # renumber the times many times over
    rng = random.Random(7)
    distances, stack = StackDistances(), []
    for _ in range(3000):
        block = rng.randrange(40)
        assert distances.distance(block) == (stack.index(block) if block in stack else None)
        distances.use(block)
        if block in stack:
            stack.remove(block)
        stack.insert(0, block)
    assert len(distances) == len(stack)


def test_chains_used_at_once_are_the_depths_of_a_list_lru(monkeypatch):
    """A request's chain in one call: its new blocks added in one sweep, its old ones moved."""
    monkeypatch.setattr(stackdist, "MIN_TIMES", 8)
    rng = random.Random(11)
    distances, stack, made = StackDistances(), [], 0
    for _ in range(600):
        old = [b for b in stack if rng.random() < 0.3][: rng.randrange(0, 6)]
        new = list(range(made, made + rng.randrange(0, 9)))
        made += len(new)
        for depth, block in enumerate(stack):
            assert distances.distance(block) == depth
        assert distances.distances_of(stack) == list(range(len(stack)))  # runs of times at once
        assert distances.distances_of(stack[::-1]) == list(range(len(stack)))[::-1]
        oldest = distances.use_chain(old + new, len(old))
        assert (oldest == 0) == bool(new)
        for block in reversed(old + new):  # tail first: the chain's head ends on top
            if block in stack:
                stack.remove(block)
            stack.insert(0, block)


def _workload(seed: int, aligned: bool = False) -> list[tuple[bytes, bytes]]:
    """Requests sharing one of a few system prompts, each with its own question and reply."""
    rng = random.Random(seed)
    systems = [[rng.randrange(5000) for _ in range(rng.randrange(40, 400))] for _ in range(12)]
    out = []
    for _ in range(1500):
        prompt = rng.choice(systems) + [rng.randrange(5000) for _ in range(rng.randrange(1, 90))]
        if aligned:
            prompt = prompt[: len(prompt) // 16 * 16]
        if not aligned and len(prompt) % 16 == 0:
            prompt.append(1)  # a prompt of whole blocks is the one corner where the pool is not LRU
        reply = [rng.randrange(5000) for _ in range(rng.randrange(0, 40))]
        out.append((pack(prompt), pack(reply)))
    return out


def _pool_hits(requests: list[tuple[bytes, bytes]], capacity: int) -> int:
    sim = Simulation([VLLM], capacity)
    for prompt, reply in requests:
        sim.feed(prompt, reply=reply)
    return sim.lru["vllm"][1].hit_tokens


@pytest.mark.parametrize("capacity", [2_048, 6_400, 16_384])
def test_curve_equals_the_block_pool_simulated_at_that_size(capacity):
    requests = _workload(3)
    curve = CapacityCurve(VLLM)
    for prompt, reply in requests:
        curve.feed(prompt, reply)
    hits = _pool_hits(requests, capacity)
    assert 0 < hits < curve.tokens  # a size where eviction matters, but some hit
    assert curve.hit_tokens(capacity) == hits


def test_curve_approximates_the_pool_where_a_cached_last_block_is_recomputed():
    """Prompts of whole blocks recompute their last block; vLLM keeps a second copy of it, which
    a one-pass LRU cannot see: the curve is then a close upper bound, as the docs say."""
    requests = _workload(5, aligned=True)
    curve = CapacityCurve(VLLM)
    for prompt, reply in requests:
        curve.feed(prompt, reply)
    hits = _pool_hits(requests, 6_400)
    assert hits <= curve.hit_tokens(6_400) <= hits * 1.02


def test_curve_points_rise_to_the_unbounded_hit_rate():
    requests = _workload(3)
    curve = CapacityCurve(VLLM)
    sim = Simulation([VLLM])
    for prompt, reply in requests:
        curve.feed(prompt, reply)
        sim.feed(prompt, reply=reply)
    points = curve.points()
    assert [p.tokens for p in points] == sorted({p.tokens for p in points})
    assert all(p.tokens % VLLM.block_size == 0 for p in points)
    rates = [p.hit_rate for p in points]
    assert rates == sorted(rates) and rates[0] < rates[-1]
    # From the smallest pool that holds the largest request (vLLM refuses a larger one)...
    largest = max(-(-(len(prompt) + len(reply)) // 4 // 16) for prompt, reply in requests)
    assert points[0].tokens == (largest + 1) * 16  # (and the null block)
    assert rates[-1] == sim.summary()["vllm"]["hit_rate"]  # ...to one that holds every block


def _explain(log: Path, *extra: str, engine: str = "vllm") -> dict:
    result = CliRunner().invoke(
        cli, ["explain", "--log", str(log), "--engine", engine, "--format", "json", *extra]
    )
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_log_curve_equals_simulations_at_three_of_its_sizes():
    log = FIXTURES / "agent_session.jsonl"
    data = _explain(log, "--capacity-curve")
    assert data["capacity_curve_engine"] == "vllm"
    points = data["capacity_curve"]
    assert len(points) >= 3
    for point in (points[0], points[len(points) // 2], points[-1]):
        lru = _explain(log, "--cache-tokens", str(point["tokens"]))["engines"]["vllm"]["lru"]
        assert lru["hit_rate"] == point["hit_rate"], point


def test_curve_is_null_unless_asked_and_in_text_and_page(tmp_path):
    log = FIXTURES / "agent_session.jsonl"
    assert _explain(log)["capacity_curve"] is None
    page = tmp_path / "page.html"
    result = CliRunner().invoke(
        cli, ["explain", "--log", str(log), "--capacity-curve", "--html", str(page), "--engine", "vllm"]
    )
    assert result.exit_code == 0, result.output
    assert "capacity curve: vllm hit rate by cache size" in result.stdout
    text = page.read_text()
    svg = text[text.index('<svg id="capacity-curve"') : text.index("</svg>")]
    points = _explain(log, "--capacity-curve")["capacity_curve"]
    assert svg.count('<circle class="point"') == len(points)
    assert "http" not in text and "<script" not in svg
    again = tmp_path / "again.html"
    CliRunner().invoke(
        cli, ["explain", "--log", str(log), "--capacity-curve", "--html", str(again), "--engine", "vllm"]
    )
    assert again.read_bytes() == page.read_bytes()  # deterministic


def test_no_block_pool_engine_gives_an_empty_curve():
    data = _explain(FIXTURES / "agent_session.jsonl", "--capacity-curve", engine="sglang")
    assert data["capacity_curve"] == [] and data["capacity_curve_engine"] is None
