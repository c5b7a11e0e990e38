"""The cluster-mode gateway server behind `python -m gateway` (env: REDIS_URL, LLM_BASE_URL,
LLM_API_KEY, LLM_MODEL; listens on MCPEXEC_GATEWAY_HOST:MCPEXEC_GATEWAY_PORT, default 0.0.0.0:8000, for sandboxes, and
on MCPEXEC_GATEWAY_SESSIONS_PORT, default 8080, for people: the execute API, the approval API and the MCP front
door; its egress proxy for sandboxes on MCPEXEC_EGRESS_PORT, default 3128, gateway/egress/)."""

from __future__ import annotations

import asyncio
import urllib.parse

import uvicorn
from kubernetes import client, config

from gateway.approvals.redis_holds import RedisHolds
from gateway.cluster.approval_status import ApprovalStatusWriter
from gateway.cluster.auth import ClusterAuthenticator
from gateway.cluster.claims import ClaimIndex
from gateway.cluster.directory import KubeDirectory
from gateway.cluster.people.server import SessionsServer
from gateway.cluster.people.sessions import ClusterSessions
from gateway.cluster.people.users import SessionUsers
from gateway.cluster.server_status import ServerStatusReporter
from gateway.cluster.servers import ClusterServers
from gateway.cluster.task_reports import KubeTaskReports
from gateway.core import GatewayBackends, GatewayConfig, GatewayCore
from gateway.egress.budgets import SharedEgressBudgets
from gateway.egress.proxy import EgressProxy
from gateway.egress.settings import EgressSettings
from gateway.errors import PiiDetectorUnavailable
from gateway.executions.redis_store import RedisExecutionStore
from gateway.pii import presidio_detector
from gateway.pii.vault import RedisVault
from gateway.ratelimit import SharedRateLimits
from gateway.settings import GatewaySettings
from gateway.telemetry import logs
from gateway.tools.catalog import namespaced_server_key
from gateway.web.app import create_app
from gateway.web.ops import create_ops_app
from gateway.web.serving import HTTP, BackgroundServer
from mcpexec.api.meta import AGENTSESSION_PLURAL

# How often each replica probes the MCPServers for their status (patched only when it changes).
STATUS_EVERY_SECONDS = 15.0


def _api_client() -> client.ApiClient:
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config()
    return client.ApiClient()


async def serve(settings: GatewaySettings) -> None:
    if settings.pii_ner == "presidio" and (missing := presidio_detector.available()) is not None:
        raise SystemExit(f"MCPEXEC_PII_NER=presidio, but {missing}")
    directory = KubeDirectory(_api_client())
    servers = ClusterServers(directory, settings.servers_refresh_seconds, frozenset(settings.stdio_server_namespaces))
    await servers.refresh()
    claims, session_claims = ClaimIndex(directory), ClaimIndex(directory, AGENTSESSION_PLURAL)
    # Which pool sandbox serves which task or session: known before the first request is served.
    await claims.load()
    await session_claims.load()
    authenticator = ClusterAuthenticator(directory, settings.audience, claims, sessions=session_claims)
    limits = settings.limits()
    egress = EgressSettings()
    budgets = SharedEgressBudgets(settings.redis_url, egress.limits.connections_per_task, egress.limits.bytes_per_task)
    try:
        core = GatewayCore(
            GatewayBackends(
                authenticator,
                servers.specs,
                RedisVault(settings.redis_url),
                server_key=namespaced_server_key,
                server_headers=servers.headers,
                ner=presidio_detector.ner_for(settings.pii_ner == "presidio"),
                rate_limits=SharedRateLimits(settings.redis_url, limits.requests_per_second),
                execution_store=RedisExecutionStore(settings.redis_url),
                assigner=authenticator,
                task_reports=KubeTaskReports(directory),
                approval_holds=RedisHolds(settings.redis_url),
                egress_budgets=budgets,
            ),
            GatewayConfig(
                limits=limits,
                llm=settings.llm(),
                pii_minimum=frozenset(settings.pii_minimum_entities),
                pii_phone_regions=frozenset(settings.pii_phone_regions),
                skills_key=settings.skills_seal_key.get_secret_value().encode(),
                approval_annotations=frozenset(settings.approval_annotations),
            ),
        )
    except PiiDetectorUnavailable as exc:
        raise SystemExit(f"MCPEXEC_PII_MINIMUM_ENTITIES: {exc.message}") from None
    core.approvals.notices = approval_status = ApprovalStatusWriter(directory, core.approvals)
    refresher = asyncio.create_task(servers.refresh_forever(), name="mcpserver-refresh")
    claim_watch = asyncio.create_task(claims.follow(), name="claim-index")
    session_watch = asyncio.create_task(session_claims.follow(), name="session-claim-index")
    reporter = ServerStatusReporter(directory, servers, core.catalog)
    status_reports = asyncio.create_task(reporter.report_forever(STATUS_EVERY_SECONDS), name="mcpserver-status")
    await core.start()
    own = {
        settings.port,
        settings.ops_port,
        settings.sessions_port,
        urllib.parse.urlsplit(settings.redis_url).port or 6379,
    }
    proxy = EgressProxy(core, egress, budgets, frozenset(own))
    await proxy.serve_tcp(settings.host, egress.port)
    try:
        app = create_app(core)
        ops = BackgroundServer(create_ops_app(core, app), host=settings.host, port=settings.ops_port)
        people = SessionsServer(ClusterSessions(core, directory, SessionUsers(directory)))
        users = BackgroundServer(people, host=settings.host, port=settings.sessions_port, lifespan="on")
        await ops.start()
        await users.start()
        try:  # the API server owns the signals: SIGTERM ends it, then the ops and sessions servers
            config = uvicorn.Config(app, host=settings.host, port=settings.port, lifespan="off", http=HTTP)
            await uvicorn.Server(config).serve()
        finally:
            await users.stop()
            await ops.stop()
    finally:
        refresher.cancel()
        claim_watch.cancel()
        session_watch.cancel()
        status_reports.cancel()
        await proxy.close()
        await approval_status.close()
        await core.close()


def main() -> None:
    logs.configure()
    asyncio.run(serve(GatewaySettings()))
