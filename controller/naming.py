"""Deterministic names and labels of everything the operator creates for a task.

Re-running a reconcile (after a crash, a restart, a retry) must find the same objects, never make new
ones, so every name derives from the task's name alone.
"""

from __future__ import annotations

from mcpexec.api.meta import MANAGED_LABELS, TASK_LABEL


def child_name(task_name: str) -> str:
    """The shared name of a task's ServiceAccount, ConfigMap, NetworkPolicy and Job."""
    return f"mcpexec-{task_name}"


def task_labels(task_name: str) -> dict[str, str]:
    return {**MANAGED_LABELS, "app.kubernetes.io/name": "mcpexec-task", TASK_LABEL: task_name}
