"""The `llamacpp` engine against a real llama-server (issue 16, point 5).

A tiny llama-architecture GGUF (2 layers, random weights, GPT-2's real tokenizer, a ChatML template
from fixtures/) is served by llama-server on 127.0.0.1 with one slot; a sequence of raw
`/completion` prompts and `/v1/chat/completions` bodies goes through it, and the cached tokens it
reports per request must equal what prefixlint's llamacpp engine predicts for the same sequence,
token for token, with the prompt cache on (`--cache-ram`) and off (`--cache-ram 0`).

The server binary is built by tests/llama_server_build.py (.ci/run does it before the tests; 10.7
minutes of CPU, 48 minutes at nice 19 on a busy two-core machine); without it this test skips and
says so.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import CORPUS, FIXTURES, needs_corpus, run_prefixlint
from gguf_files import write_tiny_model
from llama_server_build import server_binary
from local_server import free_port, post, wait_healthy

pytestmark = [pytest.mark.llama_server, needs_corpus]

GPT2 = CORPUS / "tokenizers" / "gpt2" / "tokenizer.json"
STAMPS = ["2026-11-30T09:15:02Z", "2026-11-30T09:15:07Z", "2026-11-30T09:16:41Z"]
POLICY = (
    "You are the support assistant of a bicycle shop. Answer in two sentences, quote prices in euros, "
    "never promise a delivery date, and hand over to a person when the customer asks for a refund. "
    "Opening hours are nine to six on weekdays and ten to four on Saturdays. "
)
OTHER = (
    "Summarise the following maintenance report for the workshop lead. Keep the part numbers, drop "
    "the pleasantries, and list open questions at the end. "
)
THIRD = "Translate the customer's message into plain English and keep the order number as it is. "


def chat(system: str, user: str) -> dict:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}]}


def requests() -> list[tuple[str, dict]]:
    """(endpoint, body) in order: each of the issue's cases, the expected effect in the comment."""
    return [
        ("completion", {"prompt": f"[{STAMPS[0]}] {POLICY}Question: where is my order?"}),
        # A timestamp at the head: nothing after it is shared.
        ("completion", {"prompt": f"[{STAMPS[1]}] {POLICY}Question: where is my order?"}),
        # The same at the tail: everything before it is.
        ("completion", {"prompt": f"{POLICY}Question: where is my order? [{STAMPS[0]}]"}),
        ("completion", {"prompt": f"{POLICY}Question: where is my order? [{STAMPS[1]}]"}),
        # An identical prompt: all but its last token.
        ("completion", {"prompt": f"{POLICY}Question: where is my order? [{STAMPS[1]}]"}),
        # Interleaved families: another prompt, a third, then the first family again.
        ("completion", {"prompt": f"{OTHER}Report 17: brake pads worn, chain stretched."}),
        ("completion", {"prompt": f"{THIRD}Order 5521: the bell is missing."}),
        ("completion", {"prompt": f"{POLICY}Question: do you sell helmets?"}),
        # Chat bodies through the model's own template.
        ("chat", chat(POLICY, "Can I return a saddle?")),
        ("chat", chat(POLICY, "Can I return a pump?")),
        ("chat", chat(f"Current time: {STAMPS[2]}. {POLICY}", "Can I return a pump?")),
        ("completion", {"prompt": f"{OTHER}Report 18: rear hub noisy."}),
        ("chat", chat(POLICY, "Can I return a bell?")),
    ]


class Server:
    def __init__(self, binary: Path, model: Path, cache_ram: int, log: Path) -> None:
        self.port = free_port()
        self.log = log.open("wb")
        command = [str(binary), "-m", str(model), "--host", "127.0.0.1", "--port", str(self.port), "-np", "1"]
        command += [
            "-c",
            "4096",
            "-t",
            "2",
            "-ngl",
            "0",
            "--no-warmup",
            "--jinja",
            "--cache-ram",
            str(cache_ram),
        ]
        self.process = subprocess.Popen(
            command, stdout=self.log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL
        )
        why = wait_healthy(self.process, self.port, 120, 0.3)
        if why:
            self.stop()
            raise RuntimeError(f"llama-server {why}; see {log}")

    def send(self, endpoint: str, body: dict) -> tuple[int, int]:
        """(cached tokens, prompt tokens) the server reports for one request."""
        if endpoint == "completion":
            body = {**body, "n_predict": 1, "cache_prompt": True, "temperature": 0}
            out = post(self.port, "/completion", body, timeout=120)
            timings = out["timings"]
            return timings["cache_n"], timings["cache_n"] + timings["prompt_n"]
        out = post(
            self.port, "/v1/chat/completions", {**body, "max_tokens": 1, "temperature": 0}, timeout=120
        )
        usage = out["usage"]
        return usage["prompt_tokens_details"]["cached_tokens"], usage["prompt_tokens"]

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()


def predictions(model: Path, sequence: list[tuple[str, dict]], cache_ram: int) -> tuple[list[int], list[int]]:
    """prefixlint's llamacpp engine, one slot and the server's --cache-ram, over the same requests
    rendered and tokenized as `explain` does it: (cached tokens, prompt tokens) per request."""
    from prefixlint.engines import load_engines
    from prefixlint.engines.simulate import Simulation
    from prefixlint.explain.command import resolve
    from prefixlint.explain.requests import Renderer, parse_request

    template, tokenizer = resolve(None, None, str(model))
    assert template is not None and template.path == f"{model}[chat_template]"
    engine = load_engines()["llamacpp"]
    assert engine.server is not None
    engine = replace(
        engine, server=replace(engine.server, slots=1, kv_unified=False, cache_ram_mib=cache_ram)
    )
    sim = Simulation([engine], keep_hits=True)
    renderer = Renderer(template)
    lengths = []
    for index, (_, body) in enumerate(sequence):
        ids = tokenizer.encode(renderer.render(parse_request(body, index)).text).ids
        lengths.append(len(ids))
        sim.feed(ids)
    return sim.tallies["llamacpp"].hits, lengths


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not server_binary().is_file():
        pytest.skip(
            f"llama-server is not built ({server_binary()} is missing): run "
            "`python tests/llama_server_build.py` (.ci/run does; ~11 minutes of CPU)"
        )
    folder = tmp_path_factory.mktemp("llama-server")
    template = (FIXTURES / "templates" / "clean.jinja").read_text(encoding="utf-8")
    return write_tiny_model(
        folder / "tiny.gguf", GPT2, pre="gpt-2", template=template, special="<|endoftext|>"
    )


@pytest.mark.parametrize("cache_ram", [8192, 0])
def test_cached_tokens_equal_the_servers_request_by_request(
    model: Path, cache_ram: int, tmp_path: Path
) -> None:
    sequence = requests()
    server = Server(server_binary(), model, cache_ram, tmp_path / "server.log")
    try:
        observed = [server.send(endpoint, body) for endpoint, body in sequence]
    finally:
        server.stop()
    predicted, lengths = predictions(model, sequence, cache_ram)
    table = "\n".join(
        f"{i + 1:>3} {endpoint:<10} {length:>5} {seen[0]:>7} {guess:>7}"
        for i, ((endpoint, _), length, seen, guess) in enumerate(
            zip(sequence, lengths, observed, predicted, strict=True)
        )
    )
    print(f"\n--cache-ram {cache_ram}\nreq endpoint   tokens  server prefixlint\n{table}")
    assert [seen[1] for seen in observed] == lengths  # the same tokens on both sides
    assert [seen[0] for seen in observed] == predicted
    # `explain --log` over the same requests gives the same total.
    log = tmp_path / "requests.jsonl"
    log.write_text("".join(json.dumps(body) + "\n" for _, body in sequence), encoding="utf-8")
    result = run_prefixlint(
        "explain", "--log", str(log), "--tokenizer", str(model), "--engine", "llamacpp",
        "--server-args", f"llama-server -m {model} -np 1 --cache-ram {cache_ram}", "--format", "json",
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["engines"]["llamacpp"]["hit_tokens"] == sum(predicted)
