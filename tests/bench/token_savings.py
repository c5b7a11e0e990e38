"""Token savings of code mode over direct tool calling, on five workflows over the real MCP servers.

Every tool call below really runs (reference servers from npm and PyPI, and our demo server, through the
gateway); every code-mode program really runs under gVisor. Tokens are o200k_base, counted offline.

(a) direct tool calling: the schemas of every tool of every connected server (loaded up front, as a
    tool-calling client does), plus, for each call, the arguments the model writes and the result it
    reads. Context re-sent on later turns is NOT counted, which flatters direct mode.
(b) code mode: the runtime's system prompt, the tool details disclosed (a keyword search at the
    "description" level plus the full schema of each tool used), the code, and what it printed.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import random
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from gateway.tools.catalog import count_tokens
from mcpexec.api.agenttask import parse_agenttask
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.run import run_task
from mcpexec.local.sandbox.runsc import RunscSandbox
from runtime.agent import SYSTEM_PROMPT
from tests.integration.gateway.conftest import start_gateway
from tests.support.components import reference_server_commands
from tests.support.malformed import agenttask
from tests.support.tasks import make_task

ANCHOR = {"direct": 150_000, "code": 2_000, "saving": 0.987}
SERVERS = ["demo", "everything", "filesystem", "git", "memory", "time"]
CITIES = ["Europe/Paris", "Asia/Tokyo", "America/New_York", "Australia/Sydney", "Africa/Lagos", "Asia/Kolkata",
          "America/Sao_Paulo", "Europe/Moscow", "Asia/Singapore", "America/Los_Angeles", "Europe/London",
          "Pacific/Auckland"]  # fmt: skip


@dataclass(frozen=True)
class Workflow:
    name: str
    calls: list[tuple[str, dict[str, Any]]]  # what a tool-calling model would call, in order
    search: str  # the keyword search code mode starts with
    tools_used: list[str]
    code: str


def _fixtures(root: Path) -> dict[str, MCPServerSpec]:
    """The servers, with data worth a workflow: a big CSV, a repo with history, a seeded knowledge graph."""
    files, repo, memory = root / "files", root / "repo", root / "memory.jsonl"
    files.mkdir()
    rng = random.Random(7)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["order_id", "region", "product", "units", "unit_price"])
    for i in range(3000):
        writer.writerow([f"O{i:05d}", rng.choice(["north", "south", "east", "west"]), f"P{rng.randint(1, 40):02d}",
                         rng.randint(1, 20), rng.randint(5, 500)])  # fmt: skip
    (files / "sales.csv").write_text(out.getvalue())
    repo.mkdir()
    git = ["git", "-C", str(repo), "-c", "user.name=Bench", "-c", "user.email=bench@example.invalid"]
    subprocess.run([*git, "init", "-q"], check=True)
    for i in range(300):
        kind = rng.choice(["fix", "feat", "docs", "refactor", "test"])
        (repo / "log.txt").write_text(f"{i}\n")
        subprocess.run([*git, "add", "log.txt"], check=True)
        subprocess.run([*git, "commit", "-q", "-m", f"{kind}: change number {i} in module m{i % 17}"], check=True)
    lines = []
    for i in range(150):
        kind = "service" if i % 3 else "team"
        lines.append({"type": "entity", "name": f"{kind}-{i}", "entityType": kind,
                      "observations": [f"owner of component c{i}", f"created in sprint {i % 12}"]})  # fmt: skip
    for i in range(1, 150):
        lines.append({"type": "relation", "from": f"service-{i}" if i % 3 else f"team-{i}",
                      "to": f"team-{(i // 3) * 3}", "relationType": "owned_by"})  # fmt: skip
    memory.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    commands = reference_server_commands(files)
    specs = {
        name: MCPServerSpec(transport="stdio", command=commands[name])
        for name in ("everything", "filesystem", "git", "time")
    }
    specs["memory"] = MCPServerSpec(
        transport="stdio", command=commands["memory"], env={"MEMORY_FILE_PATH": str(memory)}
    )
    specs["demo"] = MCPServerSpec(transport="stdio", command=[sys.executable, "-m", "mcpexec.demo_server"])
    return specs


def _workflows(root: Path) -> list[Workflow]:
    csv_path, repo = str(root / "files" / "sales.csv"), str(root / "repo")
    customers = [f"C00{i}" for i in range(1, 5)]
    return [
        Workflow(
            "summarise a large file",
            [("filesystem/read_text_file", {"path": csv_path})],
            "read file",
            ["filesystem/read_text_file"],
            f"""import csv, io, collections
text = call_tool("filesystem/read_text_file", {{"path": {csv_path!r}}})
text = text["content"] if isinstance(text, dict) else text
revenue = collections.Counter()
for row in csv.DictReader(io.StringIO(text)):
    revenue[row["region"]] += int(row["units"]) * int(row["unit_price"])
print({{region: total for region, total in revenue.most_common()}})""",
        ),
        Workflow(
            "copy customer records into the knowledge graph",
            [("demo/list_customers", {})]
            + [("demo/get_customer", {"customer_id": c}) for c in customers]
            + [("memory/create_entities", {"entities": "<the four customer records>"})],
            "customer",
            ["demo/list_customers", "demo/get_customer", "memory/create_entities"],
            """entities = []
for summary in call_tool("demo/list_customers", {})["customers"]:
    c = call_tool("demo/get_customer", {"customer_id": summary["id"]})
    entities.append({"name": c["name"], "entityType": "customer",
                     "observations": [f"email {c['email']}", f"phone {c['phone']}", f"plan {c['plan']}"]})
created = call_tool("memory/create_entities", {"entities": entities})
print("copied", len(entities), "customers")""",
        ),
        Workflow(
            "search the git log",
            [("git/git_log", {"repo_path": repo, "max_count": 300})],
            "git log",
            ["git/git_log"],
            f"""log = call_tool("git/git_log", {{"repo_path": {repo!r}, "max_count": 300}})
text = log if isinstance(log, str) else str(log)
fixes = [line.strip() for line in text.splitlines() if "fix:" in line and "m3 " in line + " "]
print(len(fixes), "fixes in module m3:", fixes[:5])""",
        ),
        Workflow(
            "query the knowledge graph",
            [("memory/read_graph", {})],
            "graph",
            ["memory/read_graph"],
            """graph = call_tool("memory/read_graph", {})
graph = graph if isinstance(graph, dict) else __import__("json").loads(graph)
owners = {}
for r in graph["relations"]:
    owners[r["to"]] = owners.get(r["to"], 0) + 1
top = sorted(owners.items(), key=lambda kv: -kv[1])[:3]
print("teams owning most:", top)""",
        ),
        Workflow(
            "world clock for twelve cities",
            [
                ("time/convert_time", {"source_timezone": "UTC", "time": "09:30", "target_timezone": city})
                for city in CITIES
            ],
            "time",
            ["time/convert_time"],
            f"""for city in {CITIES!r}:
    answer = call_tool("time/convert_time", {{"source_timezone": "UTC", "time": "09:30", "target_timezone": city}})
    print(city, answer["target"]["datetime"][11:16] if isinstance(answer, dict) else answer)""",
        ),
    ]


def _direct_tokens(client: httpx.Client, workflow: Workflow, schemas: list[Any], previous: dict[str, Any]) -> int:
    total = count_tokens(schemas)
    for name, arguments in workflow.calls:
        if arguments.get("entities") == "<the four customer records>":
            arguments = {"entities": [
                {"name": c["name"], "entityType": "customer", "observations": [c["email"], c["phone"], c["plan"]]}
                for c in previous["customers"]
            ]}  # fmt: skip
        answer = client.post(f"/v1/tools/{name}/call", json={"arguments": arguments})
        answer.raise_for_status()
        body = answer.json()
        if name == "demo/get_customer":
            previous.setdefault("customers", []).append(body.get("structuredContent") or {})
        total += count_tokens({"tool": name, "arguments": arguments}) + count_tokens(body.get("content"))
    return total


def _code_tokens(client: httpx.Client, workflow: Workflow, outcome_output: str) -> int:
    disclosed = client.get("/v1/tools", params={"query": workflow.search, "detail": "description"}).json()["tools"]
    details = [client.get(f"/v1/tools/{name}").json() for name in workflow.tools_used]
    return sum(count_tokens(part) for part in (SYSTEM_PROMPT, disclosed, details, workflow.code, outcome_output))


def run() -> dict[str, Any]:
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="mcpexec-tokens-") as tmp:
        root = Path(tmp)
        specs = _fixtures(root)
        workflows = _workflows(root)
        with start_gateway(specs, None) as gw, gw.client_for(make_task("direct", SERVERS)) as client:
            schemas = client.get("/v1/tools", params={"detail": "full"}).json()["tools"]
            for workflow in workflows:
                task = parse_agenttask(
                    agenttask("code-mode", code=workflow.code, mcpServers=SERVERS, timeoutSeconds=120)
                )
                outcome = asyncio.run(run_task(task, specs, RunscSandbox()))
                if outcome.phase != "Succeeded":
                    raise RuntimeError(f"{workflow.name}: code mode failed: {outcome.error}")
                direct = _direct_tokens(client, workflow, schemas, {})
                code = _code_tokens(client, workflow, outcome.result)
                results[workflow.name] = {
                    "direct": direct,
                    "code": code,
                    "saving": round(1 - code / direct, 3),
                    "code_mode_printed": outcome.result[:160],
                }
    direct_total = sum(r["direct"] for r in results.values())
    code_total = sum(r["code"] for r in results.values())
    return {
        "tokenizer": "o200k_base (bpe-openai, offline)",
        "workflows": results,
        "total": {"direct": direct_total, "code": code_total, "saving": round(1 - code_total / direct_total, 3)},
        "published_anchor": ANCHOR,
    }
