"""vLLM's and SGLang's own prefix-cache code, fed a sequence of requests the way their schedulers feed
them, one request at a time: the hit tokens each reports per request. Run by tests/test_engine_oracles.py
with the venv's python (tests/vllm_server_install.py: vLLM and SGLang live there, never in
prefixlint's environment):

    VENV/bin/python tests/engine_oracles.py REQUESTS.json OUT.json

REQUESTS.json: {"engine": "vllm"|"sglang", "block_size": B, "capacity": TOKENS or null, "requests":
[{"prompt": [ids], "reply": [ids]}]}, `reply` the generated tokens whose KV the server computed (all
but the last one sampled). OUT.json: the hit tokens of each request.

- vLLM: `KVCacheManager` (vllm/v1/core) as the v1 scheduler drives it: `get_computed_blocks`, then
  `allocate_slots` for the prompt, then for each generated token but the last (its KV is computed
  when it is fed back), `free` at the end. A pool of capacity / B blocks (unbounded: enough for all).
- SGLang: `RadixCache.create_simulated(page_size=B)` (sglang/srt/mem_cache) as its scheduler drives
  it: `match_prefix` on the prompt but its last token, lock the matched node, evict what the new
  tokens need beyond the free slots of a pool of `capacity`, insert the prompt and the reply, unlock.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import json
import sys
import types

UNAVAILABLE = 3  # the exit code when the engine's code cannot be imported here


def vllm_hits(requests: list[dict], block: int, capacity: int | None) -> list[int]:
    import torch
    from vllm.sampling_params import SamplingParams
    from vllm.utils.hashing import sha256
    from vllm.v1.core.kv_cache_manager import KVCacheManager
    from vllm.v1.core.kv_cache_utils import get_request_block_hasher, init_none_hash
    from vllm.v1.kv_cache_interface import FullAttentionSpec, KVCacheConfig, KVCacheGroupSpec
    from vllm.v1.request import Request

    longest = max(len(r["prompt"]) + len(r["reply"]) for r in requests)
    blocks = (
        capacity // block
        if capacity
        else sum(-(-(len(r["prompt"]) + len(r["reply"])) // block) for r in requests) + 2
    )
    spec = FullAttentionSpec(block_size=block, num_kv_heads=1, head_size=8, dtype=torch.float32)
    config = KVCacheConfig(
        num_blocks=blocks, kv_cache_tensors=[], kv_cache_groups=[KVCacheGroupSpec(["layer"], spec)]
    )
    manager = KVCacheManager(
        config, max_model_len=longest + block, scheduler_block_size=block, hash_block_size=block
    )
    init_none_hash(sha256)
    hasher = get_request_block_hasher(block, sha256)
    hits = []
    for k, r in enumerate(requests):
        reply = r["reply"]
        request = Request(
            str(k),
            list(r["prompt"]),
            SamplingParams(max_tokens=len(reply) + 1),  # the reply, then the last token
            None,
            block_hasher=hasher,
            cache_salt=r.get("salt"),
        )
        computed, hit = manager.get_computed_blocks(request)[:2]
        hits.append(hit)
        new = len(r["prompt"]) - hit
        if manager.allocate_slots(request, new, hit, computed) is None:
            raise RuntimeError(f"request {k}: the pool of {blocks} blocks cannot hold it")
        request.num_computed_tokens = len(r["prompt"])
        for token in reply:  # a generated token is appended, then fed back: its KV is computed
            request.append_output_token_ids(token)
            if manager.allocate_slots(request, 1) is None:
                raise RuntimeError(f"request {k}: no block for its reply")
            request.num_computed_tokens += 1
        request.append_output_token_ids(0)  # the last token sampled, never fed back
        manager.free(request)
    return hits


class _Absent(types.ModuleType):
    """A stand-in for torchvision: every attribute is another stand-in, callable, never used."""

    def __getattr__(self, name: str) -> _Absent:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Absent(f"{self.__name__}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> _Absent:
        return self


class _StandIns(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Imports of torchvision get stand-ins. sglang.srt.configs imports every model's config, the
    multimodal ones torchvision (at import time only: image transforms the radix cache never runs),
    and PyPI's torchvision needs another torch than vLLM's CPU build (installing it replaces it)."""

    def find_spec(
        self, name: str, path: object, target: object = None
    ) -> importlib.machinery.ModuleSpec | None:
        if name == "torchvision" or name.startswith("torchvision."):
            return importlib.machinery.ModuleSpec(name, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Absent(spec.name)
        module.__path__ = []
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        pass


def sglang_hits(requests: list[dict], page: int, capacity: int | None) -> list[int]:
    import torch
    import transformers.utils.import_utils  # noqa: F401 - it notes torchvision absent before the stand-ins

    sys.meta_path.insert(0, _StandIns())
    try:
        from sglang.srt.mem_cache.base_prefix_cache import EvictParams, InsertParams, MatchPrefixParams
        from sglang.srt.mem_cache.radix_cache import RadixCache, RadixKey
    except ImportError as exc:
        print(f"SGLang's radix cache does not import here: {exc}", file=sys.stderr)
        sys.exit(UNAVAILABLE)

    class Allocator:  # the token pool's bookkeeping the simulated cache calls on eviction
        device = "cpu"

        def free_segment(self, *args: object, **kwargs: object) -> None:
            pass

        def free(self, *args: object, **kwargs: object) -> None:
            pass

    cache = RadixCache.create_simulated(mock_allocator=Allocator(), page_size=page)
    hits = []
    for r in requests:
        prompt, reply = list(r["prompt"]), list(r["reply"])
        kept = prompt + reply
        found = cache.match_prefix(MatchPrefixParams(key=RadixKey(prompt[:-1])))
        hit = found.device_prefix_len
        hits.append(hit)
        node = found.last_device_node
        cache.inc_lock_ref(node)
        if capacity is not None:
            free = capacity - cache.evictable_size() - cache.protected_size()
            need = len(kept) - hit
            if need > free:
                cache.evict(EvictParams(num_tokens=need - free))
        aligned = len(kept) // page * page
        cache.insert(
            InsertParams(key=RadixKey(kept[:aligned]), value=torch.arange(aligned, dtype=torch.int64))
        )
        cache.dec_lock_ref(node)
    return hits


if __name__ == "__main__":
    with open(sys.argv[1], encoding="utf-8") as fh:
        job = json.load(fh)
    run = vllm_hits if job["engine"] == "vllm" else sglang_hits
    out = run(job["requests"], job["block_size"], job["capacity"])
    with open(sys.argv[2], "w", encoding="utf-8") as fh:
        json.dump(out, fh)
