"""`explain --log` never hangs and never gives wrong figures for how its log arrives (issue 27,
point 5): a render worker killed outright (SIGKILL, as the out-of-memory killer sends it) mid-run
has its chunk rendered again and the report is the one an undisturbed run gives; a log read from
a pipe, which cannot be read twice, is spooled once, so the what-if pass that reads it again
gives the file's figures."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import REPO

SYSTEM = "You are the support assistant of a travel company. " + "Answer briefly and cite the policy. " * 20


def write_log(path: Path, requests: int, late_clock: int) -> Path:
    """Requests that share a long system prompt; from request `late_clock` on, a timestamp opens
    it: a cause that enters the ranking after the first pass's provisional what-ifs were chosen
    (2,048 requests), so its what-if needs a second pass over the log."""
    with path.open("w", encoding="utf-8") as fh:
        for i in range(requests):
            system = (
                SYSTEM
                if i < late_clock
                else f"Time: 2025-04-01T10:{i // 60 % 60:02d}:{i % 60:02d}Z\n" + SYSTEM
            )
            question = f"Question {i}: where is booking {i * 7919 % 10007}?"
            body = {
                "messages": [{"role": "system", "content": system}, {"role": "user", "content": question}]
            }
            fh.write(json.dumps(body) + "\n")
    return path


def env() -> dict[str, str]:
    out = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))
    return out


def explain(*args: str, stdin: bytes | None = None) -> dict:
    done = subprocess.run(
        [sys.executable, "-m", "prefixlint", "explain", "--format", "json", *args],
        input=stdin,
        capture_output=True,
        env=env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr.decode()
    return json.loads(done.stdout)


def render_workers(parent: int) -> list[int]:
    """The pids of `parent`'s spawned render workers (not multiprocessing's resource tracker)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and b"spawn_main" in cmdline:
            found.append(int(entry.name))
    return found


def test_a_log_on_a_pipe_gives_the_figures_of_the_same_log_on_disk(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", 2600, late_clock=2100)
    on_disk = explain("--log", str(log))
    late = [c for c in on_disk["causes"] if c["what_if_hit_rate"] is not None]
    assert late and late[0]["what_if_hit_rate"] > on_disk["engines"]["vllm"]["hit_rate"]
    from_pipe = explain("--log", "/dev/stdin", stdin=log.read_bytes())
    assert from_pipe == on_disk


def test_a_pipe_is_copied_within_log_bytes_and_an_unreadable_one_is_exit_2(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", 20, late_clock=10).read_bytes()
    for stdin, error in (
        (log, "/dev/stdin: more than 1,000 bytes read from this pipe; stopped (limit log_bytes;"),
        (log[:500], "/dev/stdin: no readable request in this log: 1 line skipped (1 invalid-json;"),
        (b"", "/dev/stdin: no request in this log: it holds no line"),
    ):
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "prefixlint",
                "explain",
                "--log",
                "/dev/stdin",
                "--limit",
                "log_bytes=1000",
            ],
            input=stdin,
            capture_output=True,
            env=env(),
            timeout=300,
        )
        assert done.returncode == 2 and done.stdout == b"", done.stderr.decode()
        assert f"prefixlint: error: {error}" in done.stderr.decode()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers through /proc")
def test_a_render_worker_killed_mid_run_is_replaced_and_its_chunk_rendered_again(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", 4000, late_clock=3000)
    undisturbed = explain("--log", str(log), "--workers", "2")
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "prefixlint",
            "explain",
            "--format",
            "json",
            "--log",
            str(log),
            "--workers",
            "2",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    killed = None
    deadline = time.monotonic() + 120
    while killed is None and time.monotonic() < deadline and run.poll() is None:
        workers = render_workers(run.pid)
        if workers:  # a worker exists once a chunk was handed to the pool: the run is under way
            os.kill(workers[0], signal.SIGKILL)
            killed = workers[0]
        time.sleep(0.02)
    assert killed is not None, "no render worker seen"
    try:
        out, err = run.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        run.kill()
        pytest.fail("explain still running 300 s after a render worker was killed: it hangs")
    assert run.returncode == 0, err.decode()
    assert json.loads(out) == undisturbed
    assert (
        "prefixlint: warning: a render worker killed by SIGKILL (as the out-of-memory killer sends); "
        "the requests it held are rendered again"
    ) in err.decode()


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="finds the workers through /proc")
def test_workers_that_keep_dying_end_the_run_with_exit_2_naming_it(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", 4000, late_clock=3000)
    run = subprocess.Popen(
        [sys.executable, "-m", "prefixlint", "explain", "--log", str(log), "--workers", "2"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env(),
    )
    killed: set[int] = set()
    deadline = time.monotonic() + 300
    while run.poll() is None and time.monotonic() < deadline:
        for pid in set(render_workers(run.pid)) - killed:  # every worker, each new pool's too
            os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.02)
    if run.poll() is None:
        run.kill()
        pytest.fail("explain still running while its workers keep dying: it hangs")
    out, err = run.communicate()
    assert run.returncode == 2, err.decode()
    assert out == b""
    assert (
        f"prefixlint: error: {log}: a render worker died 4 times (the last one killed by SIGKILL"
        in err.decode()
    )
