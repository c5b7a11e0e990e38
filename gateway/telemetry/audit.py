"""Audit trail: one structured log record per tool call and LLM request; names and outcomes, never payloads."""

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
