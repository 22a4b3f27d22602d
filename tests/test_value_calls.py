"""Requests reached through values (prefixlint/python/valuecalls.py, registries.py): a callable
parameter whose callers pass a method, a closure a factory makes, a lambda or their own parameter;
classes picked from a registry by name; and where a registry cannot be resolved, the wording that
says so. Small projects written to a folder and checked with the real pipeline (nothing run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from prefixlint.api import Options, lint_paths
from prefixlint.core.findings import Severity

OPTIONS = Options(multiturn=False)
NOT_FOUND = "no call that sends it to a model was found"
UNRESOLVED = "could not be resolved statically"
RULES = (
    "Answer in plain English and cite the knowledge base article you rely on by its title. Never "
    "invent order numbers, prices or delivery dates. Escalate refunds over fifty euros to a human "
    "agent, and keep every answer under two hundred words, with the most important sentence first."
)

THINKING = f'''from datetime import datetime

RULES = "{RULES}"


class Reflector:
    def think(self, agent_invoker, question):
        return self._after(agent_invoker, question)

    def _after(self, agent_invoker, question):
        prompt = f"Now: {{datetime.now()}}\\n{{RULES}}"
        messages = [{{"role": "system", "content": prompt}}, {{"role": "user", "content": question}}]
        return agent_invoker(messages)
'''
CLOCK_LINE = next(n for n, line in enumerate(THINKING.splitlines(), 1) if "datetime.now()" in line)

EXECUTOR = """from openai import OpenAI

from app.thinking import Reflector


class Executor:
    def __init__(self):
        self.client = OpenAI()
        self.reflector = Reflector()

    def _invoke_provider(self, messages):
        return self.client.chat.completions.create(model="m", messages=messages)

    def _build_invoker(self):
        def invoke(conversation):
            return self._invoke_provider(conversation)

        return invoke

    def run(self, question):
        {call}
"""
PASSED = {
    "a method": "return self.reflector.think(self._invoke_provider, question)",
    "a closure a factory returns": (
        "invoker = self._build_invoker()\n        return self.reflector.think(invoker, question)"
    ),
    "a lambda": (
        "return self.reflector.think(\n"
        '            lambda m: self.client.chat.completions.create(model="m", messages=m), question\n'
        "        )"
    ),
}


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, content in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(content, encoding="utf-8")
    (root / ".git").mkdir(exist_ok=True)
    return root


def _findings(root: Path, name: str) -> list[tuple[str, int, Severity, str]]:
    report = lint_paths([str(root)], OPTIONS)
    return sorted(
        (d.code, d.span.line, d.severity, d.message)
        for d in report.diagnostics
        if Path(d.span.path).name == name and d.code.startswith("PFX1")
    )


def _thinking_project(root: Path, call: str) -> Path:
    return _write(
        root,
        {
            "app/__init__.py": "",
            "app/thinking.py": THINKING,
            "app/executor.py": EXECUTOR.format(call=call),
        },
    )


@pytest.mark.parametrize("passed", sorted(PASSED))
def test_a_callable_parameter_reaches_what_its_callers_pass(tmp_path: Path, passed: str) -> None:
    # `agent_invoker` is passed on by `think` to `_after`, which calls it: two callers up, in
    # another module, the executor passes what reaches the client.
    found = _findings(_thinking_project(tmp_path, PASSED[passed]), "thinking.py")
    assert [(code, line) for code, line, _, _ in found] == [("PFX101", CLOCK_LINE)]
    (_, _, severity, message) = found[0]
    assert severity >= Severity.WARNING
    assert NOT_FOUND not in message and "OpenAI chat completions" in message


def test_a_callable_parameter_given_a_logger_is_no_request(tmp_path: Path) -> None:
    found = _findings(
        _thinking_project(tmp_path, "return self.reflector.think(print, question)"), "thinking.py"
    )
    assert [(code, line, severity) for code, line, severity, _ in found] == [
        ("PFX101", CLOCK_LINE, Severity.INFO)
    ]
    assert NOT_FOUND in found[0][3]


PROVIDERS = """from openai import OpenAI

_REGISTRY = {}


def register(name):
    def deco(cls):
        _REGISTRY[name] = cls
        return cls

    return deco


class ModelProvider:
    def execute(self, messages):
        raise NotImplementedError


@register("openai")
class OpenAIProvider(ModelProvider):
    def execute(self, messages):
        return OpenAI().chat.completions.create(model="m", messages=messages)


class EchoProvider(ModelProvider):
    def execute(self, messages):
        return print(messages)


PROVIDERS = {"echo": EchoProvider, "openai": OpenAIProvider}
LOGGERS = {"echo": EchoProvider}


def get_provider(name):
    return _REGISTRY[name]
"""
LOOKUPS = {
    "a dict display, subscripted": "return PROVIDERS[kind]().execute(messages)",
    "a dict display, `.get`": "cls = PROVIDERS.get(kind)\n    return cls().execute(messages)",
    "a decorator's registry, through a getter": (
        "provider = get_provider(kind)()\n    return provider.execute(messages)"
    ),
}
AGENT = f'''from datetime import datetime

from app.providers import LOGGERS, PROVIDERS, get_provider

RULES = "{RULES}"


def respond(kind, question):
    system = {{"role": "system", "content": f"Now: {{datetime.now()}}\\n{{RULES}}"}}
    messages = [system, {{"role": "user", "content": question}}]
    {{lookup}}
'''
AGENT_CLOCK = next(n for n, line in enumerate(AGENT.splitlines(), 1) if "datetime.now()" in line)


@pytest.mark.parametrize("lookup", sorted(LOOKUPS))
def test_an_object_from_a_registry_runs_the_registered_classes_methods(tmp_path: Path, lookup: str) -> None:
    root = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/providers.py": PROVIDERS,
            "app/agent.py": AGENT.replace("{lookup}", LOOKUPS[lookup]),
        },
    )
    found = _findings(root, "agent.py")
    assert [(code, line) for code, line, _, _ in found] == [("PFX101", AGENT_CLOCK)]
    assert found[0][2] >= Severity.WARNING and NOT_FOUND not in found[0][3]


def test_a_registry_of_classes_that_send_nothing_reaches_no_request(tmp_path: Path) -> None:
    agent = AGENT.replace("{lookup}", "return LOGGERS[kind]().execute(messages)")
    root = _write(tmp_path, {"app/__init__.py": "", "app/providers.py": PROVIDERS, "app/agent.py": agent})
    found = _findings(root, "agent.py")
    assert all(severity is Severity.INFO for _, _, severity, _ in found)


UNSEEN_REGISTRY = f'''from datetime import datetime

from app.plugins import load_registry

RULES = "{RULES}"
_provider_registry = load_registry()


def respond(kind, question):
    provider = _provider_registry[kind]()
    system = {{"role": "system", "content": f"Now: {{datetime.now()}}\\n{{RULES}}"}}
    messages = [system, {{"role": "user", "content": question}}]
    return provider.execute(messages)
'''


def test_a_registry_that_cannot_be_read_says_the_sink_could_not_be_resolved(tmp_path: Path) -> None:
    root = _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/plugins.py": "def load_registry():\n    return {}\n",
            "app/agent.py": UNSEEN_REGISTRY,
        },
    )
    found = _findings(root, "agent.py")
    assert len(found) == 1
    _, _, severity, message = found[0]
    assert severity is Severity.INFO
    assert UNRESOLVED in message and "app/agent.py:10" in message and NOT_FOUND not in message


FORWARDERS = f'''from datetime import datetime

from openai import OpenAI

client = OpenAI()
RULES = "{RULES}"


def describe(fn, *args, **kwargs):
    return fn.__name__


def respond(question):
    prompt = f"Now: {{datetime.now()}}\\n{{RULES}}"
    return describe(client.chat.completions.create, messages=[{{"role": "system", "content": prompt}}])
'''


def test_a_project_function_given_a_sink_it_does_not_call_sends_nothing(tmp_path: Path) -> None:
    found = _findings(_write(tmp_path, {"app.py": FORWARDERS}), "app.py")
    assert [(code, severity) for code, _, severity, _ in found] == [("PFX101", Severity.INFO)]


PAYLOADS = f'''from datetime import datetime

from anthropic import Anthropic

RULES = "{RULES}"


class Provider:
    def __init__(self):
        self.client = Anthropic()

    def _build_payload(self, question):
        payload = {{"model": "m", "max_tokens": 512}}
        payload["system"] = f"Now: {{datetime.now()}}\\n{{RULES}}"
        payload["messages"] = [{{"role": "user", "content": question}}]
        return payload

    def ask(self, question):
        return self.client.messages.create(**self._build_payload(question))
'''


def test_keywords_a_helper_builds_by_assignments_are_the_request(tmp_path: Path) -> None:
    found = _findings(_write(tmp_path, {"app.py": PAYLOADS}), "app.py")
    clock = next(n for n, line in enumerate(PAYLOADS.splitlines(), 1) if "datetime.now()" in line)
    assert [(code, line) for code, line, _, _ in found] == [("PFX101", clock)]
    assert found[0][2] >= Severity.WARNING and "Anthropic messages" in found[0][3]


CLOSURE = f'''from datetime import datetime

from openai import OpenAI

RULES = "{RULES}"


class Client:
    def __init__(self):
        self.client = OpenAI()

    def ask(self, messages):
        def _call():
            return self.client.chat.completions.create(model="m", messages=messages)

        return self._execute_with_retry(_call)

    def _execute_with_retry(self, func):
        return func()


def respond(question):
    system = {{"role": "system", "content": f"Now: {{datetime.now()}}\\n{{RULES}}"}}
    return Client().ask([system, {{"role": "user", "content": question}}])
'''


def test_a_closure_reads_the_parameters_of_the_function_around_it(tmp_path: Path) -> None:
    # `_call` sends `messages`, a parameter of `ask`: a call of `ask` sends what it passes.
    found = _findings(_write(tmp_path, {"app.py": CLOSURE}), "app.py")
    clock = next(n for n, line in enumerate(CLOSURE.splitlines(), 1) if "datetime.now()" in line)
    assert [(code, line) for code, line, _, _ in found] == [("PFX101", clock)]
    assert found[0][2] >= Severity.WARNING and NOT_FOUND not in found[0][3]


PARTIAL_THEN_POSITIONAL = f'''from datetime import datetime
from functools import partial

from anthropic import Anthropic

client = Anthropic()
RULES = "{RULES}"


def respond(question):
    system = f"Now: {{datetime.now()}}\\n{{RULES}}"
    send = partial(client.messages.create, system=system, max_tokens=512)
    return send("claude", messages=[{{"role": "user", "content": question}}])
'''


def test_a_partials_keywords_and_the_calls_positionals_make_one_call(tmp_path: Path) -> None:
    found = _findings(_write(tmp_path, {"app.py": PARTIAL_THEN_POSITIONAL}), "app.py")
    clock = next(
        n for n, line in enumerate(PARTIAL_THEN_POSITIONAL.splitlines(), 1) if "datetime.now()" in line
    )
    assert [(code, line) for code, line, _, _ in found] == [("PFX101", clock)]
    assert found[0][2] >= Severity.WARNING and "Anthropic messages" in found[0][3]
