"""Streaming prefix-cache simulation.

Requests arrive as token id sequences. A radix tree over token ids holds what the cache holds; each
edge is a `bytes` of packed 4-byte ids, so comparisons run in C and memory grows with the distinct
prefixes seen, not with the log. A request's hit is the engine's own rule (engines.py: whole 16-token
blocks and the last-token recompute for vLLM, per token for SGLang, ≥1,024 then 128-token steps for
OpenAI) applied to the longest prefix it shares with the cache.

For vLLM this equals chained block hashing: a block's hash covers every token before it, so the
cached blocks a request finds are exactly the whole blocks of its longest common prefix with some
earlier request. With a capacity, each engine replays its own eviction (engine data `eviction`):
SGLang's radix tree drops whole leaves, least recently used first; vLLM's block pool is replayed
block by block (explain/blockpool.py). Every cache here has a capacity (the reference one a large
default), so memory stays flat as the log grows.

What a request leaves in the cache is its prompt and, for an engine that keeps it (`reply_cached`),
the reply's tokens that were computed (a log's responses: explain/replies.py). An engine that honours
`cache_salt` reuses only requests with the same salt. Engines that differ in either see their own
tree, split from the reference only when the log first has a reply or a salt.
"""

from __future__ import annotations

import hashlib
import heapq
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from prefixlint.engines import Engine

_W = 4  # bytes per packed token id
_SALT_BIT = 0x80000000  # salt pseudo tokens: ids no tokenizer has


def salt_token(salt: str) -> int:
    """The pseudo token id that stands for one `cache_salt` value ahead of a salted sequence (a
    hash: memory stays flat with a salt per request; two salts sharing an id is a 1 in 2^31 chance)."""
    digest = hashlib.blake2b(salt.encode("utf-8", "surrogatepass"), digest_size=4).digest()
    return _SALT_BIT | (int.from_bytes(digest, "big") & 0x7FFFFFFF)


def salted(seq: bytes, salt: str | None) -> bytes:
    """`seq` keyed by its salt: salted sequences share nothing with unsalted or other salts' ones."""
    return seq if salt is None else pack([salt_token(salt)]) + seq


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

    def lookup(self, seq: bytes, salt: str | None = None) -> int:
        """Tokens of packed `seq`'s longest prefix the cache holds (for requests of `salt`)."""
        ...

    def insert(self, seq: bytes, prompt_tokens: int | None = None, salt: str | None = None) -> None:
        """One request served: `seq` is what it leaves (its prompt, then any reply tokens kept),
        `prompt_tokens` the prompt's length."""
        ...


class RadixCache:
    """Token sequences sharing prefixes; optional capacity in tokens with LRU eviction of leaves.
    With `page` > 1 (SGLang's page_size) it matches, splits and keys children by whole pages, as
    SGLang's tree does, and holds only whole pages."""

    def __init__(self, capacity: int | None = None, counts: bool = False, page: int = 1) -> None:
        self.root = _Node()
        self.capacity = capacity
        self.page = page
        self._unit = page * _W  # bytes of one page: the key of a child, the step of a match
        self.tokens = 0  # tokens held
        self.counts = counts
        self._clock = 0
        self._nodes = 0
        # Leaves by last use, oldest first, as (stamp, tie-break, node); an entry whose node was used
        # since, grew children or left the tree is stale and skipped. Only with a capacity.
        self._lru: list[tuple[int, int, _Node]] = []
        self._pushes = 0

    def lookup(self, seq: bytes, salt: str | None = None) -> int:
        if salt is None:
            return self.match(seq).length
        return max(self.match(salted(seq, salt)).length - 1, 0)

    def _common(self, label: bytes, seq: bytes, pos: int) -> int:
        """Whole tokens (whole pages) `label` shares with `seq[pos:]`."""
        k = common_bytes_prefix(label, seq, pos)
        return k - k % self.page

    def match(self, seq: bytes) -> Match:
        node, pos, unit = self.root, 0, self._unit
        while pos < len(seq):
            edge = node.edges.get(seq[pos : pos + unit])
            if edge is None:
                return Match(pos // _W, node, b"")
            label, child = edge
            k = self._common(label, seq, pos)
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

    def insert(self, seq: bytes, prompt_tokens: int | None = None, salt: str | None = None) -> None:
        """Add `seq`. With a capacity and `prompt_tokens` it is served as SGLang serves a request: the
        hit (the prompt but its last token) is locked, leaves are evicted until the free room holds
        every token after the hit, then it is inserted. Without `prompt_tokens`, it is inserted and
        leaves are evicted down to the capacity."""
        if salt is not None:
            seq = salted(seq, salt)
            prompt_tokens = None if prompt_tokens is None else prompt_tokens + 1
        unit = self._unit
        if self.page > 1:
            seq = seq[: len(seq) // unit * unit]
        if self.capacity is None or prompt_tokens is None:
            leaf = self._place(seq)
            if self.capacity is not None:
                if leaf is not None:
                    self._push(leaf)
                self._evict()
            return
        hit = self.match(seq[: max(prompt_tokens - 1, 0) * _W]).length
        touched = self._place(seq[: hit * _W])  # split where the hit ends, as SGLang's match does
        if touched is not None:
            self._push(touched)
        locked = self._path(seq[: hit * _W])
        self._evict(room=len(seq) // _W - hit, locked=locked)
        leaf = self._place(seq)
        if leaf is not None:
            self._push(leaf)

    def _path(self, seq: bytes) -> set[int]:
        """ids of the nodes `seq` passes through (it ends at a node)."""
        out, node, pos = set(), self.root, 0
        while pos < len(seq):
            label, node = node.edges[seq[pos : pos + self._unit]]
            out.add(id(node))
            pos += len(label)
        return out

    def _place(self, seq: bytes) -> _Node | None:
        """Put `seq` in the tree, its path stamped as just used; the node it ends at if a leaf."""
        unit = self._unit
        self._clock += 1
        stamp = self._clock
        node, pos = self.root, 0
        node.stamp = stamp
        if self.counts:
            node.count += 1
        while pos < len(seq):
            key = seq[pos : pos + unit]
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
            k = self._common(label, seq, pos)
            if k * _W < len(label):  # split the edge where the sequence leaves it
                middle = _Node(node, key)
                middle.count, middle.stamp = child.count, child.stamp
                rest = label[k * _W :]
                middle.edges[rest[:unit]] = (rest, child)
                child.parent, child.key = middle, rest[:unit]
                node.edges[key] = (label[: k * _W], middle)
                self._nodes += 1
                # SGLang stamps the edge it reached before splitting it: both halves are just used.
                child.stamp = stamp
                if self.capacity is not None and not child.edges:
                    self._push(child)
                child = middle
            pos += k * _W
            node = child
            node.stamp = stamp
            if self.counts:
                node.count += 1
        return node if not node.edges and node is not self.root else None

    def copy(self, counts: bool = False) -> RadixCache:
        """An independent tree holding the same sequences with the same last uses (a view of the
        cache that starts to differ from here on)."""
        out = RadixCache(self.capacity, counts and self.counts, self.page)
        out.tokens, out._clock, out._nodes = self.tokens, self._clock, self._nodes
        stack = [(self.root, out.root)]
        while stack:
            old, new = stack.pop()
            new.count, new.stamp = (old.count if out.counts else 0), old.stamp
            for key, (label, child) in old.edges.items():
                twin = _Node(new, key)
                new.edges[key] = (label, twin)
                stack.append((child, twin))
            if out.capacity is not None and not old.edges and old is not self.root:
                out._push(new)
        return out

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

    def _evict(self, room: int = 0, locked: set[int] | None = None) -> None:
        """Evict least recently used leaves until `room` tokens are free, never a `locked` node."""
        assert self.capacity is not None
        kept = []
        while self.tokens > self.capacity - room and self._lru:
            entry = heapq.heappop(self._lru)
            if not self._live(entry):
                continue
            leaf = entry[2]
            if locked and id(leaf) in locked:
                kept.append(entry)
                continue
            parent = leaf.parent
            assert parent is not None
            label, _ = parent.edges.pop(leaf.key)
            self.tokens -= len(label) // _W
            self._nodes -= 1
            leaf.parent = None
            if parent is not self.root and not parent.edges:
                self._push(parent)  # a leaf now, as old as its own last use
        for entry in kept:
            heapq.heappush(self._lru, entry)

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


def engine_cache(engine: Engine, capacity: int) -> PrefixCache:
    """The cache of `capacity` tokens one server of `engine` runs, with its own eviction."""
    if engine.eviction == "block-pool":
        from prefixlint.engines.blockpool import BlockPool

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
        n = len(seq) // _W
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
                own_salt = _own_key(engine, salt, cache_key)
                view = self._view(engine, bool(tail), own_salt is not None)
                if view is self.reference:
                    shared = found.length
                else:
                    views[id(view)] = (view, engine.reply_cached, own_salt)
                    shared = view.lookup(seq, own_salt)
            self.last[name] = tally.record(shared, n, self.keep_hits)
        for name, (cache, tally) in self.lru.items():
            engine = tally.engine
            own_salt = _own_key(engine, salt, cache_key)
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


def _own_key(engine: Engine, salt: str | None, cache_key: str | None) -> str | None:
    """What keys `engine`'s cache for this request: its cache_salt where the engine honours one,
    else its routing key (prompt_cache_key) where the engine routes by one; a salt and a key never
    meet in one engine, so the two share the salted namespace."""
    if engine.cache_salt:
        return salt
    return cache_key if engine.cache_key is not None else None
