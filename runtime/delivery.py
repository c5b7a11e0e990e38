"""Posts the gateway makes idempotent, sent until it takes them: an interactive session's output chunks (numbered:
one taken twice is kept once) and its outcome (a second one is a duplicate).

Every other POST is sent once (transport.py: one that may have reached the gateway may have run). These are sent
again, backing off from 0.1 s to 2 s, while the gateway or its session store cannot take them (no connection, the
connection lost, a 5xx, a 429): a restarting gateway or a Redis outage costs a session a wait, not its variables.
One execution's posts share one clock: once the gateway has taken none of them for the session's idle timeout (the
session would have ended as idle by then), nothing more is tried.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from runtime import client
from runtime.transport import BACKOFF_CEILING_SECONDS, BACKOFF_FIRST_SECONDS


def resendable(exc: client.ToolError) -> bool:
    """The gateway did not take it, and may later: it, or its store, is away or busy."""
    return exc.status >= 500 or exc.status == 429


class Delivery:
    """One execution's posts to the gateway, each sent until taken, for at most `window_seconds` of failing."""

    def __init__(self, window_seconds: float) -> None:
        self.window_seconds = window_seconds
        self.given_up = False
        self._lock = threading.Lock()
        self._failing_since: float | None = None

    def post(self, path: str, body: dict[str, Any]) -> client.ToolError | None:
        """None once the gateway took `body`; else why not: a refusal (any 4xx but 429, not sent again), or the last
        failure once the window is spent (`given_up`)."""
        backoff = BACKOFF_FIRST_SECONDS
        while True:
            try:
                client.gateway().request("POST", path, body)
            except client.ToolError as exc:
                if not resendable(exc) or self._spent():
                    return exc
                time.sleep(backoff)
                backoff = min(backoff * 2, BACKOFF_CEILING_SECONDS)
                continue
            with self._lock:
                self._failing_since = None
            return None

    def _spent(self) -> bool:
        with self._lock:
            now = time.monotonic()
            if self._failing_since is None:
                self._failing_since = now
            self.given_up = self.given_up or now - self._failing_since >= self.window_seconds
            return self.given_up
