"""What a sandbox has seen of its task's vault, so that a vault its store lost, whole or in part, is found before one
of its tokens can mean another value.

Each mint call that hands out new tokens appends a random stamp to the scope's chain (vault.py): the chain is the
vault's history. A store that loses writes (an empty Redis, an append-only file missing its last second, a replica
promoted before it had the last writes) keeps a prefix of it, or less, and what is minted after that gets other
stamps: a counter that went back hands its numbers out again under stamps the sandbox never saw. Every answer that
read the vault tells its caller the chain's length and the stamps after the caller's mark (`Mcpexec-Vault:
<length>:<stamp>,...`, oldest first, at most CHAIN_WINDOW); the runtime keeps the longest chain it was told and sends
its end with every request (`Mcpexec-Vault: <length>:<stamp>`). Every vault script checks that mark in the same atomic
step as its lookup or mint: a chain that does not hold the caller's stamp at its place (shorter, or another stamp
there) refuses with VaultLost, nothing resolved, nothing minted. A chain only loses its end and grows, so holding
the caller's last stamp where it was means holding everything the caller was handed. A request without the header
(its caller has seen no token yet) is not checked. The runtime checks the stamps it is told against those it was told
before (runtime/vault_marks.py): a number handed out again, to a request sent before the loss, shows there.

One request's view travels with the request (a context variable set by gateway/web/vault_marks.py), so the vault's
callers (tool calls, the LLM proxy) need not carry it.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from gateway.errors import InvalidVaultMarks, VaultLost

HEADER = "Mcpexec-Vault"
# The most stamps one answer carries (about 4.6 KB): more mint calls than this between a request's sending and its
# answer (the runtime's concurrent requests) leave the oldest of them unchecked by the runtime, never by the vault.
CHAIN_WINDOW = 512
STAMP_BYTES = 6  # 8 URL-safe base64 characters: a stamp handed out again by chance is one in 2**48
_MARK = re.compile(r"([1-9][0-9]{0,11}):([A-Za-z0-9_-]{8})")
LOST = (
    "this task's vault no longer holds the tokens its sandbox was given (its store lost them, or they expired): they "
    "could now mean other values, so nothing was sent; the task cannot go on"
)


def new_stamp() -> str:
    return secrets.token_urlsafe(STAMP_BYTES)


@dataclass(frozen=True)
class Mark:
    """The end of the chain a caller was told: its length and the stamp there."""

    length: int
    stamp: str

    @classmethod
    def parse(cls, value: str | None) -> Mark | None:
        if value is None:
            return None
        found = _MARK.fullmatch(value.strip())
        if found is None:
            raise InvalidVaultMarks(f"{HEADER} must be <length>:<stamp> as the gateway's answers give them")
        return cls(int(found.group(1)), found.group(2))


class VaultView:
    """One request's dealings with its scope's vault: the caller's mark, which every vault call checks, and the
    chain those calls saw, for the answer."""

    def __init__(self, seen: Mark | None) -> None:
        self.seen = seen
        self._length = 0
        self._stamps: dict[int, str] = {}  # place in the chain (from 1) -> stamp

    @property
    def seen_length(self) -> int:
        return 0 if self.seen is None else self.seen.length

    def record(self, length: int, stamps: Sequence[str]) -> None:
        """A vault call's chain: `length`, and the stamps that end it. Two calls of one request that saw two
        histories (the store lost writes in between) are a lost vault too."""
        for place, stamp in enumerate(stamps, length - len(stamps) + 1):
            if self._stamps.setdefault(place, stamp) != stamp:
                raise VaultLost(LOST)
        self._length = max(self._length, length)

    def answer(self) -> str | None:
        """The `Mcpexec-Vault` answer header: the chain's length and the stamps after the caller's mark (None when
        no vault call saw a chain)."""
        if self._length == 0:
            return None
        start = max(self.seen_length, self._length - CHAIN_WINDOW) + 1
        return f"{self._length}:" + ",".join(self._stamps[place] for place in range(start, self._length + 1))


_VIEW: ContextVar[VaultView | None] = ContextVar("mcpexec_vault_view", default=None)


def current() -> VaultView | None:
    """The view of the request being served (None outside one: nothing checked, nothing told)."""
    return _VIEW.get()


@contextmanager
def viewing(view: VaultView) -> Iterator[VaultView]:
    token = _VIEW.set(view)
    try:
        yield view
    finally:
        _VIEW.reset(token)
