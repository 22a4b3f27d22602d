"""What the log and the server say beside the simulation: the hit rate the server reported, the time
to first token it costs, and the causes that are not in the prompt (caching off, a block size longer
than the shared prefix, per-request `cache_salt`, a cache too small for the working set, a server
that reuses far less than the prompts allow).

`LogObservations.add` sees each request once, in arrival order, with the prefix it shares with the
requests before it (the simulation's match); `findings` turns the totals into report fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from prefixlint.engines import Engine
from prefixlint.engines.packed import WIDTH
from prefixlint.engines.simulate import Simulation
from prefixlint.explain.requests import DEFAULT_TEMPLATE_PATH, Request
from prefixlint.explain.server import Metrics, ServerConfig

MISMATCHES_KEPT = 20  # requests whose counts differ from the simulation's, listed in the report
GAP = 0.10  # simulated minus observed hit rate beyond which the server itself is a cause
MIN_GAIN = 0.01  # a server cause is reported when fixing it gains at least this hit rate


def prefill_ms(tokens: float, rate: float) -> float:
    """Milliseconds to prefill `tokens` at `rate` tokens per second."""
    return tokens / rate * 1000.0


@dataclass
class LogObservations:
    """Per-request totals: what the server reported, TTFT, and the engine's hits under the server's
    settings (salted, and with the engine's default block size for the block-size what-if)."""

    engine: Engine  # the primary engine as the server is configured
    baseline: Engine  # the same engine with its default profile
    requests: int = 0
    chat_requests: int = 0  # requests rendered through a chat template (not plain prompts)
    tokens: int = 0
    hits: int = 0  # tokens served from cache under the server's block size, no salts
    baseline_hits: int = 0
    salted_hits: int = 0  # as `hits`, but a request reuses only requests with its own cache_salt
    observed_requests: int = 0
    usage_without_cache: int = 0  # requests whose usage has prompt tokens but no cached count
    observed_prompt: int = 0
    observed_cached: int = 0
    timed_requests: int = 0
    timed_seconds: float = 0.0
    timed_computed: int = 0  # prompt tokens the server computed (not from cache) on timed requests
    salts: dict[str, int] = field(default_factory=dict)
    # Request by request, where the log says what the server did: requests whose prompt tokens and
    # cached tokens the rendering and the simulation give exactly; requests whose prompt tokens differ
    # (another template or tokenizer than the server's); the first requests that differ.
    predicted_exactly: int = 0
    prompt_tokens_differ: int = 0
    mismatches: list[dict[str, int]] = field(default_factory=list)

    def reset(self) -> None:
        """Forget every request seen (the log is simulated again from its start)."""
        fresh = LogObservations(self.engine, self.baseline)
        self.__dict__.update(fresh.__dict__)

    def add(self, request: Request, seq: bytes, shared: int, sim: Simulation, line: int = 0) -> None:
        """One request (packed token ids `seq`) that shares `shared` tokens with earlier ones (unsalted),
        just fed to `sim`, whose hits for it are the prediction; `line`: where the log has it."""
        n = len(seq) // WIDTH
        self.requests += 1
        self.chat_requests += request.prompt is None
        self.tokens += n
        hit = self.engine.cacheable(shared, n)
        self.hits += hit
        self.baseline_hits += self.baseline.cacheable(shared, n)
        name = self.engine.name
        self.salted_hits += sim.last[name]  # the engine's own view: salts apart where it keeps them so
        if request.cache_salt:
            self.salts.setdefault(request.cache_salt, len(self.salts))
        prompt, cached = request.observed_prompt_tokens, request.observed_cached_tokens
        if prompt is not None and cached is None:
            self.usage_without_cache += 1
        if prompt is not None and cached is not None and prompt > 0:
            self.observed_requests += 1
            self.observed_prompt += prompt
            self.observed_cached += min(cached, prompt)
            self._compare(line, prompt, n, cached, sim.last_lru.get(name, sim.last[name]))
        if request.ttft is not None and request.ttft > 0:
            self.timed_requests += 1
            self.timed_seconds += request.ttft
            length = prompt if prompt is not None else n
            self.timed_computed += max(length - (cached or 0), 0)

    def _compare(self, line: int, prompt: int, tokens: int, cached: int, predicted: int) -> None:
        """The server's counts for one request against the rendering and the simulation (its cache
        of the server's size where one is given)."""
        self.prompt_tokens_differ += prompt != tokens
        if prompt == tokens and cached == predicted:
            self.predicted_exactly += 1
        elif len(self.mismatches) < MISMATCHES_KEPT:
            self.mismatches.append(
                {
                    "line": line,
                    "prompt_tokens": prompt,
                    "simulated_prompt_tokens": tokens,
                    "cached_tokens": cached,
                    "simulated_cached_tokens": predicted,
                }
            )

    def rate(self, hits: int) -> float:
        return round(hits / self.tokens, 6) if self.tokens else 0.0

    def observed_rate(self) -> float | None:
        return round(self.observed_cached / self.observed_prompt, 6) if self.observed_prompt else None

    def measured_prefill_rate(self) -> float | None:
        """Prompt tokens computed per second of TTFT, over the requests that carry a TTFT (an
        underestimate of the engine's prefill rate: TTFT also holds queueing and the first decode)."""
        if not self.timed_seconds or not self.timed_computed:
            return None
        return self.timed_computed / self.timed_seconds


@dataclass
class ServerCause:
    """A cause outside the prompt; `what_if_hit_rate` is the primary engine's rate with it fixed."""

    kind: str
    message: str
    hit_rate: float
    what_if_hit_rate: float
    tokens_lost: int
    requests: int
    ttft_ms_saved_per_request: float | None = None

    def to_json(self, primary: str) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "section": "server",
            "message": self.message,
            "token_index": None,
            "char_offset": None,
            "span": None,
            "share": 1.0 if self.requests else 0.0,
            "requests": self.requests,
            "tokens_lost": self.tokens_lost,
            "anchor": None,
            "example": None,
            "template_line": None,
            "template_text": None,
            "hit_rate": self.hit_rate,
            "what_if_hit_rate": self.what_if_hit_rate,
            "what_if": {primary: self.what_if_hit_rate},
            "ttft_ms_saved_per_request": self.ttft_ms_saved_per_request,
        }


@dataclass
class Findings:
    """The report's fields beyond the simulation, and the server causes."""

    observed: dict[str, Any]
    ttft: dict[str, Any]
    server: dict[str, Any] | None
    causes: list[ServerCause]


def configured(engines: list[Engine], server: ServerConfig | None) -> list[Engine]:
    """The engines with the server's block size applied to the engine it names."""
    if server is None:
        return engines
    return [server.apply(e) if e.name == server.engine else e for e in engines]


def findings(
    obs: LogObservations,
    engines: dict[str, dict[str, Any]],
    primary: str,
    *,
    server: ServerConfig | None,
    metrics: Metrics | None,
    prefill_rate: float | None,
) -> Findings:
    """Observed vs simulated, latency, and the server causes, from the log's totals."""
    simulated = obs.rate(obs.hits)
    observed = obs.observed_rate()
    observed_source = "log" if observed is not None else None
    if observed is None and metrics is not None and metrics.hit_rate is not None:
        observed, observed_source = round(metrics.hit_rate, 6), metrics.source
    rate, rate_source = prefill_rate, "given" if prefill_rate else None
    if rate is None:
        rate = obs.measured_prefill_rate()
        rate_source = f"measured from {obs.timed_requests:,} requests' TTFT" if rate else None

    def ms_per_request(tokens: float) -> float | None:
        if rate is None or not obs.requests:
            return None
        return round(prefill_ms(tokens / obs.requests, rate), 1)

    causes: list[ServerCause] = []

    def cause(kind: str, message: str, now: int, fixed: int) -> None:
        if obs.rate(fixed) - obs.rate(now) >= MIN_GAIN:
            causes.append(
                ServerCause(
                    kind,
                    message,
                    obs.rate(now),
                    obs.rate(fixed),
                    fixed - now,
                    obs.requests,
                    ms_per_request(fixed - now),
                )
            )

    if server is not None and not server.caching:
        cause(
            "caching-off",
            f"prefix caching is off ({server.source['caching']}): the server reuses nothing; "
            f"on, the prompts would share {simulated:.1%}",
            0,
            obs.hits,
        )
    if server is not None and server.block_size and obs.engine.block_size != obs.baseline.block_size:
        cause(
            "block-size",
            f"block size {server.block_size} ({server.source['block_size']}) caches only whole blocks of "
            f"the shared prefix: {simulated:.1%}; with {obs.baseline.block_size}: "
            f"{obs.rate(obs.baseline_hits):.1%}",
            obs.hits,
            obs.baseline_hits,
        )
    if obs.salts:
        cause(
            "cache-salt",
            f"{len(obs.salts):,} distinct cache_salt values: requests reuse only their own salt's prefixes "
            f"({obs.rate(obs.salted_hits):.1%}; one salt for all: {simulated:.1%})",
            obs.salted_hits,
            obs.hits,
        )
    lru = engines.get(primary, {}).get("lru")
    if isinstance(lru, dict):
        capacity = lru["capacity_tokens"]
        from_server = server is not None and server.capacity_tokens == capacity
        where = server.source["capacity_tokens"] if from_server else f"--cache-tokens {capacity}"
        lru_hits, all_hits = int(lru["hit_tokens"]), int(engines[primary]["hit_tokens"])
        cause(
            "capacity",
            f"a cache of {capacity:,} tokens ({where}) evicts prefixes before they are reused: "
            f"{obs.rate(lru_hits):.1%}; unbounded: {obs.rate(all_hits):.1%}",
            lru_hits,
            all_hits,
        )
    if observed is not None and simulated - observed > GAP:
        observed_hits = round(observed * obs.tokens)
        candidates = ", ".join(c.kind for c in causes) or (
            "caching off, a block size longer than the shared prefix, cache_salt per request, requests "
            "spread over replicas, a cache too small for the working set (give --server-args / --metrics)"
        )
        cause(
            "observed-gap",
            f"the prompts would share {simulated:.1%} but the server reused {observed:.1%} "
            f"({observed_source}): look at the server ({candidates})",
            observed_hits,
            obs.hits,
        )
    causes.sort(key=lambda c: -c.tokens_lost)
    return Findings(
        observed={
            "hit_rate": observed,
            "source": observed_source,
            "requests": obs.observed_requests,
            "prompt_tokens": obs.observed_prompt,
            "cached_tokens": obs.observed_cached,
            "requests_without_cached_tokens": obs.usage_without_cache,
            "requests_predicted_exactly": obs.predicted_exactly,
            "requests_prompt_tokens_differ": obs.prompt_tokens_differ,
            "mismatches": obs.mismatches,
            "simulated_hit_rate": simulated,
        },
        ttft={
            "prefill_tokens_per_s": round(rate, 1) if rate else None,
            "source": rate_source,
            "recomputed_ms_per_request": ms_per_request(obs.tokens - obs.hits),
        },
        server=None
        if server is None
        else {
            "engine": server.engine,
            "caching": server.caching,
            "block_size": server.block_size,
            "capacity_tokens": server.capacity_tokens,
            "source": dict(server.source),
        },
        causes=causes,
    )


def findings_text(found: Findings, data: dict[str, Any]) -> tuple[str, str]:
    """(lines before the simulation's report, lines after it): what was read and with what; then
    observed vs simulated, TTFT, and the server causes."""
    template = data["template"] or "none (the log holds prompts, not chat messages)"
    head = [f"log format: {data['log_format']}; template: {template}; tokenizer: {data['tokenizer']}"]
    if data["template"] == DEFAULT_TEMPLATE_PATH:
        head.append(
            "  no chat template given or beside the tokenizer: chat bodies rendered as ChatML; give "
            "--template, or --tokenizer/--model-dir of the model's folder, for its own"
        )
    tail: list[str] = []
    observed = found.observed
    if observed["hit_rate"] is not None:
        tail.append(
            f"observed: the server reused {observed['hit_rate']:.1%} ({observed['source']}); "
            f"simulated {data['engine']}: {observed['simulated_hit_rate']:.1%}"
        )
        tail.append(
            f"  request by request: {observed['requests_predicted_exactly']:,} of {observed['requests']:,} "
            "predicted exactly (prompt and cached tokens)"
            + (
                f"; {observed['requests_prompt_tokens_differ']:,} with other prompt tokens than the server's "
                "(give the model's own template and tokenizer)"
                if observed["requests_prompt_tokens_differ"]
                else ""
            )
        )
        for m in observed["mismatches"][:3]:
            tail.append(
                f"  line {m['line']:,}: the server cached {m['cached_tokens']:,} of {m['prompt_tokens']:,} "
                f"tokens, simulated {m['simulated_cached_tokens']:,} of {m['simulated_prompt_tokens']:,}"
            )
    elif observed["requests_without_cached_tokens"]:
        tail.append(
            f"observed: {observed['requests_without_cached_tokens']:,} requests' usage has no cached-token "
            "count (vLLM reports it with --enable-prompt-tokens-details)"
        )
    ttft = found.ttft
    if ttft["prefill_tokens_per_s"]:
        tail.append(
            f"TTFT: {ttft['recomputed_ms_per_request']:,.0f} ms per request spent recomputing prompt tokens "
            f"at {ttft['prefill_tokens_per_s']:,.0f} tokens/s ({ttft['source']})"
        )
    for c in found.causes:
        line = f"server: {c.kind}: {c.message}"
        if c.ttft_ms_saved_per_request is not None:
            line += f"; fixing it saves {c.ttft_ms_saved_per_request:,.0f} ms of TTFT per request"
        tail.append(line)
    return "\n".join(head) + "\n", "\n".join(tail) + ("\n" if tail else "")
