"""One job: build the `tokenizers.Tokenizer` of a tokenizer file (a tokenizer.json, gzipped or not,
or the vocabulary in a GGUF model's metadata), with the checks every input gets; and what the
other models modules hand around in its place: the error that says why a file is no tokenizer,
and `Encoded`, the plain encoding a helper process, a book or an index answers with. It imports
no other models module but the GGUF readers, so every one of them can import it."""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import TYPE_CHECKING, Any

from prefixlint.core.files import MAX_TOKENIZER_BYTES, InputError, check_input_file

if TYPE_CHECKING:
    from tokenizers import Tokenizer


class TokenizerError(Exception):
    """A tokenizer that cannot be found or loaded; the message says where and why."""


class Encoded:
    """What `check` reads of a `tokenizers.Encoding`."""

    __slots__ = ("ids", "offsets")

    def __init__(self, ids: list[int], offsets: list[tuple[int, int]]) -> None:
        self.ids, self.offsets = ids, offsets


def load_backend(path: str) -> Tokenizer:
    """Build the `tokenizers.Tokenizer` of a file, here or in a helper (the same checks, the same
    TokenizerError messages)."""
    from tokenizers import Tokenizer

    from prefixlint.models.gguf import is_gguf

    p = Path(path)
    if is_gguf(p):
        return gguf_tokenizer(path).tokenizer
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
            backend = Tokenizer.from_str(data.decode("utf-8"))
        else:
            backend = Tokenizer.from_file(str(p))
    except Exception as exc:  # tokenizers raises plain Exceptions for malformed files
        raise TokenizerError(
            f"{path}: not a loadable tokenizer.json ({str(exc).splitlines()[0][:160]})"
        ) from exc
    # A saved truncation (gpt2's tokenizer.json cuts at 50 tokens) or padding is not what a server
    # applies to a prompt: transformers drops both unless asked, and so do we.
    backend.no_truncation()
    backend.no_padding()
    return backend


def gguf_tokenizer(path: str, about: bool = False) -> Any:
    """The tokenizer a GGUF file's metadata describes (built once, then from the cache), or with
    `about` only its special tokens and build warnings."""
    from prefixlint.models.gguf_tokenizer import (
        GGUFError,
        GGUFTokenizerError,
        gguf_tokenizer_about,
        load_gguf_tokenizer,
    )

    try:
        check_input_file(path, 0)  # a model is gigabytes: only its header is read
        return gguf_tokenizer_about(path) if about else load_gguf_tokenizer(path)
    except (OSError, InputError, GGUFError, GGUFTokenizerError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise TokenizerError(f"{path}: not a usable GGUF tokenizer ({reason})") from exc
