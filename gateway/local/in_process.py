"""Local mode: the gateway in-process for `mcpexec run`, serving the sandbox on a Unix socket.

Tasks are registered here (no apiserver): each gets an HS256 JWT whose lifetime is the task's.
"""

from __future__ import annotations

import urllib.parse

from gateway.approvals.redis_holds import RedisHolds
from gateway.context import TaskContext
from gateway.core import GatewayBackends, GatewayConfig, GatewayCore
from gateway.egress.budgets import MemoryEgressBudgets
from gateway.egress.proxy import EgressProxy
from gateway.egress.settings import EgressSettings
from gateway.local.auth import LocalTaskAuthority
from gateway.pii import presidio_detector
from gateway.pii.vault import MemoryVault, RedisVault, Vault
from gateway.settings import Limits, LLMUpstream
from gateway.web.app import create_app
from gateway.web.ops import create_ops_app
from gateway.web.serving import BackgroundServer
from mcpexec.api.agenttask import AgentTask
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.usage import Usage


class LocalGateway:
    """`LocalGateway(servers, redis_url=None, llm=None, pii_ner=False)`; `await start(uds_path)`; `register_task`;
    `await stop()`. `pii_ner`: PERSON/LOCATION detection with Presidio (needs mcpexec[presidio]). The ops app
    (health, metrics, API docs) is served only on request (`serve_ops`): `mcpexec run` never gives it to a sandbox."""

    def __init__(
        self,
        servers: dict[str, MCPServerSpec],
        redis_url: str | None = None,
        llm: LLMUpstream | None = None,
        limits: Limits | None = None,
        pii_ner: bool = False,
        skills_key: bytes | None = None,
        egress: EgressSettings | None = None,
    ) -> None:
        self._servers = dict(servers)
        self._redis_url = redis_url
        self._egress_settings = egress or EgressSettings()
        budget = self._egress_settings.limits
        self._egress_budgets = MemoryEgressBudgets(budget.connections_per_task, budget.bytes_per_task)
        self._authority = LocalTaskAuthority()
        vault: Vault = RedisVault(redis_url) if redis_url else MemoryVault()
        detector = presidio_detector.ner_for(pii_ner)
        self.core = GatewayCore(
            GatewayBackends(
                self._authority,
                lambda: self._servers,
                vault,
                ner=detector,
                # Held calls: with Redis as a cluster's, else in this process (decided in-process: `core.approvals`).
                approval_holds=RedisHolds(redis_url) if redis_url else None,
                egress_budgets=self._egress_budgets,
            ),
            GatewayConfig(limits=limits or Limits(), llm=llm, skills_key=skills_key),
        )
        self.app = create_app(self.core)
        self.ops_app = create_ops_app(self.core, self.app)
        self._http: BackgroundServer | None = None
        self._ops: BackgroundServer | None = None
        self._egress: EgressProxy | None = None
        self._tcp_ports: list[int] = []  # this gateway's TCP listeners: never reachable through its egress proxy

    async def start(self, uds_path: str) -> None:
        """Connect to the MCP servers (in the background) and serve the API on `uds_path`."""
        await self.core.start()
        self._http = BackgroundServer(self.app, uds=uds_path)
        await self._http.start()

    async def start_tcp(self, host: str = "127.0.0.1", port: int = 0) -> int:
        """Same on TCP (tests, benchmarks, schemathesis); returns the bound port."""
        await self.core.start()
        self._http = BackgroundServer(self.app, host=host, port=port)
        await self._http.start()
        self._tcp_ports.append(self._http.port)
        return self._http.port

    async def serve_ops(self, uds_path: str | None = None) -> int | None:
        """Serve the ops app on its own Unix socket, or on a free loopback TCP port (returned)."""
        self._ops = BackgroundServer(self.ops_app, uds=uds_path)
        await self._ops.start()
        if uds_path:
            return None
        self._tcp_ports.append(self._ops.port)
        return self._ops.port

    async def serve_egress(self, uds_path: str | None = None, port: int = 0) -> int | None:
        """Serve the egress proxy (gateway/egress/) on its own Unix socket, or on a loopback TCP port (returned; 0: a
        free one). Its protected ports: this gateway's own TCP listeners and Redis's."""
        redis_port = (urllib.parse.urlsplit(self._redis_url).port or 6379) if self._redis_url else None
        protected = frozenset([*self._tcp_ports, *([redis_port] if redis_port else [])])
        self._egress = EgressProxy(self.core, self._egress_settings, self._egress_budgets, protected)
        if uds_path is not None:
            await self._egress.serve_unix(uds_path)
            return None
        return await self._egress.serve_tcp("127.0.0.1", port)

    async def stop(self) -> None:
        if self._egress is not None:
            await self._egress.close()
        if self._ops is not None:
            await self._ops.stop()
        if self._http is not None:
            await self._http.stop()
        await self.core.close()

    def register_task(self, task: AgentTask, ttl_seconds: int, traceparent: str | None = None) -> str:
        """Admit a task for `ttl_seconds`; returns its bearer token (claims: sub, uid, aud, iat, exp). `traceparent`:
        the trace its sandbox continues (its spans are taken into it)."""
        _context, token = self._authority.register(task, ttl_seconds, traceparent)
        return token

    def open_session(
        self, task: AgentTask, ttl_seconds: int, traceparent: str | None = None
    ) -> tuple[TaskContext, str]:
        """Admit a task as an interactive session for `ttl_seconds`: its context (whose scope keys its executions in
        `core.executions`) and the bearer token of the sandbox that runs them. Ended by `unregister_task`.
        `traceparent`: the trace its sandbox continues."""
        context, token = self._authority.register(task, ttl_seconds, traceparent)
        self.core.executions.open(context.scope)
        return context, token

    async def unregister_task(self, task_id: str) -> None:
        """Refuse the task's token from now on and drop its state (its upstream connections among it)."""
        context = self._authority.unregister(task_id)
        if context is not None:
            await self.core.forget(context.scope)

    def context(self, task_id: str) -> TaskContext | None:
        """A registered task's context (its scope keys its held calls in `core.approvals`)."""
        return self._authority.context(task_id)

    def usage(self, task_id: str) -> dict[str, int]:
        """`{"llmTurns", "tokensIn", "tokensOut", "toolCalls"}` as in the result's usage (docs/contracts.md)."""
        context = self._authority.context(task_id)
        usage = self.core.usage.of(context.scope) if context is not None else Usage()
        return usage.model_dump(by_alias=True)
