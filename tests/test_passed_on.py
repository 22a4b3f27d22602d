"""A parameter judged only by its name and passed on unchanged through wrappers is one guess:
reported once, where its text is built, not again at every caller that hands it down
(prefixlint/python/summaries.py). A value seen at its source passed in its place still is one."""

from __future__ import annotations

from pathlib import Path

from prefixlint.api import Options, lint_paths

OPTIONS = Options(multiturn=False)
TOOL = """from smolagents.models import Model


class Inspector:
    def __init__(self, model: Model = None):
        self.model = model

    def caption_file(self, file_path, question):
        text = self.reader.convert(file_path).text
        messages = [
            {"role": "system", "content": "Here is a file:\\n" + text},
            {"role": "user", "content": "Write a five-sentence caption for the document, for this question: "
             + question
             + "\\nDo not answer the question yourself, do not add anything the document does not say, and "
             "keep every figure, name and date exactly as the document writes it."},
        ]
        return self.model(messages).content
"""
HELPERS = '''from datetime import datetime

from smolagents.utils import AgentError


def describe(file_path: str, question: str, inspector) -> str:
    prompt = f"""Pay attention to details that help with: {question}. But do not answer it directly!
Do not add any information that is not present in the document, and keep it short and plain."""
    return inspector.caption_file(file_path=file_path, question=prompt)


def caption(file_path: str, question: str, inspector) -> str:
    return describe(file_path, question, inspector)


def caption_all(paths: list[str], question: str, inspector) -> list[str]:
    return [caption(p, question, inspector) for p in paths]


def caption_now(file_path: str, inspector) -> str:
    return describe(file_path, f"what changed before {datetime.now():%H:%M:%S}?", inspector)
'''


def _findings(tmp_path: Path) -> list[tuple[str, int, str]]:
    package = tmp_path / "app"
    package.mkdir()
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "tool.py").write_text(TOOL, encoding="utf-8")
    (package / "helpers.py").write_text(HELPERS, encoding="utf-8")
    (tmp_path / ".git").mkdir()
    report = lint_paths([str(tmp_path)], OPTIONS)
    return sorted((Path(d.span.path).name, d.span.line, d.code) for d in report.diagnostics)


def _line(source: str, text: str) -> int:
    return next(n for n, line in enumerate(source.splitlines(), 1) if text in line)


def test_a_guess_passed_on_is_reported_where_its_text_is_built(tmp_path: Path) -> None:
    found = _findings(tmp_path)
    helpers = [(line, code) for name, line, code in found if name == "helpers.py"]
    assert helpers == [
        (_line(HELPERS, "help with: {question}"), "PFX105"),
        (_line(HELPERS, "datetime.now()"), "PFX101"),
    ]
    assert ("tool.py", _line(TOOL, "+ question"), "PFX105") in found
