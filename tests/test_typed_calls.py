"""A method call on a value whose class is known statically reaches the request of that class's
method or of an override in a project subclass (prefixlint/python/hierarchy.py): an agent that takes
`model: Model`, an abstract base whose subclass calls the real client."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.api import Options, lint_paths
from prefixlint.core.findings import Severity

OPTIONS = Options(multiturn=False)
NOT_FOUND = "no call that sends it to a model was found"
RULES = "\n".join(
    f"Rule {i}: answer politely, cite your sources and keep the reply focused on the question."
    for i in range(40)
)
MODELS = '''from openai import OpenAI


class Model:
    def __init__(self, model_id: str):
        self.model_id = model_id

    def generate(self, messages, stop_sequences=None):
        raise NotImplementedError

    def __call__(self, *args, **kwargs):
        """Models are callable."""
        return self.generate(*args, **kwargs)


class ApiModel(Model):
    pass


class OpenAIServerModel(ApiModel):
    def __init__(self, model_id: str, api_key: str | None = None):
        super().__init__(model_id)
        self.client = OpenAI(api_key=api_key)

    def generate(self, messages, stop_sequences=None):
        completion_kwargs = {"model": self.model_id, "messages": messages, "stop": stop_sequences}
        return self.client.chat.completions.create(**completion_kwargs)
'''
SYSTEM = '{"role": "system", "content": f"Now: {datetime.now()}\\n" + RULES}'
AGENT = f'''from datetime import datetime
from typing import Optional

from {{source}} import Model

RULES = """{RULES}"""


class Agent:
    def __init__(self, model: {{annotation}}):
        self.model = model

    def run(self, task: str):
        messages = [{SYSTEM}, {{{{"role": "user", "content": task}}}}]
        return self.model.generate(messages)

    def step(self, task: str):
        messages = [{SYSTEM}, {{{{"role": "user", "content": task}}}}]
        return self.model(messages)


def reformulate(task: str, reformulation_model: {{annotation}}):
    messages = [{SYSTEM}, {{{{"role": "user", "content": task}}}}]
    return reformulation_model(messages)
'''
# the system message of each of the three requests
CLOCK_LINES = [n for n, line in enumerate(AGENT.splitlines(), 1) if "datetime.now()" in line]


def _project(tmp_path: Path, annotation: str, source: str = "app.models", method: str = "generate") -> Path:
    """The project's root: the folder above its package `app`."""
    package = tmp_path / "app"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("", encoding="utf-8")
    (package / "models.py").write_text(MODELS.replace("generate", method), encoding="utf-8")
    agent = AGENT.replace("{source}", source).replace("{annotation}", annotation)
    (package / "agent.py").write_text(agent.replace("generate", method), encoding="utf-8")
    (tmp_path / ".git").mkdir()
    return tmp_path


def _clock_findings(root: Path) -> list[tuple[int, Severity, str]]:
    report = lint_paths([str(root)], OPTIONS)
    return sorted(
        (d.span.line, d.severity, d.message)
        for d in report.diagnostics
        if d.code == "PFX101" and Path(d.span.path).name == "agent.py"
    )


@pytest.mark.parametrize("method", ["generate", "forward"])  # `forward`: no name says it talks to a model
def test_a_call_on_an_annotated_base_reaches_the_subclass_request(tmp_path: Path, method: str) -> None:
    found = _clock_findings(_project(tmp_path, "Model", method=method))
    assert [line for line, _, _ in found] == CLOCK_LINES
    for _, severity, message in found:
        assert severity >= Severity.WARNING
        assert NOT_FOUND not in message
        assert "OpenAI chat completions" in message


def test_forward_references_and_optional_name_the_same_class(tmp_path: Path) -> None:
    found = _clock_findings(_project(tmp_path, '"Optional[Model]" = None'))
    assert [line for line, _, _ in found] == CLOCK_LINES
    assert all(severity >= Severity.WARNING and NOT_FOUND not in m for _, severity, m in found)


def test_an_annotation_naming_a_class_outside_the_project_changes_nothing(tmp_path: Path) -> None:
    # The project's own `Model` is not the one the agent is annotated with: `model(messages)` is
    # not its `__call__` (`.generate(...)` is still looked up by its name, as before).
    found = _clock_findings(_project(tmp_path, "Model", source="somelib.models"))
    assert [line for line, _, _ in found] == CLOCK_LINES
    assert all(severity is Severity.INFO and NOT_FOUND in m for _, severity, m in found[1:])


def test_a_base_whose_subclasses_send_nothing_reaches_no_request(tmp_path: Path) -> None:
    root = _project(tmp_path, "Model")
    models = root / "app" / "models.py"
    models.write_text(MODELS.replace("self.client.chat.completions.create", "print"), encoding="utf-8")
    found = _clock_findings(root)
    assert [line for line, _, _ in found] == CLOCK_LINES
    assert all(severity is Severity.INFO and NOT_FOUND in m for _, severity, m in found)


def test_a_src_layout_package_is_imported_from_the_projects_examples(tmp_path: Path) -> None:
    # `src/app/models.py` is importable as `app.models` from `examples/` (the package is installed
    # from `src/`): the example's `model(messages)` reaches the request.
    root = _project(tmp_path / "repo", "Model")
    (root / "src").mkdir()
    (root / "app").rename(root / "src" / "app")
    (root / "examples").mkdir()
    (root / "src" / "app" / "agent.py").rename(root / "examples" / "agent.py")
    found = _clock_findings(root)
    assert [line for line, _, _ in found] == CLOCK_LINES
    assert all(severity >= Severity.WARNING and NOT_FOUND not in m for _, severity, m in found)


def test_a_subclass_in_the_tests_is_a_test_double_not_a_model(tmp_path: Path) -> None:
    root = _project(tmp_path, "Model")
    models = root / "app" / "models.py"
    real = MODELS.split("class ApiModel")[0]
    models.write_text(real, encoding="utf-8")
    (root / "tests").mkdir()
    double = "from app.models import Model\n\n\nclass ApiModel" + MODELS.split("class ApiModel")[1]
    (root / "tests" / "fakes.py").write_text("from openai import OpenAI\n" + double, encoding="utf-8")
    found = _clock_findings(root)
    assert [line for line, _, _ in found] == CLOCK_LINES
    assert all(NOT_FOUND in m for _, _, m in found[1:])  # `.generate(...)` is still found by its name


def test_a_field_annotated_in_the_class_body_names_its_class(tmp_path: Path) -> None:
    root = _project(tmp_path, "Model")
    agent = root / "app" / "agent.py"
    source = agent.read_text(encoding="utf-8")
    source = source.replace(
        "class Agent:\n    def __init__(self, model: Model):\n        self.model = model\n",
        "@dataclass\nclass Agent:\n    model: Model\n",
    )
    assert "@dataclass" in source
    source = "from dataclasses import dataclass\n" + source
    agent.write_text(source, encoding="utf-8")
    found = _clock_findings(root)
    assert [line for line, _, _ in found] == [
        n for n, line in enumerate(source.splitlines(), 1) if "datetime.now()" in line
    ]
    assert all(severity >= Severity.WARNING and NOT_FOUND not in m for _, severity, m in found)


def test_a_parameter_annotated_with_a_modelled_class_is_that_library_s_sink(tmp_path: Path) -> None:
    # smolagents' `Model` is a row of the models table (`smolagents*.Model.__call__`, `.generate`):
    # `model(messages)` on a parameter declared so, kept as `self.model` or called where it is
    # given, sends the request, with no project class in between.
    root = _project(tmp_path, "Model", source="smolagents.models")
    (root / "app" / "models.py").unlink()
    found = _clock_findings(root)
    assert [line for line, _, _ in found] == CLOCK_LINES
    for _, severity, message in found:
        assert severity >= Severity.WARNING
        assert "smolagents model calls" in message and NOT_FOUND not in message


def test_a_parameter_rebound_in_its_function_is_not_its_annotated_class(tmp_path: Path) -> None:
    root = _project(tmp_path, "Model", source="smolagents.models")
    (root / "app" / "models.py").unlink()
    agent = root / "app" / "agent.py"
    source = agent.read_text(encoding="utf-8").replace(
        "    return reformulation_model(messages)",
        "    reformulation_model = make_reformulator()\n    return reformulation_model(messages)",
    )
    agent.write_text(source, encoding="utf-8")
    found = _clock_findings(root)
    assert [line for line, _, _ in found][:2] == CLOCK_LINES[:2]
    last = [m for line, _, m in found if line == CLOCK_LINES[2]]
    assert last and all("smolagents model calls" not in m for m in last)
