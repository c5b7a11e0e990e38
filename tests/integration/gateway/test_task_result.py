"""`POST /v1/task/result` on a local gateway (`mcpexec run`'s): authenticated as every route, and refused with a
reason, since locally the host reads the sandbox's result file and nothing records a report (the cluster's
recording: tests/cluster/test_task_reports.py)."""

from __future__ import annotations

from tests.integration.gateway.conftest import GatewayThread
from tests.support.tasks import make_task

RESULT = {"phase": "Succeeded", "result": "42", "usage": {"toolCalls": 0}}


def test_a_local_gateway_takes_no_task_results(gateway: GatewayThread) -> None:
    with gateway.client(None) as anonymous:
        assert anonymous.post("/v1/task/result", json=RESULT).status_code == 401
    with gateway.client_for(make_task("local-result", ["time"])) as sandbox:
        answer = sandbox.post("/v1/task/result", json=RESULT)
        assert answer.status_code == 404, answer.text
        assert answer.json()["error"]["code"] == "not_found"
        assert "result file" in answer.json()["error"]["message"]
