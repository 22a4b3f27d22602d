"""`explain --log … --dask`: the heavy stage (render, tokenize, the replies' tokens) as Dask tasks on
a local cluster gives the same report as the run in one process, byte for byte in the JSON; without
Dask, `--dask` is a one-line error and a run without it imports no Dask.

The clusters are real worker processes (processes=True, as `--dask local:N` starts them): a thread
cluster would not show that the template, the tokenizer and the traces survive pickling."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli
from prefixlint.explain import stream
from prefixlint.explain.dask_stage import DaskError, parse_address

ROOT = Path(__file__).parent.parent
FIXTURES = ROOT / "fixtures" / "explain"
NO_DASK = "dask[distributed] is not installed (pip install 'prefixlint[dask]'; .ci/run installs it)"


def _explain(*args: str) -> str:
    result = CliRunner().invoke(cli, ["explain", *args, "--format", "json"])
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.fixture
def mixed_log(tmp_path: Path) -> Path:
    """Chat and Anthropic bodies with their replies, a multi-turn session, Anthropic breakpoints,
    and a line that is no request, repeated so that a chunk of three ends in every place."""
    lines: list[str] = []
    for name in ("openai_gateway", "agent_session", "agent_breakpoints"):
        lines += (FIXTURES / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    lines.insert(4, "this line is no request")
    log = tmp_path / "mixed.jsonl"
    log.write_text("\n".join(lines * 3) + "\n", encoding="utf-8")
    return log


@pytest.fixture(scope="module")
def scheduler() -> str:
    """A local cluster of two worker processes, reached by its address as a remote one is."""
    distributed = pytest.importorskip("distributed", reason=NO_DASK)
    import logging

    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=logging.ERROR
    ) as cluster:
        yield cluster.scheduler_address


@pytest.mark.parametrize(
    "extra",
    [
        (),
        ("--template", str(FIXTURES / "timestamp_head.jinja"), "--replicas", "3", "--capacity-curve"),
        ("--cache-tokens", "300", "--what-if", "1", "--top", "2"),
        # The request limit falls inside a chunk sent to the workers: the lines after it are not read.
        (
            "--max-requests",
            "20",
        ),
        # A line longer than line_bytes is skipped by the reader here, between lines decoded there.
        ("--limit", "line_bytes=4000"),
    ],
    ids=["default-template", "user-template-replicas-curve", "lru-what-if", "request-limit", "long-lines"],
)
def test_chunks_rendered_on_workers_give_the_same_json(monkeypatch, mixed_log, scheduler, extra):
    # Chunks of three requests: many tasks, answered in any order, consumed in log order.
    monkeypatch.setattr(stream, "BATCH", 3)
    local = _explain("--log", str(mixed_log), *extra)
    assert json.loads(local)["requests"] >= 20
    assert _explain("--log", str(mixed_log), *extra, "--dask", scheduler) == local


def test_what_ifs_moved_on_the_workers_give_the_same_json(monkeypatch, mixed_log, scheduler):
    """Provisional causes chosen after six requests: the chunks sent before come back without
    moved prompts (encoded for the what-ifs on request), the later ones with them, moved and
    encoded on the workers; the what-if rates are the local run's."""
    from prefixlint.explain import log

    monkeypatch.setattr(stream, "BATCH", 3)
    monkeypatch.setattr(log, "PROVISIONAL", 6)
    from prefixlint.explain import dask_stage

    came_back: list[tuple[str, ...]] = []  # the patterns of each batch whose moved ids came back

    made = dask_stage.WhatIfIds

    def recorded(patterns, ids):
        came_back.append(patterns)
        return made(patterns, ids)

    monkeypatch.setattr(dask_stage, "WhatIfIds", recorded)
    extra = ("--template", str(FIXTURES / "timestamp_head.jinja"), "--what-if", "2")
    local = _explain("--log", str(mixed_log), *extra)
    assert any(c["what_if_hit_rate"] is not None for c in json.loads(local)["causes"])
    assert _explain("--log", str(mixed_log), *extra, "--dask", scheduler) == local
    # Most batches came back moved, the first chunks (sent before the causes were chosen) not.
    assert len(came_back) >= 3 and all(came_back)
    assert len(came_back) < json.loads(local)["requests"] // 3


def _split(log: Path, tmp_path: Path) -> list[str]:
    """`log` cut into three files at line boundaries, the second gzipped."""
    import gzip

    lines = log.read_bytes().splitlines(keepends=True)
    third = len(lines) // 3
    parts = [lines[:third], lines[third : 2 * third], lines[2 * third :]]
    paths = [tmp_path / "a.jsonl", tmp_path / "b.jsonl.gz", tmp_path / "c.jsonl"]
    paths[0].write_bytes(b"".join(parts[0]))
    paths[1].write_bytes(gzip.compress(b"".join(parts[1])))
    paths[2].write_bytes(b"".join(parts[2]))
    return [str(p) for p in paths]


def _logs(paths: list[str]) -> list[str]:
    return [arg for p in paths for arg in ("--log", p)]


@pytest.mark.parametrize("extra", [(), ("--max-requests", "25")], ids=["whole", "request-limit"])
def test_several_logs_read_as_one_give_the_one_log_json(monkeypatch, mixed_log, tmp_path, extra):
    # Lines numbered on from one file to the next: the skips, breaks and causes name the lines of
    # the log the files were cut from; the limit counts the requests of all of them.
    monkeypatch.setattr(stream, "BATCH", 3)
    whole = _explain("--log", str(mixed_log), *extra)
    assert _explain(*_logs(_split(mixed_log, tmp_path)), *extra) == whole


def test_several_logs_chunked_across_workers_give_the_one_log_json(
    monkeypatch, mixed_log, tmp_path, scheduler
):
    monkeypatch.setattr(stream, "BATCH", 3)
    extra = ("--template", str(FIXTURES / "timestamp_head.jinja"))
    whole = _explain("--log", str(mixed_log), *extra)
    assert _explain(*_logs(_split(mixed_log, tmp_path)), *extra, "--dask", scheduler) == whole


@pytest.mark.parametrize(
    "log",
    [
        "agent_session.jsonl",
        "otel_spans.jsonl",  # many requests to a line: decoded here, not on the workers
        "vllm_requests.log",  # one record to a line, lines that are no request among them
        "litellm_payloads.jsonl",
    ],
)
def test_a_local_cluster_of_two_gives_the_same_json(log):
    pytest.importorskip("distributed", reason=NO_DASK)
    path = str(FIXTURES / log)
    assert _explain("--log", path, "--dask", "local:2") == _explain("--log", path)


def test_the_again_pass_renders_on_the_workers_as_here(mixed_log, scheduler):
    """The pass that renders the log again (a what-if that entered the top late) uses the stage's
    render-only tasks: the same prompts as rendered here, skips counted the same."""
    from prefixlint.explain.dask_stage import DaskStage
    from prefixlint.explain.reading import Reading
    from prefixlint.explain.requests import Renderer
    from prefixlint.models.tokens import load_tokenizer

    renderer = Renderer(None)
    here, there = Reading(), Reading()
    local = [r.text for b in stream.rendered_batches(str(mixed_log), renderer, 1.0, here) for _, r in b]
    with DaskStage(scheduler, renderer, load_tokenizer(None)) as stage:
        batches = stream.rendered_batches(str(mixed_log), renderer, 1.0, there, None, stage)
        remote = [r.text for b in batches for _, r in b]
    assert remote == local and len(local) > 30
    assert there.skips.counts() == here.skips.counts()
    assert here.skips.counts()["invalid-json"] >= 3  # the line that is no request, each time


@pytest.mark.parametrize(
    ("given", "parsed"),
    [("local", (None, 0)), ("local:3", (None, 3)), ("tcp://10.0.0.5:8786", ("tcp://10.0.0.5:8786", None))],
)
def test_addresses(given, parsed):
    assert parse_address(given) == parsed


@pytest.mark.parametrize("given", ["local:0", "local:x", "local:", " "])
def test_bad_addresses_are_named(given):
    with pytest.raises(DaskError, match="--dask"):
        parse_address(given)


def _python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, stdin=subprocess.DEVNULL
    )


def test_without_dask_the_option_is_a_one_line_error():
    # `distributed` made unimportable, as on an install without the extra.
    run = _python(
        "import sys; sys.modules['distributed'] = None\n"
        "from prefixlint.launch import main\n"
        "sys.argv = ['prefixlint', 'explain', '--log', 'fixtures/explain/openai_gateway.jsonl']\n"
        "sys.argv += ['--dask', 'local:2']\n"
        "main()"
    )
    assert run.returncode == 2, run.stderr
    assert (
        run.stderr
        == "prefixlint: error: --dask needs Dask, which is not installed: pip install 'prefixlint[dask]'\n"
    )


def test_a_run_without_the_option_imports_no_dask():
    run = _python(
        "import sys\n"
        "from click.testing import CliRunner\n"
        "from prefixlint.cli import cli\n"
        "result = CliRunner().invoke(cli, ['explain', '--log', 'fixtures/explain/openai_gateway.jsonl'])\n"
        "assert result.exit_code == 0, result.output\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('dask', 'distributed')))"
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "[]\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--dask", "local:2", "fixtures/explain/request_a.json", "fixtures/explain/request_b.json"],
            "give --log",
        ),
        (
            ["--log", "fixtures/explain/openai_gateway.jsonl", "--dask", "local:2", "--workers", "2"],
            "not both",
        ),
    ],
)
def test_dask_with_what_it_cannot_serve_is_a_usage_error(args, message):
    result = CliRunner().invoke(cli, ["explain", *args])
    assert result.exit_code == 2
    assert message in result.output


def _fleet_requests(n: int) -> list:
    """n requests of six sessions on one long system prompt, each session's conversation growing
    turn by turn, a few without a session key: what each replica holds decides its hits."""
    from datetime import UTC, datetime, timedelta

    from prefixlint.engines.packed import pack
    from prefixlint.explain.routing import route_request

    system = list(range(1, 97))
    turns: dict[int, list[int]] = {}
    out = []
    for i in range(n):
        s = i * 7 % 6
        turns.setdefault(s, []).extend(range(1000 * (s + 1) + len(turns.get(s, [])), 1000 * (s + 1) + 40))
        ids = system + turns[s] + [100_000 + i] * 8  # the request's own tail
        session = None if i % 11 == 5 else f"session-{s}"
        when = datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)
        out.append(route_request(pack(ids), [{"role": "user", "content": f"s{s} {i}"}], None, session, when))
    return out


def test_the_replicas_split_over_workers_sum_to_the_ordered_runs_figures(monkeypatch, scheduler):
    """Every policy whose choice reads only the request is split, its replicas simulated on the
    workers (both of them used); the others stay in the ordered simulation here; every policy's
    summary is the one-process run's, at a capacity that evicts and one that does not."""
    from prefixlint.engines import load_engines
    from prefixlint.explain import replica_split, routing
    from prefixlint.explain.dask_stage import Connection
    from prefixlint.explain.routing import SPLITTABLE, Routing

    monkeypatch.setattr(replica_split, "BATCH", 5)  # many batches, more than the window in flight
    engine = load_engines()["vllm"]
    requests = _fleet_requests(90)
    with Connection(scheduler) as dask:
        for capacity in (400, 1_000_000):
            here = Routing(3, "session", engine, capacity)
            there = Routing(3, "session", engine, capacity, dask)
            assert not here.split and here.remote is None
            assert {r.policy for r in there.split} == SPLITTABLE
            assert {r.policy for r in there.ordered} == {
                "sglang-cache-aware",
                "sglang-cache-aware-0.1",
                "gie-prefix",
            }
            for request in requests:
                here.feed(request)
                there.feed(request)
            ordered = here.summary()
            assert there.summary() == ordered
            assert there.summary() == ordered  # the totals can be asked again
            # Not a trivial workload: every policy finds something, not all the same.
            hits = [ordered[p]["hit_tokens"] for p in SPLITTABLE]
            assert min(hits) > 0 and len(set(hits)) >= 3
            homes = dask.client.who_has(there.remote.chains)
            assert len({w for workers in homes.values() for w in workers}) == 2
        # Why the others stay ordered: split anyway, the routers that read the replicas' load and
        # fill (which the ordered simulation keeps and the split does not) choose otherwise.
        monkeypatch.setattr(routing, "SPLITTABLE", frozenset(routing.POLICIES))
        here, there = Routing(3, "session", engine, 400), Routing(3, "session", engine, 400, dask)
        for request in requests:
            here.feed(request)
            there.feed(request)
        ordered, split = here.summary(), there.summary()
        assert all(split[p] == ordered[p] for p in SPLITTABLE)
        assert split["gie-prefix"] != ordered["gie-prefix"]


def _sends(monkeypatch) -> list[int]:
    """The requests the per-replica split was sent, counted (the workers' side is real), in batches
    of four."""
    from prefixlint.explain import replica_split
    from prefixlint.explain.replica_split import ReplicaSplit

    monkeypatch.setattr(replica_split, "BATCH", 4)

    count: list[int] = []
    send = ReplicaSplit.send

    def counted(self, replicas, seq):
        count.append(len(replicas))
        send(self, replicas, seq)

    monkeypatch.setattr(ReplicaSplit, "send", counted)
    return count


def test_session_routing_over_three_replicas_split_on_workers_gives_the_same_json(
    monkeypatch, mixed_log, scheduler
):
    monkeypatch.setattr(stream, "BATCH", 3)
    extra = ("--replicas", "3", "--routing", "session")
    local = _explain("--log", str(mixed_log), *extra)
    sends = _sends(monkeypatch)
    assert _explain("--log", str(mixed_log), *extra, "--dask", scheduler) == local
    # every request of the log, to one replica of each of the four split policies
    assert sends == [4] * json.loads(local)["requests"]
    routing = json.loads(local)["routing"]
    assert routing["session"]["current"] and routing["session"]["hit_tokens"] > 0


def test_a_traces_replicas_split_on_workers_give_the_same_json(monkeypatch, mixed_log, tmp_path, scheduler):
    monkeypatch.setattr(stream, "BATCH", 3)
    trace = tmp_path / "trace.jsonl"
    _explain("--log", str(mixed_log), "--export-trace", str(trace))
    extra = ("--trace", str(trace), "--replicas", "3", "--routing", "session")
    local = _explain(*extra)
    sends = _sends(monkeypatch)
    assert _explain(*extra, "--dask", scheduler) == local
    assert len(sends) == json.loads(local)["requests"] > 30
    assert json.loads(local)["routing"]["session"]["hit_tokens"] > 0


def test_dask_on_a_trace_without_replicas_is_a_usage_error(tmp_path):
    trace = tmp_path / "trace.jsonl"
    trace.write_text('{"timestamp": 0, "input_length": 32, "output_length": 1, "hash_ids": [1, 2]}\n')
    result = CliRunner().invoke(cli, ["explain", "--trace", str(trace), "--dask", "local:2"])
    assert result.exit_code == 2
    assert "give --replicas N" in result.output
