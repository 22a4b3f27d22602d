"""What-ifs for a deployment of several replicas: N caches behind a router, one simulation per
routing policy, fed the same requests in the same order.

- round-robin: request k goes to replica k mod N.
- random: a seeded generator picks the replica (the same answer on every run).
- session: a stable hash of the request's session key picks it (see `session_key`; without one, the
  first message), so a conversation stays on one replica.
- prefix-aware: the replica that holds the longest prefix of the request, when that covers at least
  half of it (sglang-router's default `cache_threshold`, 0.5); otherwise the replica holding the
  fewest tokens (the most room), as sglang-router's cache-aware policy does. Queue lengths are not
  in a log, so its load-balance override is not simulated.

Each replica's cache is the engine's (its hit rule, an LRU of the given capacity).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Sequence
from typing import Any

from prefixlint.engines import Engine
from prefixlint.explain.simulate import PrefixCache, RadixCache

POLICIES = ("round-robin", "random", "session", "prefix-aware")
PREFIX_THRESHOLD = 0.5
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
        self.policy, self.engine = policy, engine
        self.caches = [cache_model(capacity) for _ in range(replicas)]
        self._random = random.Random(SEED)
        self._next = 0
        self.hit_tokens = 0
        self.tokens = 0

    def pick(self, seq: bytes, session: str) -> tuple[int, int | None]:
        """(replica, its cached prefix if already looked up)."""
        n = len(self.caches)
        if self.policy == "round-robin":
            self._next += 1
            return (self._next - 1) % n, None
        if self.policy == "random":
            return self._random.randrange(n), None
        if self.policy == "session":
            return _stable_hash(session) % n, None
        found = [cache.lookup(seq) for cache in self.caches]
        best = max(range(n), key=lambda i: (found[i], -i))
        if found[best] * 4 >= PREFIX_THRESHOLD * len(seq) and found[best]:
            return best, found[best]
        roomiest = min(range(n), key=lambda i: (self.caches[i].tokens, i))
        return roomiest, found[roomiest]

    def feed(self, seq: bytes, session: str) -> int:
        """One request (packed ids) in arrival order; returns its hit tokens."""
        replica, shared = self.pick(seq, session)
        cache = self.caches[replica]
        if shared is None:
            shared = cache.lookup(seq)
        hit = self.engine.cacheable(shared, len(seq) // 4)
        cache.insert(seq)
        self.hit_tokens += hit
        self.tokens += len(seq) // 4
        return hit

    def summary(self) -> dict[str, object]:
        return {
            "hit_rate": round(self.hit_tokens / self.tokens, 6) if self.tokens else 0.0,
            "hit_tokens": self.hit_tokens,
            "replicas": len(self.caches),
        }


class Routing:
    """Every policy over the same replicas, the one the deployment runs (`current`) first."""

    def __init__(self, replicas: int, current: str, engine: Engine, capacity: int) -> None:
        order = [current] + [p for p in POLICIES if p != current]
        self.current = current
        self.routes = {p: Routed(p, replicas, engine, capacity) for p in order}

    def feed(self, seq: bytes, session: str) -> None:
        for route in self.routes.values():
            route.feed(seq, session)

    def summary(self) -> dict[str, dict[str, object]]:
        return {p: {**r.summary(), "current": p == self.current} for p, r in self.routes.items()}
