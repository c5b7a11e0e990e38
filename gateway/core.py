"""Everything one gateway instance holds, wired together; the HTTP app and LocalGateway are thin shells over it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from gateway.approvals.gate import ApprovalGate
from gateway.approvals.memory_holds import MemoryHolds
from gateway.approvals.rules import ApprovalRules
from gateway.approvals.store import HeldCalls
from gateway.context import Assigner, Authenticator, TaskContext, TaskReports
from gateway.egress.budgets import EgressBudgets
from gateway.errors import GatewayError
from gateway.executions.broker import ExecutionBroker
from gateway.executions.memory_store import MemoryExecutionStore
from gateway.executions.store import ExecutionStore
from gateway.llm.proxy import LLMProxy
from gateway.pii.detectors import Detector
from gateway.pii.protection import DEFAULT_MINIMUM, protection_for
from gateway.pii.scanner import ScanPool
from gateway.pii.tokenizer import PiiTokenizer
from gateway.pii.vault import Vault
from gateway.ratelimit import MemoryRateLimits, TaskRateLimits
from gateway.settings import Limits, LLMUpstream
from gateway.telemetry.metrics import GatewayMetrics
from gateway.tools.calls import ToolCaller
from gateway.tools.catalog import Catalog, ServerKey, local_server_key
from gateway.tools.skill_seals import SkillSeals
from gateway.upstreams.pool import UpstreamPool
from gateway.usage import UsageMeter
from mcpexec import tracing
from mcpexec.api.approval import AnnotationRule
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.api.pii import DEFAULT_PHONE_REGIONS, PiiEntity

log = logging.getLogger("mcpexec.gateway.core")


def _no_ner(_entities: frozenset[PiiEntity]) -> Detector | None:
    return None


@dataclass(frozen=True)
class GatewayBackends:
    """What a gateway is wired to: who its callers are, which MCP servers exist, where its shared state lives. A
    cluster's come from Kubernetes and Redis; a local gateway's live in its process (the defaults)."""

    authenticator: Authenticator
    servers: Callable[[], dict[str, MCPServerSpec]]
    vault: Vault
    # How a task's server name becomes a server's key (cluster: namespaced), and each server's extra HTTP headers.
    server_key: ServerKey = local_server_key
    server_headers: Callable[[str], dict[str, str]] | None = None
    # PERSON/LOCATION detection for a set of entities (None: none; presidio_detector.ner_for).
    ner: Callable[[frozenset[PiiEntity]], Detector | None] = _no_ner
    rate_limits: TaskRateLimits | None = None  # None: in this process, at the config's requests per second
    execution_store: ExecutionStore | None = None  # None: in this process
    # The egress proxy's per-task budgets (gateway/egress/), dropped with the task's other state (None: no proxy).
    egress_budgets: EgressBudgets | None = None
    # Which task a SandboxPool's sandbox runs: cluster mode only (None: this gateway serves no pools).
    assigner: Assigner | None = None
    # Where tasks' results reported by their sandboxes go: cluster mode only (None: the host reads the result file).
    task_reports: TaskReports | None = None
    # Where calls held for a person's approval are kept: shared by the replicas through Redis (None: in this process).
    approval_holds: HeldCalls | None = None


@dataclass(frozen=True)
class GatewayConfig:
    """How a gateway behaves: its limits, its model upstream, the PII every task is checked for, its seal key."""

    limits: Limits = field(default_factory=Limits)
    llm: LLMUpstream | None = None
    pii_minimum: frozenset[PiiEntity] = DEFAULT_MINIMUM
    pii_phone_regions: frozenset[str] = frozenset(DEFAULT_PHONE_REGIONS)
    # Without a key of its own (shared by replicas, kept across local runs) seals hold for this process only.
    skills_key: bytes | None = None
    # The admin's: calls that need a person's approval, by the tools' MCP annotations.
    approval_annotations: frozenset[AnnotationRule] = frozenset()


class GatewayCore:
    def __init__(self, backends: GatewayBackends, config: GatewayConfig | None = None) -> None:
        config = config or GatewayConfig()
        tracing.configure("mcpexec-gateway")  # on only with an OTLP endpoint in the environment
        self.limits = config.limits
        self.authenticator = backends.authenticator
        self.assigner = backends.assigner
        self.task_reports = backends.task_reports
        self.metrics = GatewayMetrics()
        self.usage = UsageMeter()
        self.vault = backends.vault
        self.upstreams = UpstreamPool(backends.servers, self.limits.max_result_bytes, backends.server_headers)
        self.catalog = Catalog(self.upstreams, backends.server_key)
        # A minimum this gateway cannot detect is a configuration error: said at start, not per task.
        backends.ner(config.pii_minimum)
        self.scans = ScanPool()
        self.metrics.pii_scans_waiting.set_function(lambda: self.scans.waiting)
        self.tokenizer = PiiTokenizer(
            backends.vault,
            self.limits.vault_ttl_seconds,
            protection_for(config.pii_minimum, self.catalog.spec, config.pii_phone_regions),
            self.metrics.count_pii,
            backends.ner,
            self.scans,
            self._vault_lost,
        )
        self.rate_limits = backends.rate_limits or MemoryRateLimits(self.limits.requests_per_second)
        self.skill_seals = SkillSeals(self.catalog, config.skills_key or os.urandom(32))
        self.approvals = ApprovalGate(
            ApprovalRules(config.approval_annotations),
            backends.approval_holds or MemoryHolds(),
            self.tokenizer,
            self.metrics,
        )
        self.caller = ToolCaller(self.catalog, self.upstreams, self.tokenizer, self.usage, self.metrics, self.approvals)
        self.llm = LLMProxy(config.llm, self.tokenizer, self.usage, self.metrics)
        # Interactive sessions: code for a sandbox's runtime, its outcome back (opened by whoever runs the sandboxes);
        # shared through Redis by a cluster's replicas, in this process otherwise.
        store = backends.execution_store or MemoryExecutionStore()
        self.executions = ExecutionBroker(store, self.limits.max_request_bytes)
        self.egress_budgets = backends.egress_budgets
        self._reaper: asyncio.Task[None] | None = None
        self.active: dict[str, float] = {}  # task scope -> token expiry: whose per-task state to drop, and when

    def admit(self, ctx: TaskContext) -> None:
        """An authenticated request of this task: its per-task state (interactive session, upstream connections,
        limiter, vault index, usage) is dropped once its token has expired."""
        self.keep(ctx.scope, ctx.expires_at)

    def keep(self, scope: str, until: float) -> None:
        """Keep a task's per-task state (an interactive session's broker state among it) at least until `until`."""
        self.active[scope] = max(self.active.get(scope, 0.0), until)

    async def start(self, reap_every_seconds: float = 15.0) -> None:
        self.upstreams.start_catalog()
        self._reaper = asyncio.create_task(self._reap_forever(reap_every_seconds), name="gateway-reaper")

    async def _vault_lost(self, ctx: TaskContext, reason: str) -> None:
        """A task whose vault was lost cannot go on: its interactive session, if it has one, ends with the reason (its
        runtime ends a task itself, runtime/vault_marks.py)."""
        log.warning("PII vault lost", extra={"scope": ctx.scope})
        try:
            await self.executions.end(ctx.scope, reason)
        except GatewayError as exc:  # the session store away: the runtime still ends the session
            log.warning("could not end the session of a lost vault", extra={"scope": ctx.scope, "error": exc.code})

    async def forget(self, scope: str) -> None:
        """Drop a task's interactive session, upstream connections, limiter, detectors, usage and egress budget (its
        vault entries expire with their TTL)."""
        self.active.pop(scope, None)
        await self.executions.forget(scope)
        self.usage.forget(scope)
        self.rate_limits.forget(scope)
        self.tokenizer.forget(scope)
        self.approvals.rules.forget(scope)
        self.approvals.holds.forget(scope)
        self.scans.forget(scope)
        if self.egress_budgets is not None:
            self.egress_budgets.forget(scope)
        await self.upstreams.release(scope)

    async def _reap_forever(self, every: float) -> None:
        while True:
            await asyncio.sleep(every)
            now = time.time()
            for scope in [s for s, until in self.active.items() if until <= now]:
                log.info("dropping the state of an expired task", extra={"scope": scope})
                await self.forget(scope)

    async def close(self) -> None:
        if self._reaper is not None:
            self._reaper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._reaper
        await self.upstreams.close()
        await self.llm.close()
        await self.rate_limits.close()
        await self.vault.close()
        await self.executions.close()
        await self.approvals.holds.close()
        self.scans.close()
        await asyncio.to_thread(tracing.flush)
