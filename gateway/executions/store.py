"""Where the broker keeps a session's queue of executions and each execution's events: in this process (one gateway,
`mcpexec serve`), or in Redis (a cluster's gateway replicas: a session's runtime may poll one replica while its caller
waits on another).

Every store keeps the same rules. An execution is offered (waiting), taken by the session's runtime (running), then
finished by its outcome or abandoned by its caller: only a running execution takes output or an outcome, and one
whose caller gave up is skipped, never run. Events are JSON text (the broker's models); a store does not read them.
"""

from __future__ import annotations

from typing import Protocol

# An execution's streamed output past this many characters is dropped (its outcome still has the head and tail).
MAX_STREAMED_CHARACTERS = 1_000_000


class ExecutionStore(Protocol):
    def open(self, scope: str) -> None:
        """The session may take executions from now on (a store without a notion of open sessions ignores it)."""

    async def ready(self, scope: str) -> None:
        """Returns once the session's runtime has asked for an execution."""

    async def offer(self, scope: str, execution_id: str, execution: str, ttl_seconds: float) -> None:
        """Queue `execution` (waiting); its records go after `ttl_seconds` whatever happens. NoSession: the session
        is not open, or ended."""

    async def take(self, scope: str, wait_seconds: float) -> str | None:
        """The next waiting execution, now running (None: none came within `wait_seconds`). NoSession: the session
        is not open, or ended."""

    async def publish(self, scope: str, execution_id: str, event: str, final: bool, characters: int, over: str) -> bool:
        """Add `event` for the execution's caller if it is running (False: it is not); `final` finishes it. Output
        (`characters` long) past MAX_STREAMED_CHARACTERS in all is dropped, `over` said once in its place."""

    async def receive(self, scope: str, execution_id: str, wait_seconds: float) -> str | None:
        """The execution's next event (None: none came within `wait_seconds`)."""

    async def abandon(self, scope: str, execution_id: str) -> None:
        """Its caller no longer waits: skipped if not taken yet, its outcome refused if running."""

    async def end(self, scope: str, ended: str) -> None:
        """End the session: every execution waiting or running gets the event `ended`, the runtime's polls NoSession."""

    async def forget(self, scope: str, ended: str) -> None:
        """This process no longer serves the scope (its token expired here): a store in this process ends the
        session; a shared store leaves it to the others and to its records' expiry."""

    async def close(self) -> None: ...
