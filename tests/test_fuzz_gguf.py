"""Fuzzing GGUF headers (issue 17, points 3 and 4): whatever a model file's header declares, reading it
raises nothing but GGUFError, building its tokenizer nothing but GGUFTokenizerError, and `check` of
it gives results (a PFX001 naming the file at worst): no traceback, a bounded time per input, and no
allocation from a declared length.

The inputs are mutations of a small valid GGUF (a byte-level BPE vocabulary, merges, token types,
special token ids, two chat templates, three tensor infos): bytes flipped, lengths and counts
overwritten with huge or off-by-some values, value types replaced, cuts, insertions, deletions and
the file repeated. Seeded: the same inputs on every run. The default run tries 40; the long run
(`-m fuzz_long`) 1,000 and prints its figures:

    python -m pytest -m fuzz_long tests/test_fuzz_gguf.py -s
"""

from __future__ import annotations

import random
import resource
import struct
import time
import tracemalloc
from pathlib import Path

import pytest
from gguf_files import gguf

from prefixlint.api import Options, lint_paths
from prefixlint.models.gguf import GGUFError, chat_templates, read_metadata
from prefixlint.models.gguf_tokenizer import GGUFTokenizerError, build_tokenizer

SHORT, LONG = 40, 1000
SLOWEST_ALLOWED = 10.0  # seconds for one input, check included; a few ms for the header alone
HEADER_MEMORY = 4 << 20  # what reading one header may allocate (tracemalloc), whatever it declares
TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
HUGE = (2**64 - 1, 2**63, 2**40, 2**32, 2**31 - 1, 1 << 20, 65_537)


def byte_level_vocabulary() -> tuple[list[str], list[str]]:
    """GPT-2's 256 byte symbols, a few merges of them, and two special tokens."""
    visible = list(range(ord("!"), ord("~") + 1)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    symbols = {b: chr(b) for b in visible}
    extra = 0
    for b in range(256):
        if b not in symbols:
            symbols[b] = chr(256 + extra)
            extra += 1
    tokens = [symbols[b] for b in range(256)]
    merges = ["Ġ t", "h e", "Ġt he", "i n", "Ġ a", "e r", "o n", "Ġ s"]
    tokens += ["Ġt", "he", "Ġthe", "in", "Ġa", "er", "on", "Ġs", "<|im_start|>", "<|im_end|>"]
    return tokens, merges


def seed_model(path: Path) -> bytes:
    import numpy as np

    tokens, merges = byte_level_vocabulary()
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tokenizer_model("gpt2")
    writer.add_tokenizer_pre("qwen2")
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (len(tokens) - 2) + [3, 3])
    writer.add_token_merges(merges)
    writer.add_bos_token_id(len(tokens) - 2)
    writer.add_eos_token_id(len(tokens) - 1)
    writer.add_chat_template(TEMPLATE)
    writer.add_string("tokenizer.chat_template.tool_use", TEMPLATE + "{{ tools }}")
    writer.add_array("general.tags", ["a", "b"])
    for name in ("token_embd.weight", "output_norm.weight", "output.weight"):
        writer.add_tensor(name, np.zeros((2, 4), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path.read_bytes()


def mutate(seed: bytes, rng: random.Random) -> bytes:
    """One hostile variant of `seed`; most mutations land in the header (metadata and tensor infos)."""
    data = bytearray(seed)
    header_end = max(64, len(seed) - 2 * 4 * 4 * 3)  # before the (tiny) tensor data
    for _ in range(rng.randint(1, 3)):
        at = rng.randrange(0, header_end)
        kind = rng.randrange(8)
        if kind == 0:  # flip bytes
            for _ in range(rng.randint(1, 8)):
                data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        elif kind == 1:  # a length or count: huge
            data[at : at + 8] = struct.pack("<Q", rng.choice(HUGE))
        elif kind == 2:  # a length or count: a little off
            value = struct.unpack_from("<Q", data.ljust(at + 8, b"\0"), at)[0]
            data[at : at + 8] = struct.pack("<Q", max(0, value + rng.randint(-4, 4)) % 2**64)
        elif kind == 3:  # a value type
            data[at : at + 4] = struct.pack("<I", rng.choice((8, 9, 12, 13, 255, 2**31)))
        elif kind == 4:  # cut
            del data[rng.randrange(4, len(data)) :]
        elif kind == 5:  # insert
            data[at:at] = rng.randbytes(rng.randint(1, 16))
        elif kind == 6:  # delete
            del data[at : at + rng.randint(1, 16)]
        else:  # repeated
            data += data[: rng.randrange(1, len(data))]
        if not data:
            break
    return bytes(data)


def check_one(path: Path, options: Options) -> tuple[str, float, int]:
    """Read, build and check one file; (outcome, seconds, bytes the header read allocated at peak)."""
    started = time.perf_counter()
    tracemalloc.start()
    try:
        metadata = read_metadata(path)
        outcome = "read"
    except GGUFError:
        metadata, outcome = None, "GGUFError"
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    if metadata is not None:
        chat_templates(metadata)
        try:
            build_tokenizer(metadata)
        except GGUFTokenizerError:
            outcome = "GGUFTokenizerError"
    report = lint_paths([str(path)], options)
    assert report.sources, "no result for the file"
    for diag in report.diagnostics:
        diag.to_json()
        if diag.code == "PFX001":
            assert diag.span.path.startswith(str(path))  # the file, or one of its templates
    return outcome, time.perf_counter() - started, peak


def fuzz(tmp_path: Path, count: int, monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    seed = seed_model(tmp_path / "seed.gguf")
    options = Options()
    outcomes: dict[str, int] = {}
    slowest, slowest_index, peak = 0.0, -1, 0
    started = time.perf_counter()
    for index in range(count):
        path = tmp_path / f"m{index}.gguf"
        path.write_bytes(mutate(seed, random.Random(index)))
        outcome, seconds, header_peak = check_one(path, options)
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
        if seconds > slowest:
            slowest, slowest_index = seconds, index
        peak = max(peak, header_peak)
        path.unlink()
    return {
        "inputs": count,
        "outcomes": dict(sorted(outcomes.items())),
        "seconds": time.perf_counter() - started,
        "slowest": (slowest_index, slowest),
        "header_peak_bytes": peak,
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def test_fuzz_gguf_short(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = fuzz(tmp_path, SHORT, monkeypatch)
    assert figures["header_peak_bytes"] < HEADER_MEMORY
    assert figures["slowest"][1] < SLOWEST_ALLOWED
    assert sum(figures["outcomes"].values()) == SHORT


@pytest.mark.fuzz_long
def test_fuzz_gguf_long(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figures = fuzz(tmp_path, LONG, monkeypatch)
    index, seconds = figures["slowest"]
    print(
        f"\nfuzz gguf: {figures['inputs']} inputs in {figures['seconds']:.1f} s, 0 tracebacks; outcomes "
        f"{figures['outcomes']}; slowest input #{index} {seconds * 1000:.0f} ms; header read peak "
        f"{figures['header_peak_bytes'] / 1024:.0f} KiB; process max RSS {figures['max_rss_mb']:.0f} MB"
    )
    assert figures["header_peak_bytes"] < HEADER_MEMORY
    assert seconds < SLOWEST_ALLOWED
