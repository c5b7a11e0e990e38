"""Runs code snippets with top-level await in a namespace that persists across turns."""

from __future__ import annotations

import ast
import asyncio
import contextlib
import linecache
import signal
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from runtime.output import BoundedBuffer, OutputLog


class SnippetTimeout(Exception):
    pass


@dataclass(frozen=True)
class Outcome:
    """`output` is stdout and stderr interleaved as printed (what a task's result and the agent loop show);
    `stdout` and `stderr` are each stream on its own (what a session's caller gets). Each is bounded head and tail."""

    output: str
    ok: bool
    error: str | None = None
    stdout: str = ""
    stderr: str = ""


# Told of every write of the snippet's streams as it happens: (stream name, text).
Listener = Callable[[str, str], None]


class _Tee:
    """One of the snippet's streams: written to the interleaved buffer, to its own, and to a listener if any."""

    def __init__(self, name: str, merged: BoundedBuffer, own: BoundedBuffer, listener: Listener | None) -> None:
        self._name = name
        self._merged = merged
        self.own = own
        self._listener = listener

    def write(self, text: str) -> int:
        self.own.write(text)
        if self._listener is not None:
            self._listener(self._name, text)
        return self._merged.write(text)

    def flush(self) -> None:
        return None


def _on_alarm(_signum: int, _frame: FrameType | None) -> None:
    raise SnippetTimeout("the snippet ran past its time limit")


class Executor:
    """One namespace for the whole task: variables, imports and functions survive between snippets."""

    def __init__(self, namespace: dict[str, Any], output_limit: int, log: OutputLog | None = None) -> None:
        """Each snippet's outcome holds at most about `output_limit` characters; `log` gets all of it."""
        self.namespace = namespace
        self.namespace.setdefault("__name__", "__main__")
        self._output_limit = output_limit
        self._log = log
        self._snippets = 0

    def run(self, code: str, timeout_seconds: float, listener: Listener | None = None) -> Outcome:
        keep = self._output_limit // 2
        merged = BoundedBuffer(keep, self._log)
        stdout = _Tee("stdout", merged, BoundedBuffer(keep), listener)
        stderr = _Tee("stderr", merged, BoundedBuffer(keep), listener)
        previous = signal.signal(signal.SIGALRM, _on_alarm)
        # A zero interval would disarm the timer: an exhausted budget still gets a (tiny) limit.
        signal.setitimer(signal.ITIMER_REAL, max(timeout_seconds, 0.001))
        error = None
        try:
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                self._execute(code)
        except BaseException as exc:  # the agent's code may raise anything; it becomes its output
            if isinstance(exc, KeyboardInterrupt):
                raise
            error = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            stderr.write("".join(traceback.format_exception(type(exc), exc, exc.__traceback__)[-6:]))
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)
        return Outcome(merged.getvalue(), error is None, error, stdout.own.getvalue(), stderr.own.getvalue())

    def _execute(self, code: str) -> None:
        # Registered with linecache so tracebacks show the lines and inspect.getsource works (skills).
        self._snippets += 1
        filename = f"<snippet-{self._snippets}>"
        linecache.cache[filename] = (len(code), None, code.splitlines(keepends=True), filename)
        compiled = compile(code, filename, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        result = eval(compiled, self.namespace)
        if asyncio.iscoroutine(result):
            asyncio.run(result)
