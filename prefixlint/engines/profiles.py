"""Engine profiles: how many tokens of a shared prefix each serving engine really reuses.

The numbers live in `data/engines.toml` (with their sources) so they can change without code; a
profile is plain data, read here, and the simulators beside it replay what it describes.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from functools import cache
from importlib import resources
from pathlib import Path

from prefixlint.engines.llamacpp import LlamaServer


@dataclass(frozen=True)
class ServerCache:
    """llama-server's cache of earlier prompts (its `[ENGINE.server]` table): slots that keep their
    last prompt and a host-memory prompt cache; replayed by engines/llamacpp.py."""

    slots: int = 4  # -np; the server's default (auto) is 4 slots with a unified KV cache
    cache_ram_mib: int = 8192  # --cache-ram: 0 turns the prompt cache off
    slot_prompt_similarity: float = 0.1  # --slot-prompt-similarity
    cache_idle_slots: bool = True  # --cache-idle-slots
    kv_unified: bool = True  # --kv-unified
    kv_bytes_per_token: int = 131_072  # the model's KV cache per token: what --cache-ram MiB holds

    def model(self) -> LlamaServer:
        """A llama-server prompt cache of these settings, empty."""
        unlimited = self.cache_ram_mib < 0
        return LlamaServer(
            slots=self.slots,
            cache_ram=self.cache_ram_mib != 0,
            slot_prompt_similarity=self.slot_prompt_similarity,
            cache_idle_slots=self.cache_idle_slots,
            kv_unified=self.kv_unified,
            capacity=None if unlimited else (self.cache_ram_mib << 20) // max(1, self.kv_bytes_per_token),
        )


@dataclass(frozen=True)
class Breakpoints:
    """A provider that reads its cache only at `cache_control` breakpoints (its `[ENGINE.breakpoints]`
    table): how many a request may carry, how far back each looks, how long an entry lives."""

    max_breakpoints: int = 4
    lookback_blocks: int = 20  # the breakpoint's own block and the ones before it that are checked
    ttl_seconds: int = 300  # the default ("5m"), from the entry's last use
    ttl_1h_seconds: int = 3600  # `"ttl": "1h"`

    def ttl(self, cache_control: object) -> int:
        """Seconds an entry written at a breakpoint with this `cache_control` lives unread."""
        long = isinstance(cache_control, dict) and cache_control.get("ttl") == "1h"
        return self.ttl_1h_seconds if long else self.ttl_seconds


@dataclass(frozen=True)
class Engine:
    name: str
    block_size: int
    minimum_tokens: int
    increment: int
    recompute_last_token: bool
    server: ServerCache | None = None  # None: any earlier request's prefix can be reused
    reply_cached: bool = False  # a reply's tokens join the cache after its prompt (a log's responses)
    cache_salt: bool = False  # requests reuse only requests with their own `cache_salt`
    eviction: str = "radix"  # with a capacity: "radix" (whole LRU leaves) or "block-pool" (vLLM's)
    platform_block_size: tuple[tuple[str, int], ...] = ()  # the default block per platform
    breakpoints: Breakpoints | None = None  # read only at cache_control breakpoints (Anthropic)
    minimum_by_model: tuple[tuple[str, int], ...] = ()  # (glob over the model name, minimum)
    # A request field hashed into the route with the first tokens (OpenAI's `prompt_cache_key`):
    # requests reuse only requests with the same value of it, as with `cache_salt`.
    cache_key: str | None = None
    routing_prefix_tokens: int = 0  # tokens of the prompt the route is hashed from

    def minimum_for(self, model: str | None) -> int:
        """The minimum cacheable length for `model` (the log's `model` field): the first glob of
        `minimum_by_model` that matches it, else `minimum_tokens`."""
        if model:
            for glob, minimum in self.minimum_by_model:
                if fnmatchcase(model, glob):
                    return minimum
        return self.minimum_tokens

    def with_block(self, block: int) -> Engine:
        """This engine with a cache block of `block` tokens (a step that was the block follows it)."""
        if block == self.block_size:
            return self
        increment = block if self.increment == self.block_size else self.increment
        return replace(self, block_size=block, increment=increment)

    def on_platform(self, platform: str) -> Engine:
        """This engine with its default block on `platform` (the same if it has none there)."""
        block = dict(self.platform_block_size).get(platform)
        return self if block is None else self.with_block(block)

    def cacheable(self, common_prefix: int, prompt_tokens: int | None = None) -> int:
        """Tokens this engine serves from cache when a request shares `common_prefix` tokens
        with an earlier one (`prompt_tokens`: the request's length, for the last-token recompute)."""
        usable = common_prefix
        if self.recompute_last_token and prompt_tokens is not None:
            usable = min(usable, prompt_tokens - 1)
        if usable < max(self.minimum_tokens, self.block_size, 1):
            return 0
        usable -= usable % self.block_size
        if self.minimum_tokens and self.increment > 1:
            usable = self.minimum_tokens + (usable - self.minimum_tokens) // self.increment * self.increment
        return usable


def describe(engine: Engine) -> str:
    """What the engine caches of a shared prefix, in words (`prefixlint engines`)."""
    unit = f"whole blocks of {engine.block_size} tokens" if engine.block_size > 1 else "per token"
    parts = [unit]
    if engine.minimum_tokens:
        steps = f", then steps of {engine.increment:,}" if engine.increment > 1 else ""
        parts = [f"nothing under {engine.minimum_tokens:,} tokens{steps}"]
        if engine.block_size > 1:
            parts.append(unit)
    if engine.recompute_last_token:
        parts.append("the last prompt token always recomputed")
    if engine.breakpoints is not None:
        rules = engine.breakpoints
        parts.append(
            f"on Anthropic bodies in a log, read only at cache_control breakpoints (at most "
            f"{rules.max_breakpoints}, each looking back {rules.lookback_blocks} blocks, entries kept "
            f"{rules.ttl_seconds:,} s or {rules.ttl_1h_seconds:,} s; the minimum by the log's model)"
        )
    if engine.server is not None:
        server = engine.server
        ram = "off" if server.cache_ram_mib == 0 else f"{server.cache_ram_mib:,} MiB"
        parts.append(f"{server.slots} slots, each keeping its last prompt; a prompt cache of {ram}")
    return "; ".join(parts)


class EngineDataError(Exception):
    pass


EVICTIONS = ("radix", "block-pool")


def _eviction(value: object) -> str:
    if value not in EVICTIONS:
        raise ValueError(f"eviction {value!r}: expected one of {', '.join(EVICTIONS)}")
    return str(value)


@cache
def load_engines(path: str | None = None) -> dict[str, Engine]:
    """The default profiles, or the user's file of the same shape."""
    try:
        if path is None:
            text = resources.files("prefixlint").joinpath("data/engines.toml").read_text("utf-8")
        else:
            text = Path(path).read_text(encoding="utf-8")
        data = tomllib.loads(text)
        return {
            name: Engine(
                name=name,
                block_size=int(v.get("block_size", 1)),
                minimum_tokens=int(v.get("minimum_tokens", 0)),
                increment=int(v.get("increment", 1)),
                recompute_last_token=bool(v.get("recompute_last_token", False)),
                server=ServerCache(**v["server"]) if "server" in v else None,
                reply_cached=bool(v.get("reply_cached", False)),
                cache_salt=bool(v.get("cache_salt", False)),
                eviction=_eviction(v.get("eviction", "radix")),
                platform_block_size=tuple(
                    (str(k), int(b)) for k, b in v.get("platform_block_size", {}).items()
                ),
                breakpoints=Breakpoints(**v["breakpoints"]) if "breakpoints" in v else None,
                minimum_by_model=tuple((str(k), int(m)) for k, m in v.get("minimum_by_model", {}).items()),
                cache_key=str(v["cache_key"]) if "cache_key" in v else None,
                routing_prefix_tokens=int(v.get("routing_prefix_tokens", 0)),
            )
            for name, v in data.items()
        }
    except (OSError, ValueError, AttributeError, TypeError) as exc:
        raise EngineDataError(f"{path or 'engines.toml'}: {exc}") from exc


def profiles(chosen: Engine | None = None) -> dict[str, Engine]:
    """Every engine's profile, with the run's `chosen` one (its `--block-size`) in its place."""
    known = load_engines()
    return known if chosen is None else {**known, chosen.name: chosen}


def cacheable_per_engine(
    common_prefix: int, prompt_tokens: int | None = None, chosen: Engine | None = None
) -> dict[str, int]:
    return {name: e.cacheable(common_prefix, prompt_tokens) for name, e in profiles(chosen).items()}
