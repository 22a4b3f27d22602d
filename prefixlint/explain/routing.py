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
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from prefixlint.engines import Engine
from prefixlint.engines.packed import WIDTH
from prefixlint.engines.radix import RadixCache
from prefixlint.engines.simulate import PrefixCache
from prefixlint.explain.routers import Fleet, RouteRequest, load_routers, make_router, resolve, routing_text

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
        self.caches = [cache_model(capacity) for _ in range(replicas)]
        self.fleet = Fleet(replicas, load_routers().service_seconds)
        spec = resolve(policy)
        self.source = spec.source if spec is not None else None
        self.router = make_router(spec, replicas, capacity, SEED) if spec is not None else None
        self._random = random.Random(SEED)
        self._next = 0
        self.hit_tokens = 0
        self.tokens = 0

    def pick(self, request: RouteRequest) -> int:
        n = len(self.caches)
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
        replica = self.pick(request)
        self.fleet.dispatch(replica, request.now)
        cache, seq = self.caches[replica], request.seq
        hit = self.engine.cacheable(cache.lookup(seq), len(seq) // WIDTH)
        cache.insert(seq)
        self.fleet.fill[replica] = min(1.0, cache.tokens / self.capacity) if self.capacity else 0.0
        self.hit_tokens += hit
        self.tokens += len(seq) // WIDTH
        return hit

    def summary(self) -> dict[str, object]:
        return {
            "hit_rate": round(self.hit_tokens / self.tokens, 6) if self.tokens else 0.0,
            "hit_tokens": self.hit_tokens,
            "replicas": len(self.caches),
            "source": self.source,
        }


class Routing:
    """Every policy over the same replicas, the one the deployment runs (`current`) first. An alias
    (prefix-aware) shares its router's simulation."""

    def __init__(self, replicas: int, current: str, engine: Engine, capacity: int) -> None:
        aliases = load_routers().aliases
        order = [current] + [p for p in POLICIES if p != current]
        self.current = current
        made: dict[str, Routed] = {}
        for p in order:
            target = aliases.get(p, p)
            if target not in made:
                made[target] = Routed(target, replicas, engine, capacity)
        self.routes = {p: made[aliases.get(p, p)] for p in order}
        self._distinct = list(made.values())

    def feed(self, request: RouteRequest) -> None:
        for route in self._distinct:
            route.feed(request)

    def summary(self) -> dict[str, dict[str, object]]:
        return {p: {**self.routes[p].summary(), "current": p == self.current} for p in self.routes}
