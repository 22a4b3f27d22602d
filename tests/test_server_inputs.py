"""Bounded readers of a Prometheus scrape and a server command line: real shapes read right, any
bytes give a result or a named InputError (fuzzed in tests/test_fuzz_logs.py)."""

from __future__ import annotations

import pytest

from prefixlint.explain.server_inputs import (
    ARGS_BYTES,
    LABELS_PER_SAMPLE,
    METRICS_BYTES,
    InputError,
    parse_metrics,
    parse_server_args,
)

# The shape vLLM's /metrics serves (prometheus_client text format), with SGLang's gauge beside it.
SCRAPE = b"""# HELP vllm:prefix_cache_queries_total Prefix cache queries, in queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="Qwen/Qwen3-8B"} 120000.0
vllm:prefix_cache_queries_total{engine="1",model_name="Qwen/Qwen3-8B"} 80000.0
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="Qwen/Qwen3-8B"} 3000.0
vllm:prefix_cache_hits_total{engine="1",model_name="Qwen/Qwen3-8B"} 1000.0
sglang:cache_hit_rate{model_name="m",path="a\\"b\\\\c}d"} 0.25 1700000000000
process_start_time_seconds 1.7e+09
"""


def test_a_vllm_and_sglang_scrape_reads_counters_labels_and_escapes():
    metrics = parse_metrics(SCRAPE)
    assert metrics.total("vllm:prefix_cache_queries_total") == 200_000.0
    assert metrics.total("vllm:prefix_cache_hits_total", engine="0") == 3000.0
    assert metrics.total("vllm:prefix_cache_hits_total", model_name="other") is None
    [(labels, value)] = metrics.samples["sglang:cache_hit_rate"]
    assert (labels, value) == ({"model_name": "m", "path": 'a"b\\c}d'}, 0.25)
    assert metrics.skips.total == 0


def test_bad_scrape_lines_are_counted_skips_and_a_huge_scrape_is_an_error():
    labels = ",".join(f'l{i}="v"' for i in range(LABELS_PER_SAMPLE + 1))
    data = SCRAPE + b"garbage line\nm{a=1} 2\nm 3 4 5\nm nan\nm{" + labels.encode() + b"} 1\n\xff\xfe 1\n"
    metrics = parse_metrics(data)
    assert metrics.skips.counts() == {"not-a-sample": 4, "too-many-labels": 1}
    assert metrics.skips.examples[:2] == [
        "line 10: the value 'line' is not a number",
        'line 11: labels are not `name="value"` pairs',
    ]
    assert metrics.samples["m"] == [({}, pytest.approx(float("nan"), nan_ok=True))]
    with pytest.raises(InputError, match=r"scrape.prom: larger than 64 MB"):
        parse_metrics(b"#" * (METRICS_BYTES + 1), "scrape.prom")


def test_server_command_lines_of_each_engine():
    vllm = parse_server_args(
        "vllm serve Qwen/Qwen3-8B --block-size 32 --no-enable-prefix-caching --port=8000"
    )
    assert vllm.engine == "vllm" and vllm.words == ("vllm", "serve", "Qwen/Qwen3-8B")
    assert vllm.options == {"--block-size": "32", "--no-enable-prefix-caching": None, "--port": "8000"}
    sglang = parse_server_args("python3 -m sglang.launch_server --model-path m --disable-radix-cache")
    assert sglang.engine == "sglang" and sglang.options["--disable-radix-cache"] is None
    llama = parse_server_args("/opt/bin/llama-server -m 'my model.gguf' -c 8192 --cache-reuse 256 -ngl -1")
    assert llama.engine == "llama.cpp"
    assert llama.options == {"-m": "my model.gguf", "-c": "8192", "--cache-reuse": "256", "-ngl": "-1"}
    assert parse_server_args("--block-size 16").engine is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("vllm serve 'unclosed", "No closing quotation"),
        ("vllm serve m --x \x00", "NUL"),
        ("x" * (ARGS_BYTES + 1), "longer than 64,000 bytes"),
        ("a " * 4001, "more than 4,000 words"),
    ],
)
def test_a_command_line_no_shell_would_split_is_a_named_error(text, message):
    with pytest.raises(InputError, match=message):
        parse_server_args(text)
