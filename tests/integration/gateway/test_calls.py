"""Tool calls through the gateway to every real server: results, schema errors, policy, tool errors, timeouts."""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from pathlib import Path

import httpx

from tests.integration.gateway.conftest import ALL_SERVERS, FRAGILE_MARKER, GatewayThread
from tests.support.components import processes_with
from tests.support.tasks import make_task


def _text(answer: dict[str, object]) -> str:
    content = answer["content"]
    assert isinstance(content, list)
    return "\n".join(str(item.get("text", "")) for item in content)


def test_calls_reach_every_reference_server(gateway: GatewayThread, workdir: Path) -> None:
    with gateway.client_for(make_task("call-all", ALL_SERVERS)) as c:
        echo = c.post("/v1/tools/everything/echo/call", json={"arguments": {"message": "hi there"}})
        assert echo.status_code == 200 and "hi there" in _text(echo.json())
        total = c.post("/v1/tools/everything/get-sum/call", json={"arguments": {"a": 2, "b": 40}}).json()
        assert "42" in _text(total)
        now = c.post("/v1/tools/time/get_current_time/call", json={"arguments": {"timezone": "UTC"}}).json()
        assert now["isError"] is False and now["structuredContent"]["timezone"] == "UTC"
        listing = c.post(
            "/v1/tools/filesystem/list_directory/call", json={"arguments": {"path": str(workdir / "files")}}
        )
        assert "hello.txt" in _text(listing.json())
        status = c.post("/v1/tools/git/git_status/call", json={"arguments": {"repo_path": str(workdir / "repo")}})
        assert status.status_code == 200 and "branch" in _text(status.json()).lower()
        entity = {"name": "gateway-test", "entityType": "test", "observations": ["made through the gateway"]}
        made = c.post("/v1/tools/memory/create_entities/call", json={"arguments": {"entities": [entity]}})
        assert made.status_code == 200 and made.json()["isError"] is False
        graph = c.post("/v1/tools/memory/read_graph/call", json={"arguments": {}}).json()
        assert "gateway-test" in json.dumps(graph)


def test_arguments_failing_the_schema_are_refused_before_the_tool(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("call-schema", ["demo", "everything"])) as c:
        wrong_type = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": 7}})
        assert wrong_type.status_code == 422
        error = wrong_type.json()["error"]
        assert error["code"] == "invalid_arguments" and "$.customer_id" in error["message"]
        missing = c.post("/v1/tools/everything/get-sum/call", json={"arguments": {"a": 1}})
        assert missing.status_code == 422 and "required" in missing.json()["error"]["message"]
        pattern = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "X1"}})
        assert pattern.status_code == 422
        not_an_object = c.post("/v1/tools/demo/get_customer/call", json={"arguments": ["C001"]})
        assert not_an_object.status_code == 422 and not_an_object.json()["error"]["code"] == "invalid_request"


def test_policy_is_enforced_on_calls(gateway: GatewayThread) -> None:
    task = make_task("call-policy", ["demo"], deny=["demo/send_message"])
    with gateway.client_for(task) as c:
        denied = c.post(
            "/v1/tools/demo/send_message/call", json={"arguments": {"to": "a@b.co", "subject": "", "body": ""}}
        )
        assert denied.status_code == 403
        unlisted = c.post("/v1/tools/time/get_current_time/call", json={"arguments": {"timezone": "UTC"}})
        assert unlisted.status_code == 404
        unknown = c.post("/v1/tools/demo/drop_database/call", json={"arguments": {}})
        assert unknown.status_code == 404


def test_a_failing_tool_is_a_result_with_is_error(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("call-toolerror", ["demo"])) as c:
        answer = c.post("/v1/tools/demo/get_customer/call", json={"arguments": {"customer_id": "C999"}})
    assert answer.status_code == 200
    assert answer.json()["isError"] is True and "no customer C999" in _text(answer.json())


def test_a_tool_slower_than_its_timeout_answers_504(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("call-timeout", ["slow"])) as c:
        slow = c.post(
            "/v1/tools/slow/trigger-long-running-operation/call", json={"arguments": {"duration": 5, "steps": 1}}
        )
        assert slow.status_code == 504 and slow.json()["error"]["code"] == "tool_timeout"
        after = c.post("/v1/tools/slow/echo/call", json={"arguments": {"message": "still alive"}})
        assert after.status_code == 200 and "still alive" in _text(after.json())


def test_a_server_that_cannot_start_answers_503_and_others_keep_working(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("call-broken", ["broken", "time"])) as c:
        broken = c.get("/v1/tools/broken/anything")
        assert broken.status_code == 503 and broken.json()["error"]["code"] == "server_unavailable"
        # Nothing reached a tool: the answer says when the same call may be sent again (the runtime does).
        call = c.post("/v1/tools/broken/anything/call", json={"arguments": {}})
        assert call.status_code == 503 and call.headers["Retry-After"] == "1"
        ok = c.post("/v1/tools/time/get_current_time/call", json={"arguments": {"timezone": "UTC"}})
        assert ok.status_code == 200


def test_usage_counts_tool_calls_per_task(gateway: GatewayThread) -> None:
    task = make_task("call-usage", ["time"])
    with gateway.client_for(task) as c:
        for _ in range(3):
            c.post("/v1/tools/time/get_current_time/call", json={"arguments": {"timezone": "UTC"}})
        c.post("/v1/tools/time/get_current_time/call", json={"arguments": {}})  # refused: not counted
    assert gateway.gateway.usage(task.task_id) == {"llmTurns": 0, "tokensIn": 0, "tokensOut": 0, "toolCalls": 3}


def test_a_server_dying_during_a_call_answers_502_not_retryable_then_reconnects(gateway: GatewayThread) -> None:
    """The call may have run before the server died: 502 server_connection_lost, no Retry-After (a resend could
    run it twice); the task's next call gets a fresh server process."""
    answers: list[httpx.Response] = []
    with gateway.client_for(make_task("call-lost", ["fragile"])) as c:
        assert c.post("/v1/tools/fragile/echo/call", json={"arguments": {"message": "up"}}).status_code == 200
        slow = {"arguments": {"duration": 10, "steps": 1}}
        caller = threading.Thread(
            target=lambda: answers.append(c.post("/v1/tools/fragile/trigger-long-running-operation/call", json=slow))
        )
        caller.start()
        time.sleep(1.5)
        victims = sorted(processes_with(FRAGILE_MARKER, "environ") - {os.getpid()})
        assert victims, "no fragile MCP server process found"
        for pid in victims:
            os.kill(pid, signal.SIGKILL)
        caller.join(timeout=30)
        [lost] = answers
        assert lost.status_code == 502 and lost.json()["error"]["code"] == "server_connection_lost"
        assert "Retry-After" not in lost.headers
        deadline = time.monotonic() + 30
        while (
            again := c.post("/v1/tools/fragile/echo/call", json={"arguments": {"message": "back"}})
        ).status_code != 200:
            assert again.json()["error"]["code"] == "server_unavailable" and time.monotonic() < deadline
            time.sleep(0.5)
        assert "back" in _text(again.json())
