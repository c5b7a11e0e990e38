"""Prometheus metrics of the operator."""

from __future__ import annotations

import threading

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

from mcpexec.api.agenttask import Phase
from mcpexec.api.timestamps import seconds_since

RECONCILES = Counter("mcpexec_operator_reconciles_total", "AgentTask reconciles, by outcome.", ["outcome"])
RECONCILE_ERRORS = Counter(
    "mcpexec_operator_reconcile_errors_total", "Reconciles that raised, by error type.", ["error"]
)
RECONCILE_SECONDS = Histogram(
    "mcpexec_operator_reconcile_seconds",
    "Time to reconcile one AgentTask into its objects.",
    buckets=(0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30),
)
STATUS_SYNCS = Counter("mcpexec_operator_status_syncs_total", "Status updates written from Job and Pod state.")
# From the task's creation: to its sandbox (a pool's claimed, or its Job created), and to its code running. Warm
# starts are sub-second, cold ones seconds: the buckets cover both.
_LATENCY_BUCKETS = (0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 15, 30, 60)
CLAIM_SECONDS = Histogram(
    "mcpexec_operator_sandbox_claim_seconds",
    "From an AgentTask's creation to its sandbox: a warm pool pod claimed, or a cold Job created.",
    ["launch_type"],
    buckets=_LATENCY_BUCKETS,
)
START_SECONDS = Histogram(
    "mcpexec_operator_task_start_seconds",
    "From an AgentTask's creation to the operator seeing it Running.",
    ["launch_type"],
    buckets=_LATENCY_BUCKETS,
)
POOL_EVENTS = Counter(
    "mcpexec_operator_sandbox_pool_events_total",
    "Pool sandboxes created, deleted (stale, surplus or exited while idle) and claimed.",
    ["event"],
)


def _since(timestamp: str) -> float:
    return max(0.0, seconds_since(timestamp))


def observe_claim(created: str, launch_type: str) -> None:
    CLAIM_SECONDS.labels(launch_type=launch_type.lower()).observe(_since(created))


def observe_start(created: str, launch_type: str) -> None:
    START_SECONDS.labels(launch_type=launch_type.lower()).observe(_since(created))


class TaskPhases(Collector):
    """The number of AgentTasks in each phase, from the operator's own view of every task's status."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._phases: dict[str, str] = {}

    def observe(self, uid: str, phase: str | None) -> None:
        with self._lock:
            if phase is None:
                self._phases.pop(uid, None)
            else:
                self._phases[uid] = phase

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily("mcpexec_operator_tasks", "AgentTasks by phase.", labels=["phase"])
        with self._lock:
            counts = {phase.value: 0 for phase in Phase}
            for phase in self._phases.values():
                counts[phase] = counts.get(phase, 0) + 1
        for phase, count in counts.items():
            family.add_metric([phase], count)
        return [family]


TASK_PHASES = TaskPhases()
REGISTRY.register(TASK_PHASES)


class PoolSandboxes(Collector):
    """Each pool's sandboxes by state (idle, ready, claimed), as its last reconcile counted them."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: dict[tuple[str, str], dict[str, int]] = {}

    def observe(self, namespace: str, pool: str, counts: dict[str, int] | None) -> None:
        with self._lock:
            if counts is None:
                self._counts.pop((namespace, pool), None)
            else:
                self._counts[(namespace, pool)] = dict(counts)

    def collect(self) -> list[GaugeMetricFamily]:
        family = GaugeMetricFamily(
            "mcpexec_operator_pool_sandboxes", "SandboxPool sandboxes by state.", labels=["namespace", "pool", "state"]
        )
        with self._lock:
            for (namespace, pool), counts in self._counts.items():
                for state, count in counts.items():
                    family.add_metric([namespace, pool, state], count)
        return [family]


POOL_SANDBOXES = PoolSandboxes()
REGISTRY.register(POOL_SANDBOXES)
