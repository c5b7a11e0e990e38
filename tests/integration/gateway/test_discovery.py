"""Discovery with progressive disclosure against the real reference servers and the demo server."""

from __future__ import annotations

import ast

from tests.integration.gateway.conftest import ALL_SERVERS, GatewayThread
from tests.support.tasks import make_task


def test_servers_lists_the_tasks_servers_and_a_down_one_does_not_hide_the_others(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("disc-servers", [*ALL_SERVERS, "broken"])) as c:
        answer = c.get("/v1/servers").json()["servers"]
    by_name = {s["name"]: s for s in answer}
    assert set(by_name) == {*ALL_SERVERS, "broken"}
    assert by_name["broken"] == {"name": "broken", "description": "", "toolCount": 0, "connected": False}
    for name in ALL_SERVERS:
        assert by_name[name]["connected"] is True
        assert by_name[name]["toolCount"] > 0
    assert by_name["time"]["toolCount"] == 2
    assert by_name["demo"]["description"] == "Fake customer records and an outbox"


def test_servers_outside_the_policy_are_invisible(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("disc-policy", ["time"])) as c:
        assert [s["name"] for s in c.get("/v1/servers").json()["servers"]] == ["time"]
        names = c.get("/v1/tools", params={"detail": "name"}).json()["tools"]
        assert names == ["time/convert_time", "time/get_current_time"]
        assert c.get("/v1/tools/demo/get_customer").status_code == 404
        assert c.get("/v1/servers/demo/wrappers").status_code == 404


def test_a_task_without_servers_sees_nothing(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("disc-empty", [])) as c:
        assert c.get("/v1/servers").json() == {"servers": []}
        assert c.get("/v1/tools", params={"detail": "full"}).json()["tools"] == []


def test_detail_levels_cost_increasing_tokens(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("disc-levels", ALL_SERVERS)) as c:
        levels = {d: c.get("/v1/tools", params={"detail": d}).json() for d in ("name", "description", "full")}
    names = levels["name"]["tools"]
    assert len(names) == len(levels["description"]["tools"]) == len(levels["full"]["tools"]) > 40
    assert all(isinstance(n, str) and "/" in n for n in names)
    assert {"name", "description"} == set(levels["description"]["tools"][0])
    full = levels["full"]["tools"][0]
    assert {"server", "name", "description", "inputSchema"} <= set(full)
    assert full["inputSchema"]["type"] == "object"
    tokens = [levels[d]["tokens"] for d in ("name", "description", "full")]
    assert 0 < tokens[0] < tokens[1] < tokens[2]
    assert all(levels[d]["detail"] == d for d in levels)


def test_keyword_search_ranks_name_hits_first(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("disc-search", ALL_SERVERS)) as c:
        hits = c.get("/v1/tools", params={"query": "customer", "detail": "name"}).json()["tools"]
        assert hits[:3] == ["demo/get_customer", "demo/list_customers", "demo/search_customers"]
        assert "demo/send_message" in hits  # matched by its description only, ranked after
        assert hits.index("demo/send_message") > 2
        both = c.get("/v1/tools", params={"query": "current time", "detail": "description"}).json()["tools"]
        assert [t["name"] for t in both] == ["time/get_current_time"]
        scoped = c.get("/v1/tools", params={"query": "read", "server": "filesystem"}).json()["tools"]
        assert scoped and all(name.startswith("filesystem/") for name in scoped)
        assert c.get("/v1/tools", params={"query": "zzqx-nothing"}).json()["tools"] == []
        assert c.get("/v1/tools", params={"detail": "everything"}).status_code == 422


def test_tool_details(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("disc-details", ["demo", "time"])) as c:
        tool = c.get("/v1/tools/demo/get_customer").json()
        assert tool["server"] == "demo" and tool["name"] == "get_customer"
        assert tool["inputSchema"]["required"] == ["customer_id"]
        assert "outputSchema" in tool
        missing = c.get("/v1/tools/time/no_such_tool")
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "not_found"


def test_allow_and_deny_globs_filter_tools(gateway: GatewayThread) -> None:
    task = make_task("disc-globs", ["demo", "time"], allow=["demo/*", "time/get_*"], deny=["demo/send_*"])
    with gateway.client_for(task) as c:
        names = c.get("/v1/tools").json()["tools"]
        assert "time/get_current_time" in names and "time/convert_time" not in names
        assert "demo/send_message" not in names and "demo/get_customer" in names
        denied = c.get("/v1/tools/demo/send_message")
        assert denied.status_code == 403 and denied.json()["error"]["code"] == "forbidden"


def test_wrappers_are_valid_typed_python_for_every_server(gateway: GatewayThread) -> None:
    with gateway.client_for(make_task("disc-wrappers", ALL_SERVERS)) as c:
        for server in ALL_SERVERS:
            answer = c.get(f"/v1/servers/{server}/wrappers").json()
            assert answer["server"] == server
            module = ast.parse(answer["module"])
            functions = {f.name: f for f in module.body if isinstance(f, ast.FunctionDef)}
            tools = c.get("/v1/tools", params={"server": server}).json()["tools"]
            assert len(functions) == len(tools)
        demo = c.get("/v1/servers/demo/wrappers").json()["module"]
    assert "def get_customer(*, customer_id: str) -> Any:" in demo
    assert "def list_customers(*, plan: str | None = None) -> Any:" in demo
    assert "customer_id: Customer id, e.g. C001" in demo
    assert "return call_tool('demo/send_message', arguments)" in demo
    assert "from runtime.client import call_tool" in demo


def test_a_signature_search_is_enough_to_call_the_tool(gateway: GatewayThread) -> None:
    """One discovery turn: the signature names every argument with its type, what the call returns (from the
    outputSchema), and the argument descriptions; shorter than the full schema it replaces."""
    with gateway.client_for(make_task("disc-signature", ALL_SERVERS)) as c:
        signatures = c.get("/v1/tools", params={"query": "convert time", "detail": "signature"}).json()
        full = c.get("/v1/tools", params={"query": "convert time", "detail": "full"}).json()
        observations = c.get("/v1/tools", params={"query": "add observations", "detail": "signature"}).json()
    (convert,) = signatures["tools"]
    first, *rest = convert.splitlines()
    assert first.startswith("time/convert_time(source_timezone: str, time: str, target_timezone: str) -> {source:")
    assert first.endswith("time_difference: str}")
    assert any(line.strip().startswith("time: Time to convert in 24-hour format") for line in rest)
    assert signatures["tokens"] < full["tokens"]
    # Nested arguments show their fields, so that no get_tool turn is needed to learn them.
    assert "observations: list[{entityName: str, contents: list[str]}]" in observations["tools"][0]
