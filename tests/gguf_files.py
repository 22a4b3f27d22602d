"""Small GGUF files for the tests, written with the `gguf` package's writer as llama.cpp's
convert_hf_to_gguf.py writes them: the vocabulary, merges and token types of a real tokenizer.json,
a chat template, and (only where a test runs a model) tensors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

gguf = pytest.importorskip("gguf", reason="the gguf package (a test extra) is not installed")

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def read_tokenizer_json(path: Path) -> dict:
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as fh:
        return json.load(fh)


def vocabulary(data: dict) -> tuple[list[str], list[int]]:
    """Tokens in id order and their llama.cpp types: added special tokens are CONTROL, other added
    tokens USER_DEFINED, `<0xNN>` BYTE in a byte-fallback vocabulary, holes `[PADn]` UNUSED."""
    by_id = {i: t for t, i in data["model"]["vocab"].items()}
    added = {t["id"]: t for t in data["added_tokens"]}
    size = max([*by_id, *added]) + 1
    tokens, types = [], []
    byte_fallback = bool(data["model"].get("byte_fallback"))
    for i in range(size):
        if i in added:
            tokens.append(added[i]["content"])
            unk = added[i]["content"] == data["model"].get("unk_token")
            types.append(UNKNOWN if unk else CONTROL if added[i]["special"] else USER_DEFINED)
        elif i in by_id:
            token = by_id[i]
            tokens.append(token)
            is_byte = byte_fallback and len(token) == 6 and token.startswith("<0x") and token.endswith(">")
            types.append(BYTE if is_byte else NORMAL)
        else:
            tokens.append(f"[PAD{i}]")
            types.append(UNUSED)
    return tokens, types


def piece_scores(tokens: list[str], merges: list) -> list[float]:
    """SentencePiece scores as the model that tokenizer.json was converted from ranks its pieces:
    a piece made by the merge of rank r scores -r (Hugging Face derived the merges from these
    scores, best first); pieces no merge makes score below all of them."""
    rank: dict[str, int] = {}
    for r, merge in enumerate(merges):
        left, right = merge.split(" ", 1) if isinstance(merge, str) else merge
        rank.setdefault(left + right, r)
    floor = len(merges)
    return [-float(rank.get(t, floor + i)) for i, t in enumerate(tokens)]


def write_gguf(
    path: Path,
    tokenizer_json: Path | None = None,
    *,
    templates: dict[str, str] | None = None,
    pre: str | None = "gpt-2",
    with_merges: bool = True,
    bos: str | None = None,
    eos: str | None = None,
    architecture: str = "llama",
) -> Path:
    """A metadata-only GGUF (no tensors): the tokenizer of `tokenizer_json`, and `templates`
    ({"": default template, "tool_use": …})."""
    writer = gguf.GGUFWriter(str(path), architecture)
    writer.add_name(path.stem)
    if tokenizer_json is not None:
        add_tokenizer(
            writer, read_tokenizer_json(tokenizer_json), pre=pre, with_merges=with_merges, bos=bos, eos=eos
        )
    for name, text in (templates or {}).items():
        writer.add_string("tokenizer.chat_template" + (f".{name}" if name else ""), text)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


def add_tokenizer(
    writer, data: dict, *, pre: str | None, with_merges: bool, bos: str | None, eos: str | None
) -> None:
    tokens, types = vocabulary(data)
    sentencepiece = bool(data["model"].get("byte_fallback"))
    writer.add_tokenizer_model("llama" if sentencepiece else "gpt2")
    if pre is not None:
        writer.add_tokenizer_pre(pre)
    writer.add_token_list(tokens)
    writer.add_token_types(types)
    merges = data["model"].get("merges") or []
    if sentencepiece:
        writer.add_token_scores(piece_scores(tokens, merges))
    if with_merges and merges:
        writer.add_token_merges([m if isinstance(m, str) else " ".join(m) for m in merges])
    ids = {t: i for i, t in enumerate(tokens)}
    if bos is not None:
        writer.add_bos_token_id(ids[bos])
    if eos is not None:
        writer.add_eos_token_id(ids[eos])
    unk = data["model"].get("unk_token")
    if unk is not None:
        writer.add_unk_token_id(ids[unk])


def write_tiny_model(
    path: Path,
    tokenizer_json: Path,
    *,
    pre: str,
    template: str,
    special: str,
    layers: int = 2,
    width: int = 64,
) -> Path:
    """A llama-architecture model llama.cpp can run: `layers` blocks of random weights (seeded, so
    the file is the same every time), the tokenizer of `tokenizer_json` without BOS, one template."""
    import numpy as np

    rng = np.random.default_rng(0)
    data = read_tokenizer_json(tokenizer_json)
    vocab = len(vocabulary(data)[0])
    heads, ff = 4, 2 * width
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_name("prefixlint-tiny")
    writer.add_context_length(4096)
    writer.add_embedding_length(width)
    writer.add_block_count(layers)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(width // heads)
    writer.add_file_type(0)  # all F32
    add_tokenizer(writer, data, pre=pre, with_merges=True, bos=special, eos=special)
    writer.add_add_bos_token(False)
    writer.add_chat_template(template)

    def weights(*shape: int) -> np.ndarray:
        return (rng.standard_normal(shape) * 0.02).astype(np.float32)

    writer.add_tensor("token_embd.weight", weights(vocab, width))
    writer.add_tensor("output_norm.weight", np.ones(width, dtype=np.float32))
    writer.add_tensor("output.weight", weights(vocab, width))
    for i in range(layers):
        block = f"blk.{i}"
        writer.add_tensor(f"{block}.attn_norm.weight", np.ones(width, dtype=np.float32))
        for name in ("attn_q", "attn_k", "attn_v", "attn_output"):
            writer.add_tensor(f"{block}.{name}.weight", weights(width, width))
        writer.add_tensor(f"{block}.ffn_norm.weight", np.ones(width, dtype=np.float32))
        writer.add_tensor(f"{block}.ffn_gate.weight", weights(ff, width))
        writer.add_tensor(f"{block}.ffn_up.weight", weights(ff, width))
        writer.add_tensor(f"{block}.ffn_down.weight", weights(width, ff))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
