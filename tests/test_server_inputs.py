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
    split_command,
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


def test_command_lines_split_as_a_shell_would_without_running_them():
    assert split_command("/opt/bin/llama-server -m 'my model.gguf' -c 8192 $(rm -rf /)") == [
        "/opt/bin/llama-server",
        "-m",
        "my model.gguf",
        "-c",
        "8192",
        "$(rm",
        "-rf",
        "/)",
    ]


def test_a_nan_in_a_scrape_gives_no_nan_hit_rate():
    # explain/server.py reads the figures from these samples: a JSON report must never hold NaN.
    from prefixlint.explain.server import metrics_from

    scrape = b"vllm:prefix_cache_queries_total NaN\nvllm:prefix_cache_hits_total 5\n"
    assert metrics_from(scrape).hit_rate is None
    scrape = b"vllm:prefix_cache_queries_total 10\nvllm:prefix_cache_queries_total +Inf\n"
    scrape += b"vllm:prefix_cache_hits_total 5\n"
    assert metrics_from(scrape).hit_rate == 0.5


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
        split_command(text)
