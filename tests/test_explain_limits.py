"""`prefixlint explain` on hostile input: one test per limit and per crash path, each asserting the
exit code, the reason a line is skipped under, and how many lines were skipped."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import run_prefixlint

from prefixlint.cli import cli
from prefixlint.explain.reading import LogFile, LogLimits, Reading, decode_json, json_depth_over


def explain(*args: str) -> tuple[int, dict | str, str]:
    """(exit code, the JSON report or the text output, stderr) of an in-process run."""
    result = CliRunner().invoke(cli, ["explain", *args])
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code == 0 and "json" in args:
        return 0, json.loads(result.stdout), result.stderr
    return result.exit_code, result.stdout, result.stderr


def write(path: Path, lines: list[bytes | str | dict], *, packed: bool = False) -> str:
    data = b"".join(
        (x if isinstance(x, bytes) else (x if isinstance(x, str) else json.dumps(x)).encode()) + b"\n"
        for x in lines
    )
    path.write_bytes(gzip.compress(data, mtime=0) if packed else data)
    return str(path)


def prompt(text: str) -> dict:
    return {"prompt": text}


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_a_line_at_the_byte_limit_is_read_and_one_byte_over_is_skipped(tmp_path):
    at = json.dumps(prompt("a" * (100 - 14)))  # {"prompt": "…"} is 14 bytes around the text
    over = json.dumps(prompt("b" * (101 - 14)))
    assert (len(at), len(over)) == (100, 101)
    log = write(tmp_path / "log.jsonl", [prompt("first"), at, over, prompt("last")])
    code, data, _ = explain("--log", log, "--format", "json", "--limit", "line_bytes=100", "--what-if", "0")
    assert code == 0
    assert (data["requests"], data["skipped"]) == (3, 1)
    assert data["skipped_by_reason"] == {"line-too-long": 1}
    assert data["skip_reasons"] == ["line 3: longer than 100 bytes (limit line_bytes)"]


def test_an_over_long_line_spanning_many_reads_is_never_held_and_the_next_line_is_read(tmp_path):
    big = json.dumps(prompt("c" * 3_000_000))  # three reads of 1 MiB, over a 2 MB limit
    log = write(tmp_path / "log.jsonl", [big, prompt("after"), big])
    code, data, _ = explain("--log", log, "--format", "json", "--limit", "line_bytes=2000000")
    assert code == 0 and data["requests"] == 1
    assert data["skipped_by_reason"] == {"line-too-long": 2}
    assert [r.split(":")[0] for r in data["skip_reasons"]] == ["line 1", "line 3"]


def test_json_at_the_depth_limit_is_read_and_deeper_is_skipped_before_decoding(tmp_path):
    at = '{"prompt": "p", "x": ' + nested(7) + "}"  # 1 + 7 = 8 levels
    over = '{"prompt": "p", "x": ' + nested(8) + "}"
    in_strings = json.dumps(prompt("[" * 50 + "{" * 50))  # brackets inside a string do not nest
    log = write(tmp_path / "log.jsonl", [at, over, in_strings])
    code, data, _ = explain("--log", log, "--format", "json", "--limit", "depth=8")
    assert code == 0 and data["requests"] == 2
    assert data["skipped_by_reason"] == {"json-too-deep": 1}
    assert data["skip_reasons"] == ["line 2: JSON nested deeper than 8 (limit depth)"]


def test_the_100000_deep_line_of_the_issue_is_a_skip_with_the_defaults(tmp_path):
    log = write(tmp_path / "log.jsonl", [nested(100_000), prompt("fine")])
    code, data, _ = explain("--log", log, "--format", "json")
    assert code == 0
    assert (data["requests"], data["skipped_by_reason"]) == (1, {"json-too-deep": 1})


def test_depth_scan_counts_only_brackets_outside_strings():
    assert not json_depth_over(b'{"a": "[[[[[[[[[[\\"[[[[["}', 2)
    assert json_depth_over(b'{"a": [[{"b": "]]]]"}]]}', 3)
    assert not json_depth_over(b'{"a": [[{"b": "]]]]"}]]}', 4)
    assert decode_json(b"[" * 10 + b"]" * 10, 9).reason == "json-too-deep"
    assert decode_json(b'{"a": 1', 9).reason == "invalid-json"
    assert decode_json(b'{"a": "\xff"}', 9).reason == "not-utf8"
    assert decode_json(b"\xef\xbb\xbf[1]", 9) == [1]  # a byte-order mark is not an error


def test_a_prompt_at_the_request_limit_reaches_the_tokenizer_and_one_byte_over_never_does(
    tmp_path, monkeypatch
):
    from prefixlint.explain.segments import SegmentEncoder

    seen: list[int] = []
    real = SegmentEncoder.encode

    def spy(self, texts):  # the real encoder runs; only the sizes of the prompts it is given are noted
        seen.extend(len(t.encode("utf-8")) for t in texts)
        return real(self, texts)

    monkeypatch.setattr(SegmentEncoder, "encode", spy)
    at = "é" * 500  # 1,000 UTF-8 bytes in 500 characters: the limit is in bytes
    over = "é" * 500 + "x"
    log = write(tmp_path / "log.jsonl", [prompt(at), prompt(over), prompt("z" * 5_000_000)])
    code, data, _ = explain("--log", log, "--format", "json", "--max-request-bytes", "1000", "--what-if", "0")
    assert code == 0 and data["requests"] == 1
    assert data["skipped_by_reason"] == {"request-too-large": 2}
    assert (
        data["skip_reasons"][0] == "line 2: the prompt is 1,001 bytes, over 1,000 bytes (limit request_bytes)"
    )
    assert max(seen) == 1000


def test_the_50_mb_prompt_of_the_issue_never_reaches_the_tokenizer(tmp_path):
    log = write(tmp_path / "log.jsonl", [prompt("word " * 10_000_000), prompt("fine")])
    code, data, _ = explain("--log", log, "--format", "json")
    assert code == 0 and data["requests"] == 1
    assert data["skipped_by_reason"] == {"line-too-long": 1}  # 50 MB: over the 16 MB line first


def test_a_rendered_prompt_over_the_limit_is_skipped_though_its_line_is_small(tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{% for m in messages %}{{ m.content * 400 }}{% endfor %}", encoding="utf-8")
    log = write(tmp_path / "log.jsonl", [{"messages": [{"role": "user", "content": "0123456789"}]}])
    code, out, err = explain(
        "--log", log, "--template", str(template), "--format", "json", "--max-request-bytes", "3999"
    )
    # Its only request skipped: nothing to report, which is not a 0% hit rate.
    assert code == 2 and out == ""
    assert f"{log}: no readable request in this log: 1 line skipped (1 request-too-large;" in err


def test_messages_at_the_limit_are_read_and_one_more_is_skipped(tmp_path):
    def body(n: int) -> dict:
        return {"messages": [{"role": "user", "content": f"q{i}"} for i in range(n)]}

    tools = {"messages": [{"role": "user", "content": "q"}], "tools": [{"type": "function"}] * 6}
    log = write(tmp_path / "log.jsonl", [body(5), body(6), tools])
    code, data, _ = explain("--log", log, "--format", "json", "--max-messages", "5")
    assert code == 0 and data["requests"] == 1
    assert data["skipped_by_reason"] == {"too-many-messages": 2}
    assert data["skip_reasons"][0] == "line 2: 6 messages or tools, over 5 (limit messages)"


def test_max_requests_reads_the_first_requests_and_the_report_says_so(tmp_path):
    lines = [prompt(f"q{i}") for i in range(8)]
    lines.insert(2, "not json")  # a skipped line is not a request: it does not count
    log = write(tmp_path / "log.jsonl", lines)
    code, data, _ = explain("--log", log, "--format", "json", "--max-requests", "5")
    assert code == 0
    assert (data["requests"], data["skipped"]) == (5, 1)
    assert data["sample"] == {"max_requests": 5, "stopped_at_line": 7}
    code, text, _ = explain("--log", log, "--max-requests", "5")
    assert "sampled: the first 5 requests of the log (--max-requests); reading stopped at line 7" in text
    code, data, _ = explain("--log", log, "--format", "json", "--max-requests", "0")
    assert (data["requests"], data["sample"]) == (8, None)


def test_a_log_over_the_size_limit_stops_with_exit_2_naming_the_file_and_the_limit(tmp_path):
    line = json.dumps(prompt("same words " * 30))
    log = write(tmp_path / "log.jsonl", [line] * 400)  # ~136 kB
    code, _, err = explain("--log", log, "--limit", "log_bytes=100000")
    assert code == 2
    assert err == (
        f"prefixlint: error: {log}: more than 100,000 bytes of log data; stopped "
        "(limit log_bytes; raise it with --limit log_bytes=N)\n"
    )
    code, data, _ = explain("--log", log, "--format", "json", "--limit", "log_bytes=200000")
    assert code == 0 and data["requests"] == 400


def test_a_gzip_bomb_stops_on_the_ratio_and_a_repetitive_real_log_does_not(tmp_path):
    bomb = tmp_path / "bomb.jsonl.gz"
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb.write_bytes(deflate.compress(b"\n" * 50_000_000) + deflate.flush())  # ~1,000:1
    code, _, err = explain("--log", str(bomb), "--limit", "ratio_after=1000000")
    assert code == 2
    assert err.startswith(f"prefixlint: error: {bomb}: ") and "over 500:1" in err and "limit ratio" in err
    same = write(tmp_path / "same.jsonl.gz", [prompt("the same system prompt " * 40)] * 3000, packed=True)
    code, data, _ = explain("--log", same, "--format", "json", "--limit", "ratio_after=1000000")
    assert code == 0 and data["requests"] == 3000  # ~300:1, under the default 500:1


def test_the_wall_clock_budget_stops_with_exit_2(tmp_path):
    log = write(tmp_path / "log.jsonl", [prompt("q")] * 3)
    code, _, err = explain("--log", log, "--max-seconds", "0.000001")
    assert code == 2
    assert err == (
        f"prefixlint: error: {log}: not done within 1e-06 s; stopped "
        "(limit seconds; change it with --max-seconds)\n"
    )


def test_a_truncated_gzip_keeps_the_lines_before_the_cut_and_counts_the_cut_line(tmp_path):
    whole = gzip.compress(
        b"".join(json.dumps(prompt(f"question {i} " * 20)).encode() + b"\n" for i in range(50))
    )
    path = tmp_path / "cut.jsonl.gz"
    path.write_bytes(whole[: len(whole) * 2 // 3])
    code, data, _ = explain("--log", str(path), "--format", "json")
    assert code == 0 and 0 < data["requests"] < 50
    assert data["skipped_by_reason"] == {"gzip-truncated": 1}
    assert data["skip_reasons"][0].endswith("the gzip data ends before its end-of-stream marker")


def test_gzip_members_are_all_read_and_padding_is_not_an_error_but_garbage_is_a_skip(tmp_path):
    def member(lo: int, hi: int) -> bytes:
        return gzip.compress(b"".join(json.dumps(prompt(f"q{i}")).encode() + b"\n" for i in range(lo, hi)))

    path = tmp_path / "members.jsonl.gz"
    path.write_bytes(member(0, 3) + member(3, 7) + b"\x00" * 512)
    code, data, _ = explain("--log", str(path), "--format", "json")
    assert code == 0 and (data["requests"], data["skipped"]) == (7, 0)
    path.write_bytes(member(0, 3) + b"GARBAGE!" * 4)
    code, data, _ = explain("--log", str(path), "--format", "json")
    assert code == 0 and data["requests"] == 3
    assert data["skipped_by_reason"] == {"gzip-corrupt": 1}


def test_each_bad_line_is_counted_under_its_reason_in_json_and_text(tmp_path):
    template = tmp_path / "t.jinja"
    template.write_text("{{ messages[0].content + 1 }}", encoding="utf-8")  # raises for a string
    lines: list = [
        b"\xff\xfe not utf-8",
        "{not json",
        {"messages": [1, 2]},  # a message that is not an object
        {"prompt": "lone \ud800 surrogate"},
        {"messages": [{"role": "user", "content": "x"}], "tools": "find"},
        {"messages": [{"role": "user", "content": "y"}], "chat_template_kwargs": [1]},
        {"nothing": "here"},
        {"messages": [{"role": "user", "content": "q"}]},  # the template raises
        {"messages": [{"role": "user", "content": 5}]},  # renders
    ]
    log = write(tmp_path / "log.jsonl", [x if not isinstance(x, dict) else json.dumps(x) for x in lines])
    code, data, _ = explain("--log", log, "--template", str(template), "--format", "json")
    assert code == 0 and data["requests"] == 1
    assert data["skipped_by_reason"] == {
        "not-a-request": 3,
        "no-messages-or-prompt": 1,
        "invalid-json": 1,
        "invalid-unicode": 1,
        "not-utf8": 1,
        "template-error": 1,
    }
    assert data["skipped"] == 8 and len(data["skip_reasons"]) == 5
    code, text, _ = explain("--log", log, "--template", str(template))
    assert (
        "8 lines skipped (3 not-a-request, 1 invalid-json, 1 invalid-unicode, 1 no-messages-or-prompt, "
        "1 not-utf8, 1 template-error;" in text
    )


def test_random_bytes_an_empty_file_and_junk_are_usage_errors_naming_the_file(tmp_path):
    # "0 requests, hit rate 0.00%, nothing to explain" is what a real zero hit rate looks like:
    # a log that gave no request says so, with the file and why each line was skipped (exit 2).
    noise = tmp_path / "noise.bin"
    noise.write_bytes(bytes(range(256)) * 40)
    code, out, err = explain("--log", str(noise), "--format", "json")
    assert code == 2 and out == ""
    assert err.startswith(f"prefixlint: error: {noise}: no readable request in this log: ")
    assert "not-utf8" in err
    empty = tmp_path / "empty.jsonl"
    empty.write_bytes(b"\n\n   \n")
    code, out, err = explain("--log", str(empty))
    assert code == 2 and out == ""
    assert err.strip() == f"prefixlint: error: {empty}: no request in this log: it holds no line"
    junk = write(tmp_path / "junk.jsonl", [{"model": "m"}])
    with open(junk, "a", encoding="utf-8") as fh:
        fh.write("not json\n")
    code, _, err = explain("--log", junk)
    assert code == 2
    assert "2 lines skipped (1 invalid-json, 1 no-messages-or-prompt; first: line 1:" in err
    assert "--log-format" in err


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"prompt": "' + b"x" * 2000 + b'"}', "larger than 1,000 bytes (limit line_bytes)"),
        (nested(30).encode(), "JSON nested deeper than 20 (limit depth)"),
        (b"\xff\xfe\x00", "not UTF-8 at byte 0"),
        (
            json.dumps({"messages": [{"role": "user", "content": "q"}] * 9}).encode(),
            "over 8 (limit messages)",
        ),
        (json.dumps({"messages": ["x"]}).encode(), "messages[0] is str, not an object"),
        (json.dumps(prompt("p" * 900)).encode(), "over 800 bytes (limit request_bytes)"),
        (json.dumps(prompt("\ud800")).encode(), "lone surrogate at character 0"),
    ],
)
def test_a_bad_request_file_is_exit_2_naming_the_file_and_the_reason(tmp_path, content, message):
    bad, good = tmp_path / "bad.json", tmp_path / "good.json"
    bad.write_bytes(content)
    good.write_text(json.dumps(prompt("fine")), encoding="utf-8")
    limits = [
        "--limit",
        "line_bytes=1000",
        "--limit",
        "depth=20",
        "--max-messages",
        "8",
        "--max-request-bytes",
        "800",
    ]
    code, _, err = explain(str(bad), str(good), *limits)
    assert code == 2
    assert err.startswith("prefixlint: error: ") and str(bad) in err and message in err


def test_limit_options_are_checked(tmp_path):
    log = write(tmp_path / "log.jsonl", [prompt("q")])
    code, _, err = explain("--log", log, "--limit", "depht=3")
    assert code == 2 and "unknown limit 'depht'" in err
    code, _, err = explain("--log", log, "--limit", "depth")
    assert code == 2 and "expected NAME=NUMBER" in err
    code, _, err = explain("--log", log, "--limit", "ratio=-1")
    assert code == 2 and "must be a number >= 0" in err
    assert LogLimits().with_overrides({"depth": 3.0, "seconds": 1.5}) == LogLimits(depth=3, seconds=1.5)


def test_line_numbers_count_blank_lines_and_crlf(tmp_path):
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'\n\r\n  \n{"prompt": "a"}\r\n\n"b"\n  "c"')
    with LogFile(str(path), Reading()) as log:
        assert list(log.lines()) == [(4, b'{"prompt": "a"}'), (6, b'"b"'), (7, b'  "c"')]


def test_a_flood_of_blank_lines_is_read_at_bytes_speed(tmp_path):
    """32 MB of newlines: counted by bytes methods, not a Python loop per line (which took ~20 s)."""
    path = tmp_path / "blank.jsonl"
    path.write_bytes(b"\n" * 32_000_000 + b'{"prompt": "end"}\n')
    with LogFile(str(path), Reading()) as log:
        assert list(log.lines()) == [(32_000_001, b'{"prompt": "end"}')]


def test_end_to_end_the_issues_three_inputs_give_no_traceback(tmp_path):
    """In a real process: exit codes, stderr and stdout as a user sees them."""
    deep = write(tmp_path / "deep.jsonl", [nested(100_000), {"prompt": "a request"}])
    result = run_prefixlint("explain", "--log", deep, timeout=120)
    assert result.returncode == 0 and "1 line skipped (1 json-too-deep;" in result.stdout
    assert result.stderr == ""
    alone = write(tmp_path / "alone.jsonl", [nested(100_000)])  # nothing else: no request read
    result = run_prefixlint("explain", "--log", alone, timeout=120)
    assert result.returncode == 2 and result.stdout == ""
    assert "no readable request in this log: 1 line skipped (1 json-too-deep;" in result.stderr
    bomb = tmp_path / "bomb.jsonl.gz"
    deflate = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb.write_bytes(b"".join(deflate.compress(b"\n" * (1 << 24)) for _ in range(8)) + deflate.flush())
    result = run_prefixlint("explain", "--log", str(bomb), timeout=120)
    assert result.returncode == 2 and "limit ratio" in result.stderr and "Traceback" not in result.stderr


def test_a_gzip_log_read_from_a_pipe_needs_no_seek(tmp_path):
    import os
    import threading

    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    data = gzip.compress(b'{"prompt": "a"}\n"b"\n')
    writer = threading.Thread(target=lambda: fifo.write_bytes(data))
    writer.start()
    with LogFile(str(fifo), Reading()) as log:
        assert list(log.lines()) == [(1, b'{"prompt": "a"}'), (2, b'"b"')]
    writer.join()
