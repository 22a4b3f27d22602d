"""What-ifs for a deployment of several replicas: N caches behind a router, one simulation per
routing policy, fed the same requests in the same order.

- round-robin: request k goes to replica k mod N.
- random: a seeded generator picks the replica (the same answer on every run).
- session: a stable hash of the request's session key picks it (see `session_key`; without one, the
  first message), so a conversation stays on one replica.
- sglang-cache-aware, sglang-cache-aware-0.1 (and prefix-aware, its alias), gie-prefix,
  consistent-hash: the real routers' policies with their numbers from data/routers.toml
  (explain/routers.py).

Each replica's cache is the engine's (its hit rule, an LRU of the given capacity).

Under `--dask` (`Routing(..., dask=)`), the policies in SPLITTABLE choose here, in arrival order,
and each of their replicas' caches is simulated on a worker (explain/replica_split.py); the others
are simulated here as without it. Either way a route's figures are its replicas' sums.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from prefixlint.engines import Engine
from prefixlint.engines.packed import WIDTH
from prefixlint.engines.radix import RadixCache
from prefixlint.engines.simulate import PrefixCache
from prefixlint.explain.routers import Fleet, RouteRequest, load_routers, make_router, resolve, routing_text

if TYPE_CHECKING:
    from prefixlint.explain.dask_stage import Connection
    from prefixlint.explain.replica_split import ReplicaSplit

POLICIES = (
    "round-robin",
    "random",
    "session",
    "prefix-aware",
    "sglang-cache-aware",
    "sglang-cache-aware-0.1",
    "gie-prefix",
    "consistent-hash",
)
SEED = 0
# The policies whose choice depends only on the request and its place in the arrival order (a
# counter, a seeded draw, a hash of the session key), never on the replicas' state: each replica's
# cache then sees a subsequence fixed before any is simulated, and can be simulated on its own. The
# cache-aware and GIE routers read their own index of what they sent where and the replicas' load
# and fill, which the previous requests' simulation decides: they stay ordered, in one process.
SPLITTABLE = frozenset({"round-robin", "random", "session", "consistent-hash"})
# Where a log carries a session, in the order looked for: in the request body, then in the log record
# around it. `metadata.user_id` is Anthropic's; `user` and `prompt_cache_key` OpenAI's.
SESSION_FIELDS = (
    ("session_id",),
    ("conversation_id",),
    ("metadata", "session_id"),
    ("metadata", "conversation_id"),
    ("metadata", "user_id"),
    ("prompt_cache_key",),
    ("user",),
)


def session_key(*records: Any) -> str | None:
    """The first session field found in `records` (a request body, then its log record)."""
    for path in SESSION_FIELDS:
        for record in records:
            value: Any = record
            for name in path:
                value = value.get(name) if isinstance(value, dict) else None
            if isinstance(value, str | int) and not isinstance(value, bool) and str(value):
                return str(value)
    return None


def _stable_hash(text: str) -> int:
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "big")


def fallback_key(messages: Sequence[Any], prompt: str | None) -> str:
    """A request without a session key: its first message (or its plain prompt) stands for it."""
    if prompt is not None:
        return prompt
    return json.dumps(messages[0] if messages else None, sort_keys=True, ensure_ascii=False, default=str)


def route_request(
    seq: bytes,
    messages: Sequence[Any],
    prompt: str | None,
    session: str | None,
    now: datetime,
    salt: str | None = None,
) -> RouteRequest:
    """What the routers read of one request: its tokens, session key, routing text (sglang-router),
    the bytes GIE hashes (a chat's messages as JSON, a completion's prompt) and its arrival."""
    msgs = list(messages)
    if prompt is not None:
        body = prompt.encode("utf-8", "surrogatepass")
    else:
        body = json.dumps(msgs, ensure_ascii=False, separators=(",", ":"), default=str).encode(
            "utf-8", "surrogatepass"
        )
    moment = now if now.tzinfo else now.replace(tzinfo=UTC)
    text = routing_text(msgs, prompt)
    units = text.encode("utf-8", "surrogatepass")
    return RouteRequest(
        seq=seq,
        session=session,
        fallback=session or fallback_key(msgs, prompt),
        text=units + b"\0" * (-len(units) % 4),  # whole 4-byte units for the routers' trees
        chars=len(text),
        body=body,
        now=moment.timestamp(),
        salt=salt,
    )


class Replica:
    """One replica's cache and what it tallies: the engine's hit tokens and the tokens it was sent."""

    def __init__(
        self, engine: Engine, capacity: int, cache_model: Callable[[int], PrefixCache] = RadixCache
    ) -> None:
        self.engine = engine
        self.cache = cache_model(capacity)
        self.hit_tokens = 0
        self.tokens = 0

    def feed(self, seq: bytes) -> int:
        """One request sent to this replica (packed ids); returns its hit tokens."""
        tokens = len(seq) // WIDTH
        hit = self.engine.cacheable(self.cache.lookup(seq), tokens)
        self.cache.insert(seq)
        self.hit_tokens += hit
        self.tokens += tokens
        return hit


class Routed:
    """N replica caches behind one routing policy; tallies the engine's hit tokens."""

    def __init__(
        self,
        policy: str,
        replicas: int,
        engine: Engine,
        capacity: int,
        cache_model: Callable[[int], PrefixCache] = RadixCache,
    ) -> None:
        if policy not in POLICIES:
            raise ValueError(f"unknown routing policy {policy!r}")
        self.policy, self.engine, self.capacity = policy, engine, capacity
        self.replicas = [Replica(engine, capacity, cache_model) for _ in range(replicas)]
        self.fleet = Fleet(replicas, load_routers().service_seconds)
        spec = resolve(policy)
        self.source = spec.source if spec is not None else None
        self.router = make_router(spec, replicas, capacity, SEED) if spec is not None else None
        self._random = random.Random(SEED)
        self._next = 0
        self.hit_tokens = 0
        self.tokens = 0

    def pick(self, request: RouteRequest) -> int:
        n = len(self.replicas)
        if self.router is not None:
            return self.router.pick(request, self.fleet)
        if self.policy == "round-robin":
            self._next += 1
            return (self._next - 1) % n
        if self.policy == "random":
            return self._random.randrange(n)
        return _stable_hash(request.fallback) % n

    def feed(self, request: RouteRequest) -> int:
        """One request in arrival order; returns its hit tokens."""
        self.fleet.advance(request.now)
        k = self.pick(request)
        self.fleet.dispatch(k, request.now)
        replica = self.replicas[k]
        hit = replica.feed(request.seq)
        self.fleet.fill[k] = min(1.0, replica.cache.tokens / self.capacity) if self.capacity else 0.0
        self.hit_tokens += hit
        self.tokens += len(request.seq) // WIDTH
        return hit

    def summary(self) -> dict[str, object]:
        return {
            "hit_rate": round(self.hit_tokens / self.tokens, 6) if self.tokens else 0.0,
            "hit_tokens": self.hit_tokens,
            "replicas": len(self.replicas),
            "source": self.source,
        }


class Routing:
    """Every policy over the same replicas, the one the deployment runs (`current`) first. An alias
    (prefix-aware) shares its router's simulation. With a Dask connection, the SPLITTABLE policies'
    replicas are simulated on its workers."""

    def __init__(
        self, replicas: int, current: str, engine: Engine, capacity: int, dask: Connection | None = None
    ) -> None:
        aliases = load_routers().aliases
        order = [current] + [p for p in POLICIES if p != current]
        self.current = current
        made: dict[str, Routed] = {}
        for p in order:
            target = aliases.get(p, p)
            if target not in made:
                made[target] = Routed(target, replicas, engine, capacity)
        self.routes = {p: made[aliases.get(p, p)] for p in order}
        distinct = list(made.values())
        self.split = [r for r in distinct if dask is not None and r.policy in SPLITTABLE]
        self.ordered = [r for r in distinct if r not in self.split]
        self.remote: ReplicaSplit | None = None
        self.replicas = replicas
        if self.split:
            from prefixlint.explain.replica_split import ReplicaSplit

            self.remote = ReplicaSplit(dask, engine, capacity, len(self.split) * replicas)

    def feed(self, request: RouteRequest) -> None:
        for route in self.ordered:
            route.feed(request)
        if self.remote is not None:
            # Only the choice is made here; the fleet's load, which these policies never read, is
            # not kept. Replica k of the i-th split route is the simulation i * replicas + k.
            n = self.replicas
            self.remote.send([i * n + r.pick(request) for i, r in enumerate(self.split)], request.seq)

    def summary(self) -> dict[str, dict[str, object]]:
        if self.remote is not None:
            totals = self.remote.totals()
            n = self.replicas
            for i, route in enumerate(self.split):
                mine = totals[i * n : (i + 1) * n]
                route.hit_tokens = sum(hit for hit, _ in mine)
                route.tokens = sum(tokens for _, tokens in mine)
        return {p: {**self.routes[p].summary(), "current": p == self.current} for p in self.routes}
