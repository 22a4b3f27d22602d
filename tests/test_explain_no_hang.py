"""`explain --log` never gives wrong figures for how its log arrives (issue 27, point 5): a log
read from a pipe, which cannot be read twice, is spooled once, so the what-if pass that reads it
again gives the file's figures."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

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


def test_a_log_on_a_pipe_gives_the_figures_of_the_same_log_on_disk(tmp_path: Path) -> None:
    log = write_log(tmp_path / "log.jsonl", 2600, late_clock=2100)
    on_disk = explain("--log", str(log))
    late = [c for c in on_disk["causes"] if c["what_if_hit_rate"] is not None]
    assert late and late[0]["what_if_hit_rate"] > on_disk["engines"]["vllm"]["hit_rate"]
    from_pipe = explain("--log", "/dev/stdin", stdin=log.read_bytes())
    assert from_pipe == on_disk
