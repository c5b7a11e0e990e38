"""`mcpexec serve`'s sandboxes: one local sandbox per interactive session, some started ahead.

Every session is a task of its own on one in-process gateway (its token, its PII vault scope, every server of the
servers file), whose sandbox is started exactly as `mcpexec run` starts a task's (run.py: the same run folder,
bounded workspace, hardening and watchdog) with the runtime in session mode (runtime/session.py). A session ends when
its owner ends it, or when its sandbox exits (a snippet that killed the runtime, the sandbox's deadline): the broker
then fails whatever waits with the reason. `close` ends every sandbox, started ahead or claimed: nothing is left.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import shutil
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TypeVar

from gateway.context import TaskContext
from gateway.core import GatewayCore
from gateway.errors import SessionEnded
from gateway.local.in_process import LocalGateway
from gateway.settings import LLMUpstream
from mcpexec import tracing
from mcpexec.api.agenttask import AgentTask, parse_agenttask
from mcpexec.api.egress import EgressPolicy
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.meta import API_VERSION
from mcpexec.local.run import (
    DEFAULT_WORKSPACE_BYTES,
    gateway_socket,
    kept_runs,
    local_gateway,
    prepare,
    refuse_widened_egress,
    sandbox_run,
    sandboxed,
    serve_sandboxes,
)
from mcpexec.local.sandbox.base import Sandbox

log = logging.getLogger("mcpexec.local_sessions")
T = TypeVar("T")

NAMESPACE = "local"
# A session's sandbox ends at this age whatever happens (the task's timeoutSeconds: its deadline and its token's).
LIFETIME_SECONDS = 8 * 3600
# The task's code is never run: a session's code comes from its caller through the broker.
SESSION_CODE = "# an interactive session: its code comes through execute_code"
RELAUNCH_BACKOFF_SECONDS = 1.0


@dataclass
class LocalSession:
    """A session's task context (its scope keys its executions), and its sandbox while it runs."""

    context: TaskContext
    stop: threading.Event = field(default_factory=threading.Event)
    sandbox: asyncio.Task[None] | None = None


def session_task(servers: list[str], egress: EgressPolicy | None = None) -> AgentTask:
    """A session as the gateway admits it: a task allowed every server of the servers file, and `egress` (none by
    default)."""
    return parse_agenttask(
        {
            "apiVersion": API_VERSION,
            "kind": "AgentTask",
            "metadata": {"name": f"session-{uuid.uuid4().hex[:12]}", "namespace": NAMESPACE},
            "spec": {
                "code": SESSION_CODE,
                "mcpServers": servers,
                "egress": (egress or EgressPolicy()).model_dump(),
                "timeoutSeconds": LIFETIME_SECONDS,
            },
        }
    )


class LocalSessions:
    def __init__(
        self,
        servers: dict[str, MCPServerSpec],
        sandbox: Sandbox,
        warm: int = 0,
        workspace_bytes: int = DEFAULT_WORKSPACE_BYTES,
        redis_url: str | None = None,
        llm: LLMUpstream | None = None,
        egress: EgressPolicy | None = None,
    ) -> None:
        """`warm`: how many sandboxes to keep started ahead of the sessions that will claim them; `egress`: the hosts
        every session may reach through the gateway (none by default; refused with TaskError beyond the grant)."""
        self._egress = egress or EgressPolicy()
        refuse_widened_egress(session_task([], self._egress))
        self._servers = servers
        self._sandbox = sandbox
        self._warm_target = warm
        self._workspace_bytes = workspace_bytes
        self._redis_url = redis_url
        self._llm = llm
        self._gateway: LocalGateway | None = None
        self._socket_path = Path()
        self._warm: list[LocalSession] = []
        self._live: dict[str, LocalSession] = {}  # scope -> every session whose sandbox runs, warm or claimed
        self._closing = False

    @property
    def core(self) -> GatewayCore:
        assert self._gateway is not None, "start() first"
        return self._gateway.core

    async def start(self) -> None:
        """The gateway, then the sandboxes to keep warm (starting in the background)."""
        self._socket_path = await asyncio.to_thread(gateway_socket)
        self._gateway = await local_gateway(self._servers, [], self._redis_url, self._llm)
        await serve_sandboxes(self._gateway, self._socket_path)
        self._top_up()

    async def claim(self) -> LocalSession:
        """A session of its own: a warm sandbox when one is there (replaced at once), else a new one. Its sandbox
        may still be starting: executions wait for its runtime in the broker."""
        session = self._warm.pop(0) if self._warm else self._launch()
        self._top_up()
        log.info("session claimed", extra={"scope": session.context.scope, "warm_left": len(self._warm)})
        return session

    async def ready(self, session: LocalSession) -> None:
        """Returns once the session's runtime asks for code; raises SessionEnded if its sandbox ended first."""
        assert session.sandbox is not None
        polled = asyncio.ensure_future(self.core.executions.ready(session.context.scope))
        try:
            await asyncio.wait({polled, session.sandbox}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            polled.cancel()
        if session.sandbox.done():
            raise SessionEnded("the session's sandbox ended before its runtime asked for code")

    async def warmed(self) -> None:
        """Returns once every sandbox kept warm is ready: what the next claims get then costs them nothing."""
        await asyncio.gather(*(self.ready(session) for session in list(self._warm)))

    async def end(self, session: LocalSession, reason: str) -> None:
        """End the session and its sandbox; returns once the sandbox is gone and its workspace copied out."""
        assert self._gateway is not None
        self._live.pop(session.context.scope, None)
        with contextlib.suppress(ValueError):
            self._warm.remove(session)
        await self.core.executions.end(session.context.scope, reason)
        await self._gateway.unregister_task(session.context.task_id)
        session.stop.set()
        if session.sandbox is not None and session.sandbox is not asyncio.current_task():
            await asyncio.wait({session.sandbox})

    async def close(self) -> None:
        """End every sandbox, then the gateway."""
        self._closing = True
        await asyncio.gather(*(self.end(s, "the server is stopping") for s in list(self._live.values())))
        if self._gateway is not None:
            await self._gateway.stop()
            shutil.rmtree(self._socket_path.parent, ignore_errors=True)

    def _top_up(self) -> None:
        while not self._closing and len(self._warm) < self._warm_target:
            self._warm.append(self._launch())

    def _launch(self) -> LocalSession:
        assert self._gateway is not None
        task = session_task(sorted(self._servers), self._egress)
        # The session's trace starts here (tracing on): its sandbox's spans, each execution's, go under this span.
        with tracing.span("mcpexec.session_start") as span:
            context, token = self._gateway.open_session(task, LIFETIME_SECONDS, tracing.traceparent_of(span))
            meta = task.metadata
            span.set_attributes(
                tracing.task_attributes({"namespace": meta.namespace, "name": meta.name, "uid": context.uid})
            )
        session = LocalSession(context)
        self._live[context.scope] = session
        session.sandbox = asyncio.create_task(self._run(task, session, token), name=f"sandbox-{task.metadata.name}")
        return session

    async def _run(self, task: AgentTask, session: LocalSession, token: str) -> None:
        """The session's sandbox from start to end; one that ends on its own ends its session with the reason."""
        scope = session.context.scope
        try:
            traceparent = session.context.traceparent
            paths = await asyncio.to_thread(prepare, task, kept_runs(), self._socket_path, True, traceparent)
            run = sandbox_run(task, paths, token)
            log.info("session sandbox starting", extra={"scope": scope, "sandbox": self._sandbox.name})
            completed, _result = await _own_thread(
                lambda: sandboxed(self._sandbox, run, paths, self._workspace_bytes, session.stop)
            )
            detail = (completed.stderr or completed.stdout).strip()[-2000:]
            reason = f"the session's sandbox exited (exit {completed.exit_code}){': ' + detail if detail else ''}"
        except Exception as exc:  # the sandbox could not start: the session ends saying why, the server goes on
            reason = f"the session's sandbox could not run: {type(exc).__name__}: {exc}"
        finally:
            session.stop.set()
        log.info("session sandbox ended", extra={"scope": scope, "reason": reason})
        if scope in self._live:  # it ended on its own, not by `end`: replaced, but a sandbox that cannot start is
            await self.end(session, reason)  # not retried in a tight loop
            await asyncio.sleep(RELAUNCH_BACKOFF_SECONDS)
            self._top_up()


async def _own_thread(work: Callable[[], T]) -> T:
    """`work` in a thread of its own: a session's sandbox holds its thread for the session's life, which would starve
    asyncio's shared pool (a handful of threads) and, with it, every `to_thread` of the server."""
    done: concurrent.futures.Future[T] = concurrent.futures.Future()

    def run() -> None:
        try:
            done.set_result(work())
        except BaseException as exc:  # handed to the awaiting task, whatever it is
            done.set_exception(exc)

    threading.Thread(target=run, name="session-sandbox", daemon=True).start()
    return await asyncio.wrap_future(done)
