"""Mooncake-format traces: `explain --log LOG --export-trace T` writes one, `explain --trace T`
replays one; a log and its trace give the same hit rates for the block-based engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli

FIXTURES = Path(__file__).parent.parent / "fixtures" / "explain"
LOGS = sorted(FIXTURES.glob("*.jsonl"))


def _run(*args: str, code: int = 0) -> str:
    result = CliRunner().invoke(cli, ["explain", *args])
    assert result.exit_code == code, result.output
    return result.output if code else result.stdout


def _export(log: Path, trace: Path, *extra: str) -> dict:
    return json.loads(_run("--log", str(log), "--export-trace", str(trace), "--format", "json", *extra))


def _lines(trace: Path) -> list[dict]:
    return [json.loads(line) for line in trace.read_text().splitlines()]


@pytest.mark.parametrize("log", LOGS, ids=[p.name for p in LOGS])
@pytest.mark.parametrize("capacity", [None, 256])
def test_a_log_and_its_trace_give_the_same_block_engine_hit_rates(tmp_path, log, capacity):
    extra = ("--cache-tokens", str(capacity)) if capacity else ()
    trace = tmp_path / "trace.jsonl"
    from_log = _export(log, trace, *extra)
    from_trace = json.loads(_run("--trace", str(trace), "--format", "json", *extra))
    assert from_trace["requests"] == from_log["requests"] == len(_lines(trace))
    assert from_trace["tokens"] == from_log["tokens"]
    assert from_trace["engines"]["vllm"] == from_log["engines"]["vllm"]  # hit rate, tokens, LRU
    assert from_trace["engines"]["vllm"]["hit_tokens"] > 0


def test_trace_lines_follow_the_log(tmp_path):
    trace = tmp_path / "trace.jsonl"
    data = _export(FIXTURES / "agent_session.jsonl", trace, "--engine", "vllm")
    lines = _lines(trace)
    assert [line["timestamp"] for line in lines] == [0, 10_000, 20_000, 30_000, 40_000]  # 10 s apart
    assert sum(line["input_length"] for line in lines) == data["tokens"]
    assert all(len(line["hash_ids"]) == line["input_length"] // 16 for line in lines)  # full blocks
    assert {line["session_id"] for line in lines} == {"session-7f3a"}
    ids = [i for line in lines for i in line["hash_ids"]]
    assert sorted(set(ids)) == list(range(len(set(ids))))  # numbered in order of first appearance
    assert lines[1]["hash_ids"][: len(lines[0]["hash_ids"])] == lines[0]["hash_ids"]  # turn 2 extends 1
    assert "login" not in trace.read_text()  # no text


def test_a_log_without_timestamps_counts_requests(tmp_path):
    trace = tmp_path / "trace.jsonl"
    _export(FIXTURES / "anthropic_gateway.jsonl", trace)
    assert [line["timestamp"] for line in _lines(trace)] == [0, 1, 2]


def test_output_length_from_the_usage(tmp_path):
    trace = tmp_path / "trace.jsonl"
    _export(FIXTURES / "openai_gateway.jsonl", trace)
    assert [line["output_length"] for line in _lines(trace)] == [2, 2, 2, 2]


def test_export_is_deterministic_and_the_salt_keys_the_ids(tmp_path):
    log = FIXTURES / "agent_breakpoints.jsonl"
    paths = [tmp_path / f"{name}.jsonl" for name in ("a", "b", "s1", "s2", "t")]
    _export(log, paths[0])
    _export(log, paths[1])
    assert paths[0].read_bytes() == paths[1].read_bytes()  # numbered ids: the same bytes on every run
    _export(log, paths[2], "--trace-salt", "fleet-1")
    _export(log, paths[3], "--trace-salt", "fleet-1")
    _export(log, paths[4], "--trace-salt", "fleet-2")
    assert paths[2].read_bytes() == paths[3].read_bytes()  # the same salt: the same ids
    empty = [tmp_path / "e1.jsonl", tmp_path / "e2.jsonl"]
    for path in empty:
        _export(log, path, "--trace-salt", "")  # an empty salt is a salt: the ids are its keyed hashes
    assert empty[0].read_bytes() == empty[1].read_bytes() != paths[0].read_bytes()
    one, two = _lines(paths[2]), _lines(paths[4])
    assert not {i for x in one for i in x["hash_ids"]} & {i for x in two for i in x["hash_ids"]}
    # Another log sharing the same system prompt: its blocks match under the same salt only.
    other = tmp_path / "other.jsonl"
    _export(FIXTURES / "agent_breakpoints_fixed.jsonl", other, "--trace-salt", "fleet-1")
    assert _lines(other)[0]["hash_ids"][0] == one[0]["hash_ids"][0]
    assert all(0 <= i < 2**52 for x in one for i in x["hash_ids"])
    replay = json.loads(_run("--trace", str(paths[2]), "--format", "json"))
    assert (
        replay["engines"]["vllm"]
        == json.loads(_run("--trace", str(paths[0]), "--format", "json"))["engines"]["vllm"]
    )


def test_the_report_says_no_causes(tmp_path):
    trace = tmp_path / "trace.jsonl"
    _export(FIXTURES / "agent_session.jsonl", trace)
    data = json.loads(_run("--trace", str(trace), "--format", "json", "--replicas", "2"))
    assert data["causes"] == [] and data["trace"]["causes"] is None
    assert "no cause" in data["trace"]["note"]
    assert data["log_format"] == "mooncake-trace" and data["tokenizer"] is None
    assert data["observed"] == {"hit_rate": None} and data["capacity_curve"] is None
    assert data["routing"]["session"]["replicas"] == 2
    text = _run("--trace", str(trace))
    assert "No causes: a trace holds block hashes, not text" in text


def test_bad_lines_are_skipped_with_their_line_number(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 40, "hash_ids": [7, 8]}\n'
        "not json\n"
        '{"input_length": -3, "hash_ids": []}\n'
        '{"input_length": 20, "hash_ids": [7, 8, 9]}\n'
        '{"text_input": "hello"}\n'
        '{"timestamp": 1, "input_length": 40, "hash_ids": [7, 8], "output_length": 5}\n'
    )
    data = json.loads(_run("--trace", str(trace), "--format", "json"))
    assert data["requests"] == 2 and data["skipped"] == 4
    assert data["skipped_by_reason"] == {
        "bad-input-length": 1,
        "hash-ids-beyond-input": 1,
        "invalid-json": 1,
        "text-trace-line": 1,
    }
    assert data["skip_reasons"][0].startswith("line 2:")
    assert data["engines"]["vllm"]["hit_tokens"] == 32  # line 6 finds both blocks of line 1


def test_a_trace_hashing_its_partial_last_block_reads_too(tmp_path):
    """Dynamo's generator hashes the last partial block as well (ids cover ceil(length/block))."""
    trace = tmp_path / "trace.jsonl"
    trace.write_text(
        '{"timestamp": 0, "input_length": 1100, "output_length": 10, "hash_ids": [0, 1, 2]}\n'
        '{"timestamp": 5, "input_length": 1100, "output_length": 10, "hash_ids": [0, 1, 2]}\n'
        '{"timestamp": 9, "input_length": 1500, "output_length": 10, "hash_ids": [0, 1, 3]}\n'
    )
    data = json.loads(_run("--trace", str(trace), "--block-size", "512", "--format", "json"))
    assert data["trace"]["block_size"] == 512
    # Request 2 repeats request 1 (its last token recomputed), request 3 shares two blocks.
    assert data["engines"]["vllm"]["hit_tokens"] == 1024 + 1024
    assert data["engines"]["sglang"]["hit_tokens"] == 1099 + 1024
    small = json.loads(_run("--trace", str(trace), "--format", "json"))  # read as 16-token blocks
    assert "--block-size" in small["trace"]["warning"]


def test_usage_errors(tmp_path):
    assert "give --log FILE" in _run("--export-trace", str(tmp_path / "t.jsonl"), code=2)
    trace = tmp_path / "t.jsonl"
    trace.write_text('{"input_length": 3}\n')
    log = str(FIXTURES / "agent_session.jsonl")
    assert "not both" in _run("--trace", str(trace), "--log", log, code=2)
    assert "give --export-trace" in _run("--log", log, "--trace-salt", "x", code=2)
    copy = tmp_path / "log.jsonl"
    copy.write_bytes(Path(log).read_bytes())
    assert "the log itself" in _run("--log", str(copy), "--export-trace", str(copy), code=2)
    assert copy.read_bytes() == Path(log).read_bytes()  # never truncated
    empty = tmp_path / "empty.jsonl"
    empty.write_text("nope\n")
    assert "no readable request" in _run("--trace", str(empty), code=2)
