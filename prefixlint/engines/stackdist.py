"""The hit rate at every cache size in one pass: reuse (stack) distances of blocks under LRU.

Mattson's observation: in an LRU cache of C blocks, a block is still held when it is asked for
again iff fewer than C distinct blocks were used since its last use (its stack distance < C).
So one pass that measures each block's stack distance gives the hit rate of every size at once,
instead of one simulation per size. The distance is counted with a Fenwick tree over last-use times
(one mark per block at the time it was last used: the distance is the marks after it), O(log n) a
block; the times are renumbered when they run out, so memory follows the distinct blocks held.

The blocks are an engine's chained block hashes (engines/blockpool.py `chained_hashes`), used as
vLLM's pool uses them: a request looks up its prompt's blocks from the first while they are cached,
then every full block it computed (prompt, and reply where the engine keeps it) becomes the most
recently used, its head last (vLLM frees a request's blocks tail first). Sizes are counted as vLLM's
pool counts them (one block of the pool is its null block). This is exact for an LRU cache of whole
blocks, and vLLM's pool is one but for three corners. The partial last block a request computes
takes a block while it runs and may evict one more: counted here (`_bump`), so the curve equals the
pool. A request larger than the pool is refused (it neither hits nor evicts), which one pass cannot
replay: the curve starts at the smallest pool that holds the largest request (vLLM will not start
with a pool smaller than one sequence of its maximum length either). An identical prompt of whole
blocks recomputes its cached last block and vLLM keeps both copies, one block more held: there the
curve is an approximation, a little high. SGLang's radix tree evicts whole leaves least recently
used first (per token, not per block) and llama-server's slots keep whole conversations: the curve
approximates both.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass

from prefixlint.engines.blockpool import chained_hashes
from prefixlint.engines.packed import WIDTH
from prefixlint.engines.profiles import Engine
from prefixlint.engines.simulate import own_key

MIN_TIMES = 1 << 12  # the Fenwick tree's first size (last-use times before a renumbering)
POINTS = 24  # sizes a curve reports, on a logarithmic scale


class StackDistances:
    """Each block's LRU stack distance at its use: how many distinct blocks were used since."""

    def __init__(self) -> None:
        self._last: dict[Hashable, int] = {}  # block -> its last-use time (1-based, renumbered)
        self._stamp: dict[Hashable, int] = {}  # block -> the count of uses at its last use (never renumbered)
        self.uses = 0
        self._size = MIN_TIMES
        self._tree = [0] * (self._size + 1)
        self._now = 0

    def __len__(self) -> int:
        return len(self._last)

    def __contains__(self, block: Hashable) -> bool:
        return block in self._last

    def distance(self, block: Hashable) -> int | None:
        """Distinct blocks used since `block` was last used; None if it never was."""
        t = self._last.get(block)
        if t is None:
            return None
        tree, below = self._tree, 0
        while t > 0:
            below += tree[t]
            t &= t - 1
        return len(self._last) - below

    def distances_of(self, blocks: list[Hashable]) -> list[int]:
        """distance() of each of `blocks` (all used before). A block whose time is one below the
        block before it needs no walk of the tree: one mark less lies at or below it."""
        tree, last, live = self._tree, self._last, len(self._last)
        out, previous, below = [], -1, 0
        for block in blocks:
            t = last[block]
            if t == previous - 1:
                below -= 1
            else:
                below, i = 0, t
                while i > 0:
                    below += tree[i]
                    i &= i - 1
            previous = t
            out.append(live - below)
        return out

    def stamp(self, block: Hashable) -> int:
        """How many uses there had been when `block` was last used (0: never)."""
        return self._stamp.get(block, 0)

    def use(self, block: Hashable) -> None:
        """`block` becomes the most recently used."""
        self.use_chain([block], 1 if block in self._last else 0)

    def use_chain(self, blocks: list[Hashable], seen: int) -> int:
        """Use `blocks` from the last to the first (a request's chain, tail first: its head ends
        most recently used), where only the first `seen` were used before. Returns the oldest
        stamp among their earlier uses (0 if one is new).

        All of them take consecutive new times, added in one sweep of the tree; the old times of
        the head are removed in runs of consecutive times (a head used before was mostly used
        together), a sweep each: O(k + runs · log² n) rather than k · log n."""
        if self._now + len(blocks) > self._size:
            self._renumber(len(blocks))
        last, stamps = self._last, self._stamp
        head = blocks[:seen]
        oldest = min((stamps[b] for b in head), default=self.uses + 1) if seen == len(blocks) else 0
        times = sorted(last[b] for b in head)
        start = 0
        for k in range(1, len(times) + 1):
            if k == len(times) or times[k] != times[k - 1] + 1:
                self._sweep(times[start], times[k - 1], -1)
                start = k
        lo = self._now + 1
        self._sweep(lo, lo + len(blocks) - 1, 1)
        for k, block in enumerate(reversed(blocks)):
            last[block] = lo + k
            stamps[block] = self.uses + 1 + k
        self._now += len(blocks)
        self.uses += len(blocks)
        return oldest

    def _sweep(self, lo: int, hi: int, sign: int) -> None:
        """Add `sign` at every time of lo..hi: each time's sum passed on to its parent within the
        range, and only the sums that leave the range climb the rest of the tree."""
        if hi < lo:
            return
        tree, size = self._tree, self._size
        carry = [0] * (hi - lo + 1)  # what each time's tree children in the range add to it
        for t in range(lo, hi + 1):
            d = sign + carry[t - lo]
            tree[t] += d
            parent = t + (t & -t)
            if parent <= hi:
                carry[parent - lo] += d
            else:
                while parent <= size:
                    tree[parent] += d
                    parent += parent & -parent

    def _renumber(self, coming: int) -> None:
        """Give the held blocks the times 1..k in their order, in a tree with room for as many
        more (and the `coming` uses)."""
        order = sorted(self._last, key=self._last.__getitem__)
        self._last = {block: i for i, block in enumerate(order, 1)}
        self._now = len(order)
        self._size = max(MIN_TIMES, 2 * len(order) + coming)
        tree = [0] * (self._size + 1)
        for i in range(1, self._size + 1):  # the linear build: ones at 1..k, each sum to its parent
            tree[i] += i <= self._now
            parent = i + (i & -i)
            if parent <= self._size:
                tree[parent] += tree[i]
        self._tree = tree


@dataclass(frozen=True)
class CurvePoint:
    tokens: int
    hit_rate: float

    def to_json(self) -> dict[str, object]:
        return {"tokens": self.tokens, "hit_rate": self.hit_rate}


class CapacityCurve:
    """The hit tokens of `engine`'s block cache at every size, from one pass over the requests."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.block = engine.block_size
        self._null = 1 if engine.eviction == "block-pool" else 0  # vLLM's pool: N blocks hold N - 1
        self.distances = StackDistances()
        # usable blocks from which on these tokens hit -> tokens
        self._gains: Counter[int] = Counter()
        # The last request that computed a partial block, as its uses' first and last stamps, and
        # the oldest earlier stamp of a block used since: see `_bump`.
        self._partial: tuple[int, int] | None = None
        self._since = 0
        self.largest = 0  # blocks of the largest request (prompt and reply kept)
        self.tokens = 0
        self.requests = 0

    def feed(
        self, seq: bytes, reply: bytes = b"", salt: str | None = None, cache_key: str | None = None
    ) -> None:
        """One request in arrival order: packed prompt `seq`, the reply tokens it computed, its
        `cache_salt` and routing key (keying the cache as the simulation does)."""
        engine, size = self.engine, self.block
        n = len(seq) // WIDTH
        kept = seq + reply if engine.reply_cached else seq
        hashes = chained_hashes(kept, size, own_key(engine, salt, cache_key))
        fits = -(-n // size)  # a prompt larger than the pool hits nothing
        self.largest = max(self.largest, -(-(len(kept) // WIDTH) // size))
        distances = self.distances
        # The blocks used before are a head of the chain: a block's hash holds all before it.
        seen = next((j for j, h in enumerate(hashes) if h not in distances), len(hashes))
        deepest, before = -1, 0
        lookups = min(n // size, seen)
        for j, distance in enumerate(distances.distances_of(hashes[:lookups])):
            # a block hits only after all those before it
            deepest = max(deepest, distance + self._bump(hashes[j]))
            reach = engine.cacheable((j + 1) * size, n)
            if reach > before:
                self._gains[max(deepest + 1, fits)] += reach - before
                before = reach
        first = distances.uses + 1
        oldest = distances.use_chain(hashes, seen)
        if self._partial is not None and oldest <= self._partial[1]:  # a block new since that request
            self._since = min(self._since, oldest)
        if (len(kept) // WIDTH) % size:
            self._partial, self._since = (first, distances.uses), distances.uses + 1
        self.tokens += n
        self.requests += 1

    def _bump(self, block: Hashable) -> int:
        """1 where vLLM's pool needs one block more to still hold `block` than an LRU would.

        A request that computes a partial block holds it while it runs (then frees it unhashed), so
        it evicts as if the pool were one block smaller at that moment. `block` survived every such
        moment since its last use iff the distinct blocks used since, plus that one, stayed under
        the size. Those blocks only grow in number, so the latest such request decides: it counts
        only when no block new to `block` was used after it (`_since`: the oldest earlier stamp of
        the blocks used since it, older than `block`'s last use if some block was new)."""
        if self._partial is None:
            return 0
        stamp = self.distances.stamp(block)
        return int(stamp < self._partial[0] and self._since > stamp)

    def hit_tokens(self, capacity_tokens: int) -> int:
        """Hit tokens in a cache of `capacity_tokens` (what a simulation of that size would count)."""
        usable = capacity_tokens // self.block - self._null
        return sum(tokens for blocks, tokens in self._gains.items() if blocks <= usable)

    def points(self, count: int = POINTS) -> list[CurvePoint]:
        """The curve at `count` sizes from the smallest that holds the largest request (vLLM
        refuses a larger one, and below it a one-pass count is not the pool's) to the size where
        it stops rising (every block held), spaced evenly on a logarithmic scale, each a whole
        number of blocks."""
        if not self.tokens:
            return []
        low = max(self.largest, 1) + self._null
        top = max(max(self._gains, default=0), len(self.distances)) + self._null
        if top <= low:
            sizes = [low]
        else:
            sizes = sorted(
                {round(low * (top / low) ** (i / max(count - 1, 1))) for i in range(count)} | {top}
            )
        cumulative = sorted(self._gains.items())
        out, held, i = [], 0, 0
        for blocks in sizes:
            usable = blocks - self._null
            while i < len(cumulative) and cumulative[i][0] <= usable:
                held += cumulative[i][1]
                i += 1
            out.append(CurvePoint(blocks * self.block, round(held / self.tokens, 6)))
        return out


def curve_engine(engines: list[Engine]) -> Engine | None:
    """The engine a capacity curve is of: the first whose cache is a pool of blocks (vLLM's)."""
    return next((e for e in engines if e.eviction == "block-pool"), None)
