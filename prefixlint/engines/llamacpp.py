"""llama-server's prompt cache, request by request: slots that keep their last prompt, and the
host-memory prompt cache (`--cache-ram`) that saves a slot's prompt before it is overwritten and
restores the best earlier one.

Followed from llama.cpp's tools/server (server-context.cpp `get_available_slot`, server-task.cpp
`server_prompt_cache::alloc/load`) and checked against a real llama-server by
tests/test_llama_server.py:

1. Slot choice: the idle slot whose kept prompt shares the largest fraction of the new prompt,
   if that fraction exceeds `--slot-prompt-similarity` (0.1); its prompt is saved to the prompt
   cache when less than half of it would be kept. Else the least recently used slot (the last of
   equals), whose prompt is always saved.
2. Saving skips a prompt that an entry already holds whole, and drops entries that the saved
   prompt holds whole. Then the entry that keeps a larger fraction of itself *and* covers a larger
   fraction of the new prompt than the slot's own prompt (and keeps at least a quarter of itself)
   is restored into the slot, and leaves the cache.
3. With `--cache-idle-slots` (on with a prompt cache), every other idle slot's prompt is saved
   too once the request has its slot, and with a unified KV cache (`--kv-unified`, what the
   server's default `-np auto` gives: 4 slots) that slot is then cleared.
4. The slot reuses its common token prefix with the new prompt, but never the whole prompt: the
   last token is evaluated again for its logits (the engine rule `recompute_last_token`).

The prompt cache holds `capacity` tokens (its MiB over the model's KV bytes per token: engine
data); saving a prompt that does not fit drops the oldest entries first, as the server does.

Not modelled: concurrent requests (one at a time, in log order), and the reply's tokens, which a
slot keeps after its prompt (a log holds no replies; a next prompt that repeats the reply verbatim
may reuse more than predicted).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prefixlint.engines.packed import WIDTH, common_bytes_prefix


@dataclass
class _Slot:
    tokens: bytes = b""  # packed ids of the prompt it holds
    last_used: int = -1


def _lcp(a: bytes, b: bytes) -> int:
    return common_bytes_prefix(a, b) if a and b else 0


@dataclass
class LlamaServer:
    """The prompt cache of one llama-server (`-np`, `--cache-ram` other than 0, `--slot-prompt-similarity`,
    `--cache-idle-slots`, `--kv-unified`)."""

    slots: int = 1
    cache_ram: bool = True
    slot_prompt_similarity: float = 0.1
    cache_idle_slots: bool = True
    kv_unified: bool = False
    capacity: int | None = None  # tokens the prompt cache holds (None: no limit)
    _slots: list[_Slot] = field(default_factory=list)
    _saved: list[bytes] = field(default_factory=list)  # the prompt cache, oldest first
    _clock: int = 0

    def __post_init__(self) -> None:
        self._slots = [_Slot() for _ in range(max(1, self.slots))]

    def feed(self, seq: bytes) -> int:
        """Serve one prompt (packed ids); the tokens its slot shares with it, before the engine's
        last-token rule."""
        new_len = len(seq) // WIDTH
        slot, save = self._choose(seq, new_len)
        if save and self.cache_ram:
            self._save(slot.tokens)
            self._restore(slot, seq, new_len)
        if self.cache_ram and self.cache_idle_slots:
            for idle in self._slots:
                if idle is not slot:
                    self._save(idle.tokens)
                    if self.kv_unified:
                        idle.tokens = b""
        shared = _lcp(slot.tokens, seq)
        slot.tokens, slot.last_used = seq, self._clock
        self._clock += 1
        return shared

    def _choose(self, seq: bytes, new_len: int) -> tuple[_Slot, bool]:
        best, chosen = 0.0, None
        if self.slot_prompt_similarity != 0 and new_len:
            for slot in self._slots:
                if not slot.tokens:
                    continue
                similarity = _lcp(slot.tokens, seq) / new_len
                if similarity > best and similarity > self.slot_prompt_similarity:
                    best, chosen = similarity, slot
        if chosen is not None:
            keep = best * new_len / (len(chosen.tokens) // WIDTH)
            return chosen, keep < 0.5
        oldest = None
        for slot in self._slots:  # `<=`: of equally old slots, the last
            if oldest is None or slot.last_used <= oldest.last_used:
                oldest = slot
        assert oldest is not None
        return oldest, True

    def _save(self, tokens: bytes) -> None:
        if not tokens or any(_lcp(entry, tokens) * WIDTH == len(tokens) for entry in self._saved):
            return
        if self.capacity is not None and len(tokens) // WIDTH > self.capacity:
            return  # larger than the whole cache: skipped, so as not to disturb it
        self._saved = [e for e in self._saved if _lcp(e, tokens) * WIDTH != len(e)]
        if self.capacity is not None:
            held = sum(len(e) for e in self._saved) // WIDTH
            while self._saved and held + len(tokens) // WIDTH > self.capacity:
                held -= len(self._saved.pop(0)) // WIDTH  # the oldest first
        self._saved.append(tokens)

    def _restore(self, slot: _Slot, seq: bytes, new_len: int) -> None:
        shared = _lcp(slot.tokens, seq)
        keep_best = shared / (len(slot.tokens) // WIDTH) if slot.tokens else -1.0
        sim_best = shared / new_len if new_len else 0.0
        found = None
        for index, entry in enumerate(self._saved):
            common = _lcp(entry, seq)
            keep = common / (len(entry) // WIDTH)
            similarity = common / new_len if new_len else 0.0
            if keep < 0.25:  # "don't trash large prompts"
                continue
            if keep_best < keep and sim_best < similarity:
                keep_best, sim_best, found = keep, similarity, index
        if found is not None:
            slot.tokens = self._saved.pop(found)
