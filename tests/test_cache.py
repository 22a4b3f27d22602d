"""The result cache: a warm run does not analyse again, and any input change is a miss."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import prefixlint.api as api
from prefixlint.api import Options, lint_paths
from prefixlint.report import render_report

CLOCK = (
    "{{- 'Today is ' + strftime_now('%d %B %Y') + '.\\n' }}\n{{- 'You answer questions about rooms.\\n' }}\n"
    "{%- for message in messages %}\n{{- message.role + '\\n' + message.content + '\\n' }}\n{%- endfor %}\n"
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "chat.jinja").write_text(CLOCK, encoding="utf-8")
    return tmp_path


def _count_analyses(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real = api.lint_source

    def counting(source, options, text=None):  # type: ignore[no-untyped-def]
        if text is None:  # not the analysis of a candidate fix's text (prefixlint/fixes/verify.py)
            calls.append(source.path)
        return real(source, options, text)

    monkeypatch.setattr(api, "lint_source", counting)
    return calls


def test_warm_run_reuses_results_and_reports_the_same(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_analyses(monkeypatch)
    options = Options(cache_dir=str(project / ".prefixlint_cache"))
    cold = render_report(lint_paths([str(project)], options), "json")
    warm = render_report(lint_paths([str(project)], options), "json")
    assert len(calls) == 1
    assert warm == cold and "PFX101" in warm
    entries = list((project / ".prefixlint_cache" / "v1").glob("*.json"))
    assert len(entries) == 1
    json.loads(entries[0].read_text(encoding="utf-8"))  # JSON, never pickle
    assert (project / ".prefixlint_cache" / ".gitignore").read_text().strip().endswith("*")


def test_filters_apply_on_cached_results(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_analyses(monkeypatch)
    cache_dir = str(project / ".prefixlint_cache")
    assert lint_paths([str(project)], Options(cache_dir=cache_dir)).diagnostics
    assert not lint_paths([str(project)], Options(cache_dir=cache_dir, ignore=("PFX1", "PFX3"))).diagnostics
    (project / "chat.jinja").write_text("{# prefixlint: ignore[PFX101] #}\n" + CLOCK, encoding="utf-8")
    assert [
        d.code for d in lint_paths([str(project)], Options(cache_dir=cache_dir, select=("PFX1",))).diagnostics
    ] == []
    assert len(calls) == 2  # select/ignore reuse the entry; the edited file is analysed again


def test_content_options_and_tokenizer_change_the_key(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_analyses(monkeypatch)
    cache_dir = str(project / ".prefixlint_cache")
    lint_paths([str(project)], Options(cache_dir=cache_dir))
    lint_paths([str(project)], Options(cache_dir=cache_dir, engine="openai"))
    lint_paths([str(project)], Options(cache_dir=cache_dir, static_variables=("tools",)))
    # A tokenizer.json placed beside the template changes what the analysis would use.
    from prefixlint.models.tokens import resolve_tokenizer_path

    (project / "tokenizer.json").write_bytes(resolve_tokenizer_path(None).read_bytes())
    lint_paths([str(project)], Options(cache_dir=cache_dir))
    assert len(calls) == 4


def test_a_corrupt_entry_is_a_miss(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = _count_analyses(monkeypatch)
    cache_dir = project / ".prefixlint_cache"
    lint_paths([str(project)], Options(cache_dir=str(cache_dir)))
    for entry in (cache_dir / "v1").glob("*.json"):
        entry.write_text('[{"path": 1}]', encoding="utf-8")
    assert lint_paths([str(project)], Options(cache_dir=str(cache_dir))).diagnostics
    assert len(calls) == 2


def test_no_cache_dir_means_no_cache(project: Path) -> None:
    lint_paths([str(project)], Options())
    assert not (project / ".prefixlint_cache").exists()


def test_a_changed_imported_module_is_a_miss(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A Python result depends on the modules it imports: editing one re-analyses the importer."""
    (tmp_path / "helpers.py").write_text("def stamp_line():\n    return 'Version 3.'\n", encoding="utf-8")
    agent = tmp_path / "agent.py"
    agent.write_text(
        "from helpers import stamp_line\n\n"
        "def system_prompt():\n"
        "    return stamp_line() + ' You answer questions about hotel rooms, prices and bookings, "
        "politely and in full sentences, and you never invent a room that is not listed.'\n",
        encoding="utf-8",
    )
    options = Options(cache_dir=str(tmp_path / ".prefixlint_cache"), project_root=str(tmp_path))
    calls = _count_analyses(monkeypatch)
    assert lint_paths([str(agent)], options).diagnostics == []
    assert lint_paths([str(agent)], options).diagnostics == []
    assert calls == [str(agent)]  # the second run came from the cache
    (tmp_path / "helpers.py").write_text(
        "import time\n\ndef stamp_line():\n    return 'Time: ' + time.ctime() + '.'\n", encoding="utf-8"
    )
    codes = [d.code for d in lint_paths([str(agent)], options).diagnostics]
    assert calls == [str(agent), str(agent)] and codes == ["PFX101"]
