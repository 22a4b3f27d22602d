"""A build run inside a world: the prompt builder called with the world's clock, ids and
environment in place (and its calls recorded), an async build awaited to its end. Shared by the
stability check and the child interpreters of `processes=`, below both."""

from __future__ import annotations

import asyncio
import inspect
import threading
from collections.abc import Callable
from typing import Any

from prefixlint.testing.record import Call
from prefixlint.testing.worlds import World, entered


def _await_in_world(awaitable: Any) -> Any:
    """Run an async build to its end inside the world: here when no event loop runs in this
    thread, else on a thread of its own (recorded there too)."""

    async def awaited() -> Any:
        return await awaitable

    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(awaited())
    outcome: dict[str, Any] = {}

    def run() -> None:  # recorded: threads started inside a world get the recorder's profile hook
        try:
            outcome["value"] = asyncio.run(awaited())
        except BaseException as exc:  # handed back to the caller's thread
            outcome["error"] = exc

    worker = threading.Thread(target=run, name="prefixlint-build")
    worker.start()
    worker.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def build_in(build: Callable[[], Any], world: World, vary: tuple[str, ...]) -> tuple[Any, list[Call]]:
    with entered(world, vary) as recorder:
        value = build()
        if inspect.isawaitable(value):
            value = _await_in_world(value)
    return value, recorder.calls
