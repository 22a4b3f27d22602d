"""Streaming prefix-cache simulation: requests replayed, in arrival order, through the cache of
every engine, each hit counted by the engine's own rule.

Requests arrive as token id sequences (packed: engines/packed.py). A radix tree (engines/radix.py)
holds what the cache holds; a request's hit is the engine's own rule (engines/profiles.py: whole
16-token blocks and the last-token recompute for vLLM, per token for SGLang, ≥1,024 then 128-token
steps for OpenAI) applied to the longest prefix it shares with the cache.

For vLLM this equals chained block hashing: a block's hash covers every token before it, so the
cached blocks a request finds are exactly the whole blocks of its longest common prefix with some
earlier request. With a capacity, each engine replays its own eviction (engine data `eviction`):
SGLang's radix tree drops whole leaves, least recently used first; vLLM's block pool is replayed
block by block (engines/blockpool.py); llama-server's slots and prompt cache by engines/llamacpp.py.
Every cache here has a capacity (the reference one a large default), so memory stays flat as the
log grows.

What a request leaves in the cache is its prompt and, for an engine that keeps it (`reply_cached`),
the reply's tokens that were computed (a log's responses: explain/replies.py). An engine that honours
`cache_salt` reuses only requests with the same salt. Engines that differ in either see their own
tree, split from the reference only when the log first has a reply or a salt.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from prefixlint.engines.blockpool import BlockPool
from prefixlint.engines.packed import WIDTH, pack
from prefixlint.engines.profiles import Engine
from prefixlint.engines.radix import Match, RadixCache


class PrefixCache(Protocol):
    """What the simulation asks of an engine's cache model (a radix tree here; a slot cache fits
    too): how much of a request it holds, then the request itself, in arrival order."""

    tokens: int  # tokens held now

    def lookup(self, seq: bytes, salt: str | None = None) -> int:
        """Tokens of packed `seq`'s longest prefix the cache holds (for requests of `salt`)."""
        ...

    def insert(self, seq: bytes, prompt_tokens: int | None = None, salt: str | None = None) -> None:
        """One request served: `seq` is what it leaves (its prompt, then any reply tokens kept),
        `prompt_tokens` the prompt's length."""
        ...


@dataclass
class EngineTally:
    """Hit tokens of one engine under one cache size."""

    engine: Engine
    capacity: int | None = None
    hit_tokens: int = 0
    hits: list[int] = field(default_factory=list)  # per request, only when asked (tests, what-ifs)

    def record(self, shared: int, length: int, keep: bool = False) -> int:
        hit = self.engine.cacheable(shared, length)
        self.hit_tokens += hit
        if keep:
            self.hits.append(hit)
        return hit


# The reference cache holds this many of the most recently used tokens (≈32 MB of ids here; the
# KV cache of a large model over several GPUs). Bounded so that memory stays flat however long the
# log: a log shorter than this sees an unbounded cache. `--cache-tokens` adds the server's own size.
REFERENCE_TOKENS = 8_000_000


def engine_cache(engine: Engine, capacity: int) -> PrefixCache:
    """The cache of `capacity` tokens one server of `engine` runs, with its own eviction."""
    if engine.eviction == "block-pool":
        return BlockPool(capacity, engine.block_size)
    return RadixCache(capacity, page=engine.block_size)


class Simulation:
    """Replays requests through a reference cache (shared by every engine: each applies its own
    rule to the same longest prefix) and, given a capacity, one cache of that size per engine with
    the engine's own eviction (`cache_model(engine, capacity)`).

    The reference holds what the first engine keeps of a request, unsalted: the prompt, and the
    reply where that engine keeps it. An engine that keeps more or less, or honours `cache_salt`,
    matches in its own view, a copy of the reference made when a request first differs for it."""

    def __init__(
        self,
        engines: list[Engine],
        capacity: int | None = None,
        counts: bool = False,
        keep_hits: bool = False,
        cache_model: Callable[[Engine, int], PrefixCache] = engine_cache,
        reference_tokens: int = REFERENCE_TOKENS,
    ) -> None:
        self.reference = RadixCache(reference_tokens, counts=counts)
        self.engines = engines
        self.tallies = {e.name: EngineTally(e) for e in engines}
        self.lru: dict[str, tuple[PrefixCache, EngineTally]] = (
            {e.name: (cache_model(e, capacity), EngineTally(e, capacity)) for e in engines}
            if capacity
            else {}
        )
        self.requests = 0
        self.tokens = 0
        self.keep_hits = keep_hits
        # An engine that reuses only what its server still holds (llama-server's slots) replays it.
        self.servers = {e.name: e.server.model() for e in engines if e.server is not None}
        self._reply = bool(engines) and engines[0].reply_cached  # what the reference keeps
        # (keeps replies, honours cache_salt, honours a cache key) -> its own tree
        self._views: dict[tuple[bool, bool, bool], RadixCache] = {}
        # The last request's hit tokens per engine: unbounded, and in the cache of the capacity.
        self.last: dict[str, int] = {}
        self.last_lru: dict[str, int] = {}

    def _view(self, engine: Engine, reply: bool, keyed: bool) -> RadixCache:
        """The tree `engine` matches in: the reference, until a request differs for it (`keyed`: the
        request has a salt or cache key this engine honours)."""
        key = (engine.reply_cached, engine.cache_salt, engine.cache_key is not None)
        view = self._views.get(key)
        if view is None:
            if (reply and key[0] != self._reply) or keyed:
                view = self._views[key] = self.reference.copy()
            else:
                return self.reference
        return view

    def feed(
        self,
        ids: list[int] | bytes,
        inspect: Callable[[Match], None] | None = None,
        reply: list[int] | bytes = b"",
        salt: str | None = None,
        cache_key: str | None = None,
    ) -> Match:
        """One request, in arrival order; returns its longest prefix shared with an earlier one.
        `inspect` sees that match while the cache still holds only earlier requests. `reply`: the
        reply's tokens the engine computed (all but the last generated); `salt`: its cache_salt;
        `cache_key`: its routing key (OpenAI's prompt_cache_key), for an engine that routes by one."""
        seq = ids if isinstance(ids, bytes) else pack(ids)
        tail = reply if isinstance(reply, bytes) else pack(reply)
        n = len(seq) // WIDTH
        found = self.reference.match(seq)
        if inspect is not None:
            inspect(found)
        views: dict[int, tuple[RadixCache, bool, str | None]] = {}
        for name, tally in self.tallies.items():
            engine = tally.engine
            server = self.servers.get(name)
            if server is not None:
                shared = server.feed(seq)
            else:
                own_salt = own_key(engine, salt, cache_key)
                view = self._view(engine, bool(tail), own_salt is not None)
                if view is self.reference:
                    shared = found.length
                else:
                    views[id(view)] = (view, engine.reply_cached, own_salt)
                    shared = view.lookup(seq, own_salt)
            self.last[name] = tally.record(shared, n, self.keep_hits)
        for name, (cache, tally) in self.lru.items():
            engine = tally.engine
            own_salt = own_key(engine, salt, cache_key)
            self.last_lru[name] = tally.record(cache.lookup(seq, own_salt), n, self.keep_hits)
            cache.insert(seq + tail if engine.reply_cached else seq, n, own_salt)
        for view, keeps_reply, own_salt in views.values():
            view.insert(seq + tail if keeps_reply else seq, salt=own_salt)
        self.reference.insert(seq + tail if self._reply else seq)
        self.requests += 1
        self.tokens += n
        return found

    def summary(self) -> dict[str, dict[str, object]]:
        out: dict[str, dict[str, object]] = {}
        for name, tally in self.tallies.items():
            entry: dict[str, object] = {
                "hit_rate": round(tally.hit_tokens / self.tokens, 6) if self.tokens else 0.0,
                "hit_tokens": tally.hit_tokens,
            }
            if name in self.lru:
                lru = self.lru[name][1]
                entry["lru"] = {
                    "capacity_tokens": lru.capacity,
                    "hit_rate": round(lru.hit_tokens / self.tokens, 6) if self.tokens else 0.0,
                    "hit_tokens": lru.hit_tokens,
                }
            out[name] = entry
        return out


def own_key(engine: Engine, salt: str | None, cache_key: str | None) -> str | None:
    """What keys `engine`'s cache for this request: its cache_salt where the engine honours one,
    else its routing key (prompt_cache_key) where the engine routes by one; a salt and a key never
    meet in one engine, so the two share the salted namespace."""
    if engine.cache_salt:
        return salt
    return cache_key if engine.cache_key is not None else None
