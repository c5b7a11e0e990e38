"""MCPServer status as the gateway writes it: every server it lists gets one, in kstatus terms."""

from __future__ import annotations

from typing import Any

from gateway.cluster.server_status import desired_status, first_seen_status, refused_status
from gateway.cluster.servers import classify


def _server(name: str, namespace: str, spec: dict[str, Any], generation: int = 1) -> dict[str, Any]:
    meta = {"name": name, "namespace": namespace, "generation": generation}
    return {"apiVersion": "mcpexec.dev/v1alpha1", "kind": "MCPServer", "metadata": meta, "spec": spec}


def _states(status: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        t: (c["status"], c["reason"])
        for t in ("Ready", "Reconciling", "Stalled")
        if (c := next((c for c in status["conditions"] if c["type"] == t), None))
    }


def test_servers_the_gateway_does_not_serve_are_refused_with_why() -> None:
    http = {"transport": "streamableHttp", "url": "http://crm:8080/mcp"}
    listing = classify(
        [
            _server("crm", "team-a", http, generation=3),
            _server("tools", "team-a", {"transport": "stdio", "command": ["mcp-server-time"]}),
            _server("trusted", "platform", {"transport": "stdio", "command": ["mcp-server-time"]}),
            _server("badre", "team-a", {**http, "pii": {"customPatterns": [{"name": "T", "regex": r"(a)\1"}]}}),
        ],
        frozenset({"platform"}),
    )
    assert sorted(listing.served) == ["platform/trusted", "team-a/crm"]
    assert {k: r.reason for k, r in listing.refused.items()} == {
        "team-a/tools": "NotServed",
        "team-a/badre": "InvalidSpec",
    }
    assert "stdioServerNamespaces" in listing.refused["team-a/tools"].message
    assert "regex is refused" in listing.refused["team-a/badre"].message
    assert listing.generations["team-a/crm"] == 3


def test_each_outcome_in_kstatus_terms() -> None:
    assert _states(first_seen_status().patch()) == {
        "Ready": ("Unknown", "Probing"), "Reconciling": ("True", "Probing"), "Stalled": ("False", "Probing"),
    }  # fmt: skip
    ready = desired_status([("list", "List things.\nMore.")], None).patch()
    assert _states(ready)["Ready"] == ("True", "ToolsListed") and ready["tools"] == [
        {"name": "list", "description": "List things."}
    ]
    down = desired_status(None, "connection refused").patch()
    assert _states(down) == {
        "Ready": ("False", "Unreachable"), "Reconciling": ("True", "Unreachable"), "Stalled": ("False", "Unreachable"),
    }  # fmt: skip
    assert "tools" not in down, "the last listed tools are kept while it is unreachable"
    classified = classify([_server("tools", "a", {"transport": "stdio", "command": ["x"]})], frozenset())
    refused = refused_status(classified.refused["a/tools"]).patch()
    assert _states(refused)["Stalled"] == ("True", "NotServed")
    assert refused["tools"] is None and refused["toolCount"] is None, "removed: a refused server lists nothing"
