"""Deterministic names and labels of everything the operator creates for a task or a pool.

Re-running a reconcile (after a crash, a restart, a retry) must find the same objects, never make new
ones, so every name derives from the task's or pool's name alone (a pool's pods are its generateName's).
"""

from __future__ import annotations

from mcpexec.api.meta import (
    IDLE,
    MANAGED_LABELS,
    POOL_LABEL,
    RUN_RECORD_LABEL,
    SANDBOX_STATE_LABEL,
    SESSION_LABEL,
    TASK_LABEL,
    TEMPLATE_HASH_LABEL,
)


def child_name(task_name: str) -> str:
    """The shared name of a task's ServiceAccount, ConfigMap, NetworkPolicy and Job."""
    return f"mcpexec-{task_name}"


def task_labels(task_name: str) -> dict[str, str]:
    return {**MANAGED_LABELS, "app.kubernetes.io/name": "mcpexec-task", TASK_LABEL: task_name}


def run_record_name(task_name: str) -> str:
    """The ConfigMap recording the last run of a task name (controller/ledger.py). The dot keeps it apart from every
    child's name (`mcpexec-<DNS label>`), and a task name (at most 48 characters) keeps it short."""
    return f"mcpexec-run.{task_name}"


def run_record_labels(task_name: str) -> dict[str, str]:
    """A run record's labels: the retention sweep lists records by them. Not TASK_LABEL, which marks a task's
    children (gone with the task, or past its TTL): the record outlives them."""
    return {**MANAGED_LABELS, "app.kubernetes.io/name": "mcpexec-run-record", RUN_RECORD_LABEL: task_name}


def pool_child_name(pool_name: str) -> str:
    """The shared name of a pool's ServiceAccount and NetworkPolicy, and its pods' name prefix."""
    return f"mcpexec-pool-{pool_name}"


def pool_labels(pool_name: str) -> dict[str, str]:
    """On all of a pool's objects; its NetworkPolicy selects its pods, idle or claimed, by them."""
    return {**MANAGED_LABELS, "app.kubernetes.io/name": "mcpexec-sandbox", POOL_LABEL: pool_name}


def idle_selector(pool_name: str) -> str:
    """The label selector of a pool's idle sandboxes: what it scales."""
    return f"{POOL_LABEL}={pool_name},{SANDBOX_STATE_LABEL}={IDLE}"


def idle_pod_labels(pool_name: str, template_hash: str) -> dict[str, str]:
    return {**pool_labels(pool_name), SANDBOX_STATE_LABEL: IDLE, TEMPLATE_HASH_LABEL: template_hash}


def session_child_name(session_name: str) -> str:
    """The name of a session's NetworkPolicy."""
    return f"mcpexec-session-{session_name}"


def session_labels(session_name: str) -> dict[str, str]:
    """A session's claimed sandbox's labels (its NetworkPolicy selects it by them; its name stays a sandbox's, which
    the gateway's NetworkPolicy admits)."""
    return {**MANAGED_LABELS, "app.kubernetes.io/name": "mcpexec-sandbox", SESSION_LABEL: session_name}
