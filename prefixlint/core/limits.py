"""What one template may cost (the sandbox in prefixlint/jinja/environment.py enforces it). Kept
apart from the environment so that building `Options` (a warm, all-cached run) imports no jinja2."""

from __future__ import annotations

from dataclasses import dataclass

from prefixlint.core.files import MAX_SOURCE_BYTES


@dataclass(frozen=True)
class Limits:
    """What one template may cost; `Options.limits` sets them for a run (0 turns a limit off)."""

    seconds: float = 5.0  # one render (and the compile)
    template_seconds: float = 20.0  # all renders of one template together
    output_chars: int = 2_000_000  # one render's output, and any string or list built while rendering
    int_bits: int = 65_536  # any integer built while rendering (~20,000 digits)
    memory_bytes: int = 1 << 30  # address space one render may add (POSIX; a 1 GB string fails fast)
    recursion: int = 600  # Python frames a render may add (recursive macros)
    file_bytes: int = MAX_SOURCE_BYTES  # a template, tokenizer_config.json or .py; larger is a finding
