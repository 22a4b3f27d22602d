"""Prefix stability as a test in the user's own suite: call the user's prompt-building function in
several worlds (the clock moved, ids, randomness and the environment answering differently) and
fail with the first divergent token and the user's source line that caused it.

The one place where prefixlint runs user code: the user's test suite calls its own `build`.
Nothing else in prefixlint imports this package. Its names load on first use, so that the pytest
plugin (prefixlint.testing.plugin, loaded in every session) costs nothing until a test uses it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from prefixlint.testing.conversation import (
        ConversationStability,
        ConversationUnstableError,
        assert_conversation_stable,
        check_conversation_stable,
    )
    from prefixlint.testing.stability import (
        UNVARIED,
        Cause,
        PrefixUnstableError,
        Stability,
        assert_prefix_stable,
        check_prefix_stable,
    )
    from prefixlint.testing.worlds import KINDS

_CONVERSATION = (
    "ConversationStability",
    "ConversationUnstableError",
    "assert_conversation_stable",
    "check_conversation_stable",
)
__all__ = [
    "KINDS",
    "UNVARIED",
    "Cause",
    "ConversationStability",
    "ConversationUnstableError",
    "PrefixUnstableError",
    "Stability",
    "assert_conversation_stable",
    "assert_prefix_stable",
    "check_conversation_stable",
    "check_prefix_stable",
]


def __getattr__(name: str) -> Any:
    if name == "KINDS":
        from prefixlint.testing import worlds

        return worlds.KINDS
    if name in _CONVERSATION:
        from prefixlint.testing import conversation

        return getattr(conversation, name)
    if name in __all__:
        from prefixlint.testing import stability

        return getattr(stability, name)
    raise AttributeError(f"module 'prefixlint.testing' has no attribute {name!r}")
