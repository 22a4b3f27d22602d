"""Throughput and peak memory of `prefixlint explain --log` next to raw `tokenizers` `encode_batch`
of the same prompts, on a generated log of N requests (default 100,000).

    python bench/explain_throughput.py [--requests 100000] [--raw-every 1] [--keep LOG] [--progress]

The log is written here by `build_log`, with the shapes of a production log: four applications
(a support bot with the time at the head of its system prompt, a coding assistant with tools and
multi-turn sessions, a RAG service whose user turn carries retrieved documents, and an agent with
a request id at the head), each with a long system prompt of its own, user text drawn word by word
from a 3,000-word vocabulary (no two user turns alike). Prompts are rendered through a ChatML
template that writes the tools into the system turn, and tokenized by the bundled tokenizer.

Two phases, each in a fresh process so that its peak RSS is its own:
- raw: render the requests (not timed), then time only `encode_batch` on the prompts, 256 at a
  time. `--raw-every K` times every K-th request only (a million prompts take over an hour to
  encode on two cores; the rate, tokens/s, is what is compared).
- explain: `explain_log` as the CLI runs it (three engines, top 10 causes, 3 what-ifs).
Not run by the tests.
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

TEMPLATE = """\
{%- if tools %}
<|im_start|>system
{% if messages[0].role == 'system' %}{{ messages[0].content }}
{% endif %}
# Tools
You may call one or more functions. Their signatures:
<tools>
{%- for tool in tools %}
{{ tool | tojson }}
{%- endfor %}
</tools><|im_end|>
{%- endif %}
{%- for message in messages %}
{%- if not (tools and loop.first and message.role == 'system') %}
<|im_start|>{{ message.role }}
{{ message.content }}<|im_end|>
{%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
<|im_start|>assistant
{% endif %}"""


def vocabulary(rng: random.Random, size: int = 3000) -> list[str]:
    """English words (single tokens of the bundled tokenizer, as most English words are) and a
    fifth made-up names, which split into several tokens."""
    from prefixlint.models.tokens import load_tokenizer

    vocab = load_tokenizer(None).tokenizer.get_vocab()
    english = sorted(t[1:] for t in vocab if t.startswith("Ġ") and t[1:].isascii() and t[1:].isalpha())
    english = [w for w in english if w.islower() and 3 <= len(w) <= 12]
    syllables = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "de", "fa", "go", "hu", "je", "ba", "ce"]
    names = {"".join(rng.choices(syllables, k=rng.randint(2, 4))).title() for _ in range(size)}
    return rng.sample(english, size * 4 // 5) + sorted(names)[: size // 5]


def prose(rng: random.Random, words: list[str], n: int) -> str:
    out = rng.choices(words, k=n)
    for i in range(9, n, rng.randint(8, 14)):
        out[i] += rng.choice(".,.;?")
    return " ".join(out)


def tool(rng: random.Random, words: list[str], name: str) -> dict:
    params = {
        w: {"type": rng.choice(["string", "integer", "boolean"]), "description": prose(rng, words, 8)}
        for w in rng.sample(words, 4)
    }
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": prose(rng, words, 25),
            "parameters": {"type": "object", "properties": params, "required": list(params)[:2]},
        },
    }


def system_prompt(rng: random.Random, words: list[str], title: str, rules: int) -> str:
    lines = [f"You are {title}. Follow every rule below."]
    lines += [f"{k}. {prose(rng, words, rng.randint(15, 40))}" for k in range(1, rules + 1)]
    return "\n".join(lines)


class Families:
    """The four applications: system prompts and tools fixed once, requests drawn per family."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.words = vocabulary(rng)
        w = self.words
        self.support = system_prompt(rng, w, "the support assistant of an outdoor shop", 16)
        self.coding = system_prompt(rng, w, "a coding assistant working in the user's repository", 22)
        self.rag = system_prompt(rng, w, "a research assistant; answer only from the documents", 10)
        self.agent = system_prompt(rng, w, "an operations agent with shell access", 14)
        self.support_tools = [tool(rng, w, f"shop_{k}") for k in range(3)]
        self.coding_tools = [tool(rng, w, f"repo_{k}") for k in range(6)]
        self.agent_tools = [tool(rng, w, f"ops_{k}") for k in range(10)]
        self.documents = [prose(rng, w, rng.randint(80, 200)) for _ in range(60)]
        self.sessions: dict[int, list[dict]] = {}  # coding sessions in progress: their history

    def request(self, i: int) -> dict:
        rng, w = self.rng, self.words
        kind = rng.random()
        stamp = 1764547200 + i * 0.09  # ≈ 1M requests a day
        if kind < 0.40:
            moment = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(stamp))
            system = f"Current time: {moment}\n{self.support}"
            body = {
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": prose(rng, w, rng.randint(20, 200))},
                ],
                "tools": self.support_tools,
            }
        elif kind < 0.65:
            session = rng.randrange(2000)
            history = self.sessions.get(session, [])
            if len(history) > 8:
                history = []
            turn = [
                {"role": "user", "content": prose(rng, w, rng.randint(30, 250))},
            ]
            messages = [{"role": "system", "content": self.coding}, *history, *turn]
            reply = {"role": "assistant", "content": prose(rng, w, rng.randint(20, 120))}
            self.sessions[session] = [*history, *turn, reply]
            body = {"messages": messages, "tools": self.coding_tools, "user": f"dev-{session}"}
        elif kind < 0.85:
            docs = "\n\n".join(f"[doc {k}]\n{self.documents[k]}" for k in rng.sample(range(60), 3))
            question = prose(rng, w, rng.randint(10, 40))
            body = {
                "messages": [
                    {"role": "system", "content": self.rag},
                    {"role": "user", "content": f"{docs}\n\nQuestion: {question}"},
                ]
            }
        else:
            rid = f"{rng.getrandbits(128):032x}"
            body = {
                "messages": [
                    {"role": "system", "content": f"[request {rid}]\n{self.agent}"},
                    {"role": "user", "content": prose(rng, w, rng.randint(20, 150))},
                ],
                "tools": self.agent_tools,
            }
        return {"timestamp": round(stamp, 3), "body": body}


def build_log(path: Path, n: int, seed: int = 7) -> None:
    families = Families(random.Random(seed))
    with path.open("w", encoding="utf-8") as fh:
        for i in range(n):
            fh.write(json.dumps(families.request(i)) + "\n")


def log_and_template(tmp: str, keep: str | None, requests: int) -> tuple[Path, Path]:
    """The generated log (at `keep` if given, reused if there, else in `tmp`) and the template, in
    `tmp`."""
    template = Path(tmp) / "chatml_tools.jinja"
    template.write_text(TEMPLATE, encoding="utf-8")
    log = Path(keep) if keep else Path(tmp) / "requests.jsonl"
    if not log.exists():
        build_log(log, requests)
    return log, template


def _renderer(template: str):  # noqa: ANN202 - a Renderer
    from prefixlint.explain.requests import Renderer
    from prefixlint.jinja.template import ChatTemplate

    return Renderer(ChatTemplate(Path(template).read_text(encoding="utf-8"), template))


def phase_raw(log: str, template: str, every: int) -> dict:
    """Render the sampled requests (not timed), then time only `encode_batch` on their prompts."""
    from prefixlint.explain.reading import Reading
    from prefixlint.explain.stream import BATCH
    from prefixlint.explain.stream import log_requests as _requests
    from prefixlint.models.tokens import load_tokenizer

    tok = load_tokenizer(None).tokenizer
    renderer = _renderer(template)
    seconds, tokens, requests, texts = 0.0, 0, 0, []

    def encode() -> None:
        nonlocal seconds, tokens, requests
        start = time.perf_counter()
        encs = tok.encode_batch(texts, add_special_tokens=False)
        seconds += time.perf_counter() - start
        tokens += sum(len(e.ids) for e in encs)
        requests += len(texts)
        texts.clear()

    for chunk in _requests(log, 1.0, Reading()):
        texts.extend(renderer.render(request).text for number, request in chunk if number % every == 0)
        if len(texts) >= BATCH:
            encode()
    if texts:
        encode()
    return {"requests": requests, "tokens": tokens, "seconds": seconds}


def phase_explain(log: str, template: str, progress: bool) -> dict:
    from prefixlint.engines import load_engines
    from prefixlint.explain.log import explain_log
    from prefixlint.models.tokens import load_tokenizer

    engines = [load_engines()[n] for n in ("vllm", "sglang", "openai")]
    renderer = _renderer(template)
    start = time.perf_counter()
    report = explain_log(log, renderer, load_tokenizer(None), engines, progress=progress)
    seconds = time.perf_counter() - start
    return {
        "requests": report.requests,
        "tokens": report.tokens,
        "seconds": seconds,
        "hit_rate": {k: v["hit_rate"] for k, v in report.engines.items()},
        "causes": [
            {"section": c.section, "anchor": c.anchor, "share": round(c.count / report.requests, 3)}
            | {"what_if_vllm": c.what_if.get("vllm")}
            for c in report.causes[:3]
        ],
    }


def child(args: argparse.Namespace) -> None:
    if args.phase == "raw":
        result = phase_raw(args.log, args.template, args.raw_every)
    else:
        result = phase_explain(args.log, args.template, args.progress)
    result["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    # The render workers (their own processes): the largest one's peak.
    result["worker_peak_rss_mb"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    print(json.dumps(result))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument(
        "--raw-every", type=int, default=1, help="time raw encode_batch on every K-th request"
    )
    parser.add_argument("--keep", help="write the log here and keep it (reused if it exists)")
    parser.add_argument("--progress", action="store_true", help="explain's progress bar on stderr")
    parser.add_argument("--phase", choices=["raw", "explain"])
    parser.add_argument("--log")
    parser.add_argument("--template")
    args = parser.parse_args()
    if args.phase:
        child(args)
        return
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp) / "chatml_tools.jinja"
        template.write_text(TEMPLATE, encoding="utf-8")
        log = Path(args.keep) if args.keep else Path(tmp) / "requests.jsonl"
        start = time.perf_counter()
        if not log.exists():
            build_log(log, args.requests)
        size = log.stat().st_size / 1e6
        print(f"log: {args.requests:,} requests, {size:,.0f} MB ({time.perf_counter() - start:.0f} s)")
        results = {}
        for phase in ("explain", "raw"):
            start = time.perf_counter()
            cmd = [sys.executable, __file__, "--phase", phase, "--log", str(log), "--template", str(template)]
            cmd += ["--raw-every", str(args.raw_every)] + (["--progress"] if args.progress else [])
            out = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)  # stderr: the progress bar
            if out.returncode:
                sys.exit(f"{phase} failed")
            results[phase] = json.loads(out.stdout.strip().splitlines()[-1])
            results[phase]["wall"] = time.perf_counter() - start
        raw, ex = results["raw"], results["explain"]
        raw_rate, ex_rate = raw["tokens"] / raw["seconds"], ex["tokens"] / ex["seconds"]
        sample = "" if args.raw_every == 1 else f" (every {args.raw_every}th request: {raw['requests']:,})"
        print(f"prompt tokens: {ex['tokens']:,} ({ex['tokens'] / ex['requests']:,.0f} per request)")
        print(
            f"raw encode_batch{sample}: {raw_rate:,.0f} tokens/s "
            f"({raw['seconds']:.1f} s encoding, render untimed)"
        )
        print(
            f"explain --log (render + tokenize + 3-engine simulation + causes + 3 what-ifs): "
            f"{ex_rate:,.0f} tokens/s, {ex['requests'] / ex['seconds']:,.0f} requests/s "
            f"({ex['seconds']:.1f} s, {ex['wall']:.0f} s wall)"
        )
        print(f"explain / raw encode_batch throughput: {ex_rate / raw_rate:.2f}x")
        print(
            f"peak RSS: explain {ex['peak_rss_mb']:,.0f} MB (each render worker at most "
            f"{ex['worker_peak_rss_mb']:,.0f} MB), raw-encode process {raw['peak_rss_mb']:,.0f} MB"
        )
        print(f"hit rates: {ex['hit_rate']}")
        print(f"top causes: {ex['causes']}")


if __name__ == "__main__":
    main()
