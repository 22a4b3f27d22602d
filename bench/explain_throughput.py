"""Throughput and peak memory of `prefixlint explain --log` on a 100,000-request log of
≈1,000–2,000-token prompts, next to raw `tokenizers` `encode_batch` on the same prompts.

    python bench/explain_throughput.py [--requests 100000]

Each phase runs in a fresh process so that its peak RSS is its own. Not run by the tests.
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TEMPLATE = REPO / "fixtures" / "explain" / "timestamp_head.jinja"
_WORD_TEXT = (
    "tent stove backpack boots jacket lantern map compass rope trail river summit valley storm rain snow "
    "order parcel refund warranty receipt size colour delivery courier weekend invoice discount stock"
)
WORDS = _WORD_TEXT.split()


def build_log(path: Path, n: int, seed: int = 7) -> None:
    """The on-call case: a clock at the head of the template, four system prompts (≈700–1,100
    tokens), a user message of 150–800 tokens; requests a few seconds apart."""
    rng = random.Random(seed)
    systems = [
        "\n".join(
            f"- Item {k}: the {rng.choice(WORDS)} {rng.choice(WORDS)} ships from warehouse {v} "
            f"within {k % 5 + 1} days."
            for k in range(45 + 15 * v)
        )
        for v in range(4)
    ]
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            words = rng.randint(110, 600)
            user = " ".join(rng.choice(WORDS) for _ in range(words))
            stamp = 1743465600 + i * 3
            body = {
                "messages": [{"role": "system", "content": systems[i % 4]}, {"role": "user", "content": user}]
            }
            fh.write(json.dumps({"timestamp": stamp, "body": body}) + "\n")


def phase_raw(log: str) -> dict:
    """Render every request (not timed), then time only `encode_batch` on the same prompts."""
    from prefixlint.explain.log import BATCH, _batches
    from prefixlint.explain.reading import Reading
    from prefixlint.explain.requests import Renderer
    from prefixlint.jinja.template import ChatTemplate
    from prefixlint.tokens import load_tokenizer

    tok = load_tokenizer(None).tokenizer
    renderer = Renderer(ChatTemplate(TEMPLATE.read_text(), str(TEMPLATE)))
    seconds, tokens, requests = 0.0, 0, 0
    for batch in _batches(log, renderer, 1.0, Reading()):
        texts = [r.text for _, r in batch]
        start = time.perf_counter()
        encs = tok.encode_batch(texts, add_special_tokens=False)
        seconds += time.perf_counter() - start
        tokens += sum(len(e.ids) for e in encs)
        requests += len(texts)
    assert BATCH
    return {"requests": requests, "tokens": tokens, "seconds": seconds}


def phase_explain(log: str) -> dict:
    from prefixlint.engines import load_engines
    from prefixlint.explain.log import explain_log
    from prefixlint.explain.requests import Renderer
    from prefixlint.jinja.template import ChatTemplate
    from prefixlint.tokens import load_tokenizer

    engines = [load_engines()[n] for n in ("vllm", "sglang", "openai")]
    renderer = Renderer(ChatTemplate(TEMPLATE.read_text(), str(TEMPLATE)))
    start = time.perf_counter()
    report = explain_log(log, renderer, load_tokenizer(None), engines, what_ifs=1, progress=False)
    seconds = time.perf_counter() - start
    top = report.causes[0] if report.causes else None
    return {
        "requests": report.requests,
        "tokens": report.tokens,
        "seconds": seconds,
        "hit_rate": {k: v["hit_rate"] for k, v in report.engines.items()},
        "top_cause": None
        if top is None
        else {
            "template_line": top.template_line,
            "share": top.count / report.requests,
            "what_if_vllm": top.what_if.get("vllm"),
        },
    }


def child(phase: str, log: str) -> None:
    result = {"raw": phase_raw, "explain": phase_explain}[phase](log)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--phase", choices=["raw", "explain"])
    parser.add_argument("--log")
    args = parser.parse_args()
    if args.phase:
        child(args.phase, args.log)
        return
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "requests.jsonl"
        build_log(log, args.requests)
        print(f"log: {args.requests:,} requests, {log.stat().st_size / 1e6:,.0f} MB")
        results = {}
        for phase in ("raw", "explain"):
            out = subprocess.run(
                [sys.executable, __file__, "--phase", phase, "--log", str(log)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
            results[phase] = json.loads(out.strip().splitlines()[-1])
        raw, ex = results["raw"], results["explain"]
        print(f"prompt tokens: {raw['tokens']:,} ({raw['tokens'] / raw['requests']:,.0f} per request)")
        print(
            f"raw encode_batch: {raw['tokens'] / raw['seconds']:,.0f} tokens/s, "
            f"{raw['requests'] / raw['seconds']:,.0f} requests/s ({raw['seconds']:.1f} s, render untimed)"
        )
        print(
            f"explain --log (render + tokenize + 3-engine simulation + causes + 1 what-if pass): "
            f"{ex['tokens'] / ex['seconds']:,.0f} tokens/s, {ex['requests'] / ex['seconds']:,.0f} requests/s "
            f"({ex['seconds']:.1f} s)"
        )
        print(f"explain / raw throughput: {raw['seconds'] / ex['seconds']:.2f}")
        print(
            f"peak RSS: explain {ex['peak_rss_mb']:,.0f} MB, raw-encode process {raw['peak_rss_mb']:,.0f} MB"
        )
        print(f"hit rates: {ex['hit_rate']}; top cause: {ex['top_cause']}")


if __name__ == "__main__":
    main()
