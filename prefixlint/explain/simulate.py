"""Streaming prefix-cache simulation.

Requests arrive as token id sequences. A radix tree over token ids holds what the cache holds; each
edge is a `bytes` of packed 4-byte ids, so comparisons run in C and memory grows with the distinct
prefixes seen, not with the log. A request's hit is the engine's own rule (engines.py: whole 16-token
blocks and the last-token recompute for vLLM, per token for SGLang, ≥1,024 then 128-token steps for
OpenAI) applied to the longest prefix it shares with the cache.

For vLLM this equals chained block hashing: a block's hash covers every token before it, so the
cached blocks a request finds are exactly the whole blocks of its longest common prefix with some
earlier request. With a capacity (LRU by tokens), the least recently used leaves are evicted first,
as SGLang evicts radix leaves and vLLM frees a sequence's tail blocks before its head. Every cache
here has a capacity (the reference one a large default), so memory stays flat as the log grows.
"""

from __future__ import annotations

import heapq
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from prefixlint.engines import Engine

_W = 4  # bytes per packed token id


def pack(ids: list[int]) -> bytes:
    return array("I", ids).tobytes()


def unpack(data: bytes) -> list[int]:
    out = array("I")
    out.frombytes(data)
    return out.tolist()


def common_bytes_prefix(a: bytes, b: bytes, start: int = 0) -> int:
    """Whole tokens `a` shares with `b[start:]`, by binary search over C-level slice comparisons."""
    n = min(len(a), len(b) - start) // _W
    if a[: n * _W] == b[start : start + n * _W]:
        return n
    lo, hi = 0, n  # invariant: lo tokens match, hi do not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[: mid * _W] == b[start : start + mid * _W]:
            lo = mid
        else:
            hi = mid
    return lo


class _Node:
    __slots__ = ("edges", "count", "parent", "key", "stamp")

    def __init__(self, parent: _Node | None = None, key: bytes = b"") -> None:
        self.edges: dict[bytes, tuple[bytes, _Node]] = {}  # first packed id -> (label, child)
        self.count = 0  # requests whose prompt passed through this node
        self.parent = parent  # None once evicted
        self.key = key
        self.stamp = 0  # the last request that passed through it


@dataclass
class Match:
    """The longest cached prefix of a sequence, and the cached continuation where it stopped."""

    length: int
    node: _Node  # where the cached continuation goes on: the node at the end of the edge it left
    label_rest: bytes  # the rest of that edge it stopped inside (empty at a node)


class PrefixCache(Protocol):
    """What the simulation asks of an engine's cache model (a radix tree here; a slot cache fits
    too): how much of a request it holds, then the request itself, in arrival order."""

    tokens: int  # tokens held now

    def lookup(self, seq: bytes) -> int:
        """Tokens of packed `seq`'s longest prefix the cache holds."""
        ...

    def insert(self, seq: bytes) -> None: ...


class RadixCache:
    """Token sequences sharing prefixes; optional capacity in tokens with LRU eviction of leaves."""

    def __init__(self, capacity: int | None = None, counts: bool = False) -> None:
        self.root = _Node()
        self.capacity = capacity
        self.tokens = 0  # tokens held
        self.counts = counts
        self._clock = 0
        self._nodes = 0
        # Leaves by last use, oldest first, as (stamp, tie-break, node); an entry whose node was used
        # since, grew children or left the tree is stale and skipped. Only with a capacity.
        self._lru: list[tuple[int, int, _Node]] = []
        self._pushes = 0

    def lookup(self, seq: bytes) -> int:
        return self.match(seq).length

    def match(self, seq: bytes) -> Match:
        node, pos = self.root, 0
        while pos < len(seq):
            edge = node.edges.get(seq[pos : pos + _W])
            if edge is None:
                return Match(pos // _W, node, b"")
            label, child = edge
            k = common_bytes_prefix(label, seq, pos)
            pos += k * _W
            if k * _W < len(label):
                return Match(pos // _W, child, label[k * _W :])
            node = child
        return Match(pos // _W, node, b"")

    def continuation(self, found: Match, limit: int) -> bytes:
        """Up to `limit` tokens an earlier request had after the shared prefix (the oldest branch)."""
        parts = [found.label_rest]
        size = len(found.label_rest)
        node = found.node
        while size < limit * _W and node.edges:
            label, node = next(iter(node.edges.values()))
            parts.append(label)
            size += len(label)
        return b"".join(parts)[: limit * _W]

    def insert(self, seq: bytes) -> None:
        self._clock += 1
        stamp = self._clock
        node, pos = self.root, 0
        node.stamp = stamp
        if self.counts:
            node.count += 1
        while pos < len(seq):
            key = seq[pos : pos + _W]
            edge = node.edges.get(key)
            if edge is None:
                child = _Node(node, key)
                node.edges[key] = (seq[pos:], child)
                self.tokens += (len(seq) - pos) // _W
                self._nodes += 1
                node = child
                node.stamp = stamp
                if self.counts:
                    node.count += 1
                break
            label, child = edge
            k = common_bytes_prefix(label, seq, pos)
            if k * _W < len(label):  # split the edge where the sequence leaves it
                middle = _Node(node, key)
                middle.count, middle.stamp = child.count, child.stamp
                rest = label[k * _W :]
                middle.edges[rest[:_W]] = (rest, child)
                child.parent, child.key = middle, rest[:_W]
                node.edges[key] = (label[: k * _W], middle)
                self._nodes += 1
                child = middle
            pos += k * _W
            node = child
            node.stamp = stamp
            if self.counts:
                node.count += 1
        if self.capacity is not None:
            if not node.edges and node is not self.root:
                self._push(node)
            self._evict()

    def _push(self, node: _Node) -> None:
        self._pushes += 1
        heapq.heappush(self._lru, (node.stamp, self._pushes, node))
        if len(self._lru) > 2 * self._nodes + 64:  # drop stale entries: the heap stays as small as the tree
            self._lru = [e for e in self._lru if self._live(e)]
            heapq.heapify(self._lru)

    @staticmethod
    def _live(entry: tuple[int, int, _Node]) -> bool:
        stamp, _, node = entry
        return node.stamp == stamp and node.parent is not None and not node.edges

    def _evict(self) -> None:
        assert self.capacity is not None
        while self.tokens > self.capacity and self._lru:
            entry = heapq.heappop(self._lru)
            if not self._live(entry):
                continue
            leaf = entry[2]
            parent = leaf.parent
            assert parent is not None
            label, _ = parent.edges.pop(leaf.key)
            self.tokens -= len(label) // _W
            self._nodes -= 1
            leaf.parent = None
            if parent is not self.root and not parent.edges:
                self._push(parent)  # a leaf now, as old as its own last use

    def counts_along(self, seq: bytes) -> list[int]:
        """For each token of `seq`, how many requests shared the prefix up to and including it."""
        out: list[int] = []
        node, pos = self.root, 0
        while pos < len(seq):
            edge = node.edges.get(seq[pos : pos + _W])
            if edge is None:
                break
            label, child = edge
            k = common_bytes_prefix(label, seq, pos)
            out.extend([child.count] * k)
            pos += k * _W
            if k * _W < len(label):
                break
            node = child
        out.extend([0] * (len(seq) // _W - len(out)))
        return out


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


class Simulation:
    """Replays requests through a reference cache (shared by every engine: each applies its own
    rule to the same longest prefix) and, given a capacity, one LRU cache per engine (an engine
    keeps only what it can reuse: whole blocks), each built by `cache_model(capacity)`."""

    def __init__(
        self,
        engines: list[Engine],
        capacity: int | None = None,
        counts: bool = False,
        keep_hits: bool = False,
        cache_model: Callable[[int], PrefixCache] = RadixCache,
        reference_tokens: int = REFERENCE_TOKENS,
    ) -> None:
        self.reference = RadixCache(reference_tokens, counts=counts)
        self.engines = engines
        self.tallies = {e.name: EngineTally(e) for e in engines}
        self.lru: dict[str, tuple[PrefixCache, EngineTally]] = (
            {e.name: (cache_model(capacity), EngineTally(e, capacity)) for e in engines} if capacity else {}
        )
        self.requests = 0
        self.tokens = 0
        self.keep_hits = keep_hits
        # An engine that reuses only what its server still holds (llama-server's slots) replays it.
        self.servers = {e.name: e.server.model() for e in engines if e.server is not None}

    def feed(self, ids: list[int] | bytes, inspect: Callable[[Match], None] | None = None) -> Match:
        """One request, in arrival order; returns its longest prefix shared with an earlier one.
        `inspect` sees that match while the cache still holds only earlier requests."""
        seq = ids if isinstance(ids, bytes) else pack(ids)
        n = len(seq) // _W
        found = self.reference.match(seq)
        if inspect is not None:
            inspect(found)
        for name, tally in self.tallies.items():
            server = self.servers.get(name)
            tally.record(found.length if server is None else server.feed(seq), n, self.keep_hits)
        for cache, tally in self.lru.values():
            # An engine with blocks only ever holds (and so only matches) whole blocks.
            shared = cache.lookup(seq)
            tally.record(shared, n, self.keep_hits)
            size = tally.engine.block_size
            cache.insert(seq[: n // size * size * _W])
        self.reference.insert(seq)
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
