"""The tokenizer a GGUF file describes, built as a `tokenizers.Tokenizer`, and cached.

A GGUF carries its whole tokenizer as metadata: `tokenizer.ggml.model` (`gpt2`: byte-level BPE;
`llama`: SentencePiece BPE with byte fallback), `.pre` (which split a byte-level BPE was trained
with), `.tokens`, `.merges` (or `.scores`, from which SentencePiece merges are derived), `.token_type`
(control tokens are special, user-defined ones are matched whole) and the special token ids. This
module rebuilds it in the shape the Hugging Face `tokenizer.json` it was converted from has, so the
ids are the same (tests/test_gguf_tokenizer.py compares them on real tokenizers). transformers has a
converter too, but it is not a run-time dependency of prefixlint, and needs its model classes.

An unknown `pre` is never guessed silently: the tokenizer splits as GPT-2 does (what llama.cpp does
for a missing `pre`, its "default"), and a warning says its counts may differ from the model's.

Building reads ~300,000 strings and takes about a second, so the result is cached as JSON (derived
data, never code) under `$XDG_CACHE_HOME/prefixlint/gguf-tokenizers/`, keyed by the file's identity
(path, size, mtime, inode) and prefixlint's own code.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from prefixlint.models.gguf import GGUFError, GGUFMetadata, read_metadata

if TYPE_CHECKING:
    from tokenizers import Tokenizer

# llama.cpp's token types (llama_token_type / gguf TokenType)
CONTROL, USER_DEFINED, UNUSED = 3, 4, 5

_LLAMA3_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_QWEN2_SPLIT = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_TEKKEN_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*"
    r"|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_GPT4O_SPLIT = (
    r"[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?"
    r"|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_DEEPSEEK_V3_SPLITS = (
    r"\p{N}{1,3}",
    "[\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff]+",
    r"[!\"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+",
)


@dataclass(frozen=True)
class PreTokenizer:
    """How a byte-level BPE splits text before merging: regexes applied in turn (none: GPT-2's
    own), and whether text is NFC-normalized first (as the Hugging Face tokenizer does)."""

    splits: tuple[str, ...] = ()
    nfc: bool = False


GPT2 = PreTokenizer()
# `tokenizer.ggml.pre` names (llama.cpp's convert_hf_to_gguf_update.py) to the split they stand for.
PRE_TOKENIZERS: dict[str, PreTokenizer] = {
    "gpt-2": GPT2,
    "default": GPT2,
    "starcoder": GPT2,
    "olmo": PreTokenizer(nfc=True),
    **dict.fromkeys(
        ("llama-bpe", "llama3", "llama-v3", "dbrx", "smaug-bpe", "falcon3", "falcon-h1", "lfm2"),
        PreTokenizer((_LLAMA3_SPLIT,)),
    ),
    **dict.fromkeys(("qwen2", "deepseek-r1-qwen", "megrez"), PreTokenizer((_QWEN2_SPLIT,), nfc=True)),
    "deepseek-v3": PreTokenizer(_DEEPSEEK_V3_SPLITS),
    "tekken": PreTokenizer((_TEKKEN_SPLIT,)),
    **dict.fromkeys(("gpt-4o", "llama4"), PreTokenizer((_GPT4O_SPLIT,))),
}
CACHE_FORMAT = "gguf-tokenizer-v1"
MAX_VOCABULARY = 1 << 22  # the largest real vocabularies hold ~260,000 tokens


class GGUFTokenizerError(ValueError):
    """A GGUF whose tokenizer cannot be built; the message says why."""


@dataclass
class BuiltTokenizer:
    """A GGUF's tokenizer with the special tokens templates see (`bos_token`, …) and what the
    build had to work around."""

    tokenizer: Tokenizer
    special_tokens: dict[str, str] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def build_tokenizer(metadata: GGUFMetadata) -> BuiltTokenizer:
    """The `tokenizers.Tokenizer` that the metadata describes; raises GGUFTokenizerError."""
    try:
        return _build(metadata)
    except GGUFTokenizerError:
        raise
    except Exception as exc:  # tokenizers raises plain Exceptions (a merge of unknown tokens, …)
        raise GGUFTokenizerError(f"its tokenizer does not build: {str(exc).splitlines()[0][:160]}") from exc


def _build(metadata: GGUFMetadata) -> BuiltTokenizer:
    from tokenizers import AddedToken

    for key in ("tokens", "token_type", "scores", "merges"):
        length = metadata.array_length(f"tokenizer.ggml.{key}") or 0
        if length > MAX_VOCABULARY:  # checked before decoding: a list of that many items is gigabytes
            raise GGUFTokenizerError(
                f"tokenizer.ggml.{key} holds {length:,} items (at most {MAX_VOCABULARY:,})"
            )
    model = metadata.get("tokenizer.ggml.model")
    tokens = metadata.array("tokenizer.ggml.tokens")
    if not tokens or not all(isinstance(t, str) for t in tokens):
        raise GGUFTokenizerError("no tokenizer.ggml.tokens (a list of strings) in the metadata")
    types = metadata.array("tokenizer.ggml.token_type") or []
    if types and (len(types) != len(tokens) or not all(isinstance(t, int) for t in types)):
        raise GGUFTokenizerError("tokenizer.ggml.token_type does not match tokenizer.ggml.tokens")
    special, warnings = describe(metadata)
    if model == "gpt2":
        tokenizer = _byte_level_bpe(metadata, tokens)
    elif model == "llama":
        tokenizer = _sentencepiece_bpe(metadata, tokens)
    else:
        raise GGUFTokenizerError(
            f"tokenizer.ggml.model {model!r} is not supported (gpt2: byte-level BPE; llama: SentencePiece)"
        )
    kinds = dict(zip(range(len(tokens)), types, strict=False))
    control = [i for i, kind in kinds.items() if kind == CONTROL]
    user = [i for i, kind in kinds.items() if kind == USER_DEFINED]
    tokenizer.add_special_tokens([AddedToken(tokens[i], special=True, normalized=False) for i in control])
    tokenizer.add_tokens([AddedToken(tokens[i], special=False, normalized=False) for i in user])
    add_bos = metadata.get("tokenizer.ggml.add_bos_token", model == "llama")
    if add_bos is True and "bos_token" in special:
        _prepend_bos(tokenizer, special["bos_token"], tokens.index(special["bos_token"]))
    return BuiltTokenizer(tokenizer, special, warnings)


def describe(metadata: GGUFMetadata) -> tuple[dict[str, str], list[str]]:
    """The special tokens templates see (`bos_token`, …) and the warning of an unknown `pre`,
    without building the tokenizer (each special token is decoded alone)."""
    special = {}
    for name, key in (("bos", "bos"), ("eos", "eos"), ("unk", "unknown"), ("pad", "padding")):
        token_id = metadata.get(f"tokenizer.ggml.{key}_token_id")
        text = metadata.array_item("tokenizer.ggml.tokens", token_id) if isinstance(token_id, int) else None
        if isinstance(text, str):
            special[f"{name}_token"] = text
    pre = metadata.get("tokenizer.ggml.pre")
    if metadata.get("tokenizer.ggml.model") != "gpt2" or (isinstance(pre, str) and pre in PRE_TOKENIZERS):
        return special, []
    shown = "none" if pre is None else repr(pre)
    warning = (
        f"tokenizer.ggml.pre {shown} is not one prefixlint knows: text is split as GPT-2 does "
        "(llama.cpp's default), so token counts may differ from the model's"
    )
    return special, [warning]


def _byte_level_bpe(metadata: GGUFMetadata, tokens: list[str]) -> Tokenizer:
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers

    merges = metadata.array("tokenizer.ggml.merges")
    if not merges or not all(isinstance(m, str) and " " in m for m in merges):
        raise GGUFTokenizerError("a gpt2 (byte-level BPE) tokenizer without tokenizer.ggml.merges")
    vocab = {token: i for i, token in reversed(list(enumerate(tokens)))}  # the first id of a duplicate
    pairs = [tuple(m.split(" ", 1)) for m in merges]
    tokenizer = Tokenizer(models.BPE(vocab, pairs, ignore_merges=False))
    name = metadata.get("tokenizer.ggml.pre")
    pre = PRE_TOKENIZERS.get(name, GPT2) if isinstance(name, str) else GPT2  # describe() warns
    if pre.nfc:
        tokenizer.normalizer = normalizers.NFC()
    if pre.splits:
        splits = [pre_tokenizers.Split(Regex(s), behavior="isolated") for s in pre.splits]
        tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
            [*splits, pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)]
        )
    else:
        tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    tokenizer.decoder = decoders.ByteLevel()
    return tokenizer


def _sentencepiece_bpe(metadata: GGUFMetadata, tokens: list[str]) -> Tokenizer:
    """SentencePiece BPE as Llama and Mistral's `tokenizer.json` has it: a "▁" before the text and
    after every special token (as llama.cpp does), spaces as "▁", bytes as `<0xNN>` fallbacks."""
    from tokenizers import Tokenizer, decoders, models, normalizers

    merges = metadata.array("tokenizer.ggml.merges")
    if merges and all(isinstance(m, str) and " " in m for m in merges):
        pairs = [tuple(m.split(" ", 1)) for m in merges]
    else:
        scores = metadata.array("tokenizer.ggml.scores")
        if not scores or len(scores) != len(tokens):
            raise GGUFTokenizerError("a llama (SentencePiece) tokenizer with neither merges nor scores")
        pairs = merges_from_scores(tokens, scores)
    vocab = {token: i for i, token in reversed(list(enumerate(tokens)))}
    unk_id = metadata.get("tokenizer.ggml.unknown_token_id")
    unk = tokens[unk_id] if isinstance(unk_id, int) and 0 <= unk_id < len(tokens) else None
    tokenizer = Tokenizer(models.BPE(vocab, pairs, unk_token=unk, fuse_unk=True, byte_fallback=True))
    if metadata.get("tokenizer.ggml.add_space_prefix", True) is not False:
        tokenizer.normalizer = normalizers.Sequence(
            [normalizers.Prepend("\u2581"), normalizers.Replace(" ", "\u2581")]
        )
        strip = [decoders.Strip(" ", 1, 0)]
    else:
        tokenizer.normalizer = normalizers.Replace(" ", "\u2581")
        strip = []
    tokenizer.decoder = decoders.Sequence(
        [decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(), *strip]
    )
    return tokenizer


def merges_from_scores(tokens: list[str], scores: list[float]) -> list[tuple[str, str]]:
    """SentencePiece merges implied by a vocabulary: every split of a piece into two pieces of the
    vocabulary is a merge, ranked by the merged piece's score (best first), then by the ids of the
    two halves, as Hugging Face's converter ranks them."""
    vocab = {token: i for i, token in reversed(list(enumerate(tokens)))}
    ranked = []
    for token, score in zip(tokens, scores, strict=True):
        for cut in range(1, len(token)):
            left, right = token[:cut], token[cut:]
            if left in vocab and right in vocab:
                ranked.append((-score, vocab[left], vocab[right], left, right))
    ranked.sort()
    return [(left, right) for *_, left, right in ranked]


def _prepend_bos(tokenizer: Tokenizer, bos: str, bos_id: int) -> None:
    from tokenizers import processors

    tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos} $A", pair=f"{bos} $A {bos} $B", special_tokens=[(bos, bos_id)]
    )


def cache_dir() -> Path:
    home = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(home) / "prefixlint" / "gguf-tokenizers"


def _cache_key(path: str) -> str:
    from prefixlint.core.fingerprint import package_stamp

    st = os.stat(path)
    identity = [CACHE_FORMAT, os.path.realpath(path), st.st_size, st.st_mtime_ns, st.st_ino, package_stamp()]
    return hashlib.sha256(json.dumps(identity).encode()).hexdigest()


def load_gguf_tokenizer(path: str) -> BuiltTokenizer:
    """The tokenizer of a GGUF file, from the cache or built (and cached); raises GGUFError or
    GGUFTokenizerError."""
    from tokenizers import Tokenizer

    entry = _entry(path)
    try:
        backend = Tokenizer.from_str(entry.read_text(encoding="utf-8"))
        about = json.loads(entry.with_suffix(".about").read_text(encoding="utf-8"))
        return BuiltTokenizer(backend, dict(about["special_tokens"]), list(about["warnings"]))
    except Exception:  # any unreadable entry (tokenizers raises plain Exceptions) is a miss
        pass
    built = build_tokenizer(read_metadata(path))
    _write_atomically(entry, built.tokenizer.to_str())
    about = {"special_tokens": built.special_tokens, "warnings": built.warnings}
    _write_atomically(entry.with_suffix(".about"), json.dumps(about))
    return built


def gguf_tokenizer_about(path: str) -> tuple[dict[str, str], list[str]]:
    """The special tokens and build warnings of a GGUF's tokenizer, without loading the tokenizer
    when the cache has them (a helper process may be loading it meanwhile)."""
    try:
        about = json.loads(_entry(path).with_suffix(".about").read_text(encoding="utf-8"))
        return dict(about["special_tokens"]), list(about["warnings"])
    except (OSError, ValueError, KeyError, TypeError):
        return describe(read_metadata(path))


def _entry(path: str) -> Path:
    return cache_dir() / f"{_cache_key(path)}.json"


def _write_atomically(target: Path, text: str) -> None:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, target)
    except OSError:
        pass  # a read-only home still works, only without the cache


__all__ = ["GGUFError", "GGUFTokenizerError", "load_gguf_tokenizer", "build_tokenizer"]
