"""The worlds a build runs in: the clock at a fixed moment (moved by a second, a day, a month),
ids and randomness fed from a seed per world, the environment answering differently. Every patch
is made on entering a world and undone on leaving it, also when the build raises."""

from __future__ import annotations

import getpass
import os
import platform
import random
import secrets
import socket
import sys
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from prefixlint.testing.record import Recorder, is_stdlib

KINDS = ("clock", "ids", "random", "environment")
KIND_LABELS = {
    "clock": "the clock",
    "ids": "an id",
    "random": "randomness",
    "environment": "the environment",
    # Not a world of one process: check_prefix_stable(processes=N) runs fresh interpreters.
    "hash-seed": "the hash seed (set order, and of what is built from a set, differs between processes)",
}


def _utc() -> Any:
    """UTC as a ZoneInfo, so that time-machine also sets the process time zone: naive
    `datetime.now()` then reads the same on every machine."""
    try:
        from zoneinfo import ZoneInfo

        return ZoneInfo("UTC")
    except Exception:  # no time zone database (Windows without tzdata): the local zone stays
        return UTC


BASE_MOMENT = datetime(2026, 3, 14, 9, 26, 53, tzinfo=_utc())


@dataclass(frozen=True)
class World:
    """One set of answers. Worlds with the same `index` answer the same; `only` narrows a world
    to one varied kind (the others answer as in the base world), to tell causes apart."""

    label: str
    index: int
    moment: datetime
    only: str | None = None

    def index_for(self, kind: str) -> int:
        return self.index if self.only in (None, kind) else 0

    def moment_now(self) -> datetime:
        return self.moment if self.only in (None, "clock") else BASE_MOMENT

    def narrowed(self, kind: str) -> World:
        return replace(self, only=kind)


BASE_WORLD = World("base", 0, BASE_MOMENT)
REPLAY_WORLD = World("the same world again", 0, BASE_MOMENT)
# Finest first: where several worlds show a difference at the same token, the finest names it.
VARIED_WORLDS = (
    World("a second later", 1, BASE_MOMENT + timedelta(seconds=1)),
    World("a day later", 2, BASE_MOMENT + timedelta(days=1)),
    World("a month later", 3, BASE_MOMENT.replace(month=BASE_MOMENT.month + 1)),
)


def _time_machine() -> Any:
    try:
        import time_machine
    except ImportError:
        raise ImportError(
            "prefixlint.testing moves the clock with time-machine, which is not installed: "
            "pip install 'prefixlint[testing]' (or leave \"clock\" out of vary=)"
        ) from None
    return time_machine


def _set(stack: ExitStack, owner: Any, name: str, value: Any) -> None:
    """Set owner.name for the duration of the world; the old value comes back on exit."""
    old = getattr(owner, name)
    setattr(owner, name, value)
    stack.callback(setattr, owner, name, old)


def _varied(value: Any, index: int) -> Any:
    """What a per-machine value reads in world `index` (the real value in the base world)."""
    if index == 0:
        return value
    if isinstance(value, int):
        return value + 1000 * index
    return f"{value}-w{index}"


# os.getenv and Mapping.get lead to os.environ[key]; both are frozen modules since Python 3.11.
_ENVIRON_PLUMBING = ("os.py", "_collections_abc.py", "<frozen os>", "<frozen _collections_abc>")


def _from_user(frame: Any) -> bool:
    """Whether a read comes from outside the standard library (skipping os's own plumbing), so
    that tempfile, pathlib and friends keep their real answers."""
    while frame is not None and frame.f_code.co_filename.endswith(_ENVIRON_PLUMBING):
        frame = frame.f_back
    return frame is not None and not is_stdlib(frame.f_code.co_filename)


def _reader(index: int, recorder: Recorder, name: str, original: Callable[[], Any]) -> Callable[[], Any]:
    def read() -> Any:
        value = original()
        frame = sys._getframe(1)
        if not _from_user(frame):
            return value
        value = _varied(value, index)
        recorder.add("environment", f"{name}()", value, frame)
        return value

    read.__wrapped__ = original  # type: ignore[attr-defined]
    return read


def _vary_environment(stack: ExitStack, index: int, recorder: Recorder) -> None:
    environ_class = type(os.environ)
    getitem = environ_class.__getitem__

    def environ_getitem(env: Any, key: str) -> Any:
        value = getitem(env, key)
        frame = sys._getframe(1)
        if env is not os.environ or not _from_user(frame):
            return value
        value = _varied(value, index)
        recorder.add("environment", f"os.environ[{key!r}]", value, frame)
        return value

    _set(stack, environ_class, "__getitem__", environ_getitem)
    for owner, name, shown in (
        (os, "getcwd", "os.getcwd"),
        (os, "getpid", "os.getpid"),
        (socket, "gethostname", "socket.gethostname"),
        (platform, "node", "platform.node"),
        (platform, "platform", "platform.platform"),
        (platform, "release", "platform.release"),
        (platform, "version", "platform.version"),
        (getpass, "getuser", "getpass.getuser"),
    ):
        _set(stack, owner, name, _reader(index, recorder, shown, getattr(owner, name)))
    uname = platform.uname

    def varied_uname() -> Any:
        result = uname()
        frame = sys._getframe(1)
        if not _from_user(frame):
            return result
        result = result._replace(node=_varied(result.node, index))
        recorder.add("environment", "platform.uname()", result.node, frame)
        return result

    _set(stack, platform, "uname", varied_uname)


def _vary_ids(stack: ExitStack, index: int, recorder: Recorder) -> None:
    """uuid4 reads os.urandom at call time; secrets draws from its module-level SystemRandom."""
    source = random.Random(f"prefixlint ids {index}")

    def urandom(size: int) -> bytes:
        data = source.randbytes(size)
        recorder.add("ids", "os.urandom()", data, sys._getframe(1))
        return data

    _set(stack, os, "urandom", urandom)
    seeded = random.Random(f"prefixlint secrets {index}")
    recorder.id_generators.append(seeded)
    if hasattr(secrets, "_sysrand"):  # token_bytes/hex/urlsafe and randbelow draw from it
        _set(stack, secrets, "_sysrand", seeded)
    for name in ("choice", "randbits"):  # bound to the SystemRandom when secrets was imported
        if hasattr(secrets, name):
            _set(stack, secrets, name, getattr(seeded, "getrandbits" if name == "randbits" else name))


def _vary_random(stack: ExitStack, index: int) -> None:
    """The module-level functions (also `from random import choice`) share one generator: seed
    it per world and give its state back afterwards."""
    state = random.getstate()
    random.seed(f"prefixlint random {index}")
    stack.callback(random.setstate, state)


@contextmanager
def entered(world: World, vary: tuple[str, ...]) -> Iterator[Recorder]:
    """Patch the kinds in `vary` as `world` answers them and record the build's calls; undo all
    of it on exit. Kinds not in `vary` keep their real behaviour (their calls are still recorded)."""
    with ExitStack() as stack:
        clock_value = None
        if "clock" in vary:
            moment = world.moment_now()
            stack.enter_context(_time_machine().travel(moment, tick=False))
            clock_value = moment
        recorder = Recorder(clock_value)
        if "ids" in vary:
            _vary_ids(stack, world.index_for("ids"), recorder)
        if "random" in vary:
            _vary_random(stack, world.index_for("random"))
        if "environment" in vary:
            _vary_environment(stack, world.index_for("environment"), recorder)
        stack.callback(recorder.install())
        yield recorder
