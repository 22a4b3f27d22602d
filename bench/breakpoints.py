"""CPU cost of replaying Anthropic's breakpoint cache in `explain --log` (explain/breakpoints.py),
next to the rest of `explain --log`, on a generated agent log.

    python bench/breakpoints.py [--conversations 100] [--turns 20]

The log: CONVERSATIONS agent sessions of TURNS turns each, interleaved, in the Messages API's
shape: a ~2,500-token system prompt with a breakpoint, three tools, every turn a tool call and its
result appended, a rolling breakpoint on the newest block; a tenth of the sessions put the
breakpoint on a reminder they drop next turn (PFX503 trailing-message). Runs `explain_log` twice in
this process, with the replay and with it switched off, and prints CPU seconds (user+sys) of each.
Not run by the tests.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

EPHEMERAL = {"type": "ephemeral"}
SYSTEM = " ".join(
    f"Rule {i}: read the file before you edit it, keep the change small, run the tests." for i in range(160)
)
TOOLS = [
    {"name": n, "description": f"{n} in the repository", "input_schema": {"type": "object", "properties": {}}}
    for n in ("read_file", "edit_file", "run_tests")
]


def build_log(path: Path, conversations: int, turns: int) -> int:
    histories: list[list[dict[str, Any]]] = [[] for _ in range(conversations)]
    lines = 0
    with path.open("w", encoding="utf-8") as out:
        for turn in range(turns):
            for c in range(conversations):
                history = histories[c]
                question = {"type": "text", "text": f"Session {c}, step {turn}: look at module_{turn}.py."}
                newest: dict[str, Any] = {"role": "user", "content": [question]}
                if c % 10 == 0:
                    reminder = {"type": "text", "text": "<system-reminder>todo</system-reminder>"}
                    newest["content"] = [question, {**reminder, "cache_control": EPHEMERAL}]
                else:
                    newest["content"] = [{**question, "cache_control": EPHEMERAL}]
                body = {
                    "model": "claude-sonnet-4-5",
                    "max_tokens": 1024,
                    "tools": TOOLS,
                    "system": [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}],
                    "messages": [*history, newest],
                    "metadata": {"user_id": f"session-{c}"},
                }
                seconds = turn * 30 + c % 30
                out.write(json.dumps({"timestamp": 1_767_225_600 + seconds, "request": body}) + "\n")
                lines += 1
                call = {"type": "tool_use", "id": f"c{c}t{turn}", "name": "read_file", "input": {"path": "a"}}
                result = {
                    "type": "tool_result",
                    "tool_use_id": f"c{c}t{turn}",
                    "content": f"line {turn}\n" * 20,
                }
                history += [
                    {"role": "user", "content": [question]},
                    {"role": "assistant", "content": [call]},
                    {"role": "user", "content": [result]},
                    {"role": "assistant", "content": f"Step {turn} done."},
                ]
    return lines


def cpu() -> float:
    t = os.times()
    return t.user + t.system


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--conversations", type=int, default=100)
    parser.add_argument("--turns", type=int, default=20)
    args = parser.parse_args()

    import prefixlint.explain.log as explain
    from prefixlint.engines import load_engines
    from prefixlint.explain.requests import Renderer
    from prefixlint.models.tokens import load_tokenizer

    with tempfile.TemporaryDirectory() as folder:
        log = Path(folder) / "agent.jsonl"
        n = build_log(log, args.conversations, args.turns)
        tokenizer = load_tokenizer(None)
        engines = [load_engines()[e] for e in ("vllm", "sglang", "openai")]
        original = explain._provider_breakpoints
        figures = {}
        for label, replay in (("with the breakpoint replay", True), ("without it", False)):
            explain._provider_breakpoints = original if replay else (lambda tokenizer: None)
            start = cpu()
            report = explain.explain_log(
                str(log), Renderer(None), tokenizer, engines, workers=1, progress=False
            )
            figures[label] = (cpu() - start, report)
        explain._provider_breakpoints = original
    shape = f"{args.conversations} conversations x {args.turns} turns"
    print(f"{n:,} requests, {report.tokens:,} prompt tokens ({shape})")
    for label, (seconds, _) in figures.items():
        print(f"  explain --log {label}: {seconds:.2f} CPU s")
    with_replay = figures["with the breakpoint replay"]
    data = with_replay[1].breakpoints or {}
    extra = with_replay[0] - figures["without it"][0]
    rate = data.get("hit_rate", 0)
    print(
        f"  replay: {extra:.2f} CPU s ({1000 * extra / n:.2f} ms per request); anthropic hit rate {rate:.2%}"
    )
    for f in data.get("findings", []):
        print(f"  {f['code']} {f['reason']} at {f['part']}: {f['count']:,} request(s)")


if __name__ == "__main__":
    main()
