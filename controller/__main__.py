"""`python -m controller`: the operator, watching AgentTasks in every namespace.

One active replica. With MCPEXEC_LEADER_ELECTION, replicas elect it on a Lease (controller/leader.py) and the others
wait, alive; kopf itself runs `standalone` (no kopf peering objects) either way.
Liveness on :8080/healthz, Prometheus metrics on MCPEXEC_METRICS_PORT (default 9090).
"""

from __future__ import annotations

import logging
import os

import kopf
from kubernetes import client

import controller.handlers  # noqa: F401  (registers the handlers)
from controller import leader
from controller.kube import api_client
from controller.settings import OperatorSettings


def main() -> None:
    logging.basicConfig(
        level=os.environ.get("MCPEXEC_LOG_LEVEL", "INFO"),
        format='{"time":"%(asctime)s","level":"%(levelname)s","logger":"%(name)s","message":%(message)r}',
    )
    liveness = os.environ.get("MCPEXEC_LIVENESS_ENDPOINT", "http://0.0.0.0:8080/healthz")
    settings = OperatorSettings()
    elector = None
    if settings.leader_election:
        namespace = settings.leader_election_namespace or settings.gateway_namespace
        elector = leader.Elector(client.CoordinationV1Api(api_client(pool_size=2)), namespace)
        with leader.serving_liveness(liveness):
            elector.acquire()
        elector.keep()
    kopf.run(clusterwide=True, standalone=True, liveness_endpoint=liveness, memo=kopf.Memo(elector=elector))


if __name__ == "__main__":
    main()
