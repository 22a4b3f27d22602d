"""What the serving engine's own settings say about its prefix cache: the command line it was started
with (`--server-args`) and a Prometheus scrape of its `/metrics` (`--metrics FILE`).

Read, never run: the command line is split like a shell would and its flags looked up.
- vLLM (`vllm serve`, `python -m vllm.entrypoints.openai.api_server`): `--enable-prefix-caching` /
  `--no-enable-prefix-caching`, `--block-size N`, `--num-gpu-blocks-override N` (KV capacity in
  blocks). Metrics: `vllm:prefix_cache_queries_total` / `vllm:prefix_cache_hits_total` (tokens),
  the older `vllm:gpu_prefix_cache_hit_rate`, and `vllm:cache_config_info{block_size,
  enable_prefix_caching, num_gpu_blocks}`.
- SGLang (`python -m sglang.launch_server`, `sglang serve`): `--disable-radix-cache`, `--page-size N`,
  `--max-total-tokens N`. Metrics: `sglang:cache_hit_rate`.
- vLLM's own log (its start-up lines, read from the head of a `--log` that is vLLM's output): the
  `non-default args: {…}` line (`block_size`, `num_gpu_blocks_override`, `enable_prefix_caching`),
  the platform (`device_config=cpu` in the engine's config line, `Automatically detected platform
  cuda`: the platform's default block, engine data) and `GPU KV cache size: N tokens`.
- llama.cpp (`llama-server`): `--no-cache-prompt` / `--cache-prompt`, `-c/--ctx-size N`, and what
  its slots and prompt cache replay (prefixlint/engines/llamacpp.py): `-np/--parallel N`,
  `-cram/--cache-ram MIB`, `--slot-prompt-similarity F`, `--kv-unified`, `--no-cache-idle-slots`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from typing import Any

from prefixlint.engines import Engine
from prefixlint.explain.server_inputs import METRICS_BYTES, InputError, parse_metrics, split_command


class ServerArgsError(ValueError):
    """A server command line or metrics file that cannot be read (a usage problem)."""


@dataclass
class ServerConfig:
    """The cache settings of one server, each with the flag or metric it was read from."""

    engine: str | None = None  # "vllm", "sglang" or "llamacpp"
    caching: bool = True
    block_size: int | None = None
    capacity_tokens: int | None = None
    platform: str | None = None  # "cuda", "cpu", …: the default block where none is set
    source: dict[str, str] = field(default_factory=dict)  # setting -> the flag or metric that set it
    llama_server: dict[str, Any] = field(default_factory=dict)  # engines.ServerCache fields it sets

    def merge(self, other: ServerConfig) -> None:
        """Settings of `other` where this one has none (the command line wins over the metrics)."""
        self.engine = self.engine or other.engine
        for name in ("block_size", "capacity_tokens", "platform"):
            if getattr(self, name) is None and getattr(other, name) is not None:
                setattr(self, name, getattr(other, name))
                self.source[name] = other.source[name]
        if "caching" not in self.source and "caching" in other.source:
            self.caching, self.source["caching"] = other.caching, other.source["caching"]

    def apply(self, engine: Engine) -> Engine:
        """`engine` with this server's block size (a vLLM or SGLang block is also its step) and
        llama-server's slot and prompt cache settings."""
        if self.llama_server and engine.server is not None:
            engine = replace(engine, server=replace(engine.server, **self.llama_server))
        if self.platform is not None and self.block_size is None:
            engine = engine.on_platform(self.platform)
        return engine if self.block_size is None else engine.with_block(self.block_size)


_PROGRAMS = (("vllm", "vllm"), ("sglang", "sglang"), ("llama-server", "llamacpp"), ("llama.cpp", "llamacpp"))


def _engine_of(argv: list[str]) -> str | None:
    """The engine the first word naming a server program names (`vllm serve`, a `docker run …
    vllm/vllm-openai` image, `python -m sglang.launch_server`, `llama-server`); flags are skipped."""
    for arg in argv:
        if arg.startswith("-"):
            continue
        for program, engine in _PROGRAMS:
            if program in arg.lower():
                return engine
    return None


def _flags(argv: list[str]) -> dict[str, str]:
    """`--name value`, `--name=value` and bare `--name` (value "") by flag name."""
    out: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if not arg.startswith("-"):
            continue
        name, eq, value = arg.partition("=")
        if not eq:
            nxt = argv[i + 1] if i + 1 < len(argv) else ""
            value = nxt if nxt and not nxt.startswith("-") else ""
        out[name] = value
    return out


def _positive(flags: dict[str, str], *names: str) -> tuple[int, str] | None:
    for name in names:
        if name in flags:
            value = flags[name]
            if not (value.isascii() and value.isdigit()) or int(value) < 1:
                raise ServerArgsError(f"--server-args: {name} {value!r}: expected a positive whole number")
            return int(value), f"{name} {value}"
    return None


def parse_server_args(command: str) -> ServerConfig:
    """The cache settings of a `vllm serve …`, SGLang or `llama-server …` command line."""
    try:
        argv = split_command(command, "--server-args")
    except InputError as exc:
        raise ServerArgsError(str(exc)) from exc
    engine = _engine_of(argv)
    if engine is None:
        raise ServerArgsError(
            "--server-args: name the server (vllm serve, sglang.launch_server or llama-server)"
        )
    flags = _flags(argv)
    config = ServerConfig(engine=engine)
    off = {
        "vllm": ("--no-enable-prefix-caching",),
        "sglang": ("--disable-radix-cache",),
        "llamacpp": ("--no-cache-prompt",),
    }[engine]
    for flag in off:
        if flag in flags:
            config.caching, config.source["caching"] = False, flag
    block = _positive(flags, "--block-size") if engine == "vllm" else _positive(flags, "--page-size")
    if engine != "llamacpp" and block:
        config.block_size, config.source["block_size"] = block
    if engine == "vllm":
        blocks = _positive(flags, "--num-gpu-blocks-override")
        if blocks:
            size = config.block_size or 16
            config.capacity_tokens = blocks[0] * size
            config.source["capacity_tokens"] = f"{blocks[1]} × block size {size}"
    elif engine == "sglang":
        total = _positive(flags, "--max-total-tokens")
        if total:
            config.capacity_tokens, config.source["capacity_tokens"] = total
    else:
        ctx = _positive(flags, "-c", "--ctx-size")
        if ctx:
            config.capacity_tokens, config.source["capacity_tokens"] = ctx
        config.llama_server = _llama_server(argv, flags, config.source)
    return config


def _raw_value(argv: list[str], name: str) -> str | None:
    """The value of `name VALUE` or `name=VALUE`, even one that starts with a dash; None if absent."""
    for i, arg in enumerate(argv):
        if arg == name:
            return argv[i + 1] if i + 1 < len(argv) else ""
        if arg.startswith(f"{name}="):
            return arg.partition("=")[2]
    return None


def _llama_server(argv: list[str], flags: dict[str, str], source: dict[str, str]) -> dict[str, Any]:
    """llama-server's slot and prompt-cache flags, as engines.ServerCache fields."""
    out: dict[str, Any] = {}
    slots = _positive(flags, "-np", "--parallel")
    if slots:
        out["slots"], source["slots"] = slots
        out["kv_unified"] = False  # only `-np auto` (the default) unifies the KV cache
    for name in ("-cram", "--cache-ram"):
        value = _raw_value(argv, name)  # may be -1 (no limit), which _flags takes for a flag
        if value is None:
            continue
        if not (value.removeprefix("-").isascii() and value.removeprefix("-").isdigit()) or int(value) < -1:
            raise ServerArgsError(f"--server-args: {name} {value!r}: expected MiB (-1: no limit, 0: off)")
        out["cache_ram_mib"], source["cache_ram_mib"] = int(value), f"{name} {value}"
    for name in ("-sps", "--slot-prompt-similarity"):
        if name in flags:
            try:
                out["slot_prompt_similarity"] = float(flags[name])
            except ValueError:
                raise ServerArgsError(f"--server-args: {name} {flags[name]!r}: expected a number") from None
            source["slot_prompt_similarity"] = f"{name} {flags[name]}"
    for name, key, value in (
        ("--kv-unified", "kv_unified", True),
        ("-kvu", "kv_unified", True),
        ("--no-kv-unified", "kv_unified", False),
        ("-no-kvu", "kv_unified", False),
        ("--no-cache-idle-slots", "cache_idle_slots", False),
        ("--cache-idle-slots", "cache_idle_slots", True),
    ):
        if name in flags:
            out[key], source[key] = value, name
    return out


@dataclass
class Metrics:
    """A Prometheus scrape's prefix-cache figures (None where the scrape has none)."""

    hit_rate: float | None = None
    source: str | None = None  # the metric the hit rate comes from
    config: ServerConfig = field(default_factory=ServerConfig)


def read_metrics(path: str) -> Metrics:
    """vLLM's or SGLang's prefix-cache hit rate and cache settings from a Prometheus text scrape;
    samples of the same metric (one per model or engine) are summed."""
    try:
        with open(path, "rb") as fh:
            data = fh.read(METRICS_BYTES + 1)
    except OSError as exc:
        raise ServerArgsError(f"--metrics {path}: {exc.strerror or exc}") from exc
    return metrics_from(data, f"--metrics {path}")


def metrics_from(data: bytes, name: str = "--metrics") -> Metrics:
    """`read_metrics` of a scrape's bytes (server_inputs.parse_metrics reads them within limits)."""
    try:
        scrape = parse_metrics(data, name)
    except InputError as exc:
        raise ServerArgsError(str(exc)) from exc
    # NaN and infinities (a scrape may carry them) would make a hit rate no JSON can hold.
    sums = {
        metric: math.fsum(v for _, v in samples if math.isfinite(v))
        for metric, samples in scrape.samples.items()
    }
    info: dict[str, str] = {}
    for labels, _ in scrape.samples.get("vllm:cache_config_info", []):
        info.update(labels)
    out = Metrics()
    queries = sums.get("vllm:prefix_cache_queries_total", sums.get("vllm:prefix_cache_queries"))
    hits = sums.get("vllm:prefix_cache_hits_total", sums.get("vllm:prefix_cache_hits"))
    if queries:
        out.hit_rate, out.source = (
            (hits or 0.0) / queries,
            "vllm:prefix_cache_hits / vllm:prefix_cache_queries",
        )
    elif "vllm:gpu_prefix_cache_hit_rate" in sums:
        out.hit_rate, out.source = sums["vllm:gpu_prefix_cache_hit_rate"], "vllm:gpu_prefix_cache_hit_rate"
    elif "sglang:cache_hit_rate" in sums:
        out.hit_rate, out.source = sums["sglang:cache_hit_rate"], "sglang:cache_hit_rate"
    if any(n.startswith("vllm:") for n in sums):
        out.config.engine = "vllm"
    elif any(n.startswith("sglang:") for n in sums):
        out.config.engine = "sglang"
    config = out.config
    if info.get("block_size", "").isdigit():
        config.block_size = int(info["block_size"])
        config.source["block_size"] = f"vllm:cache_config_info block_size={info['block_size']}"
    if info.get("num_gpu_blocks", "").isdigit():
        config.capacity_tokens = int(info["num_gpu_blocks"]) * (config.block_size or 16)
        config.source["capacity_tokens"] = f"vllm:cache_config_info num_gpu_blocks={info['num_gpu_blocks']}"
    if info.get("enable_prefix_caching") in ("True", "False", "true", "false"):
        config.caching = info["enable_prefix_caching"].lower() == "true"
        config.source["caching"] = (
            f"vllm:cache_config_info enable_prefix_caching={info['enable_prefix_caching']}"
        )
    return out


_NON_DEFAULT = re.compile(r"non-default args: \{(?P<args>.*)\}")
_ARG = re.compile(r"'(block_size|num_gpu_blocks_override|enable_prefix_caching)': (\d+|True|False)")
_PLATFORM = re.compile(r"Automatically detected platform (\w+)|\bdevice_config=(\w+)")
_KV_TOKENS = re.compile(r"GPU KV cache size: ([\d,]+) tokens")


def vllm_log_config(lines: Iterable[str]) -> ServerConfig | None:
    """The cache settings vLLM's start-up lines state (None where no line says any)."""
    config = ServerConfig(engine="vllm")
    override: int | None = None
    for line in lines:
        if "non-default args" in line and (found := _NON_DEFAULT.search(line)):
            for name, value in _ARG.findall(found["args"]):
                if name == "block_size" and value.isdigit() and int(value) > 0:
                    config.block_size, config.source["block_size"] = int(value), f"log: 'block_size': {value}"
                elif name == "num_gpu_blocks_override" and value.isdigit() and int(value) > 0:
                    override = int(value)
                elif name == "enable_prefix_caching" and value in ("True", "False"):
                    config.caching = value == "True"
                    config.source["caching"] = f"log: 'enable_prefix_caching': {value}"
        elif (found := _PLATFORM.search(line)) and config.platform is None:
            config.platform = found[1] or found[2]
            config.source["platform"] = f"log: {found[0]}"
        elif (found := _KV_TOKENS.search(line)) and config.capacity_tokens is None:
            config.capacity_tokens = int(found[1].replace(",", ""))
            config.source["capacity_tokens"] = f"log: {found[0]}"
    if override is not None:  # the blocks the server was told to use, whatever it found room for
        size = config.block_size or 16
        config.capacity_tokens = override * size
        config.source["capacity_tokens"] = f"log: 'num_gpu_blocks_override': {override} × block size {size}"
    return config if config.source else None


def read_server(
    command: str | None, metrics_path: str | None, log_head: Iterable[str] = ()
) -> tuple[ServerConfig | None, Metrics | None]:
    """The server's settings from its command line, its metrics and its log's start-up lines
    (`log_head`; the command line wins where several say, then the metrics), and the metrics
    themselves; (None, None) when none is given."""
    server = parse_server_args(command) if command else None
    scrape = read_metrics(metrics_path) if metrics_path else None
    for config in (scrape.config if scrape is not None else None, vllm_log_config(log_head)):
        if config is None:
            continue
        if server is None:
            server = config
        else:
            server.merge(config)
    return server, scrape
