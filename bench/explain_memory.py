"""Peak memory and time of `prefixlint explain --log` on the largest inputs the default limits let
through, and on the hostile inputs of issue 17. Each runs in a fresh process (its own peak RSS).

    python bench/explain_memory.py

The target: every line under 1 GB. Not run by the tests.
"""

from __future__ import annotations

import json
import random
import subprocess
import sys
import tempfile
import time
import zlib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from prefixlint.explain.reading import DEFAULT_LIMITS  # noqa: E402

REQUEST = DEFAULT_LIMITS.request_bytes
LINE = DEFAULT_LIMITS.line_bytes


def random_text(rng: random.Random, size: int) -> str:
    """`size` UTF-8 bytes of random code points (no surrogates): about one token per byte, the most
    a tokenizer can make of a prompt of that size."""
    out, used = [], 0
    while True:
        c = chr(rng.randrange(0x20, 0x2FFFF))
        if 0xD800 <= ord(c) <= 0xDFFF:
            continue
        n = len(c.encode("utf-8"))
        if used + n > size:
            return "".join(out) + "x" * (size - used)
        out.append(c)
        used += n


def english(rng: random.Random, size: int) -> str:
    words = [
        "the",
        "order",
        "ships",
        "from",
        "our",
        "northern",
        "warehouse",
        "within",
        "two",
        "working",
        "days",
        "please",
    ]
    text = " ".join(rng.choice(words) for _ in range(size // 5))
    return text[:size]


def cases(folder: Path) -> dict[str, Path]:
    rng = random.Random(17)
    out: dict[str, Path] = {}

    def lines(name: str, values: list) -> None:
        path = folder / f"{name}.jsonl"
        with path.open("w", encoding="utf-8") as fh:
            for v in values:
                fh.write((v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)) + "\n")
        out[name] = path

    worst = random_text(rng, REQUEST)
    lines("one largest request, random code points", [{"prompt": worst}])
    lines("8 largest requests, random code points", [{"prompt": random_text(rng, REQUEST)} for _ in range(8)])
    lines("one largest request, English", [{"prompt": english(rng, REQUEST)}])
    chat = [{"role": "user", "content": english(rng, REQUEST // 2000 - 40)} for _ in range(1000)]
    lines("one request of 1,000 messages near the limit", [{"messages": chat}])
    lines("a line of empty objects at the line limit", ["[" + ",".join(["{}"] * ((LINE - 2) // 3)) + "]"])
    lines("issue 17: a JSON line nested 100,000 deep", ["[" * 100_000 + "]" * 100_000])
    lines("issue 17: one 50 MB prompt", [{"prompt": "word " * 10_000_000}])
    lines("a 5 MB prompt (under the line limit)", [{"prompt": english(rng, 5_000_000)}])
    bomb = folder / "bomb.jsonl.gz"
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb.write_bytes(b"".join(deflate.compress(b"\n" * (1 << 24)) for _ in range(128)) + deflate.flush())
    out["issue 17: 2 MB gzip of 2 GB of blank lines"] = bomb
    return out


# Run in its own process, whose only child is the explain run: its RUSAGE_CHILDREN peak is that run's.
_ONE_RUN = """
import json, resource, subprocess, sys
done = subprocess.run([sys.executable, "-m", "prefixlint", "explain", "--log", sys.argv[1]],
                      capture_output=True, text=True)
peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
print(json.dumps([done.returncode, peak, done.stdout, done.stderr]))
"""


def measure(path: Path) -> tuple[int, float, float, str]:
    """(exit code, seconds, peak RSS in MB of the explain process, the report's second line)."""
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _ONE_RUN, str(path)], capture_output=True, text=True, cwd=REPO, check=True
    )
    seconds = time.perf_counter() - start
    code, peak_kb, out, err = json.loads(done.stdout)
    first = (out.splitlines()[1:2] or err.splitlines()[:1] or [""])[0]
    return code, seconds, peak_kb / 1024, first


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        found = cases(Path(tmp))
        rows = []
        for name, path in found.items():
            code, seconds, peak_mb, first = measure(path)
            rows.append((name, path.stat().st_size, code, seconds, peak_mb, first))
    print(f"defaults: request_bytes {REQUEST:,}, line_bytes {LINE:,}, depth {DEFAULT_LIMITS.depth}")
    for name, size, code, seconds, peak_mb, first in rows:
        print(
            f"{name:<48} {size / 1e6:8.1f} MB  exit {code}  {seconds:6.1f} s  "
            f"peak {peak_mb:6.0f} MB  {first[:90]}"
        )


if __name__ == "__main__":
    main()
