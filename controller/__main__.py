"""`python -m controller`: the operator, watching AgentTasks in every namespace.

One replica (the chart uses `strategy: Recreate`), hence `standalone` (no kopf peering objects).
Liveness on :8080/healthz, Prometheus metrics on MCPEXEC_METRICS_PORT (default 9090).
"""

from __future__ import annotations

import logging
import os

import kopf

import controller.handlers  # noqa: F401  (registers the handlers)


def main() -> None:
    logging.basicConfig(
        level=os.environ.get("MCPEXEC_LOG_LEVEL", "INFO"),
        format='{"time":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","message":%(message)r}',
    )
    kopf.run(
        clusterwide=True,
        standalone=True,
        liveness_endpoint=os.environ.get("MCPEXEC_LIVENESS_ENDPOINT", "http://0.0.0.0:8080/healthz"),
    )


if __name__ == "__main__":
    main()
