"""prefixlint.testing.assert_conversation_stable on the agent loops of fixtures/testing/agent_loops.py:
each fault is reported at its turn, part, message index and kind (explain's classification), at the
line marked `# cause:` in the loop; the clean loop passes."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import FIXTURES

from prefixlint.testing import (
    ConversationUnstableError,
    assert_conversation_stable,
    check_conversation_stable,
)

LOOPS = FIXTURES / "testing" / "agent_loops.py"


@pytest.fixture
def loops(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(LOOPS.parent))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    import agent_loops

    return agent_loops


def cause_line(tag: str) -> int:
    lines = LOOPS.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.rstrip().endswith(f"# cause: {tag}"))


def test_a_clean_loop_passes(loops) -> None:
    result = assert_conversation_stable(loops.clean, turns=4)
    assert result.stable and result.turns == 4 and result.turn is None


def test_an_environment_block_only_in_the_newest_message(loops) -> None:
    with pytest.raises(ConversationUnstableError) as caught:
        assert_conversation_stable(loops.environment_in_newest, turns=4)
    result = caught.value.result
    assert (result.turn, result.part, result.message_index, result.kind) == (1, "messages", 1, "edited")
    assert Path(result.path).name == "agent_loops.py" and result.line == cause_line("environment")
    assert "<env>open tabs: 0</env>" in result.difference and result.tokens_lost > 0
    assert f"agent_loops.py:{result.line} turn 1's request does not extend turn 0's at messages[1]" in str(
        caught.value
    )


def test_a_reminder_moved_on_resume_in_a_generator(loops) -> None:
    result = check_conversation_stable(loops.reminder_moved_on_resume())
    assert not result.stable
    assert (result.turn, result.part, result.message_index, result.kind) == (2, "messages", 0, "moved")
    assert result.line == cause_line("moved")


def test_tools_in_another_order(loops) -> None:
    result = check_conversation_stable(loops.tools_from_a_set, turns=3)
    assert (result.turn, result.part, result.message_index, result.kind) == (1, "tools", 0, "reordered")
    assert result.line == cause_line("tools")


def test_a_generator_function_and_bad_input() -> None:
    def loop():
        yield [{"role": "user", "content": "a"}]
        yield [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]

    assert check_conversation_stable(loop).stable
    with pytest.raises(ValueError, match="turns"):
        check_conversation_stable(lambda k: [])
    with pytest.raises(TypeError, match="not int"):
        check_conversation_stable(iter([1, 2]))


def test_set_order_between_processes(loops) -> None:
    from prefixlint.testing import check_prefix_stable

    # In one process the set's order is the same every time: the worlds alone see nothing.
    assert check_prefix_stable(loops.system_from_a_set).stable
    result = check_prefix_stable(loops.system_from_a_set, processes=2)
    assert not result.stable and result.cause.kind == "hash-seed"
    assert result.cause.world == "in another process (PYTHONHASHSEED=2, not 1)"
    assert result.static_tokens_lost > 100 and "sorted(names)" in result.message
    assert check_prefix_stable(loops.system_from_a_sorted_set, processes=2).stable


def test_processes_needs_an_importable_build() -> None:
    from prefixlint.testing import check_prefix_stable

    with pytest.raises(ValueError, match="module-level function"):
        check_prefix_stable(lambda: "x", processes=2)
    with pytest.raises(ValueError, match="processes"):
        check_prefix_stable(lambda: "x", processes=0)
