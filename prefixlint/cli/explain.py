"""`prefixlint explain`: its options; what it does with them is prefixlint/explain/command.py."""

from __future__ import annotations

from typing import Any

import click

from prefixlint.cli.app import cli, fail
from prefixlint.cli.options import parse_template_vars, template_var_options


@cli.command()
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--log",
    "log",
    multiple=True,
    type=click.Path(exists=True, dir_okay=False),
    help="Request log: JSONL of OpenAI/Anthropic bodies (with responses), LiteLLM payloads or OTel "
    "GenAI spans, or a vLLM --enable-log-requests log; gzip accepted. Given more than once, the "
    "files are read as one log in the order given, lines numbered on as `cat` joins them.",
)
@click.option(
    "--trace",
    type=click.Path(exists=True, dir_okay=False),
    help="A Mooncake-format trace (JSONL of timestamp, input_length, output_length, hash_ids) from any "
    "tool: hit rates per engine and routing policy, no causes. Its blocks are --block-size tokens.",
)
@click.option(
    "--export-trace",
    type=click.Path(dir_okay=False),
    metavar="TRACE.jsonl",
    help="With --log: also write the log as a Mooncake-format trace (block hashes, no text).",
)
@click.option(
    "--trace-salt",
    metavar="TEXT",
    help="With --export-trace: key the block hashes with TEXT, so that traces exported with the same "
    "TEXT match block for block (default: ids numbered in order of first appearance).",
)
@click.option(
    "--capacity-curve",
    is_flag=True,
    help="Also report the hit rate at a range of cache sizes (LRU of the first block-pool engine's "
    "blocks, from reuse distances, in one pass).",
)
@click.option(
    "--template",
    type=click.Path(exists=True, dir_okay=False),
    help="Chat template (.jinja or tokenizer_config.json); default: the one beside --tokenizer/--model-dir.",
)
@click.option(
    "--model-dir",
    type=click.Path(exists=True, file_okay=False),
    help="Model folder: tokenizer and chat template.",
)
@click.option("--tokenizer", help="tokenizer.json (or .gz), a model folder, or a Hub id.")
@click.option("--engine", "engines", multiple=True, help="Engines to simulate (default: vllm sglang openai).")
@click.option(
    "--block-size",
    type=click.IntRange(min=1),
    metavar="TOKENS",
    help="The first engine's cache block in tokens (default: the server's settings, else the engine's own); "
    "with --trace, the trace's block.",
)
@click.option("--cache-tokens", type=click.IntRange(min=1), help="Also simulate an LRU of this many tokens.")
@click.option(
    "--log-format",
    type=click.Choice(["openai", "anthropic", "litellm", "otel", "vllm-log"]),
    help="The log's format (default: detected from its first records).",
)
@click.option("--server-args", help='The server\'s command line, e.g. "vllm serve MODEL --block-size 32".')
@click.option(
    "--metrics",
    type=click.Path(exists=True, dir_okay=False),
    help="A Prometheus text scrape of the server's /metrics.",
)
@click.option(
    "--prefill-rate",
    type=click.FloatRange(min=0, min_open=True),
    help="Prefill tokens per second, to turn recomputed tokens into TTFT (default: measured from the log).",
)
@click.option("--top", type=click.IntRange(min=1), default=10, show_default=True, help="Causes to report.")
@click.option(
    "--what-if",
    "what_if",
    type=click.IntRange(min=0),
    default=3,
    show_default=True,
    help="Top causes to re-simulate moved after the static content.",
)
@click.option(
    "--interval",
    type=float,
    default=1.0,
    show_default=True,
    help="Seconds between requests that carry no timestamp (the clock templates read).",
)
@click.option(
    "--replicas",
    type=click.IntRange(min=1),
    help="Replicas behind a router: each policy's hit rate as a what-if.",
)
@click.option(
    "--workers",
    type=click.IntRange(min=1),
    help="Processes rendering the log (default: one per core for a log over 8 MB, else none).",
)
@click.option(
    "--dask",
    metavar="ADDRESS|local[:N]",
    help="Render and tokenize the log as Dask tasks: on the scheduler at ADDRESS (tcp://HOST:8786), or "
    "on a local cluster of N worker processes (default: one per core); with --replicas, the replicas of "
    "the policies that route by the request alone are simulated there too (also on a --trace). "
    "Needs prefixlint[dask].",
)
@click.option(
    "--routing",
    # The names of prefixlint.explain.routing.POLICIES, not imported here: the CLI loads fast.
    type=click.Choice(
        [
            "round-robin",
            "random",
            "session",
            "prefix-aware",
            "sglang-cache-aware",
            "sglang-cache-aware-0.1",
            "gie-prefix",
            "consistent-hash",
        ]
    ),
    default="round-robin",
    show_default=True,
    help="The router the replicas run now (with --replicas); the policies' numbers and sources are "
    "in prefixlint/data/routers.toml.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Also write an HTML page.")
@click.option(
    "--max-requests",
    type=click.IntRange(min=0),
    help="Analyse only the first N requests of the log, a sample the report states (0: all). "
    "[default: 1000000]",
)
@click.option(
    "--max-seconds",
    type=click.FloatRange(min=0),
    help="Wall-clock budget: stop with exit 2 when the run takes longer (0: none). [default: 0]",
)
@click.option(
    "--max-request-bytes",
    type=click.IntRange(min=0),
    help="Skip a request whose prompt is larger (UTF-8 bytes): the most the tokenizer sees. "
    "[default: 1000000]",
)
@click.option(
    "--max-messages",
    type=click.IntRange(min=0),
    help="Skip a request with more messages or tools. [default: 10000]",
)
@click.option(
    "--limit",
    multiple=True,
    metavar="NAME=N",
    help="Set any log limit: log_bytes, ratio, ratio_after, line_bytes, depth, request_bytes, messages, "
    "requests, seconds (0 turns one off).",
)
@template_var_options
def explain(
    paths: tuple[str, ...], template_var: tuple[str, ...], chat_template_kwargs: str | None, **kw: Any
) -> None:
    """Why the prefix cache misses: two requests (A B), a request log (--log), or a TEMPLATE."""
    from prefixlint.explain.command import ExplainError, run
    from prefixlint.models.tokens import TokenizerError

    kw["template_vars"] = parse_template_vars(chat_template_kwargs, template_var)
    try:
        click.echo(run(paths, **kw), nl=False)
    except (ExplainError, TokenizerError) as exc:
        fail(str(exc))
