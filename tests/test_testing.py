"""prefixlint.testing: the example apps of fixtures/testing run through assert_prefix_stable; each
test asserts the cause and the file:line reported, and that every patch is undone."""

from __future__ import annotations

import asyncio
import getpass
import os
import platform
import random
import secrets
import socket
import sys
import textwrap
import threading
import uuid
from pathlib import Path

import pytest
import time_machine
from conftest import CORPUS, FIXTURES

from prefixlint.models.tokens import load_tokenizer
from prefixlint.testing import UNVARIED, PrefixUnstableError, assert_prefix_stable, check_prefix_stable

APPS = FIXTURES / "testing"


@pytest.fixture
def apps(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The example apps importable, paths shown relative to their folder, no bytecode written."""
    monkeypatch.syspath_prepend(str(APPS / "site-packages"))
    monkeypatch.syspath_prepend(str(APPS))
    monkeypatch.chdir(APPS)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return APPS


def cause_line(app_file: str, tag: str) -> int:
    """The line of an example app marked `# cause: TAG`."""
    lines = (APPS / app_file).read_text().splitlines()
    return next(n for n, text in enumerate(lines, 1) if text.endswith(f"# cause: {tag}"))


def tokens_of(text: str) -> int:
    return len(load_tokenizer(None).encode(text).ids)


def test_clock_three_calls_deep(apps: Path) -> None:
    from deskapp.prompts import build_messages

    with pytest.raises(PrefixUnstableError) as failed:
        assert_prefix_stable(lambda: build_messages("Where is my order?"))
    result = failed.value.result
    cause = result.cause
    assert (cause.kind, cause.call, cause.path, cause.line) == (
        "clock",
        "datetime.now()",
        "deskapp/helpers/clock.py",
        cause_line("deskapp/helpers/clock.py", "clock"),
    )
    assert cause.line == 5
    # "Saturday 14 March" (the base world) against "Tuesday 14 April" (a month later) and "Sunday 15
    # March" (a day later): the weekday is the first text that differs, right after this prefix.
    assert result.token_index == tokens_of("<|im_start|>system\nNorthwind support desk,")
    assert cause.differs_in == ("a day later", "a month later")  # %H:%M hides a second
    assert cause.values == ("2026-03-14 09:26:53", "2026-04-14 09:26:53")
    assert result.static_tokens_lost > 100  # the whole policy text after it
    headline = str(failed.value).splitlines()[0]
    assert headline == (
        f"deskapp/helpers/clock.py:5 datetime.now() → token {result.token_index} of {result.tokens}; "
        f"{result.engine_tokens_lost} static tokens recomputed per request on vllm"
    )


def test_id_from_a_framework_object_points_at_the_apps_line(apps: Path) -> None:
    from ticketapp.handlers import triage

    result = check_prefix_stable(lambda: triage("My book arrived with a torn cover."))
    assert not result.stable
    cause = result.cause
    # uuid4() runs in the framework (site-packages): the site is the app's line that made the request.
    assert (cause.kind, cause.call, cause.path, cause.line) == (
        "ids",
        "uuid.uuid4()",
        "ticketapp/handlers.py",
        cause_line("ticketapp/handlers.py", "id"),
    )
    assert cause.differs_in == ("a second later", "a day later", "a month later")
    assert result.token_index == tokens_of("<|im_start|>system\nTicket")


def test_environment_value_in_an_anthropic_body(apps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from envapp.prompt import anthropic_body

    monkeypatch.setenv("DEPLOY_REGION", "eu-west-1")
    result = check_prefix_stable(lambda: anthropic_body("Middlemarch"), vary=("environment",))
    cause = result.cause
    assert (cause.kind, cause.call, cause.path, cause.line) == (
        "environment",
        "os.environ['DEPLOY_REGION']",
        "envapp/settings.py",
        cause_line("envapp/settings.py", "environment"),
    )
    assert cause.values == ("eu-west-1", "eu-west-1-w1")
    assert not result.stable
    assert os.environ["DEPLOY_REGION"] == "eu-west-1"


def test_date_appended_at_the_end_is_stable(apps: Path) -> None:
    from dateapp.prompt import build_messages

    result = assert_prefix_stable(lambda: build_messages("Novels about the sea"))
    assert result.stable
    # It does differ, in the last message: nothing static follows it there.
    assert (result.cause.call, result.cause.path, result.cause.line) == (
        "date.today()",
        "dateapp/prompt.py",
        cause_line("dateapp/prompt.py", "clock"),
    )
    assert result.static_tokens_lost == 0
    assert result.cause.values == ("2026-03-14", "2026-04-14")


def test_async_builder(apps: Path) -> None:
    from asyncapp.prompt import build_prompt

    with pytest.raises(PrefixUnstableError) as failed:
        assert_prefix_stable(lambda: build_prompt("Customer: where is order 1234?"))
    cause = failed.value.result.cause
    assert (cause.kind, cause.call, cause.path, cause.line) == (
        "ids",
        "secrets.token_hex()",
        "asyncapp/tracing.py",
        cause_line("asyncapp/tracing.py", "ids"),
    )
    assert failed.value.result.token_index == tokens_of("[trace ")


def test_async_builder_from_inside_a_running_event_loop(apps: Path) -> None:
    from asyncapp.prompt import build_prompt

    async def an_async_test() -> object:
        return check_prefix_stable(lambda: build_prompt("Hi"))

    result = asyncio.run(an_async_test())
    assert (result.cause.call, result.cause.path, result.cause.line) == (
        "secrets.token_hex()",
        "asyncapp/tracing.py",
        cause_line("asyncapp/tracing.py", "ids"),
    )


def write_module(folder: Path, name: str, source: str) -> Path:
    path = folder / f"{name}.py"
    path.write_text(textwrap.dedent(source).lstrip(), encoding="utf-8")
    return path


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return tmp_path


STATIC = "Answer in English, in at most three sentences, and cite the handbook section you used. " * 8


def test_changed_without_a_varied_cause(scratch: Path) -> None:
    write_module(
        scratch,
        "counter_app",
        f"""
        CALLS = [0]

        def build():
            CALLS[0] += 1
            return f"Request number {{CALLS[0]}}\\n" + {STATIC!r}
        """,
    )
    import counter_app

    result = check_prefix_stable(counter_app.build)
    assert not result.stable
    assert result.cause.kind is None
    assert result.cause.world == "the same world again"
    assert result.cause.path is None
    assert UNVARIED in result.message
    assert result.token_index == tokens_of("Request number ")


def test_an_id_not_under_vary_is_found_but_not_blamed_on_vary(scratch: Path) -> None:
    write_module(
        scratch,
        "unvaried_id_app",
        f"""
        import uuid

        def build():
            return f"Session {{uuid.uuid4()}}\\n" + {STATIC!r}
        """,
    )
    import unvaried_id_app

    result = check_prefix_stable(unvaried_id_app.build, vary=("clock",))
    assert (result.cause.kind, result.cause.call, result.cause.path, result.cause.line) == (
        None,
        "uuid.uuid4()",
        "unvaried_id_app.py",
        4,
    )
    assert result.message.splitlines()[1].startswith(f"  cause: {UNVARIED}")


def test_shuffled_few_shot_examples(scratch: Path) -> None:
    write_module(
        scratch,
        "fewshot_app",
        f"""
        import random

        EXAMPLES = ["Q: 2+2? A: 4", "Q: capital of France? A: Paris", "Q: largest planet? A: Jupiter"]

        def build():
            shots = random.sample(EXAMPLES, k=3)
            return "\\n".join(shots) + "\\n" + {STATIC!r}
        """,
    )
    import fewshot_app

    result = check_prefix_stable(fewshot_app.build, vary=("random",))
    assert (result.cause.kind, result.cause.call, result.cause.path, result.cause.line) == (
        "random",
        "random.sample()",
        "fewshot_app.py",
        6,
    )


def test_hostname_and_an_unrecognised_date_format(scratch: Path) -> None:
    write_module(
        scratch,
        "host_app",
        f"""
        import socket
        from datetime import datetime

        def build():
            day = datetime.now().strftime("day %j")
            return f"host {{socket.gethostname()}}\\n{{day}}\\n" + {STATIC!r}
        """,
    )
    import host_app

    result = check_prefix_stable(host_app.build)
    assert (result.cause.kind, result.cause.call, result.cause.line) == (
        "environment",
        "socket.gethostname()",
        6,
    )
    write_module(
        scratch,
        "uname_app",
        f"""
        import platform

        def build():
            return f"node {{platform.uname().node}}\\n" + {STATIC!r}
        """,
    )
    import uname_app

    result = check_prefix_stable(uname_app.build)
    assert (result.cause.kind, result.cause.call, result.cause.line) == ("environment", "platform.uname()", 4)
    # Without the hostname, the day of the year (a format attribution does not know) is the cause:
    # found by varying one kind at a time.
    result = check_prefix_stable(host_app.build, vary=("clock", "ids", "random"))
    assert (result.cause.kind, result.cause.call, result.cause.line) == ("clock", "datetime.now()", 5)


def test_min_static_tokens_and_engines(apps: Path) -> None:
    from deskapp.prompts import build_messages

    def build() -> list[dict[str, str]]:
        return build_messages("Where is my order?")

    result = check_prefix_stable(build)
    assert assert_prefix_stable(build, min_static_tokens=result.static_tokens_lost + 1).stable
    with pytest.raises(PrefixUnstableError):
        assert_prefix_stable(build, min_static_tokens=result.static_tokens_lost)
    # OpenAI caches nothing under 1,024 tokens: this short prompt loses nothing there.
    assert check_prefix_stable(build, engine="openai").engine_tokens_lost == 0


@pytest.mark.skipif(not (CORPUS / "tokenizers" / "qwen3").is_dir(), reason="../shared/corpus is absent")
def test_with_a_model_folder_template_and_tokenizer(apps: Path) -> None:
    from deskapp.prompts import build_messages

    model = str(CORPUS / "tokenizers" / "qwen3")
    result = check_prefix_stable(lambda: build_messages("Where is my order?"), template=model)
    assert (result.cause.call, result.cause.path) == ("datetime.now()", "deskapp/helpers/clock.py")
    qwen = load_tokenizer(model)
    assert result.token_index == len(qwen.encode("<|im_start|>system\nNorthwind support desk,").ids)


def test_stable_prompt_passes(scratch: Path) -> None:
    result = assert_prefix_stable(
        lambda: [{"role": "system", "content": STATIC}, {"role": "user", "content": "hi"}]
    )
    assert result.stable and result.token_index is None and result.cause is None


def test_bad_input_says_what(scratch: Path) -> None:
    with pytest.raises(ValueError, match="vary: unknown 'time'"):
        check_prefix_stable(lambda: "x", vary=("time",))
    with pytest.raises(ValueError, match="engine: unknown 'tgi'"):
        check_prefix_stable(lambda: "x", engine="tgi")
    with pytest.raises(TypeError, match="not int"):
        check_prefix_stable(lambda: 42)
    with pytest.raises(TypeError, match="neither `messages`"):
        check_prefix_stable(lambda: {"model": "x"})
    with pytest.raises(ValueError, match="no such file"):
        check_prefix_stable(lambda: "x", template=str(scratch / "missing.jinja"))
    with pytest.raises(ValueError, match="missing.json: no such file"):
        check_prefix_stable(lambda: "x", tokenizer=str(scratch / "missing.json"))
    (scratch / "raises.jinja").write_text("{{ raise_exception('no system message') }}")
    with pytest.raises(ValueError, match="raised for the built request: TemplateError: no system message"):
        check_prefix_stable(lambda: [{"role": "user", "content": "hi"}], template="raises.jinja")


def patchable() -> tuple[object, ...]:
    """Everything a world patches, as it is now."""
    return (
        uuid.uuid4,
        os.urandom,
        os.getcwd,
        os.getpid,
        socket.gethostname,
        platform.node,
        platform.uname,
        getpass.getuser,
        type(os.environ).__getitem__,
        secrets._sysrand,
        secrets.choice,
    )


def test_every_patch_is_undone_also_when_the_build_raises(scratch: Path) -> None:
    originals = patchable()
    random_state = random.getstate()
    profiler = sys.getprofile()

    def build() -> str:
        uuid.uuid4()
        raise RuntimeError("the app failed")

    with pytest.raises(RuntimeError, match="the app failed"):
        check_prefix_stable(build)
    with pytest.raises(PrefixUnstableError):
        assert_prefix_stable(lambda: f"{uuid.uuid4()} {STATIC}")
    assert all(a is b for a, b in zip(originals, patchable(), strict=True))
    assert random.getstate() == random_state
    assert sys.getprofile() is profiler
    assert threading.getprofile() is None
    assert not time_machine.escape_hatch.is_travelling()


def test_message_objects_and_a_clock_read_on_another_thread(scratch: Path) -> None:
    write_module(
        scratch,
        "threaded_app",
        f"""
        from concurrent.futures import ThreadPoolExecutor
        from dataclasses import dataclass
        from datetime import datetime


        @dataclass
        class HumanMessage:  # the shape of LangChain's messages: a `type` and a `content`
            content: str
            type: str = "human"


        @dataclass
        class SystemMessage:
            content: str
            type: str = "system"


        def build():
            with ThreadPoolExecutor(1) as pool:
                now = pool.submit(datetime.now).result()
            return [SystemMessage(f"It is {{now:%H:%M:%S}}.\\n" + {STATIC!r}), HumanMessage("hi")]
        """,
    )
    import threaded_app

    result = check_prefix_stable(threaded_app.build, vary=("clock",))
    # Seen on the pool's thread; called by the pool itself, so no line of the app to point at.
    assert (result.cause.kind, result.cause.call, result.cause.path) == ("clock", "datetime.now()", None)
    assert result.token_index == tokens_of("<|im_start|>system\nIt is 09:26:")  # "53" is one token
    assert result.cause.differs_in == ("a second later",)


def test_secrets_choice_is_an_id_and_random_choice_stays_random(scratch: Path) -> None:
    write_module(
        scratch,
        "nonce_app",
        f"""
        import random
        import secrets

        def build():
            nonce = "".join(secrets.choice("abcdefghijklmnop") for _ in range(12))
            return f"nonce {{nonce}} tone {{random.choice(['warm', 'crisp', 'plain'])}}\\n" + {STATIC!r}
        """,
    )
    import nonce_app

    result = check_prefix_stable(nonce_app.build, vary=("ids",))
    assert (result.cause.kind, result.cause.line) == ("ids", 5)
    result = check_prefix_stable(lambda: nonce_app.build().split(" tone ")[1], vary=("random",))
    assert (result.cause.kind, result.cause.call, result.cause.line) == ("random", "random.choice()", 6)


def test_the_same_message_in_any_time_zone(apps: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import time

    from deskapp.prompts import build_messages

    def message() -> str:
        return check_prefix_stable(lambda: build_messages("Where is my order?")).message

    first = message()
    monkeypatch.setenv("TZ", "Pacific/Kiritimati")  # UTC+14: another date than UTC half the day
    time.tzset()
    try:
        assert message() == first
    finally:
        monkeypatch.undo()
        time.tzset()


def test_the_chat_templates_own_clock_reads_the_worlds_clock(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(FIXTURES)
    result = check_prefix_stable(
        lambda: [{"role": "user", "content": "Can I change my flight to Lisbon?"}],
        template="templates/clock_in_system.jinja",
    )
    assert not result.stable
    assert (result.cause.kind, result.cause.call, result.cause.path, result.cause.line) == (
        "clock",
        'strftime_now("%d %B %Y")',
        "templates/clock_in_system.jinja",
        3,
    )
    # "14 March" against "15 March" differs one character before "14 April" does: the day names it.
    assert result.cause.values == ("14 March 2026", "15 March 2026")
    assert result.cause.differs_in == ("a day later", "a month later")


def test_the_readme_shows_the_real_failure(apps: Path) -> None:
    from deskapp.prompts import build_messages

    readme = (FIXTURES.parent / "README.md").read_text(encoding="utf-8")
    shown = readme.split("three calls below `build_messages`) with\n\n```\n", 1)[1].split("\n```", 1)[0]
    assert shown == check_prefix_stable(lambda: build_messages("Where is my order?")).message.splitlines()[0]
