"""The agent loop and the `mcpexec` command, end to end under gVisor.

The model is the one stand-in: a scripted OpenAI-compatible or Anthropic Messages endpoint on loopback (no
hosted model is reachable here). The gateway's LLM proxy, the demo MCP server, the sandbox and the runtime are real.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import redis
import yaml

from mcpexec.api.agenttask import parse_agenttask
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.run import run_task
from mcpexec.local.sandbox.runsc import RunscSandbox
from tests.support.components import REPO, redis_server
from tests.support.malformed import agenttask
from tests.support.scripted_llm import ScriptedLLM

RAW_EMAIL = "alice.martin@example.com"
TURNS = [
    "Let me look for tools.\n```python\nprint(search_tools('customer', detail='description'))\n```",
    "```python\ncustomer = get_tool('demo/get_customer')\nc = call_tool('demo/get_customer', {'customer_id': 'C001'})"
    "\nprint('email:', c['email'])\n```",
    "```final\nAlice's address is on file.\n```",
]


def test_agent_loop_discovers_calls_and_answers(demo_servers: dict[str, MCPServerSpec]) -> None:
    task = parse_agenttask(
        agenttask(
            "agent",
            code=None,
            prompt="What is the email of customer C001?",
            mcpServers=["demo"],
            maxTurns=5,
            model="scripted-1",
        )
    )
    with ScriptedLLM(TURNS) as llm:
        upstream = llm.upstream("sk-test-only-in-gateway")
        outcome = asyncio.run(run_task(task, demo_servers, RunscSandbox(), llm=upstream))
    assert outcome.phase == "Succeeded", outcome.error
    assert outcome.result == "Alice's address is on file."
    assert outcome.usage["llmTurns"] == 3
    assert outcome.usage["tokensIn"] == 63 and outcome.usage["tokensOut"] == 39
    assert outcome.usage["toolCalls"] == 1
    # What the model saw: the tool list, then the customer's email as a token, never the raw address.
    seen = json.dumps([body for _, body in llm.requests])
    assert "demo/get_customer" in seen
    assert "email: [EMAIL_1]" in seen
    assert RAW_EMAIL not in seen
    assert all(headers["Authorization"] == "Bearer sk-test-only-in-gateway" for headers, _ in llm.requests)
    assert llm.requests[0][1]["model"] == "scripted-1"


def test_agent_loop_stops_at_max_turns(demo_servers: dict[str, MCPServerSpec]) -> None:
    task = parse_agenttask(
        agenttask("loop", code=None, prompt="never ends", mcpServers=["demo"], maxTurns=2, model="m")
    )
    with ScriptedLLM(["```python\nprint('again')\n```"]) as llm:
        upstream = llm.upstream("k")
        outcome = asyncio.run(run_task(task, demo_servers, RunscSandbox(), llm=upstream))
    assert outcome.phase == "Failed"
    assert outcome.error == "no final answer after 2 turns"
    assert len(llm.requests) == 2


def test_cli_agent_with_an_anthropic_upstream_from_the_environment(tmp_path: Path) -> None:
    task = agenttask("claude", code=None, prompt="Email of C001?", mcpServers=["demo"], model="claude-x")
    path = tmp_path / "agent.yaml"
    path.write_text(yaml.safe_dump(task))
    with ScriptedLLM(TURNS, api="anthropic") as llm:
        env = {"LLM_API": "anthropic", "LLM_BASE_URL": llm.url, "LLM_API_KEY": "sk-ant-only-in-gateway"}
        done = _mcpexec("run", str(path), env=env)
        bad = _mcpexec("run", str(path), env={**env, "LLM_API": "palm"})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Alice's address is on file."
    assert json.loads(done.stderr.strip().splitlines()[-1])["usage"]["llmTurns"] == 3
    assert [body["model"] for _, body in llm.requests] == ["claude-x"] * 3
    seen = json.dumps([body for _, body in llm.requests])
    assert "email: [EMAIL_1]" in seen and RAW_EMAIL not in seen
    assert bad.returncode == 2 and "invalid LLM_* environment" in bad.stderr


def _mcpexec(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpexec.local.cli", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        timeout=180,
    )


def test_examples_run_and_skills_persist_across_runs() -> None:
    first = _mcpexec("run", "examples/direct-code.yaml")
    assert first.returncode == 0, first.stderr
    assert "sandbox kernel: 4.4.0" in first.stdout and "[EMAIL_1] [IBAN_1]" in first.stdout
    assert json.loads(first.stderr.strip().splitlines()[-1])["phase"] == "Succeeded"
    saved = _mcpexec("run", "examples/skills-save.yaml")
    assert saved.returncode == 0, saved.stderr
    reused = _mcpexec("run", "examples/skills-reuse.yaml")
    assert reused.returncode == 0, reused.stderr
    assert "enterprise: ['Alice Martin']" in reused.stdout


def test_pii_example_keeps_personal_data_out_of_the_sandbox_and_delivers_it(tmp_path: Path) -> None:
    """Read tokenized, written for real: the demo server's outbox (on the host) holds the real values."""
    outbox = tmp_path / "outbox.jsonl"
    servers = tmp_path / "servers.yaml"
    demo = {"transport": "stdio", "command": [sys.executable, "-m", "mcpexec.demo_server"]}
    servers.write_text(yaml.safe_dump({"servers": {"demo": {**demo, "env": {"DEMO_OUTBOX": str(outbox)}}}}))
    done = _mcpexec("run", "examples/pii-roundtrip.yaml", "--servers", str(servers))
    assert done.returncode == 0, done.stderr
    assert "this code sees: [EMAIL_1] [PHONE_1] [CREDIT_CARD_1]" in done.stdout
    assert "@example" not in done.stdout and "555-0199" not in done.stdout
    sent = json.loads(outbox.read_text())
    assert sent["to"] == "bob.okafor@example.net"
    assert sent["body"] == "Hello, we will call you on (415) 555-0199."


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ("kind: AgentTask\nspec: [unclosed", "is not valid YAML"),
        ("apiVersion: v1\nkind: ConfigMap\n", "exactly one AgentTask"),
        (yaml.safe_dump(agenttask("x", code="1", prompt="2")), "exactly one of spec.prompt"),
        (yaml.safe_dump(agenttask("x", mcpServers=["nope"])), "unknown MCP server(s) ['nope']"),
    ],
)
def test_bad_input_gets_a_clear_error(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "task.yaml"
    path.write_text(content)
    done = _mcpexec("run", str(path))
    assert done.returncode == 2
    assert expected in done.stderr


def test_no_runsc_means_no_run_unless_explicitly_unsafe(tmp_path: Path) -> None:
    no_runsc = {"PATH": str(Path(sys.executable).parent)}
    refused = _mcpexec("run", "examples/direct-code.yaml", env=no_runsc)
    assert refused.returncode == 2
    assert "runsc (gVisor) is not installed" in refused.stderr and "--unsafe-no-sandbox" in refused.stderr
    unsafe = _mcpexec("run", "--unsafe-no-sandbox", "examples/direct-code.yaml", env=no_runsc)
    assert unsafe.returncode == 0, unsafe.stderr
    assert "WARNING: --unsafe-no-sandbox" in unsafe.stderr
    assert json.loads(unsafe.stderr.strip().splitlines()[-1])["sandbox"] == "none (unsafe)"


def test_redis_vault_when_redis_url_is_set() -> None:
    with redis_server() as url:
        done = _mcpexec("run", "examples/pii-roundtrip.yaml", env={"REDIS_URL": url})
        assert done.returncode == 0, done.stderr
        assert "this code sees: [EMAIL_1]" in done.stdout
        keys = redis.Redis.from_url(url).keys("mcpexec:pii:*")
    assert keys, "the task's token mappings live in the Redis vault"
    assert all(b"default/pii-roundtrip" in key for key in keys)
