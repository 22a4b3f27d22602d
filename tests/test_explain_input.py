"""`prefixlint explain --log` on what users have: plain-prompt logs (spans, not lines), the log formats
of gateways, observability tools and vLLM itself, what the server reported, its flags and metrics, and
latency. Figures are computed by hand from the engines' rules and the real tokenizer's token counts."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_explain import (
    ENGINES,
    FIX,
    TAIL,
    WORDS,
    bodies,
    n_tokens,
    prefix_tokens,
    rendered_texts,
    template,
    write_log,
)

from prefixlint.cli import cli
from prefixlint.explain.formats import VLLM_NO_PROMPT
from prefixlint.explain.log import explain_log
from prefixlint.explain.observed import prefill_ms
from prefixlint.explain.reading import Reading
from prefixlint.explain.requests import Renderer, RequestError
from prefixlint.explain.server import ServerArgsError, parse_server_args, read_metrics
from prefixlint.explain.stream import iter_log, open_log
from prefixlint.models.tokens import load_tokenizer

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "tokenizers"
POLICY = (
    "You are the support assistant of Northwind Outfitters, a shop for hiking and camping gear. "
    "Answer in three sentences at most, quote prices in the customer's currency, never change an order "
    "without an explicit confirmation, and hand the conversation to a human colleague when unsure. "
    "Returns are accepted within 60 days with the receipt; worn boots cannot be returned."
)
QUESTIONS = [
    "Can I return boots I wore once?",
    "Where is my parcel?",
    "Do you ship tents to Norway?",
    "Is the stove sold with fuel?",
]


@pytest.fixture(scope="module")
def tok():
    return load_tokenizer(None)


def read(path: Path, log_format: str | None = None) -> tuple[str, list, dict[str, int]]:
    """(format, requests, skip reasons counted) of a log file."""
    reading = Reading(log_format=log_format)
    log = open_log(str(path), reading)
    requests, skips = [], {}
    try:
        for _, item in iter_log(log, 1.0):
            if isinstance(item, RequestError):
                skips[item.reason] = skips.get(item.reason, 0) + 1
            else:
                requests.append(item)
    finally:
        log.close()
    assert reading.log_format is not None
    return reading.log_format, requests, skips


def explain_json(*args: str) -> dict:
    result = CliRunner().invoke(cli, ["explain", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


# --- 1. spans, not lines ---------------------------------------------------------------------


def test_plain_prompt_log_with_an_id_at_the_head_moves_the_id_not_the_line(tmp_path, tok):
    n = len(QUESTIONS)
    prompts = [f"[req {17 + i}] {POLICY}\nQuestion: {q}" for i, q in enumerate(QUESTIONS)]
    log = write_log(tmp_path / "ids.jsonl", [{"prompt": p} for p in prompts])
    report = explain_log(log, Renderer(None), tok, ENGINES)
    top = report.causes[0]
    assert (top.section, top.anchor, top.count) == ("prompt", "[req", n - 1)
    assert (top.span.text, top.span.start, top.span.end) == ("18", 5, 7)  # the second request's id
    assert top.tokens_lost > 0  # the policy after it is static: this is not "nothing static follows"

    # What-if by hand: each id moved to the end of its prompt; every request then shares
    # "[req ] <policy>\nQuestion:" and parts at the question's first word.
    moved = [f"[req ] {POLICY}\nQuestion: {q}\n{17 + i}" for i, q in enumerate(QUESTIONS)]
    shared = prefix_tokens(tok, moved[0], "Question:")
    moved_total = sum(n_tokens(tok, t) for t in moved)
    assert top.what_if["sglang"] == round((n - 1) * shared / moved_total, 6)
    assert top.what_if["vllm"] == round((n - 1) * (shared // 16 * 16) / moved_total, 6)

    # ... which is close to the same log without ids.
    plain = write_log(tmp_path / "plain.jsonl", [{"prompt": f"{POLICY}\nQuestion: {q}"} for q in QUESTIONS])
    without = explain_log(plain, Renderer(None), tok, ENGINES)
    assert abs(top.what_if["sglang"] - float(without.engines["sglang"]["hit_rate"])) < 0.02
    assert float(report.engines["sglang"]["hit_rate"]) < 0.05


def test_an_id_opening_the_system_message_is_anchored_by_the_line_before(tmp_path, tok):
    n = len(QUESTIONS)
    ids = ["4821", "7390", "1657", "9034"]  # first digits differ: nothing is shared after the move
    lines = [
        {"messages": [{"role": "system", "content": f"{ids[i]} {POLICY}"}, {"role": "user", "content": q}]}
        for i, q in enumerate(QUESTIONS)
    ]
    report = explain_log(write_log(tmp_path / "log.jsonl", lines), Renderer(None), tok, ENGINES)
    top = report.causes[0]
    assert (top.span.text, top.anchor, top.section) == ("7390", "<|im_start|>system\n", "system")
    # Moved to the end of the system message (ChatML, the default template), by hand:
    moved = [
        f"<|im_start|>system\n {POLICY}\n{ids[i]}<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n"
        "<|im_start|>assistant\n"
        for i, q in enumerate(QUESTIONS)
    ]
    shared = prefix_tokens(tok, moved[0], f"{POLICY}\n")
    assert top.what_if["sglang"] == round((n - 1) * shared / sum(n_tokens(tok, t) for t in moved), 6)


def test_the_span_of_a_timestamp_is_the_whole_timestamp_and_a_uuid_the_whole_uuid():
    from prefixlint.explain.causes import volatile_span

    text = "Session 3f1c2a9e-5b7d-4c1e-9a2b-0d4e6f8a1b2c opened\nNow: 2025-03-31T23:59:10Z\nYou are"
    uuid = volatile_span(text, text.index("5b7d"), text.index("5b7d") + 4)
    assert (uuid.text, uuid.shape, uuid.anchor) == ("3f1c2a9e-5b7d-4c1e-9a2b-0d4e6f8a1b2c", "uuid", "Session")
    seconds = text.index(":10Z") + 1
    stamp = volatile_span(text, seconds, seconds + 2)
    assert (stamp.text, stamp.shape, stamp.anchor) == ("2025-03-31T23:59:10Z", "datetime", "Now")
    two = volatile_span("Time: 23:59:10, user 17, served by 3 agents", 12, 22)
    assert (two.text, two.shape, two.values) == ("23:59:10, user 17", "values", 2)
    other = "Time: 08:00:00, user 5, served by 3 agents"
    assert re.search(two.pattern(), other).group("span") == "08:00:00, user 5"  # not up to the "3"
    name = volatile_span("Dear Alice, you are", 5, 10)
    assert (name.text, name.shape, name.anchor) == ("Alice", "word", "Dear")
    letters = volatile_span("Request afdfbaaafa\nYou are", 10, 12)  # a hex id without digits, mid-token
    assert (letters.text, letters.shape, letters.anchor) == ("afdfbaaafa", "word", "Request")
    words = volatile_span("Hi there. Regards, Bob", 3, 15)
    assert (words.text, words.shape) == ("there. Regards", "text")


# --- 2. formats users have -------------------------------------------------------------------


def test_openai_gateway_log_with_responses_and_unreadable_lines_counted_by_reason():
    fmt, requests, skips = read(FIX / "openai_gateway.jsonl")
    assert fmt == "openai"
    assert skips == {"invalid-json": 1, "no-messages-or-prompt": 1}
    assert [r.messages[1]["content"] for r in requests] == QUESTIONS
    assert requests[0].messages[0] == {"role": "system", "content": POLICY}
    assert [(r.observed_prompt_tokens, r.observed_cached_tokens) for r in requests] == [
        (90, 0),
        (91, 64),
        (92, 64),
        (93, 64),
    ]
    assert [r.ttft for r in requests] == [0.12, 0.13, 0.14, 0.15]
    assert requests[1].now == datetime(2025, 3, 31, 23, 59, 11, tzinfo=UTC)


def test_anthropic_log_counts_cache_reads_against_the_whole_prompt():
    fmt, requests, skips = read(FIX / "anthropic_gateway.jsonl")
    assert (fmt, skips) == ("anthropic", {})
    assert requests[0].system_field and requests[0].messages[0] == {"role": "system", "content": POLICY}
    # input_tokens + cache_creation_input_tokens + cache_read_input_tokens; cached: the reads
    assert [(r.observed_prompt_tokens, r.observed_cached_tokens) for r in requests] == [
        (14 + 1100, 0),
        (15 + 1100, 1100),
        (16 + 1100, 1100),
    ]


def test_litellm_standard_logging_payload(tok):
    fmt, requests, skips = read(FIX / "litellm_payloads.jsonl")
    assert (fmt, skips) == ("litellm", {"failed-call": 1})
    assert len(requests) == 3  # the second line wraps it in `standard_logging_object`
    assert requests[0].now == datetime.fromtimestamp(1743465550.0, UTC)
    assert [round(r.ttft, 6) for r in requests] == [0.25, 0.25, 0.25]  # completionStartTime - startTime
    assert [(r.observed_prompt_tokens, r.observed_cached_tokens) for r in requests] == [
        (93, 0),
        (93, 80),
        (93, 80),
    ]


def test_opentelemetry_genai_spans_new_and_old_attributes_render_like_the_openai_bodies():
    fmt, requests, skips = read(FIX / "otel_spans.jsonl")
    assert (fmt, skips) == ("otel", {"span-without-gen-ai-attributes": 1})
    expected = [[{"role": "system", "content": POLICY}, {"role": "user", "content": q}] for q in QUESTIONS]
    assert [r.messages for r in requests] == expected
    assert requests[1].now == datetime(2025, 3, 31, 23, 59, 11, tzinfo=UTC)  # startTimeUnixNano
    assert [(r.observed_prompt_tokens, r.observed_cached_tokens) for r in requests] == [
        (93, 0),
        (93, 80),
        (93, None),  # the older attributes carry no cache reads
        (93, None),
    ]
    _, openai, _ = read(FIX / "openai_gateway.jsonl")
    renderer = Renderer(template(TAIL))
    assert [renderer.render(r).text for r in requests] == [renderer.render(r).text for r in openai]


def test_a_span_from_the_sdk_console_exporter_with_structured_attributes(tmp_path):
    span = {
        "name": "chat gpt-4o",
        "context": {"trace_id": "0x5b8efff798038103d269b633813fc60c", "span_id": "0xeee19b7ec3c1b174"},
        "start_time": "2025-03-31T23:59:10.250000Z",
        "attributes": {
            "gen_ai.operation.name": "chat",
            "gen_ai.input.messages": [
                {"role": "system", "parts": [{"type": "text", "content": POLICY}]},
                {"role": "user", "parts": [{"type": "text", "content": QUESTIONS[0]}]},
                {
                    "role": "assistant",
                    "parts": [
                        {"type": "tool_call", "id": "call_1", "name": "track", "arguments": {"order": 7}}
                    ],
                },
                {
                    "role": "tool",
                    "parts": [{"type": "tool_call_response", "id": "call_1", "response": "shipped"}],
                },
            ],
            "gen_ai.usage.input_tokens": 120,
        },
    }
    fmt, requests, skips = read(Path(write_log(tmp_path / "spans.jsonl", [span])))
    assert (fmt, skips) == ("otel", {})
    (request,) = requests
    assert request.now == datetime(2025, 3, 31, 23, 59, 10, 250000, tzinfo=UTC)
    assert request.messages == [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": QUESTIONS[0]},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "track", "arguments": '{"order": 7}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "shipped"},
    ]
    assert (request.observed_prompt_tokens, request.observed_cached_tokens) == (120, None)


def test_vllm_request_log_lines_give_the_prompt_the_server_rendered():
    fmt, requests, skips = read(FIX / "vllm_requests.log")
    assert (fmt, skips) == ("vllm-log", {"not-a-vllm-request-line": 5})
    assert [r.prompt for r in requests] == [
        f"<|im_start|>system\n[req {17 + i}] {POLICY}<|im_end|>\n<|im_start|>user\n{q}<|im_end|>\n"
        "<|im_start|>assistant\n"
        for i, q in enumerate(QUESTIONS)
    ]


def test_later_vllm_logs_the_prompt_in_a_debug_line_and_says_so_where_it_is_missing():
    fmt, requests, skips = read(FIX / "vllm_requests_debug.log")
    _, earlier, _ = read(FIX / "vllm_requests.log")
    assert (fmt, [r.prompt for r in requests]) == ("vllm-log", [r.prompt for r in earlier])
    assert skips == {VLLM_NO_PROMPT: 4, "not-a-vllm-request-line": 1}


def test_a_server_log_opening_with_many_start_up_lines_is_still_told_apart(tmp_path):
    start_up = "".join(f"INFO 03-31 23:58:00 [core.py:{i}] loading weights, shard {i}\n" for i in range(100))
    log = tmp_path / "server.log"
    log.write_text(start_up + (FIX / "vllm_requests.log").read_text(encoding="utf-8"), encoding="utf-8")
    fmt, requests, skips = read(log)
    assert (fmt, len(requests), skips) == ("vllm-log", 4, {"not-a-vllm-request-line": 105})


def test_log_format_overrides_detection(tmp_path):
    fmt, requests, skips = read(FIX / "openai_gateway.jsonl", "litellm")
    assert (fmt, requests) == ("litellm", [])
    assert skips == {"not-a-litellm-record": 5, "invalid-json": 1}
    data = explain_json("--log", str(FIX / "otel_spans.jsonl"), "--log-format", "otel")
    assert (data["log_format"], data["requests"], data["skipped_by_reason"]) == (
        "otel",
        4,
        {"span-without-gen-ai-attributes": 1},
    )


# --- 3. observed vs simulated ----------------------------------------------------------------


def test_observed_hit_rate_beside_the_simulated_one():
    data = explain_json("--log", str(FIX / "openai_gateway.jsonl"))
    assert data["observed"]["hit_rate"] == round((0 + 64 + 64 + 64) / (90 + 91 + 92 + 93), 6)
    assert data["observed"]["source"] == "log"
    assert data["observed"]["simulated_hit_rate"] == data["engines"]["vllm"]["hit_rate"]
    plain = explain_json("--log", str(FIX / "vllm_requests.log"))
    assert plain["observed"]["hit_rate"] is None and plain["template"] is None
    spans = explain_json("--log", str(FIX / "otel_spans.jsonl"))  # two spans without cache reads
    assert spans["observed"]["hit_rate"] == round(80 / (93 + 93), 6)
    assert spans["observed"]["requests_without_cached_tokens"] == 2


def test_a_server_that_reuses_far_less_than_the_prompts_allow_is_itself_a_cause(tmp_path, tok):
    n = 12
    lines = [
        {**x, "response": {"usage": {"prompt_tokens": 1000, "prompt_tokens_details": {"cached_tokens": 0}}}}
        for x in bodies(n)
    ]
    texts = rendered_texts(template(TAIL), lines)
    total = sum(n_tokens(tok, t) for t in texts)
    shared = prefix_tokens(tok, texts[0], "<|user|>\n")
    data = explain_json("--log", write_log(tmp_path / "log.jsonl", lines), "--template", str(TAIL))
    simulated = round((n - 1) * (shared // 16 * 16) / total, 6)
    assert (data["observed"]["hit_rate"], data["engines"]["vllm"]["hit_rate"]) == (0.0, simulated)
    gap = next(c for c in data["causes"] if c["kind"] == "observed-gap")
    assert (gap["hit_rate"], gap["what_if_hit_rate"], gap["section"]) == (0.0, simulated, "server")
    assert gap["tokens_lost"] == (n - 1) * (shared // 16 * 16)
    assert "look at the server" in gap["message"]


# --- 4. server causes ------------------------------------------------------------------------


def test_server_command_lines_of_vllm_sglang_and_llama_cpp():
    vllm = parse_server_args(
        "vllm serve Qwen/Qwen3-8B --block-size=32 --no-enable-prefix-caching --num-gpu-blocks-override 100"
    )
    assert (vllm.engine, vllm.caching, vllm.block_size, vllm.capacity_tokens) == ("vllm", False, 32, 3200)
    sglang = parse_server_args(
        "python -m sglang.launch_server --model-path m --disable-radix-cache --page-size 64"
        " --max-total-tokens 50000"
    )
    assert (sglang.engine, sglang.caching, sglang.block_size, sglang.capacity_tokens) == (
        "sglang",
        False,
        64,
        50000,
    )
    llama = parse_server_args("llama-server -m model.gguf -c 8192 --no-cache-prompt --cache-reuse 256")
    assert (llama.engine, llama.caching, llama.block_size, llama.capacity_tokens) == (
        "llamacpp",
        False,
        None,
        8192,
    )
    assert parse_server_args("vllm serve m").caching
    docker = parse_server_args("docker run --gpus all vllm/vllm-openai:latest --model m --block-size 32")
    assert (docker.engine, docker.block_size) == ("vllm", 32)
    with pytest.raises(ServerArgsError):
        parse_server_args("vllm serve m --block-size sixteen")
    with pytest.raises(ServerArgsError):
        parse_server_args("my-own-server --port 8000")


def test_metrics_scrapes_of_vllm_and_sglang():
    vllm = read_metrics(str(FIX / "vllm_metrics.prom"))
    assert (vllm.hit_rate, vllm.config.engine) == ((150 + 100) / (600 + 400), "vllm")
    assert (vllm.config.caching, vllm.config.block_size, vllm.config.capacity_tokens) == (False, 32, 3200)
    sglang = read_metrics(str(FIX / "sglang_metrics.prom"))
    assert (sglang.hit_rate, sglang.source, sglang.config.engine) == (
        0.0725,
        "sglang:cache_hit_rate",
        "sglang",
    )


@pytest.fixture(scope="module")
def tail_log(tmp_path_factory, tok):
    """A log whose prompts share a >1,024-token static prefix (the TAIL template), its figures."""
    n = 12
    lines = bodies(n)
    texts = rendered_texts(template(TAIL), lines)
    return {
        "n": n,
        "lines": lines,
        "total": sum(n_tokens(tok, t) for t in texts),
        "shared": prefix_tokens(tok, texts[0], "<|user|>\n"),
        "path": write_log(tmp_path_factory.mktemp("tail") / "log.jsonl", lines),
    }


def test_caching_off_is_a_cause(tail_log):
    n, total, shared = tail_log["n"], tail_log["total"], tail_log["shared"]
    data = explain_json(
        "--log",
        tail_log["path"],
        "--template",
        str(TAIL),
        "--server-args",
        "vllm serve m --no-enable-prefix-caching",
    )
    off = data["causes"][0]
    assert (off["kind"], off["hit_rate"]) == ("caching-off", 0.0)
    assert off["what_if_hit_rate"] == round((n - 1) * (shared // 16 * 16) / total, 6)
    assert "--no-enable-prefix-caching" in off["message"]
    assert data["server"]["caching"] is False


def test_a_block_size_longer_than_the_shared_prefix(tail_log):
    n, total, shared = tail_log["n"], tail_log["total"], tail_log["shared"]
    assert shared < 4096
    data = explain_json(
        "--log", tail_log["path"], "--template", str(TAIL), "--server-args", "vllm serve m --block-size 4096"
    )
    assert data["engines"]["vllm"]["hit_tokens"] == 0  # no whole 4,096-token block is shared
    cause = next(c for c in data["causes"] if c["kind"] == "block-size")
    assert (cause["hit_rate"], cause["what_if_hit_rate"]) == (
        0.0,
        round((n - 1) * (shared // 16 * 16) / total, 6),
    )


def test_cache_salt_per_tenant(tmp_path, tok, tail_log):
    n, total, shared = tail_log["n"], tail_log["total"], tail_log["shared"]
    lines = [
        {**x, "body": {**x["body"], "cache_salt": "tenant-a" if i % 2 == 0 else "tenant-b"}}
        for i, x in enumerate(tail_log["lines"])
    ]
    data = explain_json("--log", write_log(tmp_path / "salted.jsonl", lines), "--template", str(TAIL))
    cause = next(c for c in data["causes"] if c["kind"] == "cache-salt")
    block = shared // 16 * 16
    # Each salt's first request finds nothing: two misses instead of one.
    assert (cause["hit_rate"], cause["what_if_hit_rate"]) == (
        round((n - 2) * block / total, 6),
        round((n - 1) * block / total, 6),
    )
    assert cause["tokens_lost"] == block and "2 distinct cache_salt values" in cause["message"]


def test_a_cache_smaller_than_one_prompt(tail_log):
    n, total, shared = tail_log["n"], tail_log["total"], tail_log["shared"]
    data = explain_json(
        "--log",
        tail_log["path"],
        "--template",
        str(TAIL),
        "--server-args",
        "vllm serve m --num-gpu-blocks-override 10",
    )
    assert data["server"]["capacity_tokens"] == 160
    cause = next(c for c in data["causes"] if c["kind"] == "capacity")
    assert "a cache of 160 tokens (--num-gpu-blocks-override 10 × block size 16)" in cause["message"]
    assert (cause["hit_rate"], cause["what_if_hit_rate"]) == (
        0.0,
        round((n - 1) * (shared // 16 * 16) / total, 6),
    )


def test_metrics_give_the_observed_rate_and_the_server_settings(tail_log):
    data = explain_json(
        "--log", tail_log["path"], "--template", str(TAIL), "--metrics", str(FIX / "vllm_metrics.prom")
    )
    assert data["observed"]["hit_rate"] == 0.25
    assert data["observed"]["source"] == "vllm:prefix_cache_hits / vllm:prefix_cache_queries"
    assert (data["server"]["block_size"], data["server"]["caching"]) == (32, False)
    assert [c["kind"] for c in data["causes"] if c["section"] == "server"][0] == "caching-off"


def test_unreadable_server_args_exit_2(tail_log):
    result = CliRunner().invoke(
        cli, ["explain", "--log", tail_log["path"], "--server-args", "vllm serve 'unclosed"]
    )
    assert result.exit_code == 2 and "--server-args" in result.output


# --- 6. latency ------------------------------------------------------------------------------


def test_the_seeds_numbers():
    assert round(prefill_ms(1200, 2790)) == 430


def exactly(tok, text: str, count: int) -> str:
    """`text` cut to a prefix of exactly `count` tokens."""
    enc = tok.encode(text)
    cut = text[: enc.offsets[count][0]]
    assert len(tok.encode(cut).ids) == count
    return cut


def test_ttft_from_a_given_prefill_rate_and_measured_from_the_log(tmp_path, tok):
    from test_explain import CATALOGUE

    n = 6
    # 1,200-token prompts that differ from their first token: every token is recomputed.
    prompts = [exactly(tok, f"{WORDS[i]} {CATALOGUE}", 1200) for i in range(n)]
    lines = [{"body": {"prompt": p}} for p in prompts]
    given = explain_json("--log", write_log(tmp_path / "a.jsonl", lines), "--prefill-rate", "2790")
    assert given["engines"]["sglang"]["hit_tokens"] == 0 and given["tokens"] == n * 1200
    assert given["ttft"] == {
        "prefill_tokens_per_s": 2790.0,
        "source": "given",
        "recomputed_ms_per_request": 430.1,
    }

    timed = [
        {
            **x,
            "ttft_ms": 430.1,
            "response": {"usage": {"prompt_tokens": 1200, "prompt_tokens_details": {"cached_tokens": 0}}},
        }
        for x in lines
    ]
    measured = explain_json("--log", write_log(tmp_path / "b.jsonl", timed))
    assert measured["ttft"]["prefill_tokens_per_s"] == round(1200 / 0.4301, 1)
    assert measured["ttft"]["recomputed_ms_per_request"] == 430.1
    assert measured["ttft"]["source"] == f"measured from {n} requests' TTFT"


def test_each_cause_says_what_fixing_it_saves_in_ttft(tmp_path, tok):
    n = len(QUESTIONS)
    prompts = [f"[req {17 + i}] {POLICY}\nQuestion: {q}" for i, q in enumerate(QUESTIONS)]
    log = write_log(tmp_path / "ids.jsonl", [{"prompt": p} for p in prompts])
    data = explain_json("--log", log, "--prefill-rate", "1000", "--engine", "sglang")
    total = sum(n_tokens(tok, p) for p in prompts)
    moved = [f"[req ] {POLICY}\nQuestion: {q}\n{17 + i}" for i, q in enumerate(QUESTIONS)]
    after = round(
        (n - 1) * prefix_tokens(tok, moved[0], "Question:") / sum(n_tokens(tok, t) for t in moved), 6
    )
    before = data["engines"]["sglang"]["hit_rate"]
    cause = data["causes"][0]
    assert cause["what_if_hit_rate"] == after
    # (after - before) of each request's tokens, at 1,000 tokens/s: one millisecond per token.
    assert cause["ttft_ms_saved_per_request"] == round((after - before) * total / n, 1)


# --- 7. template and tokenizer ---------------------------------------------------------------


@pytest.mark.skipif(not (CORPUS / "qwen3").is_dir(), reason="../shared/corpus (real tokenizers) is absent")
def test_the_tokenizers_own_chat_template_is_the_default_and_is_named(tok):
    from prefixlint.jinja.template import ChatTemplate

    folder = CORPUS / "qwen3"
    tokenizer_file = str(folder / "tokenizer.json.gz")
    data = explain_json("--log", str(FIX / "openai_gateway.jsonl"), "--tokenizer", tokenizer_file)
    assert data["template"] == str(folder / "chat_template.jinja")
    qwen = load_tokenizer(tokenizer_file)
    assert data["tokenizer"] == qwen.name
    _, requests, _ = read(FIX / "openai_gateway.jsonl")
    renderer = Renderer(ChatTemplate((folder / "chat_template.jinja").read_text(), "qwen3"))
    assert data["tokens"] == sum(len(qwen.encode(renderer.render(r).text).ids) for r in requests)
    text = CliRunner().invoke(
        cli, ["explain", "--log", str(FIX / "openai_gateway.jsonl"), "--tokenizer", tokenizer_file]
    )
    assert text.output.startswith(
        f"log format: openai; template: {folder / 'chat_template.jinja'}; tokenizer: {qwen.name}"
    )


def test_html_page_names_the_inputs_and_shows_server_causes(tmp_path, tail_log):
    page = tmp_path / "report.html"
    args = [
        "--log",
        tail_log["path"],
        "--template",
        str(TAIL),
        "--server-args",
        "vllm serve m --no-enable-prefix-caching",
    ]
    result = CliRunner().invoke(cli, ["explain", *args, "--html", str(page)])
    assert result.exit_code == 0, result.output
    html = page.read_text(encoding="utf-8")
    assert f"Log format: openai; template: {TAIL}; tokenizer: " in html
    assert "prefix caching is off (--no-enable-prefix-caching)" in html


def test_openai_responses_api_bodies_with_their_usage(tmp_path):
    lines = [
        {
            "request": {
                "model": "gpt-4.1",
                "instructions": POLICY,
                "input": [{"role": "user", "content": [{"type": "input_text", "text": q}]}],
            },
            "response": {"usage": {"input_tokens": 90, "input_tokens_details": {"cached_tokens": 64 * i}}},
        }
        for i, q in enumerate(QUESTIONS[:2])
    ]
    fmt, requests, skips = read(Path(write_log(tmp_path / "responses.jsonl", lines)))
    assert (fmt, skips) == ("openai", {})
    assert [r.messages for r in requests] == [
        [{"role": "system", "content": POLICY}, {"role": "user", "content": q}] for q in QUESTIONS[:2]
    ]
    assert [(r.observed_prompt_tokens, r.observed_cached_tokens) for r in requests] == [(90, 0), (90, 64)]
