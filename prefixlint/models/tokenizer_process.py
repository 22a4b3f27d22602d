"""One job: a tokenizer loaded in a forked process.

Building a large BPE tokenizer takes ~0.5 s in Rust and holds the GIL, so neither a thread nor
anything else in this process can overlap it. A forked helper can: it loads while this process
imports, compiles and renders, then answers what `check` asks of a tokenizer over a pipe. The
helper exits when the pipe closes (or this process dies); `close` kills and reaps it at once.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import select
import signal
import struct
import sys
from typing import Any

from prefixlint.models.backend import Encoded, TokenizerError, load_backend

_HEADER = struct.Struct("<Q")
# The helper looks for its parent this often while idle: a pipe end inherited by another child
# would otherwise keep it waiting after the parent died.
_IDLE_CHECK_SECONDS = 1.0


class HelperGone(Exception):
    """The helper died or its pipe broke; the caller loads in-process instead."""


def fork_available() -> bool:
    """Whether a helper can be forked. Not once `tokenizers` is imported here: its Rust thread pool
    does not survive a fork (the child prints a warning and runs single-threaded), and a process
    that already loaded a tokenizer gains nothing from a helper."""
    return hasattr(os, "fork") and "tokenizers" not in sys.modules


def _send(fd: int, obj: Any) -> None:
    data = pickle.dumps(obj, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None  # EOF: the other side closed its end (or died)
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _recv(fd: int) -> Any:
    """The next message; raises EOFError when the other side is gone."""
    header = _read_exactly(fd, _HEADER.size)
    data = _read_exactly(fd, _HEADER.unpack(header)[0]) if header is not None else None
    if data is None:
        raise EOFError
    return pickle.loads(data)


class TokenizerProcess:
    """A forked helper that loads the tokenizer file `path` and serves encode requests."""

    def __init__(self, path: str, close_in_child: tuple[int, ...] = ()) -> None:
        """Forks at once; `close_in_child`: this process's ends of other helpers' pipes, which the
        child must not hold open (else those helpers would not see EOF when this process dies)."""
        self.path = path
        self._status: tuple[str, Any] | None = None  # ("ok", added texts) or ("error", message)
        req_r, req_w = os.pipe()
        resp_r, resp_w = os.pipe()
        parent = os.getpid()
        try:
            pid = os.fork()
        except OSError:
            for fd in (req_r, req_w, resp_r, resp_w):
                os.close(fd)
            raise
        if pid == 0:  # the helper: never returns, never prints, never runs the parent's atexit
            code = 1
            try:
                os.close(req_w)
                os.close(resp_r)
                for fd in close_in_child:
                    with contextlib.suppress(OSError):
                        os.close(fd)
                _serve(path, req_r, resp_w, parent)
                code = 0
            except BaseException:  # the parent sees EOF and loads in-process
                pass
            finally:
                os._exit(code)
        os.close(req_r)
        os.close(resp_w)
        self.pid: int | None = pid
        self._w: int | None = req_w
        self._r: int | None = resp_r

    @property
    def fds(self) -> tuple[int, ...]:
        return tuple(fd for fd in (self._w, self._r) if fd is not None)

    def status(self) -> tuple[str, Any]:
        """Wait for the load: ("ok", added texts) or ("error", the TokenizerError message)."""
        if self._status is None:
            self._status = self._receive()
        return self._status

    def encode_batch(self, texts: list[str]) -> list[Encoded]:
        return [Encoded(ids, offsets) for ids, offsets in self._call("encode", texts)]

    def token_to_id(self, token: str) -> int | None:
        return self._call("token_to_id", token)

    def write_index(self, cache_dir: str) -> None:
        """Have the helper write its tokenizer's index (prefixlint/models/token_index.py) into `cache_dir`."""
        self._call("write_index", cache_dir)

    def _call(self, op: str, arg: Any) -> Any:
        if self.status()[0] != "ok" or self._w is None:
            raise HelperGone(self.path)
        try:
            _send(self._w, (op, arg))
        except OSError as exc:
            self.close()
            raise HelperGone(self.path) from exc
        return self._receive()

    def _receive(self) -> Any:
        if self._r is None:
            raise HelperGone(self.path)
        try:
            return _recv(self._r)
        except Exception as exc:  # EOF, a broken pipe, a garbled message: the helper is no use
            self.close()
            raise HelperGone(self.path) from exc
        except BaseException:
            # Interrupted mid-message (a signal handler raised): the stream is out of step for good.
            self.close()
            raise

    def close(self) -> None:
        """Stop the helper now (loading or idle) and reap it."""
        for fd in self.fds:
            os.close(fd)
        self._w = self._r = None
        if self.pid is not None:
            pid, self.pid = self.pid, None
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)  # loading still, or idle: either way, done
            with contextlib.suppress(ChildProcessError):
                os.waitpid(pid, 0)


def _serve(path: str, requests: int, responses: int, parent: int) -> None:
    # The terminal's Ctrl-C is for the parent: the helper follows when its pipe closes. Its output
    # goes nowhere: nothing it could print is for the user.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    try:
        tokenizer = load_backend(path)
    except TokenizerError as exc:
        _send(responses, ("error", str(exc)))
        return
    added = frozenset(t.content for t in tokenizer.get_added_tokens_decoder().values() if t.content)
    _send(responses, ("ok", added))
    while True:
        ready, _, _ = select.select([requests], [], [], _IDLE_CHECK_SECONDS)
        if not ready:
            if os.getppid() != parent:
                return
            continue
        try:
            op, arg = _recv(requests)
        except EOFError:
            return
        if op == "encode":
            encodings = tokenizer.encode_batch(arg, add_special_tokens=False)
            _send(responses, [(e.ids, e.offsets) for e in encodings])
        elif op == "token_to_id":
            _send(responses, tokenizer.token_to_id(arg))
        elif op == "write_index":
            from prefixlint.models.token_index import write_index

            write_index(arg, path, tokenizer)
            _send(responses, None)
