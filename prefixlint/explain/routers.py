"""Routers as the real ones decide (`data/routers.toml`, each table with its upstream source):
sglang-router's cache-aware policy over the request's text, the Gateway API Inference Extension's
prefix scorer over byte blocks with a per-pod LRU, and a consistent-hash ring.

Each policy sees one request at a time (`RouteRequest`) and the replicas' state as the simulation
knows it (`Fleet`: requests in flight, requests sent, cache fill) and names the replica; it keeps
its own approximate index of what it sent where, as the real router does (none of them asks the
replicas what they hold). Deterministic: ties go to the lower index or a seeded generator.
"""

from __future__ import annotations

import hashlib
import heapq
import random
import tomllib
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, Protocol

from prefixlint.engines.radix import RadixCache

KINDS = ("cache-aware", "gie-prefix", "consistent-hash")
MISSES = ("least-load", "smallest-tree")


class RouterDataError(Exception):
    pass


@dataclass(frozen=True)
class RouterSpec:
    """One `[routers.NAME]` table: the kind of policy, its numbers, and where they come from."""

    name: str
    kind: str
    source: str
    params: tuple[tuple[str, Any], ...]

    def get(self, key: str) -> Any:
        for k, v in self.params:
            if k == key:
                return v
        raise RouterDataError(f"routers.toml [routers.{self.name}]: `{key}` is missing")


@dataclass(frozen=True)
class RouterData:
    routers: dict[str, RouterSpec]
    aliases: dict[str, str]  # name -> the router it runs
    service_seconds: float


@cache
def load_routers() -> RouterData:
    """The shipped router table, read once."""
    text = resources.files("prefixlint").joinpath("data/routers.toml").read_text("utf-8")
    try:
        data = tomllib.loads(text)
        routers: dict[str, RouterSpec] = {}
        aliases: dict[str, str] = {}
        for name, table in data.get("routers", {}).items():
            if "alias" in table:
                aliases[name] = str(table["alias"])
                continue
            kind = str(table["kind"])
            if kind not in KINDS:
                raise ValueError(f"[routers.{name}] kind {kind!r}: expected one of {', '.join(KINDS)}")
            params = tuple((k, v) for k, v in table.items() if k not in ("kind", "source"))
            routers[name] = RouterSpec(name, kind, str(table["source"]), params)
        for name, target in aliases.items():
            if target not in routers:
                raise ValueError(f"[routers.{name}] is an alias of unknown router {target!r}")
        return RouterData(routers, aliases, float(data["load"]["service_seconds"]))
    except (KeyError, ValueError, TypeError) as exc:
        raise RouterDataError(f"routers.toml: {exc}") from exc


def resolve(name: str) -> RouterSpec | None:
    """The table a policy name runs (through an alias), None for a policy without data."""
    data = load_routers()
    return data.routers.get(data.aliases.get(name, name))


@dataclass(frozen=True)
class RouteRequest:
    """What the routers read of one request."""

    seq: bytes  # packed token ids: what the replicas' caches hold
    session: str | None  # the session key found in the log (None: none)
    fallback: str  # the key of a session router without one (the first message)
    # sglang-router's routing text: UTF-8, padded to whole 4-byte units (the trees' unit), and its
    # length in characters
    text: bytes
    chars: int
    body: bytes  # the bytes the GIE prefix plugin hashes
    now: float  # arrival, seconds (the log's timestamp, else index x --interval)
    salt: str | None  # cache_salt, which keys GIE's first block


def routing_text(messages: list[dict[str, Any]], prompt: str | None) -> str:
    """sglang-router's text for a request (smg crates/protocols extract_text_for_routing): a
    completion's prompt; a chat's message texts (and an assistant's reasoning) joined by spaces."""
    if prompt is not None:
        return prompt
    parts: list[str] = []
    for msg in messages:
        content = msg.get("content")
        if isinstance(content, str):
            if content:
                parts.append(content)
        elif isinstance(content, list):
            texts = [
                str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
            ]
            if any(texts):
                parts.append(" ".join(texts))
        reasoning = msg.get("reasoning_content")
        if msg.get("role") == "assistant" and isinstance(reasoning, str) and reasoning:
            parts.append(reasoning)
    return " ".join(parts)


class Fleet:
    """The replicas' state the routers read: requests in flight (each for a fixed time after it
    arrives: a log has no end times), requests sent so far, and how full each cache is."""

    def __init__(self, replicas: int, service_seconds: float) -> None:
        self.service = service_seconds
        self._ends: list[list[float]] = [[] for _ in range(replicas)]
        self.loads = [0] * replicas
        self.processed = [0] * replicas
        self.fill = [0.0] * replicas

    def advance(self, now: float) -> None:
        """Requests that ended by `now` leave their replica's load."""
        for k, ends in enumerate(self._ends):
            while ends and ends[0] <= now:
                heapq.heappop(ends)
            self.loads[k] = len(ends)

    def dispatch(self, replica: int, now: float) -> None:
        heapq.heappush(self._ends[replica], now + self.service)
        self.loads[replica] += 1
        self.processed[replica] += 1

    def least_loaded(self) -> int:
        """sglang-router's shortest queue: fewest in flight, then fewest sent, then the lower index."""
        return min(range(len(self.loads)), key=lambda k: (self.loads[k], self.processed[k], k))


class Router(Protocol):
    def pick(self, request: RouteRequest, fleet: Fleet) -> int: ...


class CacheAware:
    """sglang-router's cache-aware policy in HTTP mode: an approximate tree of the text sent to each
    worker, load balancing when the pool is imbalanced."""

    def __init__(self, spec: RouterSpec, replicas: int) -> None:
        self.threshold = float(spec.get("cache_threshold"))
        self.abs_threshold = int(spec.get("balance_abs_threshold"))
        self.rel_threshold = float(spec.get("balance_rel_threshold"))
        self.on_miss = str(spec.get("on_miss"))
        if self.on_miss not in MISSES:
            raise RouterDataError(
                f"[routers.{spec.name}] on_miss {self.on_miss!r}: expected {' or '.join(MISSES)}"
            )
        # One tree per worker, cut back to max_tree_size (evict_tenant_by_size). It holds UTF-8 in
        # 4-byte units, a quarter of the memory of one unit per character: sizes are counted in
        # units (4 characters of ASCII), matches converted back to characters.
        self.trees = [RadixCache(int(spec.get("max_tree_size")) // 4) for _ in range(replicas)]

    def pick(self, request: RouteRequest, fleet: Fleet) -> int:
        low, high = min(fleet.loads), max(fleet.loads)
        if high - low > self.abs_threshold and high > low * self.rel_threshold:
            choice = fleet.least_loaded()
        else:
            found = [tree.lookup(request.text) for tree in self.trees]
            best = max(found)
            # The characters in the matched units (a unit cut short at a difference is not counted).
            matched = len(request.text[: best * 4].decode("utf-8", "ignore"))
            if request.chars and min(matched, request.chars) / request.chars > self.threshold:
                choice = found.index(best)  # the holder (the lower index among several)
            elif self.on_miss == "smallest-tree":
                choice = min(range(len(self.trees)), key=lambda k: (self.trees[k].tokens, k))
            else:
                choice = fleet.least_loaded()
        self.trees[choice].insert(request.text)
        return choice


class GiePrefix:
    """The Gateway API Inference Extension's default scheduling profile: prefix, queue and KV-cache
    scores, weighted, the highest taking the request (ties by a seeded draw)."""

    def __init__(self, spec: RouterSpec, replicas: int, capacity_tokens: int, seed: int) -> None:
        tokens = int(spec.get("block_size_tokens"))
        self.block = tokens * int(spec.get("chars_per_token"))
        self.max_bytes = self.block * int(spec.get("max_prefix_blocks"))
        # autoTune sizes a pod's LRU by its KV cache's blocks: the replica's capacity here.
        auto = bool(spec.get("auto_tune"))
        self.lru_size = (
            max(1, capacity_tokens // tokens) if auto else int(spec.get("lru_capacity_per_server"))
        )
        self.weights = (
            float(spec.get("prefix_weight")),
            float(spec.get("queue_weight")),
            float(spec.get("kv_cache_weight")),
        )
        self.max_running = int(spec.get("max_running"))
        self.lrus: list[OrderedDict[int, None]] = [OrderedDict() for _ in range(replicas)]
        self.holders: dict[int, int] = {}  # block hash -> bit mask of the pods that were sent it
        self._random = random.Random(seed)

    def hashes(self, body: bytes, salt: str | None) -> list[int]:
        """Chained hashes of the whole blocks in the first max_prefix_blocks (Python's hash of a
        (previous hash, block) pair stands in for xxhash: equal prefixes, equal hashes)."""
        data, block = body[: self.max_bytes], self.block
        digest = hashlib.blake2b((salt or "").encode("utf-8", "surrogatepass"), digest_size=8).digest()
        prev = int.from_bytes(digest, "little")
        out = []
        append = out.append
        for start in range(0, len(data) - block + 1, block):
            prev = hash((prev, data[start : start + block]))
            append(prev)
        return out

    def pick(self, request: RouteRequest, fleet: Fleet) -> int:
        n = len(self.lrus)
        hashes = self.hashes(request.body, request.salt)
        runs: dict[int, int] = {}  # holder mask -> blocks with it
        get = self.holders.get
        for h in hashes:  # matchLongestPrefix: while any pod holds the block, count its holders
            mask = get(h, 0)
            if not mask:
                break
            runs[mask] = runs.get(mask, 0) + 1
        matched = [sum(c for mask, c in runs.items() if mask >> k & 1) for k in range(n)]
        waiting = [max(0, load - self.max_running) for load in fleet.loads]
        low, high = min(waiting), max(waiting)
        wp, wq, wk = self.weights
        scores = []
        for k in range(n):
            prefix = matched[k] / len(hashes) if hashes else 0.0
            queue = 1.0 if high == low else (high - waiting[k]) / (high - low)
            scores.append(wp * prefix + wq * queue + wk * (1.0 - fleet.fill[k]))
        best = max(scores)
        ties = [k for k in range(n) if scores[k] == best]
        choice = ties[0] if len(ties) == 1 else self._random.choice(ties)
        self._add(hashes, choice)
        return choice

    def _add(self, hashes: list[int], pod: int) -> None:
        lru, bit, holders, size = self.lrus[pod], 1 << pod, self.holders, self.lru_size
        touch = lru.move_to_end
        for h in hashes:
            if h in lru:
                touch(h)
                continue  # held: the pod's bit is already set
            lru[h] = None
            holders[h] = holders.get(h, 0) | bit
            if len(lru) > size:
                old, _ = lru.popitem(last=False)
                left = holders.get(old, 0) & ~bit
                if left:
                    holders[old] = left
                else:
                    holders.pop(old, None)


def _ring_position(text: str) -> int:
    digest = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).digest()
    return int.from_bytes(digest, "little")


class ConsistentHash:
    """A hash ring with `virtual_nodes` positions per replica; the session key's position picks the
    first replica clockwise, a request without one a seeded random replica."""

    def __init__(self, spec: RouterSpec, replicas: int, seed: int) -> None:
        nodes = int(spec.get("virtual_nodes"))
        ring = sorted((_ring_position(f"replica-{k}#{v}"), k) for k in range(replicas) for v in range(nodes))
        self.positions = [p for p, _ in ring]
        self.owners = [k for _, k in ring]
        self._random = random.Random(seed)

    def pick(self, request: RouteRequest, fleet: Fleet) -> int:
        if request.session is None:
            return self._random.randrange(len(fleet.loads))
        at = bisect_left(self.positions, _ring_position(request.session)) % len(self.positions)
        return self.owners[at]


def make_router(spec: RouterSpec, replicas: int, capacity_tokens: int, seed: int) -> Router:
    if spec.kind == "cache-aware":
        return CacheAware(spec, replicas)
    if spec.kind == "gie-prefix":
        return GiePrefix(spec, replicas, capacity_tokens, seed)
    return ConsistentHash(spec, replicas, seed)
