"""Live runs, when LLM_BASE_URL is set (an OpenAI-compatible endpoint; LLM_API_KEY, LLM_MODEL): both modes through
a real model, each charged as the API's own `usage` says, each answer checked.

Direct: a tool-calling loop (every tool of the reference catalogue defined, the shared preamble as system prompt),
tools called through the gateway. Code mode: the runtime's agent loop with the gateway's LLM proxy in front of the
same endpoint (the preamble leads the task's prompt); usage is the gateway's meter, which counts the calls the
task's code makes too. Single-question workflows only. Not exercised in this repository's runs: no model is
reachable from here.
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
from pydantic import BaseModel, SecretStr

from gateway.settings import LLMUpstream
from mcpexec.api.mcpserver import MCPServerSpec
from tests.bench.token_savings import direct
from tests.bench.token_savings.catalogues import REFERENCE
from tests.bench.token_savings.chat import tool_name
from tests.bench.token_savings.data import Data
from tests.bench.token_savings.scripts import Question, Workflow
from tests.bench.token_savings.workflows import workflows
from tests.integration.runtime.conftest import runtime_harness
from tests.support.tasks import make_task

MAX_TURNS = 20


class CompletionUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Completion(BaseModel):
    choices: list[dict[str, Any]]
    usage: CompletionUsage = CompletionUsage()


def _direct(llm: httpx.Client, gateway: httpx.Client, question: Question, preamble: str) -> dict[str, Any]:
    tools = gateway.get("/v1/tools", params={"detail": "full"}).json()["tools"]
    names = {tool_name(f"{t['server']}/{t['name']}"): f"{t['server']}/{t['name']}" for t in tools}
    definitions = [
        {"type": "function", "function": {"name": tool_name(f"{t['server']}/{t['name']}"),
                                          "description": t["description"], "parameters": t["inputSchema"]}}
        for t in tools
    ]  # fmt: skip
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": preamble},
        {"role": "user", "content": question.prompt},
    ]
    used = CompletionUsage()
    for turn in range(1, MAX_TURNS + 1):
        body = {"model": os.environ.get("LLM_MODEL", ""), "messages": messages, "tools": definitions}
        answer = Completion.model_validate(llm.post("/chat/completions", json=body).raise_for_status().json())
        used.prompt_tokens += answer.usage.prompt_tokens
        used.completion_tokens += answer.usage.completion_tokens
        message = answer.choices[0]["message"]
        messages.append(message)
        if not message.get("tool_calls"):
            text = str(message.get("content") or "")
            return {"calls": turn, **used.model_dump(), "right": question.check(text)}
        for call in message["tool_calls"]:
            arguments = json.loads(call["function"]["arguments"] or "{}")
            result = direct.call(gateway, names[call["function"]["name"]], arguments)
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    return {"calls": MAX_TURNS, **used.model_dump(), "right": False}


def run(specs: dict[str, MCPServerSpec], data: Data, preamble: str) -> dict[str, Any]:
    upstream = LLMUpstream(
        base_url=os.environ["LLM_BASE_URL"],
        api_key=SecretStr(os.environ.get("LLM_API_KEY", "none")),
        default_model=os.environ.get("LLM_MODEL"),
    )
    headers = {"Authorization": f"Bearer {os.environ.get('LLM_API_KEY', 'none')}"}
    results: dict[str, Any] = {}
    single: list[Workflow] = [w for w in workflows(data) if len(w.questions) == 1]
    with (
        runtime_harness(llm=upstream, extra_servers=specs) as harness,
        httpx.Client(base_url=upstream.base_url, headers=headers, timeout=300) as llm,
        harness.gateway.client_for(make_task("live-direct", REFERENCE)) as gateway,
    ):
        for workflow in single:
            (question,) = workflow.questions
            results[workflow.name] = {"direct": _direct(llm, gateway, question, preamble)}
            for name, arguments in workflow.reset:
                direct.call(gateway, name, arguments)
            task = harness.task("live-code", code=None, prompt=f"{preamble}\n\n{question.prompt}", mcpServers=REFERENCE,
                                maxTurns=12, timeoutSeconds=600)  # fmt: skip
            ran = harness.run(task)
            meter = harness.gateway.gateway.usage(task.task_id)
            results[workflow.name]["code"] = {**meter, "right": question.check(str(ran.result.get("result", "")))}
            for name, arguments in workflow.reset:
                direct.call(gateway, name, arguments)
    return results
