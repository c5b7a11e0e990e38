"""Leader election on a coordination.k8s.io Lease: several operator replicas, exactly one of them active.

client-go's scheme, without comparing clocks: a candidate takes the Lease when it has watched it not change for
LEASE_SECONDS (timed on its own monotonic clock from when it last saw the holder or the renew time change), or when
it is free; the leader renews it every RETRY_SECONDS, guarded by the resourceVersion it read. A leader that has not
renewed for RENEW_DEADLINE_SECONDS (less than LEASE_SECONDS) ends its process at once, from a watchdog thread and
before any API call of its own (`check`): by the time a candidate may take the Lease, the old leader is gone. A
candidate serves its liveness endpoint while it waits, and starts the operator (kopf) only once it leads.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

from kubernetes import client
from kubernetes.client.exceptions import ApiException

LEASE_NAME = "mcpexec-operator"
LEASE_SECONDS = 8
RENEW_DEADLINE_SECONDS = 6.0
RETRY_SECONDS = 1.0
log = logging.getLogger(__name__)


def identity() -> str:
    """The pod's name (its hostname) and the process: a restarted container (same pod, the old process gone) holds
    the Lease again at once."""
    return f"{socket.gethostname()}_{os.getpid()}"


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _lost() -> None:
    log.critical("lost the operator's leadership: exiting, another replica takes over")
    logging.shutdown()
    os._exit(1)


@dataclass
class Elector:
    api: client.CoordinationV1Api
    namespace: str
    name: str = LEASE_NAME
    me: str = field(default_factory=identity)
    on_lost: Callable[[], None] = _lost
    _renewed: float = 0.0  # monotonic time of the last renewal that went through

    def _lease(self) -> dict[str, Any] | None:
        try:
            found: Any = self.api.read_namespaced_lease(self.name, self.namespace, _request_timeout=RETRY_SECONDS * 3)
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        lease: dict[str, Any] = self.api.api_client.sanitize_for_serialization(found)
        return lease

    def _write(self, lease: dict[str, Any] | None, taken: bool) -> bool:
        """Hold the Lease (create it, or replace it as it was read); False when someone else wrote it first."""
        spec = dict((lease or {}).get("spec") or {})
        stamp = _micro_time()
        spec.update(holderIdentity=self.me, leaseDurationSeconds=LEASE_SECONDS, renewTime=stamp)
        if taken:
            transitions = int(spec.get("leaseTransitions") or 0) + (lease is not None)
            spec.update(acquireTime=stamp, leaseTransitions=transitions)
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata, "spec": spec}
        started = time.monotonic()
        try:
            if lease is None:
                create: Callable[..., Any] = self.api.create_namespaced_lease
                create(self.namespace, body, _request_timeout=RETRY_SECONDS * 3)
            else:
                metadata["resourceVersion"] = lease["metadata"]["resourceVersion"]
                replace: Callable[..., Any] = self.api.replace_namespaced_lease
                replace(self.name, self.namespace, body, _request_timeout=RETRY_SECONDS * 3)
        except ApiException as exc:
            if exc.status == 409:
                return False
            raise
        self._renewed = started  # counted from before the write: the holder it wrote may be seen as of then
        return True

    def acquire(self) -> None:
        """Wait until this process leads."""
        seen: tuple[Any, ...] | None = None
        seen_at = time.monotonic()
        while True:
            try:
                lease = self._lease()
                spec = (lease or {}).get("spec") or {}
                holder = spec.get("holderIdentity")
                now = (spec.get("holderIdentity"), spec.get("renewTime"))
                if now != seen:
                    seen, seen_at = now, time.monotonic()
                free = lease is None or not holder or holder == self.me
                if (free or time.monotonic() - seen_at > LEASE_SECONDS) and self._write(lease, taken=True):
                    log.info("leading the operator (Lease %s/%s, was %s)", self.namespace, self.name, holder)
                    return
            except (ApiException, OSError) as exc:  # the API server away: keep waiting
                log.warning("could not read the operator's Lease: %s", exc)
            time.sleep(RETRY_SECONDS)

    def check(self) -> None:
        """End the process if it may no longer be the leader (before an API call, and from the watchdog)."""
        if time.monotonic() - self._renewed > RENEW_DEADLINE_SECONDS:
            self.on_lost()

    def _renew(self) -> None:
        while True:
            time.sleep(RETRY_SECONDS)
            try:
                lease = self._lease()
                holder = ((lease or {}).get("spec") or {}).get("holderIdentity")
                if holder != self.me:
                    log.critical("the operator's Lease is held by %s", holder)
                    self.on_lost()
                    return
                self._write(lease, taken=False)
            except (ApiException, OSError) as exc:  # tried again; the watchdog ends the process past the deadline
                log.warning("could not renew the operator's Lease: %s", exc)

    def _watch(self) -> None:
        while True:
            time.sleep(RETRY_SECONDS / 10)
            self.check()

    def keep(self) -> None:
        """Renew the Lease, and end the process when it cannot, in the background."""
        threading.Thread(target=self._renew, name="lease-renewer", daemon=True).start()
        threading.Thread(target=self._watch, name="lease-watchdog", daemon=True).start()


class _Live(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path.startswith("/healthz") else 404)
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


@contextmanager
def serving_liveness(endpoint: str) -> Iterator[None]:
    """Answer the liveness endpoint (kopf's, once it runs) while this replica waits to lead: a standby is alive."""
    where = urlsplit(endpoint)
    server = ThreadingHTTPServer((where.hostname or "0.0.0.0", where.port or 80), _Live)
    thread = threading.Thread(target=server.serve_forever, name="standby-liveness", daemon=True)
    thread.start()
    try:
        yield
    finally:
        server.shutdown()
        server.server_close()
