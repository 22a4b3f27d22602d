"""The pytest plugin (entry point `pytest11`): the `prefix_stability` fixture and the
`@pytest.mark.prefix_stable` marker. Inert unless a test uses one of them: importing this module
imports nothing of prefixlint's analysis.

    @pytest.mark.prefix_stable(template="models/qwen3")
    def test_support_prompt():
        return build_support_messages("Where is my order?")

    def test_with_fixture(prefix_stability):
        prefix_stability(lambda: build_support_messages("Where is my order?"))

Defaults for both can be set once in the pytest configuration: `prefix_stability_template`,
`prefix_stability_tokenizer`, `prefix_stability_engine`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import pytest

_INI = ("template", "tokenizer", "engine")


def pytest_addoption(parser: pytest.Parser) -> None:
    for name in _INI:
        parser.addini(
            f"prefix_stability_{name}",
            f"prefixlint.testing: the default `{name}` of prefix_stability and @pytest.mark.prefix_stable",
            default=None,
        )


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "prefix_stable(**options): the test returns (or yields) a prompt, messages or a request body; "
        "prefixlint builds it in several worlds and fails if its prefix changes "
        "(options as prefixlint.testing.assert_prefix_stable)",
    )


def _defaults(config: pytest.Config) -> dict[str, Any]:
    return {name: value for name in _INI if (value := config.getini(f"prefix_stability_{name}"))}


class PrefixStability:
    """What the `prefix_stability` fixture gives: `assert_prefix_stable` with the configured defaults."""

    def __init__(self, defaults: dict[str, Any]) -> None:
        self.defaults = defaults

    def __call__(self, build: Callable[[], Any], **options: Any) -> Any:
        __tracebackhide__ = True
        from prefixlint.testing import assert_prefix_stable

        return assert_prefix_stable(build, **{**self.defaults, **options})

    def check(self, build: Callable[[], Any], **options: Any) -> Any:
        """The Stability without failing the test (to assert on its figures)."""
        from prefixlint.testing import check_prefix_stable

        return check_prefix_stable(build, **{**self.defaults, **options})


@pytest.fixture
def prefix_stability(request: pytest.FixtureRequest) -> PrefixStability:
    return PrefixStability(_defaults(request.config))


def _marked(obj: Any) -> bool:
    return any(getattr(mark, "name", None) == "prefix_stable" for mark in getattr(obj, "pytestmark", ()))


@pytest.hookimpl(tryfirst=True)
def pytest_pycollect_makeitem(collector: pytest.Module | pytest.Class, name: str, obj: object) -> Any:
    """pytest refuses generator tests; a marked one yields its prompt (like a fixture), so collect it."""
    if not (inspect.isgeneratorfunction(obj) and _marked(obj) and collector.istestfunction(obj, name)):
        return None
    generate = getattr(collector, "_genfunctions", None)  # parametrize and fixtures as for any test
    if generate is not None:
        return list(generate(name, obj))
    return pytest.Function.from_parent(collector, name=name, callobj=obj)


def _first_yield(gen: Any) -> Any:
    """A generator test yields its prompt once, like a fixture; what follows is its teardown."""
    value = next(gen)
    try:
        next(gen)
    except StopIteration:
        return value
    raise TypeError("a @pytest.mark.prefix_stable test yields its prompt once")


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    marker = pyfuncitem.get_closest_marker("prefix_stable")
    if marker is None:
        return None
    __tracebackhide__ = True
    if marker.args:
        raise TypeError("@pytest.mark.prefix_stable takes keyword options only (template=, vary=, …)")
    function = pyfuncitem.obj
    arguments = {name: pyfuncitem.funcargs[name] for name in pyfuncitem._fixtureinfo.argnames}

    def build() -> Any:
        value = function(**arguments)
        return _first_yield(value) if inspect.isgenerator(value) else value

    PrefixStability(_defaults(pyfuncitem.config))(build, **marker.kwargs)
    return True
