"""Ollama model names (`ollama:qwen3:8b`) resolved to the GGUF blob in the local Ollama store.

The store is `$OLLAMA_MODELS`, else `~/.ollama/models`: `manifests/HOST/NAMESPACE/MODEL/TAG` is
a JSON manifest whose layer of media type `application/vnd.ollama.image.model` names the model's
blob by digest, stored as `blobs/sha256-HEX`. A name is `[HOST/][NAMESPACE/]MODEL[:TAG]`, with
`registry.ollama.ai`, `library` and `latest` for what it leaves out, as `ollama pull` reads it.
Nothing is ever downloaded: a model not pulled is an error saying so.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

from prefixlint.core.files import InputError, read_limited

PREFIX = "ollama:"
DEFAULT_HOST, DEFAULT_NAMESPACE, DEFAULT_TAG = "registry.ollama.ai", "library", "latest"
MODEL_LAYER = "application/vnd.ollama.image.model"
_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")  # no "..", no separators: a name never leaves the store
_DIGEST = re.compile(r"sha256[:-]([0-9a-f]{64})")
MAX_MANIFEST_BYTES = 1 << 20


class OllamaError(ValueError):
    """An Ollama model name that does not resolve to a GGUF blob; the message says why."""


def store_dir() -> Path:
    return Path(os.environ.get("OLLAMA_MODELS") or Path.home() / ".ollama" / "models")


def manifest_path(name: str, store: Path) -> Path:
    """Where the manifest of `name` (without the `ollama:` prefix) lives in `store`."""
    model, _, tag = name.partition(":")
    parts = model.split("/")
    if not 1 <= len(parts) <= 3 or not all(_PART.fullmatch(p) for p in [*parts, tag or DEFAULT_TAG]):
        raise OllamaError(f"{PREFIX}{name}: not an Ollama model name ([host/][namespace/]model[:tag])")
    parts = [DEFAULT_HOST, DEFAULT_NAMESPACE][: 3 - len(parts)] + parts
    return store.joinpath("manifests", *parts, tag or DEFAULT_TAG)


def _not_pulled(spec: str, store: Path) -> str:
    name = spec.removeprefix(PREFIX)
    return (
        f"{spec}: not in the local Ollama store ({store}); `ollama pull {name}` first, or set "
        "OLLAMA_MODELS to the store's folder"
    )


def unknown_model(spec: str) -> str | None:
    """Why `ollama:NAME[:TAG]` names no model of the local store (not a model name, or not
    pulled), as for a path that does not exist; None when its manifest is there (a damaged
    manifest or a missing blob is the model's own problem, found when it is read)."""
    try:
        store = store_dir()
        manifest = manifest_path(spec.removeprefix(PREFIX), store)
    except OllamaError as exc:
        return str(exc)
    return None if manifest.exists() else _not_pulled(spec, store)


def resolve_ollama(spec: str) -> Path:
    """The GGUF blob of `ollama:NAME[:TAG]` in the local store; raises OllamaError."""
    name = spec.removeprefix(PREFIX)
    store = store_dir()
    manifest = manifest_path(name, store)
    try:
        data = json.loads(read_limited(manifest, MAX_MANIFEST_BYTES))
    except FileNotFoundError:
        raise OllamaError(_not_pulled(spec, store)) from None
    except (OSError, InputError, ValueError) as exc:
        raise OllamaError(f"{spec}: unreadable manifest {manifest} ({exc})") from exc
    layers = data.get("layers") if isinstance(data, dict) else None
    digests = [
        layer.get("digest")
        for layer in layers or []
        if isinstance(layer, dict) and layer.get("mediaType") == MODEL_LAYER
    ]
    found = _DIGEST.fullmatch(digests[0]) if digests and isinstance(digests[0], str) else None
    if found is None:
        raise OllamaError(f"{spec}: the manifest {manifest} names no model layer")
    blob = store / "blobs" / f"sha256-{found.group(1)}"
    if not blob.is_file():
        raise OllamaError(f"{spec}: the model blob {blob} named by its manifest is missing")
    return blob
