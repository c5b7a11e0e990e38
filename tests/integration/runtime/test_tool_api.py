"""The tool API agent code calls, over the real gateway: discovery, calls, wrappers, errors, transports."""

from __future__ import annotations

import json
import sys
import threading
from pathlib import Path

from mcpexec.api.mcpserver import MCPServerSpec
from tests.integration.runtime.conftest import RuntimeHarness, runtime_harness

API_TOUR = """
import json
servers = list_servers()
signature = next(s for s in search_tools("customer") if s.startswith("demo/get_customer(")).splitlines()[0]
names = search_tools("customer", detail="name")
described = search_tools("customer", detail="description")
full = search_tools("get customer", detail="full")
tool = get_tool("demo/get_customer")
customer = call_tool("demo/get_customer", {"customer_id": "C001"})
from servers.demo import get_customer, list_customers
via_wrapper = get_customer(customer_id="C001")
errors = {}
for name, args in [("demo/send_message", {"to": "x", "subject": "s", "body": "b"}), ("demo/nope", {}),
                   ("demo/get_customer", {"customer_id": 7})]:
    try:
        call_tool(name, args)
    except ToolError as exc:
        errors[name] = exc.code
print(json.dumps({"servers": servers, "signature": signature, "names": names, "described": described,
                  "full": full[:1], "tool": {"inputSchema": tool["inputSchema"]}, "customer": customer,
                  "via_wrapper": via_wrapper,
                  "plans": sorted({c["plan"] for c in list_customers()["customers"]}), "errors": errors}))
"""


def test_discovery_calls_wrappers_and_errors(harness: RuntimeHarness) -> None:
    task = harness.task("tour", code=API_TOUR, tools={"deny": ["demo/send_message"]})
    run = harness.run(task)
    assert run.exit_code == 0, run.result
    seen = json.loads(run.result["result"])
    assert [s["name"] for s in seen["servers"]] == ["demo"]
    assert "demo/get_customer" in seen["names"] and all(isinstance(n, str) for n in seen["names"])
    # By default a search answers with call signatures: enough to call a tool without get_tool.
    assert seen["signature"].startswith("demo/get_customer(customer_id: str) -> ")
    assert all(set(d) == {"name", "description"} for d in seen["described"])
    assert seen["full"][0]["name"] == "get_customer" and "inputSchema" in seen["full"][0]
    assert seen["tool"]["inputSchema"]["required"] == ["customer_id"]
    # Personal data arrives tokenized, the same token through call_tool and through the wrapper.
    assert seen["customer"]["email"] == seen["via_wrapper"]["email"] == "[EMAIL_1]"
    assert seen["plans"] == ["enterprise", "starter", "team"]
    assert seen["errors"] == {
        "demo/send_message": "forbidden",
        "demo/nope": "not_found",
        "demo/get_customer": "invalid_arguments",
    }
    assert run.result["usage"]["toolCalls"] == 6


def test_cluster_transport_tcp_and_token_file() -> None:
    """In the cluster the gateway is a URL and the token a file the kubelet rotates: read on every request."""
    with runtime_harness(over_socket=False) as tcp:
        run = tcp.run(tcp.task("tcp", code="print(call_tool('demo/get_customer', {'customer_id': 'C002'})['id'])"))
    assert run.exit_code == 0, run.result
    assert run.result["result"] == "C002\n"


def test_a_refused_credential_fails_the_task_with_the_gateways_reason(harness: RuntimeHarness) -> None:
    task = harness.task("stranger", code="print(list_servers())")
    run = harness.run(task, token="not-a-token")
    assert run.exit_code == 1
    assert run.result["phase"] == "Failed"
    assert run.result["error"].startswith("gateway: unauthenticated (401)")


def test_a_kept_alive_connection_the_gateway_closed_is_replaced(harness: RuntimeHarness) -> None:
    """The gateway (uvicorn) drops connections idle for 5 s; code that pauses longer keeps working."""
    code = """
import time
first = call_tool("demo/get_customer", {"customer_id": "C001"})["id"]
time.sleep(6)
print(first, call_tool("demo/get_customer", {"customer_id": "C002"})["id"])
"""
    run = harness.run(harness.task("idle", code=code))
    assert run.exit_code == 0, run.result
    assert run.result["result"] == "C001 C002\n"
    assert run.result["usage"]["toolCalls"] == 2


def test_a_server_still_starting_is_waited_for_not_a_failed_task(tmp_path: Path) -> None:
    """The gateway answers 503 server_unavailable with Retry-After while a server is not connected (nothing was
    sent); the runtime sends the call again until it connects, so the task does not fail on a slow start."""
    ready = tmp_path / "ready"
    late = MCPServerSpec(  # exits at once until `ready` exists, then is the demo server
        transport="stdio",
        command=[
            sys.executable,
            "-c",
            f"import os, sys; os.path.exists({str(ready)!r}) or sys.exit(1); "
            f"os.execv(sys.executable, [sys.executable, '-m', 'mcpexec.demo_server'])",
        ],
        env={"DEMO_OUTBOX": str(tmp_path / "outbox.jsonl")},
    )
    code = "print(call_tool('late/get_customer', {'customer_id': 'C003'})['id'])"
    with runtime_harness(extra_servers={"late": late}) as h:
        starting = threading.Timer(3.0, ready.touch)
        starting.start()
        try:
            run = h.run(h.task("late", code=code, mcpServers=["late"]))
        finally:
            starting.cancel()
    assert run.exit_code == 0, run.result
    assert run.result["result"] == "C003\n"


def test_an_upload_or_answer_over_the_gateways_limits_is_a_clear_error_and_the_task_goes_on(
    harness: RuntimeHarness,
) -> None:
    """Default limits: a 17 MB argument is over the 16 MiB request limit; the 6 MB message then sent comes back
    twice in `sent_messages` (text and structuredContent), over the 10 MiB answer limit."""
    code = """
import json
errors = {}
try:
    call_tool("demo/send_message", {"to": "a@example.com", "subject": "big", "body": "x" * 17_000_000})
except ToolError as exc:
    errors["upload"] = exc.code
call_tool("demo/send_message", {"to": "a@example.com", "subject": "big", "body": "y" * 6_000_000})
try:
    call_tool("demo/sent_messages", {})
except ToolError as exc:
    errors["answer"] = exc.code
print(json.dumps({"errors": errors, "after": call_tool("demo/get_customer", {"customer_id": "C001"})["id"]}))
"""
    run = harness.run(harness.task("oversized", code=code))
    assert run.exit_code == 0, run.result
    seen = json.loads(run.result["result"])
    assert seen == {"errors": {"upload": "request_too_large", "answer": "result_too_large"}, "after": "C001"}
