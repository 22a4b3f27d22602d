"""A radix tree over packed token sequences: what a prefix cache holds, the longest prefix of a
request it holds, and SGLang's eviction of whole leaves, least recently used first.

Each edge is a `bytes` of packed ids (engines/packed.py), so comparisons run in C and memory grows
with the distinct prefixes seen, not with the log. With `page` > 1 (SGLang's page_size) it matches,
splits and keys children by whole pages, as SGLang's tree does.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

from prefixlint.engines.packed import WIDTH, common_bytes_prefix, salted


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


class RadixCache:
    """Token sequences sharing prefixes; optional capacity in tokens with LRU eviction of leaves.
    With `page` > 1 (SGLang's page_size) it matches, splits and keys children by whole pages, as
    SGLang's tree does, and holds only whole pages."""

    def __init__(self, capacity: int | None = None, counts: bool = False, page: int = 1) -> None:
        self.root = _Node()
        self.capacity = capacity
        self.page = page
        self._unit = page * WIDTH  # bytes of one page: the key of a child, the step of a match
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
                return Match(pos // WIDTH, node, b"")
            label, child = edge
            k = self._common(label, seq, pos)
            pos += k * WIDTH
            if k * WIDTH < len(label):
                return Match(pos // WIDTH, child, label[k * WIDTH :])
            node = child
        return Match(pos // WIDTH, node, b"")

    def continuation(self, found: Match, limit: int) -> bytes:
        """Up to `limit` tokens an earlier request had after the shared prefix (the oldest branch)."""
        parts = [found.label_rest]
        size = len(found.label_rest)
        node = found.node
        while size < limit * WIDTH and node.edges:
            label, node = next(iter(node.edges.values()))
            parts.append(label)
            size += len(label)
        return b"".join(parts)[: limit * WIDTH]

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
        hit = self.match(seq[: max(prompt_tokens - 1, 0) * WIDTH]).length
        touched = self._place(seq[: hit * WIDTH])  # split where the hit ends, as SGLang's match does
        if touched is not None:
            self._push(touched)
        locked = self._path(seq[: hit * WIDTH])
        self._evict(room=len(seq) // WIDTH - hit, locked=locked)
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
                self.tokens += (len(seq) - pos) // WIDTH
                self._nodes += 1
                node = child
                node.stamp = stamp
                if self.counts:
                    node.count += 1
                break
            label, child = edge
            k = self._common(label, seq, pos)
            if k * WIDTH < len(label):  # split the edge where the sequence leaves it
                middle = _Node(node, key)
                middle.count, middle.stamp = child.count, child.stamp
                rest = label[k * WIDTH :]
                middle.edges[rest[:unit]] = (rest, child)
                child.parent, child.key = middle, rest[:unit]
                node.edges[key] = (label[: k * WIDTH], middle)
                self._nodes += 1
                # SGLang stamps the edge it reached before splitting it: both halves are just used.
                child.stamp = stamp
                if self.capacity is not None and not child.edges:
                    self._push(child)
                child = middle
            pos += k * WIDTH
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
            self.tokens -= len(label) // WIDTH
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
            edge = node.edges.get(seq[pos : pos + WIDTH])
            if edge is None:
                break
            label, child = edge
            k = common_bytes_prefix(label, seq, pos)
            out.extend([child.count] * k)
            pos += k * WIDTH
            if k * WIDTH < len(label):
                break
            node = child
        out.extend([0] * (len(seq) // WIDTH - len(out)))
        return out
