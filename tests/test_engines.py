"""What each engine caches of a shared prefix, against hand-computed values."""

from __future__ import annotations

from prefixlint.engines import cacheable_per_engine, load_engines


def test_vllm_caches_whole_16_token_blocks_and_recomputes_the_last_token() -> None:
    vllm = load_engines()["vllm"]
    assert vllm.cacheable(15, 100) == 0
    assert vllm.cacheable(16, 100) == 16
    assert vllm.cacheable(47, 100) == 32
    # A request identical to a cached one of 64 tokens: the last token is recomputed, so 48.
    assert vllm.cacheable(64, 64) == 48


def test_sglang_caches_per_token_and_openai_from_1024_in_128_steps() -> None:
    engines = load_engines()
    assert engines["sglang"].cacheable(37, 100) == 37
    assert engines["sglang"].cacheable(100, 100) == 99
    assert engines["openai"].cacheable(1023, 5000) == 0
    assert engines["openai"].cacheable(1024, 5000) == 1024
    assert engines["openai"].cacheable(1300, 5000) == 1280
    assert engines["anthropic"].cacheable(1500, 5000) == 1500


def test_all_engines_at_once() -> None:
    assert cacheable_per_engine(40, 100) == {
        "vllm": 32,
        "sglang": 40,
        "llamacpp": 40,
        "openai": 0,
        "anthropic": 0,
    }
