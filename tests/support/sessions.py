"""`mcpexec serve`'s session core (LocalSessions) on an event loop of its own, for tests and benchmarks."""

from __future__ import annotations

from gateway.executions.models import ExecutionOutcome
from mcpexec.local.sessions import LocalSession, LocalSessions
from tests.support.loop_thread import LoopThread


class SessionsThread(LoopThread):
    """LocalSessions on an event loop of its own, so tests can call it synchronously and concurrently."""

    def __init__(self, sessions: LocalSessions) -> None:
        super().__init__("sessions-loop")
        self.sessions = sessions

    def __enter__(self) -> SessionsThread:
        self.start_loop()
        self.run(self.sessions.start())
        return self

    def __exit__(self, *_exc: object) -> None:
        self.run(self.sessions.close())
        self.stop_loop()

    def execute(self, session: LocalSession, code: str, timeout: float = 30) -> ExecutionOutcome:
        return self.run(self.sessions.core.executions.execute(session.context.scope, code, timeout))

    def claim_ready(self) -> LocalSession:
        """A claimed session whose runtime is up."""
        session = self.run(self.sessions.claim())
        self.run(self.sessions.ready(session))
        return session
