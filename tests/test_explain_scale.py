"""`explain --log` at scale: the same report whether requests are rendered here or by worker
processes, tokenized whole or segment by segment, and with every cache bounded."""

from __future__ import annotations

import json

import pytest
from test_explain import CATALOGUE, ENGINES, HEAD, TAIL, bodies, template, write_log

from prefixlint.explain import segments
from prefixlint.explain.log import explain_log
from prefixlint.explain.reading import Skip, Skips
from prefixlint.explain.requests import Renderer
from prefixlint.models.tokens import load_tokenizer


def report_json(log: str, tpl, **options) -> str:
    report = explain_log(
        log, Renderer(template(tpl) if tpl else None), load_tokenizer(None), ENGINES, **options
    )
    return json.dumps(report.to_json(), sort_keys=True)


def mixed_log(tmp_path) -> str:
    lines = bodies(10) + bodies(6, system=lambda i: f"Ticket {1000 + i}\n{CATALOGUE}")
    lines.insert(3, {"body": {"messages": "not a list"}})  # counted, skipped
    return write_log(tmp_path / "log.jsonl", lines)


@pytest.mark.parametrize("tpl", [HEAD, TAIL, None], ids=["head", "tail", "default"])
def test_worker_processes_and_segments_change_nothing_in_the_report(tmp_path, tpl):
    log = mixed_log(tmp_path)
    serial_whole = report_json(log, tpl, workers=1, segments="whole", replicas=3)
    assert json.loads(serial_whole)["skipped"] == 1
    assert report_json(log, tpl, workers=1, replicas=3) == serial_whole
    assert report_json(log, tpl, workers=2, replicas=3) == serial_whole


def test_a_template_that_raises_in_a_worker_is_counted_like_one_that_raises_here(tmp_path):
    path = tmp_path / "strict.jinja"
    path.write_text(
        "{% for m in messages %}{% if m.content == 'boom' %}{{ raise_exception('no') }}{% endif %}"
        "<|{{ m.role }}|>\n{{ m.content }}\n{% endfor %}",
        encoding="utf-8",
    )
    lines = bodies(5, user=lambda i: "boom" if i == 2 else f"question {i}")
    log = write_log(tmp_path / "log.jsonl", lines)
    serial, parallel = (json.loads(report_json(log, path, workers=n)) for n in (1, 2))
    assert serial == parallel
    assert serial["skipped"] == 1 and "the template raised" in serial["skip_reasons"][0]
    assert serial["requests"] == 4


def test_a_cut_that_changes_tokens_midway_starts_the_run_over_on_whole_prompts(tmp_path, monkeypatch):
    # Make the sampled check compare against ids that differ from the 3rd prompt on: the run must
    # not keep what it computed with the cut encoder, and must end with the whole-prompt figures.
    log = mixed_log(tmp_path)
    expected = report_json(log, HEAD, workers=1, segments="whole")
    real = segments.SegmentEncoder._whole_ids
    checked = []

    def whole_ids(self, text):
        ids = real(self, text)
        mode = getattr(self, "mode", None)  # None while the encoder probes the tokenizer
        checked.append(mode)
        return ids + [0] if mode == "lines" and checked.count("lines") >= 3 else ids

    monkeypatch.setattr(segments.SegmentEncoder, "_whole_ids", whole_ids)
    assert report_json(log, HEAD, workers=1) == expected
    assert checked.count("lines") == 3  # the third sampled prompt stopped the cut run
    assert "whole" not in checked  # whole mode is never sampled: it is the reference


def test_skipped_lines_are_all_counted_and_only_the_first_few_kept():
    skipped = Skips()
    for i in range(1000):
        skipped.add(i, Skip("invalid-json", "bad"))
    assert skipped.total == 1000 and skipped.examples == [f"line {i}: bad" for i in range(skipped.keep)]


def test_what_ifs_chosen_early_or_late_give_the_same_rates(tmp_path, monkeypatch):
    # Small batches, and provisional causes chosen after 2, 6 or all requests: early choices are
    # simulated along with the log (their first prompts replayed), a cause that only enters the top
    # later gets a second pass. Every way, the same what-if rates.
    from prefixlint.explain import log as log_module
    from prefixlint.explain import stream

    lines = [{"prompt": f"Request id: {5000 + 7 * i}\n{CATALOGUE}\nQuestion {i}?"} for i in range(4)]
    lines += [{"prompt": f"Session {20000 + 13 * i}\n{CATALOGUE}\nQuestion {i}?"} for i in range(12)]
    log = write_log(tmp_path / "log.jsonl", lines)
    monkeypatch.setattr(stream, "BATCH", 2)
    reports = []
    for provisional in (2, 6, 10**9):
        monkeypatch.setattr(log_module, "PROVISIONAL", provisional)
        reports.append(report_json(log, None, workers=1))
    assert reports[0] == reports[1] == reports[2]
    causes = json.loads(reports[0])["causes"]
    # After 2 requests only "Request id" is known; "Session" (12 requests) ranks first at the end.
    assert [c["anchor"] for c in causes if c["what_if"]] == ["Session", "Request id"]
    base = json.loads(reports[0])["engines"]["sglang"]["hit_rate"]
    assert causes[0]["what_if"]["sglang"] > causes[1]["what_if"]["sglang"] > base


def test_the_progress_bar_outlives_the_log_file(tmp_path, capsys):
    # With render workers the last batches are simulated after the reader has closed the log: the
    # bar shows the position the reader last reported, and ends at 100%.
    log = mixed_log(tmp_path)
    report_json(log, HEAD, workers=2, progress=True)
    err = capsys.readouterr().err
    assert err.rstrip().endswith("100.0% 16 requests")
    assert "   0.0%" not in err  # the reader's position, not a closed file's
