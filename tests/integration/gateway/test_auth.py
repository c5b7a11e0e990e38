"""Auth bypass attempts against the real gateway: every one is refused; one task never reaches another's data."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jwt

from tests.integration.gateway.conftest import GatewayThread
from tests.support.tasks import make_task

CALL = "/v1/tools/time/get_current_time/call"
ARGS = {"arguments": {"timezone": "UTC"}}


def _refused(gateway: GatewayThread, token: str | None, headers: dict[str, str] | None = None) -> None:
    with gateway.client(token) as c:
        for method, path in (("GET", "/v1/servers"), ("GET", "/v1/tools"), ("POST", CALL)):
            answer = c.request(method, path, json=ARGS if method == "POST" else None, headers=headers)
            assert answer.status_code == 401, (method, path, answer.text)
            assert answer.json()["error"]["code"] == "unauthenticated"


def test_no_token_or_wrong_scheme_is_refused(gateway: GatewayThread) -> None:
    _refused(gateway, None)
    _refused(gateway, None, headers={"Authorization": "Basic dXNlcjpwYXNz"})
    _refused(gateway, None, headers={"Authorization": "Bearer"})


def test_forged_tokens_are_refused(gateway: GatewayThread) -> None:
    task = make_task("auth-forged", ["time"])
    real = gateway.token(task)
    claims = jwt.decode(real, options={"verify_signature": False})
    _refused(gateway, jwt.encode(claims, "not-the-gateway-secret-but-long-enough-32b", algorithm="HS256"))
    _refused(gateway, jwt.encode(claims, key=None, algorithm="none"))  # type: ignore[arg-type]
    _refused(gateway, real[:-4] + ("AAAA" if not real.endswith("AAAA") else "BBBB"))
    _refused(gateway, "not-a-jwt")


def test_expired_token_and_expired_task_are_refused(gateway: GatewayThread) -> None:
    task = make_task("auth-expired", ["time"])
    token = gateway.token(task, ttl_seconds=2)
    with gateway.client(token) as c:  # accepted once: its verified claims are now cached
        assert c.post(CALL, json=ARGS).status_code == 200
    time.sleep(2.5)
    _refused(gateway, token)


def test_unregistered_and_recreated_tasks_are_refused(gateway: GatewayThread) -> None:
    task = make_task("auth-gone", ["time"])
    token = gateway.token(task)
    with gateway.client(token) as c:
        assert c.post(CALL, json=ARGS).status_code == 200
    gateway.run(gateway.gateway.unregister_task(task.task_id))
    _refused(gateway, token)
    old = gateway.token(task)
    with gateway.client(old) as c:
        assert c.post(CALL, json=ARGS).status_code == 200
    gateway.token(task)  # same name re-created: a new uid, the old (cached) token is stale
    _refused(gateway, old)


def test_a_token_of_task_a_never_reaches_task_b(gateway: GatewayThread, workdir: Path) -> None:
    task_a = make_task("auth-a", ["demo"])
    task_b = make_task("auth-b", ["demo"], namespace="other")
    with gateway.client_for(task_a) as a, gateway.client_for(task_b) as b:
        customer = a.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "C002"}}).json()
        token_of_a = customer["structuredContent"]["email"]
        assert token_of_a.startswith("[EMAIL_")
        sent = a.post(
            "/v1/tools/demo/send_message/call",
            json={"arguments": {"to": "ops@example.com", "subject": "a", "body": "from task a"}},
        )
        assert sent.status_code == 200
        # Task B has its own MCP session (its own server process): A's outbox is not visible to it.
        b_outbox = b.post("/v1/tools/demo/sent_messages/call", json={"arguments": {}}).json()
        assert b_outbox["structuredContent"] == {"result": []}
        # Task B cannot have A's token de-tokenized: a token its vault never minted is refused, nothing is sent.
        leak = b.post(
            "/v1/tools/demo/send_message/call",
            json={"arguments": {"to": "ops@example.com", "subject": "b", "body": f"leak {token_of_a}"}},
        )
        assert leak.status_code == 409 and leak.json()["error"]["code"] == "unknown_token"
    records = [json.loads(line) for line in (workdir / "outbox.jsonl").read_text().splitlines()]
    from_b = [r for r in records if r["subject"] == "b"]
    assert not from_b
    assert "bob.okafor@example.net" not in leak.text


def test_ops_endpoints_are_on_the_ops_port_only(gateway: GatewayThread) -> None:
    """Health, metrics and the API's docs need no token, on the ops port; on the port sandboxes reach they do not
    exist (a task must not read other tasks' metrics or the gateway's docs)."""
    with gateway.ops_client() as ops:
        assert ops.get("/healthz").json() == {"status": "ok"}
        assert ops.get("/readyz").json() == {"status": "ready"}
        api = ops.get("/openapi.json").json()
        assert api["info"]["title"] == "mcpexec gateway" and "/v1/tools/{server}/{tool}/call" in api["paths"]
        assert "swagger" in ops.get("/docs").text.lower()
        assert "mcpexec_gateway_tool_calls_total" in ops.get("/metrics").text
    with gateway.client_for(make_task("ops-from-a-task", ["demo"])) as c:
        for path in ("/healthz", "/readyz", "/metrics", "/openapi.json", "/docs", "/redoc"):
            assert c.get(path).status_code == 404, path
