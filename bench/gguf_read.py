"""What a multi-GB GGUF model costs prefixlint: reading its header, and `check` of it cold (the
tokenizer built from the metadata) and warm (the tokenizer from its cache).

    python bench/gguf_read.py [--gib 8]

The model is written with the `gguf` package: the embedded default tokenizer's 129,280-token
vocabulary and merges, a chat template from fixtures/, and one tensor declaring GIB gigabytes of
data, which the file holds as a sparse hole (no disk used, nothing to read). Each `check` runs in
a fresh process so that its peak RSS is its own. Not run by the tests.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))


def write_model(path: Path, gib: int) -> None:
    import numpy as np
    from gguf_files import add_tokenizer, gguf, read_tokenizer_json

    from prefixlint.models.tokens import _embedded_dir

    writer = gguf.GGUFWriter(str(path), "llama")
    add_tokenizer(
        writer,
        read_tokenizer_json(_embedded_dir() / "tokenizer.json"),
        pre="deepseek-v3",
        with_merges=True,
        bos=None,
        eos=None,
    )
    writer.add_chat_template((REPO / "fixtures" / "templates" / "clock_in_system.jinja").read_text())
    nbytes = gib << 30
    writer.add_tensor_info("token_embd.weight", (nbytes // 4,), np.dtype(np.float32), nbytes)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_ti_data_to_file()
    writer.close()
    header = path.stat().st_size
    os.truncate(path, -(-header // 32) * 32 + nbytes)  # the tensor: a hole of GIB gigabytes


def timed_check(model: Path, env: dict[str, str]) -> tuple[float, float, str]:
    """Seconds and peak RSS (MB) of one `prefixlint check --no-cache`, and its summary line."""
    started = time.perf_counter()
    result = subprocess.run(
        [sys.executable, "-m", "prefixlint", "check", "--no-cache", str(model)],
        capture_output=True,
        text=True,
        env=env,
        cwd=model.parent,
    )
    seconds = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    return seconds, peak, (result.stdout.splitlines() or [result.stderr])[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gib", type=int, default=8)
    args = parser.parse_args()
    from prefixlint.models.gguf import chat_templates, read_metadata

    with tempfile.TemporaryDirectory() as scratch:
        model = Path(scratch) / "model.gguf"
        write_model(model, args.gib)
        size, on_disk = model.stat().st_size, model.stat().st_blocks * 512
        print(f"model: {size / 2**30:.1f} GiB ({on_disk >> 20} MiB on disk)")
        runs = []
        for _ in range(5):
            started = time.perf_counter()
            templates = chat_templates(read_metadata(model))
            runs.append(time.perf_counter() - started)
        print(f"read header + templates: {min(runs) * 1000:.1f} ms (best of 5), {len(templates)} template(s)")
        env = {**os.environ, "XDG_CACHE_HOME": str(Path(scratch) / "cache"), "PYTHONPATH": str(REPO)}
        for label in ("check, tokenizer built (cold)", "check, tokenizer from its cache (warm)"):
            seconds, peak, summary = timed_check(model, env)
            print(f"{label}: {seconds:.2f} s, peak RSS so far {peak:.0f} MB — {summary}")


if __name__ == "__main__":
    main()
