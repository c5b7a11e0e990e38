"""Prometheus metrics of the operator."""

from __future__ import annotations

import threading

from prometheus_client import Counter, Histogram
from prometheus_client.core import GaugeMetricFamily
from prometheus_client.registry import REGISTRY, Collector

from mcpexec.api.agenttask import Phase

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
