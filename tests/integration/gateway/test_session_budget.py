"""A session runtime's requests that move an execution along are paired with a caller's execution and cost the task's
request budget nothing; those that do not (a poll by a task with no session, an outcome or output for an id it was
never given) are charged like any other request, so a sandbox flooding them is rate limited."""

from __future__ import annotations

from pathlib import Path

from gateway.settings import Limits
from tests.integration.gateway.conftest import demo_spec, start_gateway
from tests.support.tasks import make_task

OUTPUT = {"chunks": [{"seq": 1, "stream": "stdout", "text": "x"}]}
STRAY = {
    "forged outcome": ("POST", "/v1/session/executions/forged", {"stdout": "x"}, 404),
    "poll without a session": ("GET", "/v1/session/next?wait=0", None, 403),
    "forged output": ("POST", "/v1/session/executions/forged/output", OUTPUT, 404),
}


def test_stray_session_requests_are_charged_to_the_task_budget(workdir: Path) -> None:
    servers = {"demo": demo_spec(workdir / "outbox-budget.jsonl")}
    with start_gateway(servers, workdir / "gw-budget.sock", limits=Limits(requests_per_second=2)) as gw:
        answered: dict[str, list[int]] = {}
        for number, (kind, (method, path, body, _refusal)) in enumerate(STRAY.items()):
            with gw.client(gw.token(make_task(f"stray-{number}", ["demo"]))) as sandbox:  # a budget of its own
                answered[kind] = [sandbox.request(method, path, json=body).status_code for _ in range(8)]
    for kind, (_method, _path, _body, refusal) in STRAY.items():
        # The first get their refusal, then the budget (2 a second; refused requests count too) is spent.
        assert answered[kind][0] == refusal and answered[kind].count(429) >= 5, (kind, answered[kind])
