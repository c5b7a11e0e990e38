"""The one error agent code sees from the gateway, whether the gateway said it or the connection to it did."""

from __future__ import annotations

# The request was sent and no complete answer came back (the connection broke or timed out, or what came back was
# not the gateway's answer): it may have run, so it is not sent again (as the gateway's `server_connection_lost`).
GATEWAY_CONNECTION_LOST = "gateway_connection_lost"
# No connection could be opened for as long as the runtime tries: nothing was sent.
GATEWAY_UNREACHABLE = "gateway_unreachable"


class ToolError(Exception):
    """The gateway refused or failed a request; `code` is its error code (e.g. forbidden, tool_timeout), or one of
    the two above when the gateway could not be asked or did not answer."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(f"{code} ({status}): {message}")
        self.status = status
        self.code = code
        self.retry_after = retry_after
