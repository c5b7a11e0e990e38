"""Where people see held calls in a cluster: the AgentTask's or AgentSession's `status.approvals` (the held calls,
tokenized, at most MAX_PENDING_SHOWN) and its `AwaitingApproval` condition, and an Event for each call held, decided
or expired (docs/approvals.md).

The gateway writes the status (the operator is not involved: it already may patch both kinds' status), from
whichever replica saw the change, in the background (a held call's answer never waits on the API server). What it
writes comes from the held calls' store with the store's revision of the held set, as a read-modify-write guarded by
the resourceVersion it read: a write older than what the status shows is skipped, so replicas writing at once
converge on the newest; the conditions are merged with the operator's as read, so neither loses the other's.
"""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime
from typing import Any

from kubernetes.client.exceptions import ApiException
from urllib3.exceptions import HTTPError

from gateway.approvals.gate import ApprovalGate, Notice, Subject
from gateway.cluster.directory import KubeDirectory
from gateway.errors import GatewayError
from mcpexec.api.approval import ApprovalsStatus
from mcpexec.api.conditions import Condition, ConditionType, condition, generation, merge_conditions
from mcpexec.api.meta import API_VERSION
from mcpexec.api.status import Status

log = logging.getLogger("mcpexec.gateway.approval_status")

_CONFLICT_RETRIES = 5
_API_TIMEOUT_SECONDS = 5.0
_KINDS = {"agenttasks": "AgentTask", "agentsessions": "AgentSession"}


def awaiting(count: int, subject: Subject) -> Condition:
    if not count:
        return condition(ConditionType.AWAITING_APPROVAL, False, "NoCallHeld", "no call waits for approval")
    return condition(
        ConditionType.AWAITING_APPROVAL,
        True,
        "CallsHeld",
        f"{count} call(s) wait for a person's approval: kubectl mcpexec pending {subject.name} -n {subject.namespace}"
        + (" --session" if subject.kind == "agentsessions" else ""),
    )


def _event(subject: Subject, notice: Notice) -> dict[str, Any]:
    stamp = datetime.now(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {"generateName": f"{subject.name}.", "namespace": subject.namespace},
        "involvedObject": {
            "apiVersion": API_VERSION,
            "kind": _KINDS[subject.kind],
            "name": subject.name,
            "namespace": subject.namespace,
            "uid": subject.uid,
        },
        "reason": notice.reason,
        "message": notice.message,
        "type": "Warning" if notice.reason in ("CallDenied", "ApprovalTimedOut") else "Normal",
        "source": {"component": "mcpexec-gateway"},
        "firstTimestamp": stamp,
        "lastTimestamp": stamp,
        "count": 1,
    }


class ApprovalStatusWriter:
    """ApprovalNotices for a cluster: each change writes the subject's status and says it in an Event."""

    def __init__(self, directory: KubeDirectory, gate: ApprovalGate) -> None:
        self._directory = directory
        self._gate = gate
        self._writes: set[asyncio.Task[None]] = set()

    def changed(self, subject: Subject, notice: Notice) -> None:
        write = asyncio.create_task(self.write(subject, notice), name="approval-status")
        self._writes.add(write)
        write.add_done_callback(self._writes.discard)

    async def write(self, subject: Subject, notice: Notice | None = None) -> None:
        """The subject's status as the held calls' store has it now (and the Event of `notice`)."""
        try:
            if notice is not None:
                await asyncio.to_thread(self._directory.create_event, subject.namespace, _event(subject, notice))
            pending, count, revision = await self._gate.holds.pending(subject.scope)
            shown = ApprovalsStatus(pending=pending, count=count, revision=revision)
            await asyncio.to_thread(self._write, subject, shown)
        except (ApiException, HTTPError, OSError, GatewayError) as exc:  # the store keeps the truth; the next change
            cause = f"{exc.status}" if isinstance(exc, ApiException) else type(exc).__name__  # writes it again
            log.warning("approval status not written", extra={"task": subject.scope, "error": cause})

    def _write(self, subject: Subject, shown: ApprovalsStatus) -> None:
        for _ in range(_CONFLICT_RETRIES):
            try:
                document = self._directory.resource(subject.kind, subject.namespace, subject.name, _API_TIMEOUT_SECONDS)
            except ApiException as exc:
                if exc.status == 404:
                    return
                raise
            if document["metadata"]["uid"] != subject.uid:
                return
            status = document.get("status") or {}
            written = ApprovalsStatus.model_validate(status.get("approvals") or {})
            if (written.revision or 0) >= (shown.revision or 0):
                return
            conditions = merge_conditions(
                Status.of(document).conditions or [], [awaiting(shown.count or 0, subject)], generation(document)
            )
            body = {
                "metadata": {"resourceVersion": document["metadata"]["resourceVersion"]},
                "status": {
                    "approvals": shown.model_dump(mode="json", by_alias=True),
                    "conditions": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in conditions],
                },
            }
            try:
                self._directory.patch_status(subject.kind, subject.namespace, subject.name, body, _API_TIMEOUT_SECONDS)
            except ApiException as exc:
                if exc.status == 409:  # changed since it was read (the operator, another replica): read it again
                    continue
                if exc.status == 404:
                    return
                raise
            return
        log.warning("approval status not written: the resource kept changing", extra={"task": subject.scope})

    async def close(self) -> None:
        if self._writes:
            await asyncio.wait(set(self._writes), timeout=_API_TIMEOUT_SECONDS)
