"""Scale tier (issue 32): the real operator on a simulated 100-node cluster (kwok, with the real kube-apiserver, etcd,
kube-controller-manager and kube-scheduler): a cold burst of 5,000 AgentTasks over 20 namespaces, 750 warm claims at
75/s over pools of 500 idle sandboxes (tasks, then AgentSessions) while they refill, and a 10-minute steady mix
(tests/support/scale_scenarios.py), and the operator killed mid-burst of claims and started again
(tests/support/scale_kill.py). The baseline in the same run: this client creating as many Jobs directly.

MCPEXEC_SCALE=ci runs the CI size; MCPEXEC_SCALE_SIZE='{"cold_tasks": 1000}' overrides single figures. Each scenario
prints its figures as soon as it has them.
"""

from __future__ import annotations

import dataclasses
import json
import os
from typing import Any

from tests.support.scale_cluster import simulated_cluster
from tests.support.scale_kill import killed_mid_claims
from tests.support.scale_scenarios import CI, FULL, run_all


def run() -> dict[str, Any]:
    size = CI if os.environ.get("MCPEXEC_SCALE") == "ci" else FULL
    size = dataclasses.replace(size, **json.loads(os.environ.get("MCPEXEC_SCALE_SIZE") or "{}"))
    results: dict[str, Any] = {"size": dataclasses.asdict(size)}

    def report(name: str, figures: dict[str, Any]) -> None:
        results[name] = figures
        print(json.dumps({name: figures}), flush=True)

    with simulated_cluster(size.nodes) as sim:
        run_all(sim, size, report)
        try:
            report("killed_mid_claims", killed_mid_claims(sim, size))
        except Exception as exc:  # its failure must not lose the other scenarios' figures
            report("killed_mid_claims", {"error": f"{type(exc).__name__}: {exc}"})
    return results
