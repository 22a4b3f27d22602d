"""Segment reuse (prefixlint/explain/segments.py) gives exactly the ids and offsets of encoding each
prompt whole, on the bundled tokenizer and on every real tokenizer of the shared corpus; where a
tokenizer cannot be cut at line starts, that is detected and a weaker cut (or none) is used."""

from __future__ import annotations

import json
from array import array
from pathlib import Path

import pytest

from prefixlint.engines.packed import pack
from prefixlint.engines.radix import RadixCache
from prefixlint.explain.requests import DEFAULT_TEMPLATE, DEFAULT_TEMPLATE_PATH
from prefixlint.explain.segments import SegmentEncoder, SegmentMismatch
from prefixlint.jinja.template import ChatTemplate
from prefixlint.models.tokens import load_backend, load_tokenizer

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "explain"
CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus" / "tokenizers"
CORPUS_FILES = sorted(p for p in CORPUS.glob("*/tokenizer.json*")) if CORPUS.is_dir() else []
SYSTEM = (
    "You are the support assistant of Northwind Outfitters.\n"
    "Follow this policy in every answer.\n"
    "1. Greet the customer once; no marketing language.\n"
    "2. Quote prices (€, $) and say when a price is an estimate.\n\n"
    "## Tools\n"
    '{"name": "lookup_order", "parameters": {"id": "string"}}\n'
    "    indented line\n"
    "\tтабуляция и кириллица\n"
    "日本語の説明です。\n"
    "Don't guess; it's fine to say 'I don't know'.\n"
)
USERS = [
    "Hi!\nCan I return boots I wore twice?",
    "Order 12345678 hasn't arrived.\n\nWhy?",
    "  leading spaces\nand a trailing newline\n",
    "naïve café — 100% sure?\n's\n12\n34",
]


def prompts(special: list[str]) -> list[str]:
    """Prompts of the shapes a log has: the ChatML default template (with the tokenizer's own
    special tokens where it has them), the fixture template with a clock at its head, and plain
    prompts with a request id at the head."""
    out = []
    chatml = DEFAULT_TEMPLATE
    if len(special) >= 2:
        chatml = chatml.replace("<|im_start|>", special[0]).replace("<|im_end|>", special[1])
    head = ChatTemplate((FIX / "timestamp_head.jinja").read_text(encoding="utf-8"), "head.jinja")
    default = ChatTemplate(chatml, DEFAULT_TEMPLATE_PATH)
    for i, user in enumerate(USERS):
        messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": user}]
        out.append(default.render(messages).text)
        out.append(head.render(messages).text)
        out.append(f"[req {i}] {SYSTEM}\n{user}")
    return out


def check_exact(tokenizer, texts: list[str]) -> SegmentEncoder:
    encoder = SegmentEncoder(tokenizer)
    got = encoder.encode(texts) + encoder.encode(texts)  # the second time, all from the cache
    for text, tokens in zip(texts + texts, got, strict=True):
        whole = tokenizer.encode(text, add_special_tokens=False)
        assert tokens.id_list() == whole.ids, text[:60]
        assert [tokens.char_at(i) for i in range(len(whole.ids))] == [s for s, _ in whole.offsets]
    return encoder


def test_bundled_tokenizer_is_cut_at_lines_and_gives_the_whole_prompts_ids() -> None:
    tokenizer = load_tokenizer(None).tokenizer
    specials = ["<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"]
    encoder = check_exact(tokenizer, prompts(specials))
    assert encoder.mode == "lines"
    # The shared system prompt's lines were encoded once: far fewer characters than the prompts.
    texts = prompts(specials)
    assert encoder.encoded_chars < sum(map(len, texts)) / 2


@pytest.mark.skipif(not CORPUS_FILES, reason="../shared/corpus/tokenizers is absent")
@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.parent.name)
def test_corpus_tokenizers_give_the_whole_prompts_ids(path: Path) -> None:
    tokenizer = load_backend(str(path))
    specials = [t.content for t in tokenizer.get_added_tokens_decoder().values() if t.special][:2]
    check_exact(tokenizer, prompts(specials))


@pytest.mark.skipif(
    not (CORPUS / "mistral-7b-v0.1").is_dir(), reason="../shared/corpus/tokenizers/mistral-7b-v0.1 is absent"
)
def test_a_normalizer_that_prepends_to_every_piece_forbids_line_cuts() -> None:
    # Mistral's normalizer prepends "▁" to every piece between added tokens: cut at a line start,
    # a piece would gain one. The probes find that; forced, the sampled check refuses it.
    tokenizer = load_backend(str(CORPUS / "mistral-7b-v0.1" / "tokenizer.json"))
    assert SegmentEncoder(tokenizer).mode == "special"
    forced = SegmentEncoder(tokenizer, mode="lines")
    with pytest.raises(SegmentMismatch):
        forced.encode(["You are kind.\nAnswer briefly."])


def test_a_tokenizer_whose_pieces_differ_falls_back_to_whole_prompts(tmp_path: Path) -> None:
    # A word-level tokenizer with a Metaspace pre-tokenizer that marks only the text's first word:
    # each cut piece would be "first", so neither cut is exact and prompts are encoded whole.
    vocab = {"[UNK]": 0, "▁a": 1, "a": 2, "▁b": 3, "b": 4, "<s>": 5}
    spec = {
        "version": "1.0",
        "added_tokens": [
            {"id": 5, "content": "<s>", "single_word": False, "lstrip": False, "rstrip": False}
            | {"normalized": False, "special": True}
        ],
        "normalizer": {"type": "Prepend", "prepend": "▁"},
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "model": {"type": "WordLevel", "vocab": vocab, "unk_token": "[UNK]"},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    tokenizer = load_backend(str(path))
    encoder = SegmentEncoder(tokenizer)
    assert encoder.mode in ("special", "whole")
    texts = ["a<s>b", "a\nb<s>a"]
    assert [t.id_list() for t in encoder.encode(texts)] == [
        tokenizer.encode(t, add_special_tokens=False).ids for t in texts
    ]


def test_segment_cache_is_bounded_by_its_capacity() -> None:
    tokenizer = load_tokenizer(None).tokenizer
    encoder = SegmentEncoder(tokenizer, capacity_tokens=50)
    encoder.encode([f"line {i} of many words here\n" * 3 + f"tail {i}" for i in range(40)])
    assert encoder._held <= 50


def test_radix_cache_evicts_the_least_recently_used_leaf() -> None:
    cache = RadixCache(capacity=10)
    a, b, c = pack([1, 2, 3, 4]), pack([1, 2, 5, 6]), pack([7, 8, 9])
    cache.insert(a)  # 4 tokens
    cache.insert(b)  # shares [1, 2]: 6 tokens held
    cache.insert(a)  # a is now more recent than b
    cache.insert(c)  # 9 tokens: fits
    assert cache.tokens == 9
    cache.insert(pack([10, 11]))  # 11 > 10: b's own leaf [5, 6] is the oldest, and goes
    assert cache.tokens == 9
    assert cache.lookup(b) == 2 and cache.lookup(a) == 4 and cache.lookup(c) == 3
    cache.insert(pack([12, 13, 14]))  # 12 > 10: a's leaf [3, 4] (older than c) goes
    assert cache.lookup(a) == 2 and cache.tokens == 10
    cache.insert(pack([15]))  # [1, 2], a leaf now, last used with a: older than c, so it goes
    assert cache.lookup(a) == 0 and cache.lookup(c) == 3
    assert cache.tokens == 9


def test_ids_are_packed_as_the_simulation_reads_them() -> None:
    tokenizer = load_tokenizer(None).tokenizer
    (tokens,) = SegmentEncoder(tokenizer).encode(["Hello\nworld"])
    assert tokens.ids == array("I", tokenizer.encode("Hello\nworld", add_special_tokens=False).ids).tobytes()


def test_a_tokenizer_saved_with_truncation_or_padding_counts_every_token(tmp_path: Path) -> None:
    # gpt2's tokenizer.json on the Hub is saved truncating at 50 tokens: a server does not cut a
    # prompt there, and neither may the counts (nor the whole-prompt check of the segments).
    spec = {
        "version": "1.0",
        "truncation": {"direction": "Right", "max_length": 2, "strategy": "LongestFirst", "stride": 0},
        "padding": {
            "strategy": {"Fixed": 8},
            "direction": "Right",
            "pad_to_multiple_of": None,
            "pad_id": 0,
            "pad_type_id": 0,
            "pad_token": "[UNK]",
        },
        "pre_tokenizer": {"type": "WhitespaceSplit"},
        "model": {"type": "WordLevel", "vocab": {"[UNK]": 0, "a": 1, "b": 2}, "unk_token": "[UNK]"},
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(spec), encoding="utf-8")
    assert load_backend(str(path)).encode("a b a", add_special_tokens=False).ids == [1, 2, 1]
