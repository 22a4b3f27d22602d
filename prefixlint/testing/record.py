"""What the user's `build` read while it ran: every call of a watched function (the clock, ids,
randomness, the environment), the user's own source line that made it, and the value it returned.

Python-level functions (`uuid.uuid4`, `secrets.token_hex`, `random.choice`, …) are seen by a
profile hook on their code objects, so `from uuid import uuid4` done at import time is seen too;
C-level clock functions (`datetime.now`, `time.time`, …) are seen by the hook's `c_call` events;
the environment wrappers of worlds.py report their reads directly.
"""

from __future__ import annotations

import inspect
import os
import random
import secrets
import site
import sys
import sysconfig
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from types import CodeType, FrameType
from typing import Any

import prefixlint


@dataclass
class Call:
    """One call the build made: what kind of world-dependent thing, which function, where the
    user's code called it (path, line), and what it returned (None if not known)."""

    kind: str  # "clock", "ids", "random", "environment"
    name: str  # as the user wrote it: "datetime.now()", "uuid.uuid4()", "os.environ['REGION']"
    site: tuple[str, int] | None
    value: Any = None
    _list: list | None = field(default=None, repr=False)  # shuffle(x): x, read when it returns


def _library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[k] for k in ("stdlib", "platstdlib", "purelib", "platlib") if k in paths}
    dirs.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    dirs.add(site.getusersitepackages())
    dirs.add(str(Path(prefixlint.__file__).parent))
    return tuple(sorted(os.path.join(os.path.realpath(d), "") for d in dirs if d))


_LIBRARY_DIRS = _library_dirs()
_STDLIB_DIRS = tuple(
    os.path.join(os.path.realpath(p), "")
    for k, p in sysconfig.get_paths().items()
    if k in ("stdlib", "platstdlib")
)
_IS_LIBRARY: dict[str, bool] = {}


def is_library(filename: str) -> bool:
    """True for the standard library, installed packages (site-packages) and prefixlint itself:
    the frames a call site is never attributed to."""
    known = _IS_LIBRARY.get(filename)
    if known is None:
        real = os.path.realpath(filename) if not filename.startswith("<") else filename
        known = (
            filename.startswith("<frozen")
            or real.startswith(_LIBRARY_DIRS)
            or os.sep + "site-packages" + os.sep in real
            or os.sep + "dist-packages" + os.sep in real
        )
        _IS_LIBRARY[filename] = known
    return known


def is_stdlib(filename: str) -> bool:
    """The standard library alone (not site-packages): its own reads of the environment (tempfile
    asking for TMPDIR) keep their real answers."""
    if filename.startswith("<frozen"):
        return True
    real = os.path.realpath(filename)
    return real.startswith(_STDLIB_DIRS) and os.sep + "site-packages" + os.sep not in real


def user_site(frame: FrameType | None) -> tuple[str, int] | None:
    """The innermost frame outside the standard library, site-packages and prefixlint."""
    while frame is not None:
        if not is_library(frame.f_code.co_filename):
            return frame.f_code.co_filename, frame.f_lineno
        frame = frame.f_back
    return None


def _watched_codes() -> dict[CodeType, tuple[str, str]]:
    """Code objects of the Python-level functions whose calls are recorded, with (kind, name)."""
    watched: dict[CodeType, tuple[str, str]] = {}
    for fn in (uuid.uuid1, uuid.uuid4):
        watched[fn.__code__] = ("ids", f"uuid.{fn.__name__}()")
    for name in ("token_bytes", "token_hex", "token_urlsafe", "randbelow"):
        fn = getattr(secrets, name, None)
        if inspect.isfunction(fn):  # secrets.choice is a bound Random method: seen as random.choice()
            watched[fn.__code__] = ("ids", f"secrets.{name}()")
    for name in (
        "randint",
        "randrange",
        "choice",
        "choices",
        "sample",
        "shuffle",
        "uniform",
        "triangular",
        "gauss",
        "normalvariate",
        "randbytes",
    ):
        fn = getattr(random.Random, name, None)
        if fn is not None and hasattr(fn, "__code__"):
            watched.setdefault(fn.__code__, ("random", f"random.{name}()"))
    return watched


_WATCHED = _watched_codes()
_CLOCK_METHODS = frozenset({"now", "utcnow", "today"})
_CLOCK_FUNCTIONS = frozenset({"time", "time_ns", "localtime", "gmtime", "ctime", "asctime", "strftime"})
_RANDOM_C_METHODS = frozenset({"random", "getrandbits"})
_C_NAMES = _CLOCK_METHODS | _CLOCK_FUNCTIONS | _RANDOM_C_METHODS


def c_function_kind(fn: Any) -> tuple[str, str] | None:
    """(kind, name) of a C function the build called that reads the clock or draws randomness."""
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", "")
    if isinstance(owner, type) and issubclass(owner, date) and name in _CLOCK_METHODS:
        return "clock", f"{owner.__name__}.{name}()"
    if owner is time and name in _CLOCK_FUNCTIONS:
        return "clock", f"time.{name}()"
    if isinstance(owner, random.Random) and name in _RANDOM_C_METHODS:
        return "random", f"random.{name}()"
    return None


def clock_reading(name: str, moment: datetime | None) -> Any:
    """What a clock function returns while the clock is frozen at `moment` (in UTC, the zone
    time-machine sets): the value whose text attribution looks for in the prompt."""
    if moment is None:
        return None
    naive = moment.replace(tzinfo=None)
    return {
        "date.today()": naive.date(),
        "datetime.now()": naive,
        "datetime.today()": naive,
        "datetime.utcnow()": naive,
        "time.time()": moment.timestamp(),
        "time.time_ns()": int(moment.timestamp()) * 1_000_000_000,
    }.get(name, moment)


class Recorder:
    """Collects the Calls of one run of the build (one world). `clock_value` is what the clock
    reads in that world (time-machine freezes it), or None where the clock is not varied."""

    def __init__(self, clock_value: Any = None) -> None:
        self.calls: list[Call] = []
        self.clock_value = clock_value
        self.id_generators: list[random.Random] = []  # stand-ins for secrets' SystemRandom
        self._open: dict[FrameType, Call] = {}
        self._chained: Callable[..., Any] | None = None

    def _draws_ids(self, generator: Any) -> bool:
        """A draw from secrets' generator (or any SystemRandom) makes an id, not randomness."""
        return isinstance(generator, random.SystemRandom) or any(generator is g for g in self.id_generators)

    def add(self, kind: str, name: str, value: Any, frame: FrameType | None) -> None:
        self.calls.append(Call(kind, name, user_site(frame), value))

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            what = _WATCHED.get(frame.f_code)
            if what is not None:
                if what[0] == "random" and self._draws_ids(frame.f_locals.get("self")):
                    what = ("ids", what[1].replace("random.", "secrets.", 1))
                call = Call(what[0], what[1], user_site(frame.f_back))
                if what[1] == "random.shuffle()":
                    call._list = frame.f_locals.get("x")
                self._open[frame] = call
                self.calls.append(call)
        elif event == "return":
            call = self._open.pop(frame, None) if self._open else None
            if call is not None:
                call.value = list(call._list) if call._list is not None else arg
        elif event == "c_call" and getattr(arg, "__name__", None) in _C_NAMES:  # cheap test first
            what = c_function_kind(arg)
            if what is not None:
                value = clock_reading(what[1], self.clock_value) if what[0] == "clock" else None
                self.calls.append(Call(what[0], what[1], user_site(frame), value))
        if self._chained is not None:
            self._chained(frame, event, arg)

    def install(self) -> Callable[[], None]:
        """Start recording in this thread and in threads started meanwhile (a profiler already
        there, e.g. a debugger's, is fed too); returns the function that stops it."""
        before = sys.getprofile()
        self._chained = None if before == self.profile else before
        threads_before = threading.getprofile()
        sys.setprofile(self.profile)
        threading.setprofile(self.profile)

        def stop() -> None:
            sys.setprofile(self._chained)
            threading.setprofile(threads_before)
            self._chained = None

        return stop
