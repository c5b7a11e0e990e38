"""Every egress connection accounted for: one audit record (who, where, how much, how long, the verdict) and its
metrics. The metrics' labels are bounded: the kind and the verdict, never the host (a task names its hosts)."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from enum import StrEnum

from prometheus_client import CollectorRegistry, Counter, Histogram

log = logging.getLogger("mcpexec.gateway.egress.audit")

_DURATION_BUCKETS = (0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300, 600)


class Verdict(StrEnum):
    """How a connection ended: `done` (carried until either side closed), or why it was refused or cut."""

    DONE = "done"
    UNAUTHENTICATED = "unauthenticated"
    NOT_GRANTED = "not_granted"
    ADDRESS_REFUSED = "address_refused"
    SNI_MISMATCH = "sni_mismatch"
    NOT_TLS = "not_tls"
    BAD_REQUEST = "bad_request"
    RATE_LIMITED = "rate_limited"
    CONNECTIONS_SPENT = "connections_spent"
    BYTES_SPENT = "bytes_spent"
    UNREACHABLE = "unreachable"
    IDLE_TIMEOUT = "idle_timeout"
    TOTAL_TIMEOUT = "total_timeout"
    UNCHECKED_TEXT = "unchecked_text"
    PII_UNAVAILABLE = "pii_unavailable"


class Kind(StrEnum):
    TUNNEL = "tunnel"  # CONNECT: a TLS tunnel, opaque to the gateway
    HTTP = "http"  # one plain http:// request, its text answer tokenized


@dataclass
class Connection:
    """One sandbox connection to the proxy, as it is audited."""

    kind: Kind
    host: str = ""
    port: int = 0
    address: str = ""
    task: str = ""
    task_uid: str = ""
    sent: int = 0  # bytes from the sandbox to the host
    received: int = 0  # bytes from the host to the sandbox
    reason: str = ""
    answered: bool = False  # the sandbox has had a status line: a refusal after it can only close the connection


class EgressAccounting:
    def __init__(self, registry: CollectorRegistry) -> None:
        self.connections = Counter(
            "mcpexec_gateway_egress_connections",
            "Egress proxy connections by kind (tunnel, http) and verdict.",
            ["kind", "verdict"],
            registry=registry,
        )
        self.bytes = Counter(
            "mcpexec_gateway_egress_bytes",
            "Bytes carried by the egress proxy, by direction (sent: sandbox to host).",
            ["direction"],
            registry=registry,
        )
        self.duration = Histogram(
            "mcpexec_gateway_egress_connection_seconds",
            "How long egress proxy connections lasted, by kind.",
            ["kind"],
            buckets=_DURATION_BUCKETS,
            registry=registry,
        )

    def record(self, connection: Connection, verdict: Verdict, seconds: float) -> None:
        self.connections.labels(connection.kind, verdict).inc()
        self.bytes.labels("sent").inc(connection.sent)
        self.bytes.labels("received").inc(connection.received)
        self.duration.labels(connection.kind).observe(seconds)
        log.info(
            "egress",
            extra={
                "task": connection.task,
                "task_uid": connection.task_uid,
                "kind": connection.kind.value,
                "host": connection.host,
                "port": connection.port,
                "address": connection.address,
                "bytes_sent": connection.sent,
                "bytes_received": connection.received,
                "duration_ms": round(seconds * 1000, 3),
                "verdict": verdict.value,
                "reason": connection.reason,
            },
        )
