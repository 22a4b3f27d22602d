"""What tests/test_llama_server.py and tests/test_vllm_server.py do alike with a server they start on
127.0.0.1: pick a free port, wait for its /health, post a JSON body."""

from __future__ import annotations

import json
import socket
import subprocess
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_healthy(process: subprocess.Popen, port: int, seconds: float, pause: float) -> str | None:
    """None once the server answers /health with 200; else why not (it exited, or the time ran out)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            return f"exited with {process.returncode} while starting"
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                if r.status == 200:
                    return None
        except OSError:
            time.sleep(pause)
    return f"did not answer /health within {seconds:.0f} s"


def post(port: int, path: str, body: dict, timeout: float) -> dict:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(), {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())
