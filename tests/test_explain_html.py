"""The `--html` page, loaded in a real headless Chromium: the DOM it builds is asserted."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from prefixlint.cli import cli

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "explain"
CHROMIUM = shutil.which("chromium")


def _log(tmp_path: Path, n: int) -> str:
    lines = [
        {
            "timestamp": f"2025-03-31T23:59:{10 + i:02d}Z",
            "body": {"messages": [{"role": "user", "content": f"Order {i}: where is it?"}]},
        }
        for i in range(n)
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return str(path)


def _page(tmp_path: Path, *extra: str) -> tuple[Path, dict]:
    page = tmp_path / "report.html"
    result = CliRunner().invoke(
        cli,
        [
            "explain",
            "--log",
            _log(tmp_path, 8),
            "--template",
            str(FIX / "timestamp_head.jinja"),
            "--html",
            str(page),
            "--format",
            "json",
            *extra,
        ],
    )
    assert result.exit_code == 0, result.output
    return page, json.loads(result.stdout)


def test_page_is_self_contained(tmp_path):
    page, data = _page(tmp_path)
    text = page.read_text(encoding="utf-8")
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", text)  # nothing fetched from anywhere
    assert text.count('class="cause"') == len(data["causes"])
    assert 'id="divergence"' in text and "line 3: <code>Current time:" in text


def _bars(text: str, chart: str) -> list[tuple[str, str]]:
    """(label, figure) of each bar in one chart of the page."""
    body = re.search(rf'<div class="bars" id="{chart}">(.*?)</div>\s*<(?:h2|/body)', text, re.S)
    assert body, chart
    return re.findall(
        r'<span>([^<]*)</span><div><div class="bar [^"]*" style="[^"]*"></div></div><span>([^<]*)</span>',
        body.group(1),
    )


def test_page_says_what_its_legend_and_columns_promise(tmp_path):
    """Issue 27 point 4: no legend for bars it does not draw, no empty column, the time saved per
    cause, the engine and the place a what-if moves the span to, line breaks kept."""
    page, data = _page(tmp_path, "--prefill-rate", "2000")
    text = page.read_text(encoding="utf-8")
    assert "Blue bars: where vllm can end a cached prefix (whole blocks of 16 tokens" in text
    assert "with an LRU cache" not in text  # no --cache-tokens: no such column
    cause = data["causes"][0]
    assert "<th>hit rate if moved to the end of its message</th>" in text
    moved = ", ".join(f"{n} {cause['what_if'][n]:.1%}" for n in data["engines"])
    assert f"<td>{moved}</td>" in text
    assert f"<td>{cause['ttft_ms_saved_per_request']:,.0f} ms</td></tr>" in text
    assert ".differs code,#tree code{white-space:pre-wrap}" in text and "\nYou are the</code>" in text
    # The bars: each engine now and with the cause moved, and the tokens the cause loses.
    rates = _bars(text, "hit-rates")
    assert rates == [
        pair
        for name, v in data["engines"].items()
        for pair in (
            ("now", f"{v['hit_rate']:.1%}"),
            ("#1 timestamp in system, template line 3 moved", f"{cause['what_if'][name]:.1%}"),
        )
    ]
    assert _bars(text, "tokens-lost") == [
        ("#1 timestamp in system, template line 3", f"{cause['tokens_lost']:,}")
    ]

    # Where the requests branch: all 8 share the head up to the seconds, then each its own way.
    tree = re.search(r'<div id="tree">(.*?)</div>', text, re.S).group(1)
    first = cause["token_index"] - 1
    assert f"(tokens 0–{first}, shared by 8 of 8 requests)</span><ul>" in tree
    assert tree.count(f"(tokens {first + 1}–") == 2 and tree.count("shared by 1 of 8 requests") == 2

    page, data = _page(tmp_path, "--engine", "openai", "--cache-tokens", "500")
    text = page.read_text(encoding="utf-8")
    assert 'class="tok blk"' not in text and "Blue bars" not in text  # 212 tokens, under 1,024
    assert "openai caches nothing under 1,024 tokens, then steps of 128: this prompt&#x27;s" in text
    assert "<th>with an LRU cache</th>" in text and "(LRU 500 tokens)</td>" in text


@pytest.mark.skipif(CHROMIUM is None, reason="no Chromium installed")
def test_page_in_headless_chromium(tmp_path):
    page, data = _page(tmp_path)
    profile = tmp_path / "profile"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
    ]
    dom = subprocess.run(
        cmd + ["--dump-dom", page.as_uri()], capture_output=True, text=True, timeout=120
    ).stdout
    # The page's script ran and counted what it shows.
    body = re.search(r"<body([^>]*)>", dom)
    assert body, dom[:500]
    attrs = dict(re.findall(r'data-([a-z]+)="([^"]*)"', body.group(1)))
    assert attrs["rendered"] == "1"
    tokens = int(attrs["tokens"])
    assert tokens * data["requests"] == data["tokens"]  # the requests are all the same length
    assert int(attrs["blocks"]) == (tokens + 15) // 16  # a vLLM block boundary every 16 tokens
    # The divergence point is the token the top cause names, and it sits in the timestamp.
    div = re.search(
        r'<span class="tok[^"]*" id="divergence" data-i="(\d+)" data-shared="(\d+)"[^>]*>([^<]*)<', dom
    )
    assert div and int(div.group(1)) == data["causes"][0]["token_index"]
    assert int(div.group(2)) == 1  # only its own request has this second
    shared = [int(x) for x in re.findall(r'data-shared="(\d+)"', dom)]
    assert shared[0] == data["requests"]  # every request starts with `<`
    assert dom.count('<tr class="cause">') == len(data["causes"])
    bars = sum(1 + sum(name in c["what_if"] for c in data["causes"]) for name in data["engines"])
    assert int(attrs["bars"]) == bars + len(data["causes"])
    shot = tmp_path / "shot.png"
    subprocess.run(
        cmd + [f"--screenshot={shot}", "--window-size=1200,900", page.as_uri()],
        capture_output=True,
        timeout=120,
    )
    assert shot.is_file() and shot.stat().st_size > 10_000
