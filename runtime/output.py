"""Bounded output: what reaches the model or the termination message keeps its head and tail.

Everything printed is also kept, uncut up to a disk bound, in the workspace's output.log.
"""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import IO

# A disk bound, not a context bound: enough for any honest task, small enough that a print loop cannot fill
# the workspace (RLIMIT_FSIZE stops files at 1 GiB in any case).
LOG_LIMIT_BYTES = 16 << 20


def encodable(text: str) -> str:
    """`text` with each lone surrogate (code can print one; UTF-8 cannot carry it) written as its `\\udXXX`
    escape: the output is shown, not lost to a UnicodeEncodeError. The host applies it again to what it reads
    (mcpexec/api/result.py): the task's code can write its own result."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def truncate(text: str, limit: int) -> str:
    """At most about `limit` characters, head and tail kept, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = f"\n...[truncated {len(text) - limit} of {len(text)} characters]...\n"
    keep = max(0, limit - len(marker))
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


class OutputLog:
    """Appends everything printed to `path`, up to `limit` bytes; says so at the end when it had to stop."""

    def __init__(self, path: Path, limit: int = LOG_LIMIT_BYTES) -> None:
        self._limit = limit
        self._written = 0
        self._printed = 0  # characters, including those past the limit
        self._file: IO[bytes] | None = None
        with contextlib.suppress(OSError):  # a read-only or full workspace must not stop the task
            path.parent.mkdir(parents=True, exist_ok=True)
            self._file = path.open("wb")

    def write(self, text: str) -> None:
        self._printed += len(text)
        room = self._limit - self._written
        if self._file is None or room <= 0:
            return
        # Slice before encoding: a 100 MB string must not be copied whole to keep its first bytes.
        data = encodable(text[:room]).encode()[:room]
        with contextlib.suppress(OSError):
            self._file.write(data)
        self._written += len(data)

    def close(self) -> None:
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            if self._written >= self._limit:
                self._file.write(
                    f"\n...[output.log stops at its {self._limit}-byte limit; {self._printed} characters "
                    "were printed in all]\n".encode()
                )
            self._file.close()
        self._file = None


class BoundedBuffer:
    """A stdout stand-in that keeps the first and last `keep` characters of any amount of output.

    With a `log`, every write also goes there in full.
    """

    def __init__(self, keep: int, log: OutputLog | None = None) -> None:
        self._keep = keep
        self._log = log
        self._head: list[str] = []
        self._head_size = 0
        self._tail = ""
        self.total = 0

    def write(self, text: str) -> int:
        written = len(text)
        if self._log is not None:
            self._log.write(text)
        self.total += written
        if self._head_size < self._keep:
            take = text[: self._keep - self._head_size]
            self._head.append(take)
            self._head_size += len(take)
            text = text[len(take) :]
        if text:
            self._tail = (self._tail + text[-self._keep :])[-self._keep :]
        return written

    def flush(self) -> None:
        return None

    def getvalue(self) -> str:
        head = "".join(self._head)
        dropped = self.total - len(head) - len(self._tail)
        if dropped <= 0:
            return head + self._tail
        return f"{head}\n...[truncated {dropped} of {self.total} characters]...\n{self._tail}"
