"""Audit trail: one structured log record per tool call and LLM request, and per decision on a held call (with the
approver's username, as the API server's review of their token said it); names and outcomes, never payloads."""

from __future__ import annotations

import logging

from gateway.context import TaskContext

log = logging.getLogger("mcpexec.gateway.audit")


def record(ctx: TaskContext, action: str, target: str, duration_seconds: float, outcome: str) -> None:
    log.info(
        "audit",
        extra={
            "task": ctx.task_id,
            "task_uid": ctx.uid,
            "action": action,
            "target": target,
            "duration_ms": round(duration_seconds * 1000, 3),
            "outcome": outcome,
        },
    )


def decision(kind: str, task: str, uid: str, tool: str, digest: str, outcome: str, approver: str) -> None:
    """A person's decision on a held call (approved, denied; expired when the deadline came first)."""
    log.info(
        "audit",
        extra={
            "task": task,
            "task_uid": uid,
            "kind": kind,
            "action": "approval",
            "target": f"{tool} {digest}",
            "outcome": outcome,
            "approver": approver,
        },
    )
