"""The `vllm` engine against a real vLLM server (issue 29, points 1, 3 and 4).

A tiny random-weights Qwen2 (tests/vllm_tiny_model.py) beside the corpus's real Qwen3 tokenizer and
chat template is served by vLLM's CPU build (tests/vllm_server_install.py) on 127.0.0.1 with prefix
caching and a block of 32. Sequences of `/v1/completions` and `/v1/chat/completions` requests go
through it, each logged as users log them (`{"request": body, "response": …}`), and `explain
--log LOG --engine vllm --block-size 32 --tokenizer MODEL` must give every request's prompt tokens
(its chat rendering is the server's) and cached tokens (`usage.prompt_tokens_details.cached_tokens`)
exactly. The cases: identical prompts (the last-token rule), divergence just before, at and after
block boundaries, a timestamp at the head and at the tail of a shared system prompt, tenants
interleaved, `cache_salt` per tenant, multi-turn conversations whose replies are fed back (a reply
that re-tokenizes to itself, one that ends on the end-of-sequence token, one that does not
re-tokenize, one logged with its token ids), and a KV cache of 40 blocks (`--num-gpu-blocks-override`)
too small for the working set, where eviction decides. After the cases, 30 requests drawn from them
at random, a new seed each run (printed; PREFIXLINT_VLLM_SEED repeats one): sequences nobody tuned
the model to.

The venv is installed by tests/vllm_server_install.py (.ci/run does it; 4.5-7 minutes, 3.7 GB);
without it, or when the server does not start, this test skips and says why. A server takes
50-150 s to start and ~3.7 GB; the two runs here start one at a time.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import urllib.request
from pathlib import Path

import pytest
from conftest import CORPUS, needs_corpus, run_prefixlint
from local_server import free_port, post, wait_healthy
from vllm_server_install import installed, venv_dir, venv_python

pytestmark = [pytest.mark.vllm_server, needs_corpus]

QWEN3 = CORPUS / "tokenizers" / "qwen3"
BLOCK = 32
START_SECONDS = 300  # 50-90 s on two idle cores; a busy two-core machine has taken 150 s
ENV = {
    "VLLM_TARGET_DEVICE": "cpu",
    "VLLM_CPU_KVCACHE_SPACE": "1",  # GiB: 16,384 blocks of 32 for this model
    "VLLM_HOST_IP": "127.0.0.1",
    "HF_HUB_OFFLINE": "1",
    "VLLM_NO_USAGE_STATS": "1",
    "VLLM_LOGGING_LEVEL": "INFO",
}
FLAGS = (
    "--enable-prefix-caching --enable-prompt-tokens-details --enforce-eager --dtype float32 "
    f"--block-size {BLOCK} --host 127.0.0.1"
).split()
YES = 9834  # " yes" in Qwen's vocabulary: a reply of it re-tokenizes to itself
NEWLINE = 198  # "\n": a run of them re-tokenizes to fewer, longer tokens
END = 151645  # <|im_end|>, the model's end-of-sequence token

# Single-token words in Qwen's vocabulary (each " word" one token): token positions are word positions.
WORDS = (  # noqa: SIM905 - read as prose
    "apple river stone cloud green market paper window silver garden orange bridge yellow forest "
    "basket candle doctor engine finger guitar hammer island jacket ladder mirror needle ocean pencil "
    "rabbit tiger violin wagon anchor bottle camera desert eagle feather glove harbor iron jungle "
    "lemon magnet night orbit rocket sugar tunnel valley"
).split()
POLICY = (
    "You are the support assistant of a bicycle shop. Answer in two sentences, quote prices in euros, "
    "never promise a delivery date, and hand over to a person when the customer asks for a refund. "
    "Opening hours are nine to six on weekdays and ten to four on Saturdays; the workshop closes an "
    "hour earlier. Repairs are quoted after inspection, and spare parts are ordered on request. "
)
OTHER = (
    "Summarise the maintenance report for the workshop lead. Keep the part numbers, drop the "
    "pleasantries, list open questions at the end, and flag anything that touches brakes or steering. "
    "Write in short lines; the lead reads them on a phone between jobs. "
)
THIRD = (
    "Translate the customer's message into plain English, keep order numbers and names as they are, "
    "and say which language the message was written in before the translation. "
)


def words(n: int, change: int | None = None, start: int = 0) -> str:
    """n single-token words (from WORDS[start]); the one at `change` replaced: a prompt that diverges
    at that token."""
    out = [WORDS[(start + i) % len(WORDS)] for i in range(n)]
    if change is not None:
        out[change] = "banana"
    return "".join(f" {w}" for w in out)


def chat(system: str, user: str, **extra: object) -> dict:
    return {"messages": [{"role": "system", "content": system}, {"role": "user", "content": user}], **extra}


def forced(token: int, n: int, **extra: object) -> dict:
    """Sampling that makes a random-weights model reply with `token` n times (then stop)."""
    return {"max_tokens": n, "logit_bias": {str(token): 100}, **extra}


class Conversation:
    """A multi-turn chat whose replies are fed back: each turn's body is built from the replies the
    server gave before it."""

    def __init__(self, system: str, turns: list[tuple[str, dict]]) -> None:
        self.messages: list[dict] = [{"role": "system", "content": system}]
        self.turns = turns

    def bodies(self, send):  # noqa: ANN001, ANN201 - send(endpoint, body) -> response
        for user, sampling in self.turns:
            self.messages.append({"role": "user", "content": user})
            response = send("chat", {"messages": list(self.messages), **sampling})
            reply = response["choices"][0]["message"]["content"]
            self.messages.append({"role": "assistant", "content": reply})


def main_sequence(send) -> None:  # noqa: ANN001 - send(endpoint, body) -> response
    """Every case but eviction, in order; the expected effect in the comments."""
    # Identical prompts: all but the last block that holds the last token (L = 128: 96 cached).
    send("completion", {"prompt": words(128)})
    send("completion", {"prompt": words(128)})
    # Divergence just before, at and after the block boundaries at 64 and 96 (L = 130).
    for change in (63, 64, 65, 95, 96, 97):
        send("completion", {"prompt": words(130, change)})
    # A timestamp at the head of a shared system prompt: nothing after it is shared.
    for stamp in ("2026-11-30T09:15:02Z", "2026-11-30T09:15:07Z"):
        send("chat", chat(f"Current time: {stamp}\n{POLICY}", "Where is my order?"))
    # The same at the tail: everything before it is.
    for stamp in ("2026-11-30T09:15:02Z", "2026-11-30T09:15:07Z"):
        send("chat", chat(f"{POLICY}\nCurrent time: {stamp}", "Where is my order?"))
    # Tenants interleaved.
    for system, user in (
        (POLICY, "Do you sell helmets?"),
        (OTHER, "Report 17: brake pads worn, chain stretched."),
        (THIRD, "Bonjour, ma sonnette est cassée."),
        (POLICY, "Can I return a saddle?"),
        (OTHER, "Report 18: rear hub noisy."),
        (THIRD, "Hallo, die Klingel fehlt."),
    ):
        send("chat", chat(system, user))
    # cache_salt per tenant: salted requests share only with their own salt, unsalted with unsalted.
    for salt in ("tenant-a", "tenant-b", "tenant-a", None, "tenant-b"):
        extra = {"cache_salt": salt} if salt else {}
        send("chat", chat(POLICY, "What are your opening hours?", **extra))
    # Multi-turn, replies fed back: the reply's blocks are cached too, and a next turn reuses them
    # where the reply re-renders to the same tokens.
    Conversation(
        OTHER,
        [
            ("Report 19: the front brake squeals.", forced(YES, 45)),  # stops on its length
            # 40 tokens, then the end-of-sequence token (its own KV is never computed).
            ("And the rear one?", forced(YES, 60, min_tokens=40, logit_bias={str(YES): 50, str(END): 100})),
            ("Anything else?", forced(YES, 33, return_token_ids=True)),  # logged with its token ids
            ("Thanks.", {"max_tokens": 1}),
        ],
    ).bodies(send)
    Conversation(
        THIRD,
        [
            ("Ciao, il campanello suona male.", forced(NEWLINE, 40)),  # does not re-tokenize to itself
            ("E poi?", {"max_tokens": 1}),
        ],
    ).bodies(send)


def unseen_sequence(seed: int):  # noqa: ANN201 - a sequence(send) of the cases above
    """Requests drawn at random (a new seed each run, PREFIXLINT_VLLM_SEED to repeat one) from the
    cases the model claims: completions of 2-200 words diverging anywhere, chats with a timestamp at
    the head or the tail, tenants, salts, and conversations whose forced replies are fed back."""
    rng = random.Random(seed)
    systems = [POLICY, OTHER, THIRD, POLICY + OTHER]

    def phrase(most: int) -> str:
        return words(rng.randint(1, most), start=rng.randrange(9))

    def sequence(send) -> None:  # noqa: ANN001
        talks: list[tuple[Conversation, dict]] = []
        for _ in range(30):
            kind = rng.choice(("completion", "chat", "talk"))
            salt = rng.choice((None, None, "tenant-a", "tenant-b"))
            extra = {"cache_salt": salt} if salt else {}
            if kind == "completion":
                n = rng.randint(2, 200)
                change = rng.randrange(n) if rng.random() < 0.6 else None
                send("completion", {"prompt": words(n, change, start=rng.randrange(3)), **extra})
            elif kind == "chat":
                system = rng.choice(systems)
                stamp = f"Current time: 2026-11-30T09:{rng.randrange(60):02}:{rng.randrange(60):02}Z"
                system = rng.choice((system, f"{stamp}\n{system}", f"{system}\n{stamp}"))
                sampling = rng.choice(({"max_tokens": 1}, forced(YES, rng.randint(2, 40))))
                send("chat", chat(system, phrase(30), **sampling, **extra))
            else:
                if not talks or (len(talks) < 3 and rng.random() < 0.4):
                    talks.append((Conversation(rng.choice(systems), []), extra))  # a tenant's salt, kept
                talk, its = rng.choice(talks)
                talk.turns = [(phrase(20), forced(YES, rng.randint(2, 40), **its))]
                talk.bodies(send)

    return sequence


def eviction_sequence(send) -> None:  # noqa: ANN001
    """Four tenants of 9-11 blocks each (and their replies) through a pool of 39 blocks: the least
    recently freed blocks go first, a prompt's tail before its head."""
    systems = [POLICY * 4, OTHER * 6, THIRD * 9, words(300)]
    for k, system in enumerate([0, 1, 2, 0, 3, 1, 0, 2, 3, 3, 1, 0, 2, 2]):
        send("chat", chat(systems[system], f"Question {k}: how long?", **forced(YES, 8)))


class Server:
    """One vLLM server of the venv, started in its own process group and stopped by it. When one
    does not start, the next is not tried: the tests skip at once, with the first one's reason."""

    failed: str | None = None

    def __init__(self, model: Path, log: Path, extra: list[str]) -> None:
        if Server.failed:
            pytest.skip(Server.failed)
        self.port, self.model, self.log_path = free_port(), model, log
        self.log = log.open("wb")
        command = [str(venv_python()), "-m", "vllm.entrypoints.openai.api_server", "--model", str(model)]
        command += [*FLAGS, "--port", str(self.port), *extra]
        self.process = subprocess.Popen(
            command,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            env={**os.environ, **ENV},
            start_new_session=True,  # the engine's worker processes stop with it
        )
        why = wait_healthy(self.process, self.port, START_SECONDS, 1)
        if why:
            self.stop()
            Server.failed = f"vLLM {why}: {self.log_path.read_text(errors='replace')[-600:]}"
            pytest.skip(Server.failed)

    def metrics(self) -> str:
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=30) as response:
            return response.read().decode()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait()
        self.log.close()


def run_sequence(server: Server, sequence, log: Path) -> list[dict]:  # noqa: ANN001
    """Send the sequence, one request at a time; log each as users do; return the records."""
    records: list[dict] = []

    def send(endpoint: str, body: dict) -> dict:
        body = {"model": str(server.model), "temperature": 0, "max_tokens": 1, **body}
        path = "/v1/completions" if endpoint == "completion" else "/v1/chat/completions"
        response = post(server.port, path, body, timeout=300)
        records.append({"endpoint": endpoint, "request": body, "response": response})
        return response

    sequence(send)
    with log.open("w", encoding="utf-8") as fh:
        for record in records:
            fh.write(json.dumps({"request": record["request"], "response": record["response"]}) + "\n")
    return records


def explain(log: Path, model: Path, *extra: str) -> dict:
    result = run_prefixlint(
        "explain",
        "--log",
        str(log),
        "--tokenizer",
        str(model),
        "--engine",
        "vllm",
        *extra,
        "--format",
        "json",
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def table(records: list[dict], observed: dict) -> str:
    """Per request: endpoint, prompt tokens, the server's cached tokens and prefixlint's (the same
    unless listed among the mismatches, whose lines are the log's)."""
    differ = {m["line"]: m for m in observed["mismatches"]}
    rows = ["req endpoint   tokens  server prefixlint"]
    for i, record in enumerate(records, 1):
        usage = record["response"]["usage"]
        cached = usage["prompt_tokens_details"]["cached_tokens"]
        guess = differ[i]["simulated_cached_tokens"] if i in differ else cached
        rows.append(f"{i:>3} {record['endpoint']:<10} {usage['prompt_tokens']:>5} {cached:>7} {guess:>7}")
    return "\n".join(rows)


def assert_exact(records: list[dict], data: dict) -> None:
    observed = data["observed"]
    print("\n" + table(records, observed))
    assert observed["requests"] == len(records)
    assert observed["requests_prompt_tokens_differ"] == 0, observed["mismatches"]  # the server's rendering
    assert observed["mismatches"] == []
    assert observed["requests_predicted_exactly"] == len(records)
    cached = sum(r["response"]["usage"]["prompt_tokens_details"]["cached_tokens"] for r in records)
    assert observed["cached_tokens"] == cached


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if not installed():
        pytest.skip(
            f"vLLM is not installed (no complete install in {venv_dir()}): "
            "run `python tests/vllm_server_install.py` (.ci/run does; 4.5-7 minutes, 3.7 GB)"
        )
    folder = tmp_path_factory.mktemp("vllm") / "tiny-qwen"
    here = Path(__file__).parent
    made = subprocess.run(
        [str(venv_python()), str(here / "vllm_tiny_model.py"), str(QWEN3), str(folder)],
        capture_output=True,
        text=True,
        timeout=300,  # ~17 s here
    )
    if made.returncode:
        pytest.skip(f"the tiny model could not be written with the venv's transformers: {made.stderr[-400:]}")
    return folder


def test_every_request_as_the_server_counts_it(model: Path, tmp_path: Path) -> None:
    seed = int(os.environ.get("PREFIXLINT_VLLM_SEED") or random.SystemRandom().randrange(2**32))
    print(f"\nunseen requests after the cases: PREFIXLINT_VLLM_SEED={seed}")

    def sequence(send) -> None:  # noqa: ANN001
        main_sequence(send)
        unseen_sequence(seed)(send)

    server = Server(model, tmp_path / "server.log", [])
    try:
        records = run_sequence(server, sequence, tmp_path / "requests.jsonl")
        scrape = tmp_path / "metrics.prom"
        scrape.write_text(server.metrics(), encoding="utf-8")
    finally:
        server.stop()
    assert_exact(records, explain(tmp_path / "requests.jsonl", model, "--block-size", str(BLOCK)))
    # The server's own cache_config_info sets the block without --block-size.
    data = explain(tmp_path / "requests.jsonl", model, "--metrics", str(scrape))
    assert data["server"]["block_size"] == BLOCK
    assert data["server"]["source"]["block_size"] == f"vllm:cache_config_info block_size={BLOCK}"
    assert data["observed"]["mismatches"] == []
    # What the cases rest on held: the boundaries, a reply reused past its prompt, salts apart.
    cached = [r["response"]["usage"]["prompt_tokens_details"]["cached_tokens"] for r in records]
    assert cached[1] == 96 and cached[2:8] == [32, 64, 64, 64, 96, 96]
    turn = next(i for i, r in enumerate(records) if r["request"].get("min_tokens"))
    assert cached[turn] > records[turn - 1]["response"]["usage"]["prompt_tokens"]
    salted = [i for i, r in enumerate(records) if "cache_salt" in r["request"]]
    assert cached[salted[0]] == cached[salted[1]] == 0 < cached[salted[2]]


def test_eviction_in_a_pool_too_small_for_the_working_set(model: Path, tmp_path: Path) -> None:
    extra = ["--num-gpu-blocks-override", "40", "--max-model-len", "1024"]
    server = Server(model, tmp_path / "server.log", extra)
    try:
        records = run_sequence(server, eviction_sequence, tmp_path / "requests.jsonl")
    finally:
        server.stop()
    args = f"vllm serve {model} --block-size {BLOCK} --num-gpu-blocks-override 40"
    data = explain(tmp_path / "requests.jsonl", model, "--server-args", args)
    assert data["server"]["capacity_tokens"] == 40 * BLOCK
    assert_exact(records, data)
    # Without the pool's size the simulation reuses more: eviction is what the server did.
    unbounded = explain(tmp_path / "requests.jsonl", model, "--block-size", str(BLOCK))
    assert unbounded["observed"]["mismatches"]
    # The server's own start-up lines state the block and the pool.
    from prefixlint.explain.server import vllm_log_config

    config = vllm_log_config((tmp_path / "server.log").read_text(errors="replace").splitlines())
    assert config is not None
    assert (config.block_size, config.capacity_tokens, config.platform) == (BLOCK, 40 * BLOCK, "cpu")
