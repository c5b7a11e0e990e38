"""Bounded output: what reaches the model or the termination message keeps its head and tail."""

from __future__ import annotations


def truncate(text: str, limit: int) -> str:
    """At most about `limit` characters, head and tail kept, with a marker saying how much was cut."""
    if len(text) <= limit:
        return text
    marker = f"\n...[truncated {len(text) - limit} of {len(text)} characters]...\n"
    keep = max(0, limit - len(marker))
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]


class BoundedBuffer:
    """A stdout stand-in that keeps the first and last `keep` characters of any amount of output."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._head: list[str] = []
        self._head_size = 0
        self._tail = ""
        self.total = 0

    def write(self, text: str) -> int:
        self.total += len(text)
        if self._head_size < self._keep:
            take = text[: self._keep - self._head_size]
            self._head.append(take)
            self._head_size += len(take)
            text = text[len(take) :]
        if text:
            self._tail = (self._tail + text)[-self._keep :]
        return len(text)

    def flush(self) -> None:
        return None

    def getvalue(self) -> str:
        head = "".join(self._head)
        dropped = self.total - len(head) - len(self._tail)
        if dropped <= 0:
            return head + self._tail
        return f"{head}\n...[truncated {dropped} of {self.total} characters]...\n{self._tail}"
