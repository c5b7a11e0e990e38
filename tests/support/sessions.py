"""`mcpexec serve`'s session core (LocalSessions) on an event loop of its own, for tests and benchmarks."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

from gateway.executions.models import ExecutionOutcome
from mcpexec.local.sessions import LocalSession, LocalSessions

T = TypeVar("T")


class SessionsThread:
    """LocalSessions on an event loop of its own, so tests can call it synchronously and concurrently."""

    def __init__(self, sessions: LocalSessions) -> None:
        self.sessions = sessions
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name="sessions-loop", daemon=True)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float = 120) -> T:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout)

    def __enter__(self) -> SessionsThread:
        self._thread.start()
        self.run(self.sessions.start())
        return self

    def __exit__(self, *_exc: object) -> None:
        self.run(self.sessions.close())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()

    def execute(self, session: LocalSession, code: str, timeout: float = 30) -> ExecutionOutcome:
        return self.run(self.sessions.core.executions.execute(session.context.scope, code, timeout))

    def claim_ready(self) -> LocalSession:
        """A claimed session whose runtime is up."""
        session = self.run(self.sessions.claim())
        self.run(self.sessions.ready(session))
        return session
