"""The egress proxy server: a sandbox's connection, its token, its grant, then a TLS tunnel or one http:// request.

Each connection carries one request (the proxy answers `Connection: close`): it is authenticated with the sandbox's
own gateway token (`Proxy-Authorization: Bearer <token>`, or Basic with the token as the password), its host and
port must be granted at every level (docs/egress.md), the name is resolved here and every address checked
(addresses.py), and the proxy connects to a checked address. A tunnel's first bytes must be a TLS ClientHello whose
server name is the CONNECT host. Nothing here is on the tool-call path: the proxy has listeners of its own.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import contextlib
import logging
import re
import time
import urllib.parse
from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Protocol

from gateway.context import Authenticator, TaskContext
from gateway.egress import plain_http
from gateway.egress.accounting import Connection, EgressAccounting, Kind, Verdict
from gateway.egress.addresses import AddressGuard, Resolver, Unresolvable
from gateway.egress.budgets import EgressBudgets
from gateway.egress.carry import Activity, Allowance, Refused, relay, send
from gateway.egress.http_head import BadHead, Head, read_head
from gateway.egress.settings import Address, EgressSettings
from gateway.egress.tls_hello import NotTls, read_client_hello
from gateway.errors import GatewayError, RateLimited, Unauthenticated
from gateway.pii.tokenizer import PiiTokenizer
from gateway.ratelimit import TaskRateLimits
from gateway.telemetry.metrics import GatewayMetrics

log = logging.getLogger("mcpexec.gateway.egress")

_NAME = re.compile(r"^([a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?\.)+[a-z]([-a-z0-9]{0,61}[a-z0-9])?$")
_STREAM_LIMIT = 64 * 1024
Streams = tuple[asyncio.StreamReader, asyncio.StreamWriter]


def proxy_token(head: Head) -> str | None:
    """The gateway token a request carries: `Proxy-Authorization: Bearer <token>`, or Basic with it as password."""
    scheme, _, value = (head.header("proxy-authorization") or "").strip().partition(" ")
    if scheme.lower() == "bearer":
        return value.strip() or None
    if scheme.lower() == "basic":
        try:
            user, _, password = base64.b64decode(value.strip(), validate=True).decode().partition(":")
        except (binascii.Error, UnicodeDecodeError):
            return None
        return password or user or None
    return None


def target(head: Head) -> tuple[Kind, str, int, str]:
    """(kind, host, port, path) of a request: `CONNECT host:port`, or a GET... of an absolute http:// URL."""
    method, where, _version = head.first
    if method == "CONNECT":
        host, sep, number = where.rpartition(":")
        if not sep or not number.isdigit() or not 0 < int(number) < 65536:
            raise Refused(Verdict.BAD_REQUEST, 400, "CONNECT needs host:port")
        return Kind.TUNNEL, _name(host), int(number), ""
    url = urllib.parse.urlsplit(where)
    if url.scheme != "http" or not url.hostname:
        raise Refused(Verdict.BAD_REQUEST, 400, "only http:// URLs are proxied (https goes through CONNECT)")
    try:
        port = url.port or 80
    except ValueError:
        raise Refused(Verdict.BAD_REQUEST, 400, "a malformed port") from None
    path = urllib.parse.urlunsplit(("", "", url.path or "/", url.query, ""))
    return Kind.HTTP, _name(url.hostname), port, path


def _name(host: str) -> str:
    name = host.lower().rstrip(".")
    if not _NAME.match(name):
        raise Refused(Verdict.NOT_GRANTED, 403, "egress is to host names only")
    return name


class Gateway(Protocol):
    """What the proxy uses of its gateway (GatewayCore): who a token is, its per-task state kept, its request budget,
    its tokenizer, its metrics registry."""

    authenticator: Authenticator
    rate_limits: TaskRateLimits
    tokenizer: PiiTokenizer
    metrics: GatewayMetrics

    def admit(self, ctx: TaskContext) -> None: ...


class EgressProxy:
    """`serve_tcp(host, port)` (cluster) or `serve_unix(path)` (local); each connection is `handle`d.
    `protected_ports`: the gateway's own listeners and Redis's, closed even on addresses the admin allowed."""

    def __init__(
        self, gateway: Gateway, settings: EgressSettings, budgets: EgressBudgets, protected_ports: frozenset[int]
    ) -> None:
        self._gateway, self._settings, self._limits = gateway, settings, settings.limits
        self._guard = AddressGuard(tuple(settings.cluster_networks), tuple(settings.allowed_addresses), protected_ports)
        self._resolver = Resolver(settings.resolve, settings.limits.connect_timeout_seconds)
        self.budgets = budgets
        self._accounting = EgressAccounting(gateway.metrics.registry)
        self._servers: list[asyncio.Server] = []

    async def serve_tcp(self, host: str, port: int) -> int:
        server = await asyncio.start_server(self.handle, host, port, limit=_STREAM_LIMIT)
        self._servers.append(server)
        bound = int(server.sockets[0].getsockname()[1])
        self._guard = replace(self._guard, protected_ports=self._guard.protected_ports | {bound})  # nor itself
        return bound

    async def serve_unix(self, path: str) -> None:
        self._servers.append(await asyncio.start_unix_server(self.handle, path, limit=_STREAM_LIMIT))

    async def close(self) -> None:
        for server in self._servers:
            server.close()
            await server.wait_closed()
        await self.budgets.close()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        started = time.monotonic()
        connection = Connection(kind=Kind.TUNNEL)
        verdict = Verdict.DONE
        try:
            async with asyncio.timeout(self._limits.total_timeout_seconds):
                await self._serve((reader, writer), connection)
        except Refused as exc:
            verdict, connection.reason = exc.verdict, exc.reason
            if not connection.answered:
                await _answer(writer, exc.status, exc.reason)
        except TimeoutError:
            verdict, connection.reason = Verdict.TOTAL_TIMEOUT, f"over {self._limits.total_timeout_seconds:g} s"
        except (BadHead, asyncio.IncompleteReadError) as exc:
            verdict, connection.reason = Verdict.BAD_REQUEST, str(exc) or "cut short"
        except OSError as exc:
            connection.reason = f"connection lost: {exc}"
        finally:
            with contextlib.suppress(OSError):
                writer.close()
            if connection.task or verdict is not Verdict.DONE:
                self._accounting.record(connection, verdict, time.monotonic() - started)

    async def _serve(self, client: Streams, connection: Connection) -> None:
        """One connection's request, carried."""
        idle = self._limits.idle_timeout_seconds
        try:
            head = await asyncio.wait_for(read_head(client[0]), idle)
        except TimeoutError:
            raise Refused(Verdict.IDLE_TIMEOUT, 408, "no request in time") from None
        if head is None:
            return
        kind, host, port, path = target(head)
        connection.kind, connection.host, connection.port = kind, host, port
        ctx = await self._caller(head)
        connection.task, connection.task_uid = ctx.task_id, ctx.uid
        if not self._granted(ctx, host, port):
            raise Refused(Verdict.NOT_GRANTED, 403, f"{host}:{port} is not in the task's egress grant")
        if not await self.budgets.open(ctx.scope):
            raise Refused(Verdict.CONNECTIONS_SPENT, 429, "the task's egress connection budget is spent")
        addresses = await self._addresses(host, port)
        allowance = Allowance(self.budgets, ctx.scope)
        try:
            if kind is Kind.TUNNEL:
                connection.answered = True
                await _answer(client[1], 200, "Connection established")
                await self._tunnel(client, host, port, addresses, allowance, connection)
            else:
                upstream = await self._connect(addresses, port, connection)
                try:
                    tokenize = self._tokenize_for(ctx)
                    limits = (self._limits.max_text_bytes, idle)
                    authority = host if port == 80 else f"{host}:{port}"
                    await plain_http.forward(
                        head, path, authority, client, upstream, allowance, connection, tokenize, limits
                    )
                finally:
                    upstream[1].close()
        finally:
            await allowance.settle()

    async def _caller(self, head: Head) -> TaskContext:
        token = proxy_token(head)
        try:
            if token is None:
                raise Unauthenticated("missing Proxy-Authorization with the sandbox's gateway token")
            ctx = await self._gateway.authenticator.authenticate(token)
            self._gateway.admit(ctx)
            await self._gateway.rate_limits.check(ctx.scope)
        except RateLimited as exc:
            raise Refused(Verdict.RATE_LIMITED, 429, exc.message) from None
        except GatewayError as exc:
            status = 407 if isinstance(exc, Unauthenticated) else 403
            raise Refused(Verdict.UNAUTHENTICATED, status, exc.message) from None
        return ctx

    def _granted(self, ctx: TaskContext, host: str, port: int) -> bool:
        """Every level allows it: the admin's ceiling, the namespace's grant, the pool's template, the task's ask."""
        layers = [policy for _name, policy in self._settings.admin.bounds(ctx.task.metadata.namespace)]
        layers.append(ctx.task.spec.egress)
        if ctx.ceiling is not None:
            layers.append(ctx.ceiling.egress)
        return all(layer.allows(host, port) for layer in layers)

    async def _addresses(self, host: str, port: int) -> list[Address]:
        try:
            resolved = await self._resolver.resolve(host, port)
        except Unresolvable as exc:
            raise Refused(Verdict.UNREACHABLE, 502, str(exc)) from None
        refusals = {address: self._guard.refusal(address, port) for address in resolved}
        allowed = [address for address, refusal in refusals.items() if refusal is None]
        if not allowed:
            reason = next((r for r in refusals.values() if r), f"{host} has no address")
            raise Refused(Verdict.ADDRESS_REFUSED, 403, f"{host} resolves to a refused address: {reason}")
        return allowed

    async def _connect(self, addresses: list[Address], port: int, connection: Connection) -> Streams:
        """A connection to the first checked address that answers: to the address, never the name again."""
        errors = []
        for address in addresses:
            try:
                streams = await asyncio.wait_for(
                    asyncio.open_connection(str(address), port, limit=_STREAM_LIMIT),
                    self._limits.connect_timeout_seconds,
                )
            except (OSError, TimeoutError) as exc:
                errors.append(f"{address}: {exc or 'timed out'}")
                continue
            connection.address = str(address)
            return streams
        raise Refused(Verdict.UNREACHABLE, 502, "; ".join(errors))

    async def _tunnel(
        self,
        client: Streams,
        host: str,
        port: int,
        addresses: list[Address],
        allowance: Allowance,
        connection: Connection,
    ) -> None:
        try:
            hello, sni = await asyncio.wait_for(read_client_hello(client[0]), self._limits.idle_timeout_seconds)
        except NotTls as exc:
            raise Refused(Verdict.NOT_TLS, 400, str(exc)) from None
        except TimeoutError:
            raise Refused(Verdict.IDLE_TIMEOUT, 408, "no TLS ClientHello in time") from None
        if sni != host:
            raise Refused(Verdict.SNI_MISMATCH, 403, f"the TLS server name {sni!r} is not the CONNECT host {host!r}")
        upstream = await self._connect(addresses, port, connection)
        try:
            await send(upstream[1], hello, allowance, Activity(), connection, upward=True)
            await relay(client, upstream, allowance, connection, self._limits.idle_timeout_seconds)
        finally:
            upstream[1].close()

    def _tokenize_for(self, ctx: TaskContext) -> Callable[[str], Awaitable[str]]:
        async def tokenize(text: str) -> str:
            try:
                return str(await self._gateway.tokenizer.tokenize(ctx, text))
            except GatewayError as exc:
                raise Refused(
                    Verdict.PII_UNAVAILABLE, 503, f"the answer could not be checked for PII: {exc.code}"
                ) from None

        return tokenize


async def _answer(writer: asyncio.StreamWriter, status: int, reason: str) -> None:
    """A status line (its reason phrase the reason, so pip and curl show it) and, for a refusal, the reason again."""
    phrase = reason.encode("ascii", "replace").decode().replace("\r", " ").replace("\n", " ")[:200]
    if status == 200:
        writer.write(f"HTTP/1.1 200 {phrase}\r\n\r\n".encode())
    else:
        body = (phrase + "\n").encode()
        extra = 'Proxy-Authenticate: Bearer realm="mcpexec-egress"\r\n' if status == 407 else ""
        head = f"HTTP/1.1 {status} {phrase}\r\n{extra}Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
        writer.write((head + "Connection: close\r\n\r\n").encode() + body)
    with contextlib.suppress(OSError):
        await writer.drain()
