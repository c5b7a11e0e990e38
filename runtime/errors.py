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


# A call that needs a person's approval (docs/approvals.md): held (pending), or the same exact call decided before
# (denied, expired); the runtime then reads the decision by the call's id.
APPROVAL_ANSWERS = frozenset({"approval_pending", "approval_denied", "approval_timeout"})


class ApprovalDenied(ToolError):
    """A person denied this exact call: it did not run, and will not. `reason` is what they said (tokenized)."""

    def __init__(self, tool: str, digest: str, reason: str) -> None:
        said = f": {reason}" if reason else ""
        super().__init__(403, "approval_denied", f"{tool} was denied by a person (digest {digest}){said}")
        self.tool, self.digest, self.reason = tool, digest, reason


class ApprovalNotPlanned(ApprovalDenied):
    """A plan's real run made a call that needs approval and that the approved plan does not hold (its reads changed
    since the dry run, say): it did not run. An ApprovalDenied: code that handles a denial handles this too."""

    def __init__(self, tool: str, message: str) -> None:
        ToolError.__init__(self, 403, "approval_not_planned", message)
        self.tool, self.digest, self.reason = tool, "", "not in the approved plan"


class Planned(dict[str, object]):
    """What a call that needs approval returns in a plan's dry run: it was recorded for the plan, not run.
    `{"planned": True, "tool": "server/tool"}`; code may test `isinstance(result, Planned)`."""

    def __init__(self, tool: str) -> None:
        super().__init__(planned=True, tool=tool)


class ApprovalTimeout(ToolError):
    """No one decided on this held call before the task's deadline: it did not run."""

    def __init__(self, tool: str, digest: str) -> None:
        super().__init__(408, "approval_timeout", f"{tool} was not approved before the deadline (digest {digest})")
        self.tool, self.digest = tool, digest
