"""What this sandbox has seen of its task's PII vault, sent with every request, so that a vault the gateway's store
lost (whole or in part) is found before one of its tokens can mean another value (the gateway's side:
gateway/pii/vault_marks.py).

Every gateway answer that read the vault carries `Mcpexec-Vault: <length>:<stamp>,...`: the length of the vault's
chain (one random stamp per mint call that handed out new tokens) and its stamps after this sandbox's mark, oldest
first. The runtime keeps them by place and sends the end of the longest chain it was told with every request
(`Mcpexec-Vault: <length>:<stamp>`); the gateway refuses (409 `vault_lost`) when the vault no longer holds it. Two
answers that give one place two stamps mean a number was handed out twice (a store that went back, answering a
request sent before the loss): lost as well. Once lost, nothing more reaches a tool or a model: the task ends Failed
with a reason starting `vault_lost:` (__main__.py), a session ends with it (session.py).
"""

from __future__ import annotations

import threading

HEADER = "Mcpexec-Vault"
VAULT_LOST = "vault_lost"
# The most stamps one answer carries (the gateway's CHAIN_WINDOW): places further back are never told again.
WINDOW = 512
_GUARDED = ("/v1/tools/", "/v1/llm/")  # what reaches a tool or a model
TOLD_TWICE = (
    "the PII vault gave one place of its chain two stamps (its store lost writes and handed token numbers out "
    "again): this task's tokens could mean other values now, so nothing more is sent"
)


class VaultMarks:
    """Shared by the runtime's threads (one gateway connection each)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stamps: dict[int, str] = {}  # place in the chain (from 1) -> stamp
        self._length = 0
        self.lost: str | None = None

    def headers(self) -> dict[str, str]:
        """The mark for a request: nothing before the first answer that read the vault."""
        with self._lock:
            return {HEADER: f"{self._length}:{self._stamps[self._length]}"} if self._length else {}

    def refuses(self, path: str) -> bool:
        """Whether a request to `path` may no longer be sent: one that reaches a tool or a model, once lost (the
        session's own requests go on, so that it ends cleanly)."""
        return self.lost is not None and path.startswith(_GUARDED)

    def observe(self, header: str | None, refusal: object) -> None:
        """An answer's `Mcpexec-Vault` header, and its body if it is a refusal: a 409 `vault_lost`, or a chain that
        gives a place another stamp than an answer before, loses the vault."""
        error = refusal.get("error") if isinstance(refusal, dict) else None
        if isinstance(error, dict) and error.get("code") == VAULT_LOST:
            self._lose(str(error.get("message") or VAULT_LOST))
        length_text, _, listed = (header or "").partition(":")
        if not length_text.isdigit():
            return
        length, stamps = int(length_text), listed.split(",") if listed else []
        with self._lock:
            for place, stamp in enumerate(stamps, length - len(stamps) + 1):
                if self._stamps.setdefault(place, stamp) != stamp:
                    self.lost = self.lost or TOLD_TWICE
                    return
            if length > self._length and length in self._stamps:
                self._length = length
            if len(self._stamps) > 2 * WINDOW:
                self._stamps = {p: s for p, s in self._stamps.items() if p > self._length - WINDOW}

    def _lose(self, reason: str) -> None:
        with self._lock:
            self.lost = self.lost or reason
