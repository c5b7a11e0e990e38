"""An interactive session: code arrives one snippet at a time from the gateway and runs in one namespace.

The runtime long-polls the gateway for the next execution, runs it in the session's Executor (variables, imports
and functions persist; top-level await works), streams its output while it runs if its caller asked for that
(output_stream.py), posts its outcome, and asks again, until the gateway ends the session
(403 `no_session`) or refuses the token (401: the session's task was unregistered). A snippet past its time limit
is stopped by the Executor's timer and the namespace lives on; a snippet that ends the process ends the session (the
host sees the sandbox exit).
"""

from __future__ import annotations

import time
import urllib.parse

from runtime import client
from runtime.contract import SESSION_EXECUTIONS_PATH, SESSION_NEXT_PATH
from runtime.executor import Executor
from runtime.output import encodable
from runtime.output_stream import OutputStreamer

# The gateway's answers that end a session: it has none open for this sandbox (403), or no longer admits its token
# (401).
_SESSION_OVER = frozenset({401, 403})


def serve(executor: Executor) -> str:
    """Run executions until the gateway ends the session; returns why it ended."""
    gw = client.gateway()
    while True:
        try:
            execution = client.long_poll(SESSION_NEXT_PATH)
        except client.ToolError as exc:
            if exc.status in _SESSION_OVER:
                return f"session ended: {exc}"
            raise
        started = time.monotonic()
        streamer = OutputStreamer(str(execution["id"])) if execution.get("stream") else None
        try:
            outcome = executor.run(
                str(execution["code"]), float(execution["timeoutSeconds"]), None if streamer is None else streamer.write
            )
        finally:
            if streamer is not None:
                streamer.close()
        report = {
            "stdout": encodable(outcome.stdout),
            "stderr": encodable(outcome.stderr),
            "error": None if outcome.error is None else encodable(outcome.error),
            "durationMs": round((time.monotonic() - started) * 1000),
        }
        identifier = urllib.parse.quote(str(execution["id"]), safe="")
        try:
            gw.request("POST", f"{SESSION_EXECUTIONS_PATH}/{identifier}", report)
        except client.ToolError as exc:
            if exc.status in _SESSION_OVER:
                return f"session ended: {exc}"
            if exc.status != 404:  # 404: its caller gave up on it (timed out); the session goes on
                raise
        if gw.vault.lost is not None:  # its tokens may mean other values now (runtime/vault_marks.py)
            return f"vault_lost: {gw.vault.lost}"
