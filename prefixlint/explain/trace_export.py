"""`explain --log LOG --export-trace TRACE.jsonl`: the log as a Mooncake-format trace, the
interchange of cache planners (Dynamo's mocker and data generator, AIPerf, kvcache simulators).

One JSON line per request, the fields as Mooncake's published trace and its readers have them
(Mooncake `mooncake_trace.jsonl`; Dynamo `benchmarks/data_generator/README.md`: `timestamp` in ms
since the first request, `input_length`, `output_length`, `hash_ids` as consecutive integers in
order of first appearance; AIPerf `aiperf/dataset/loader/models.py` `MooncakeTrace`: the optional
`session_id` of a conversation):

- `timestamp`: ms since the log's first timed request, from the log's own timestamps (never the
  machine's clock); the request's index where the log has none.
- `input_length`: the prompt's tokens; `output_length`: the reply's generated tokens where the log
  has the response (its usage, else its tokens), else 0.
- `hash_ids`: the chained hashes of the prompt's full blocks, chained as the first engine chains
  them (engines/blockpool.py `chained_hashes`, its block size, its `cache_salt`). Without
  `--trace-salt` each hash becomes a small integer in order of first appearance (the hashes never
  leave the process): the trace is deterministic, the text cannot be recovered or tested against a
  guess, and no two logs' traces share an id by construction. With `--trace-salt S` the id is the
  keyed hash itself (52 bits, exact in a JSON double): traces exported with the same S (replicas of
  one fleet) match block for block and can be merged; nobody without S can match them.
- `session_id`: the request's session or conversation key where the log has one.
"""

from __future__ import annotations

import hashlib
import json
from typing import IO

from prefixlint.engines.blockpool import chained_hashes
from prefixlint.engines.packed import WIDTH
from prefixlint.engines.profiles import Engine
from prefixlint.explain.requests import Request

ID_BITS = 52  # a salted id stays an exact integer for readers that parse JSON numbers as doubles


class TraceWriter:
    """Writes one trace line per request, in the log's order."""

    def __init__(self, path: str, engine: Engine, salt: str | None = None) -> None:
        self.path = path
        self.block_size = engine.block_size
        self._cache_salt = engine.cache_salt
        self._salted = salt is not None
        # Without a salt no key is needed: the ids are numbered, and the hashes never leave here.
        keyed = salt is not None
        self._key = hashlib.blake2b(salt.encode("utf-8", "surrogatepass")).digest()[:32] if keyed else b""
        try:
            self._out: IO[str] = open(path, "w", encoding="utf-8")  # noqa: SIM115 (closed by close())
        except OSError as exc:
            raise TraceExportError(f"{path}: cannot write the trace: {exc.strerror or exc}") from exc
        self._ids: dict[bytes, int] = {}
        self._first_ms: float | None = None
        self.requests = 0

    def _link(self, parent: object, block: bytes) -> bytes:
        head = parent if isinstance(parent, bytes) else repr(parent).encode()
        return hashlib.blake2b(head + block, key=self._key, digest_size=16).digest()

    def _id(self, digest: bytes) -> int:
        if self._salted:
            return int.from_bytes(digest[:8], "big") >> (64 - ID_BITS)
        return self._ids.setdefault(digest, len(self._ids))

    def add(self, request: Request, prompt: bytes, reply_tokens: int) -> None:
        """One request: its packed prompt tokens and the reply tokens its server computed."""
        salt = request.cache_salt if self._cache_salt else None
        hashes = chained_hashes(prompt, self.block_size, salt, self._link)
        line: dict[str, object] = {
            "timestamp": self._timestamp(request),
            "input_length": len(prompt) // WIDTH,
            "output_length": _generated(request, reply_tokens),
            "hash_ids": [self._id(h) for h in hashes],  # type: ignore[arg-type]
        }
        if request.session is not None:
            line["session_id"] = request.session
        self._out.write(json.dumps(line, separators=(", ", ": ")) + "\n")
        self.requests += 1

    def _timestamp(self, request: Request) -> int:
        if not request.logged_time:
            return self.requests
        ms = request.now.timestamp() * 1000
        if self._first_ms is None:
            self._first_ms = ms
        return round(ms - self._first_ms)

    def reset(self) -> None:
        """Start the file again (the log is read over from its first line)."""
        self._out.seek(0)
        self._out.truncate()
        self._ids.clear()
        self._first_ms = None
        self.requests = 0

    def close(self) -> None:
        self._out.close()


class TraceExportError(Exception):
    """The trace file cannot be written."""


def _generated(request: Request, reply_tokens: int) -> int:
    """Tokens the reply generated: the usage's count, else the computed ones and the last one."""
    reply = request.reply
    if reply is None:
        return 0
    if reply.completion_tokens is not None:
        return reply.completion_tokens
    return reply_tokens + 1 if reply_tokens else 0
