"""vLLM's KV block pool with a capacity, request by request: which cached blocks a server of N blocks
still holds, so that eviction is the server's own and not an approximation of it.

Followed from vLLM v1 (0.32.0) `vllm/v1/core/block_pool.py` and `kv_cache_manager.py`, and checked
against `KVCacheManager` itself by tests/test_engine_oracles.py:

- A block is cached once full, under a hash of its tokens chained to its parent's hash (the first
  block's also holds the request's `cache_salt`). A lookup follows the chain while blocks are cached.
- Block 0 is the pool's null block: N blocks hold N - 1.
- A request takes its hit blocks out of the free queue, then allocates a block for every further
  token it computes (the prompt and all of the reply but its last token), from the free queue's front:
  unhashed blocks first, then the least recently freed cached block, whose hash is dropped then.
- A full block whose hash is already cached (an identical prompt recomputes its last block) is
  cached again beside the first: both take room; lookups find the older.
- A request larger than the whole pool is refused.
- When the request ends its blocks go back tail first: unhashed ones to the front, cached ones to the
  end (so the head of a prompt outlives its tail).

Requests run one at a time, in log order (a log holds no overlap).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

from prefixlint.engines.packed import WIDTH, salt_token


def _link(parent: object, block: bytes) -> object:
    """hash() of a tuple: fast, and a collision between two different blocks under one parent is
    as unlikely as vLLM's own. Stable only within one process (PYTHONHASHSEED)."""
    return hash((parent, block))


def chained_hashes(
    seq: bytes,
    block_size: int,
    salt: str | None = None,
    link: Callable[[object, bytes], object] = _link,
) -> list:
    """The chained hash of each full block of packed `seq`, as vLLM chains them: each block's hash
    covers its parent's, the first block's parent stands for the request's `cache_salt`. `link`
    makes one hash of (parent, block bytes); a trace export passes a keyed, stable one."""
    step = block_size * WIDTH
    parent: object = None if salt is None else ("salt", salt_token(salt))
    out = []
    for start in range(0, len(seq) // step * step, step):
        parent = link(parent, seq[start : start + step])
        out.append(parent)
    return out


class BlockPool:
    """The PrefixCache of one vLLM server: `capacity` tokens of KV in blocks of `block_size`."""

    def __init__(self, capacity: int, block_size: int) -> None:
        self.block_size = block_size
        self.usable = max(capacity // block_size - 1, 0)  # block 0 is the null block
        self._by_hash: dict[int, list[int]] = {}  # chained hash -> cached blocks, oldest first
        self._hash_of: dict[int, int] = {}  # cached block -> its hash
        self._free: OrderedDict[int, None] = OrderedDict()  # cached blocks free for reuse, front first
        self._next_block = 1

    @property
    def tokens(self) -> int:
        return len(self._hash_of) * self.block_size

    def _hashes(self, seq: bytes, salt: str | None) -> list[int]:
        return chained_hashes(seq, self.block_size, salt)

    def _hit_blocks(self, hashes: list[int]) -> list[int]:
        found = []
        for h in hashes:
            blocks = self._by_hash.get(h)
            if not blocks:
                break
            found.append(blocks[0])
        return found

    def fits(self, tokens: int) -> bool:
        """Whether a request of `tokens` fits the pool at all (a larger one is refused: the server
        never runs it, and it neither hits nor leaves anything)."""
        return -(-tokens // self.block_size) <= self.usable

    def lookup(self, seq: bytes, salt: str | None = None) -> int:
        if not self.fits(len(seq) // WIDTH):
            return 0
        return len(self._hit_blocks(self._hashes(seq, salt))) * self.block_size

    def insert(self, seq: bytes, prompt_tokens: int | None = None, salt: str | None = None) -> None:
        """Serve one request: `seq` is every token it computed (its prompt, then its reply but the
        last token), `prompt_tokens` how many of them are the prompt (the hit stops before its last)."""
        size = self.block_size
        n = len(seq) // WIDTH
        prompt = n if prompt_tokens is None else prompt_tokens
        if not self.fits(n):
            return
        hashes = self._hashes(seq, salt)
        hits = self._hit_blocks(hashes[: max(prompt - 1, 0) // size])
        for block in hits:  # touch: a hit block leaves the free queue
            self._free.pop(block, None)
        needed = -(-n // size) - len(hits)
        unhashed = self.usable - len(self._hash_of)
        for _ in range(min(max(needed - unhashed, 0), len(self._free))):  # evict from the front
            block, _ = self._free.popitem(last=False)
            h = self._hash_of.pop(block)
            holders = self._by_hash[h]
            holders.remove(block)
            if not holders:
                del self._by_hash[h]
        new_cached = []
        for h in hashes[len(hits) :]:
            block = self._next_block
            self._next_block += 1
            self._hash_of[block] = h
            self._by_hash.setdefault(h, []).append(block)
            new_cached.append(block)
        for block in reversed(hits + new_cached):  # freed tail first, to the end of the queue
            self._free[block] = None
