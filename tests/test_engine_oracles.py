"""prefixlint's `vllm` and `sglang` models against vLLM's and SGLang's own cache code (issue 29, point 2).

The prompts of bench/explain_throughput.py's log (a support bot with the time at the head, coding
sessions with history and tools, RAG with retrieved documents, an agent with a request id at the
head) are rendered and tokenized as `explain` does, then fed to vLLM's `KVCacheManager` and SGLang's
`RadixCache` (tests/engine_oracles.py, run with the vLLM venv's python) and to prefixlint's
Simulation. Every request's hit tokens must be equal: unbounded, and in a cache too small for the
working set, where the engine's eviction decides (vLLM's block pool; SGLang's radix leaves, page 1
and page 16). The log holds no responses: replies are checked against the real server in
tests/test_vllm_server.py.

Skips without the venv (tests/vllm_server_install.py; .ci/run installs it).
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from engine_oracles import UNAVAILABLE
from vllm_server_install import installed, venv_dir, venv_python

pytestmark = pytest.mark.engine_oracles

HERE = Path(__file__).parent
REQUESTS = 10_000


@pytest.fixture(scope="module")
def prompts(tmp_path_factory: pytest.TempPathFactory) -> list[list[int]]:
    """The token ids of the bench log's prompts, rendered and tokenized as explain does."""
    if not installed():
        pytest.skip(
            f"vLLM and SGLang are not installed (no complete install in {venv_dir()}): "
            "run tests/vllm_server_install.py"
        )
    sys.path.insert(0, str(HERE.parent / "bench"))
    from explain_throughput import TEMPLATE, build_log

    from prefixlint.explain.reading import Reading
    from prefixlint.explain.requests import Renderer
    from prefixlint.explain.segments import SegmentEncoder
    from prefixlint.explain.stream import encoded_batches
    from prefixlint.jinja.template import ChatTemplate
    from prefixlint.models.tokens import load_tokenizer

    log = tmp_path_factory.mktemp("oracles") / "requests.jsonl"
    build_log(log, REQUESTS)
    renderer = Renderer(ChatTemplate(TEMPLATE, "chatml_tools.jinja"))
    encoder = SegmentEncoder(load_tokenizer(None).tokenizer)
    out: list[list[int]] = []
    for _, encoded in encoded_batches(str(log), renderer, encoder, 1.0, Reading()):
        out.extend(tokens.id_list() for tokens in encoded)
    return out


def oracle(engine: str, block: int, capacity: int | None, prompts: list[list[int]], tmp: Path) -> list[int]:
    job, out = tmp / f"{engine}-{block}-{capacity}.json", tmp / "hits.json"
    requests = [{"prompt": p, "reply": []} for p in prompts]
    job.write_text(
        json.dumps({"engine": engine, "block_size": block, "capacity": capacity, "requests": requests})
    )
    done = subprocess.run(
        [str(venv_python()), str(HERE / "engine_oracles.py"), str(job), str(out)],
        capture_output=True,
        text=True,
        timeout=900,  # 20-40 s each here
    )
    if done.returncode == UNAVAILABLE:
        pytest.skip(done.stderr.strip().splitlines()[-1])
    assert done.returncode == 0, done.stderr[-2000:]
    return json.loads(out.read_text())


def predicted(engine: str, block: int, capacity: int | None, prompts: list[list[int]]) -> list[int]:
    from prefixlint.engines import load_engines
    from prefixlint.engines.simulate import Simulation

    profile = load_engines()[engine].with_block(block)
    sim = Simulation([profile], capacity, keep_hits=True)
    for ids in prompts:
        sim.feed(ids)
    tally = sim.lru[engine][1] if capacity else sim.tallies[engine]
    return tally.hits


@pytest.mark.parametrize(
    ("engine", "block", "capacity"),
    [
        ("vllm", 16, None),
        ("vllm", 16, 1500 * 16),  # 1,500 blocks: the working set does not fit
        ("sglang", 1, None),
        ("sglang", 1, 24_000),
        ("sglang", 16, 24_000),
    ],
)
def test_hits_equal_the_engines_own_cache(engine, block, capacity, prompts, tmp_path) -> None:  # noqa: ANN001
    theirs = oracle(engine, block, capacity, prompts, tmp_path)
    ours = predicted(engine, block, capacity, prompts)
    total = sum(map(len, prompts))
    print(
        f"\n{engine} block {block} capacity {capacity}: {sum(theirs):,} vs {sum(ours):,} of {total:,} tokens"
    )
    differ = [(i, a, b) for i, (a, b) in enumerate(zip(theirs, ours, strict=True)) if a != b]
    assert differ == [], f"{len(differ)} requests differ; first (request, engine, prefixlint): {differ[:5]}"
    if capacity:  # eviction mattered: the unbounded cache reuses more
        assert sum(ours) < sum(predicted(engine, block, None, prompts))


def test_the_pool_of_a_block_engine_is_replayed(prompts) -> None:  # noqa: ANN001
    """Eviction order is the engine's: the radix LRU of whole leaves, fed vLLM's pool size, differs."""
    from prefixlint.engines import load_engines
    from prefixlint.engines.simulate import Simulation

    profile = replace(load_engines()["vllm"], eviction="radix")
    sim = Simulation([profile], 1500 * 16, keep_hits=True)
    for ids in prompts:
        sim.feed(ids)
    assert sim.lru["vllm"][1].hits != predicted("vllm", 16, 1500 * 16, prompts)
