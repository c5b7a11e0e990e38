"""Live runs, when LLM_BASE_URL is set (an OpenAI-compatible endpoint; LLM_API_KEY, LLM_MODEL): both modes through
a real model, each charged as the API's own `usage` says, each answer checked.

Direct: a tool-calling loop (every tool of the reference catalogue defined, the shared preamble as system prompt),
tools called through the gateway (a refused call goes back to the model as its result, as a client shows it). Code
mode: the runtime's agent loop with the gateway's LLM proxy in front of the same endpoint (the preamble leads the
task's prompt); usage is the gateway's meter, which sums the API's `usage` over every call, those the task's code
makes too. Both modes report the same figures: model calls, prompt and completion tokens as the API counted them,
tool calls as the gateway counted them, the answer and whether its checker takes it. Single-question workflows only.
No model is reachable from this repository's runs: tests/integration/bench/test_token_live.py runs this against a
scripted stand-in for the model.
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection
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
from tests.integration.gateway.conftest import GatewayThread
from tests.integration.runtime.conftest import runtime_harness
from tests.support.tasks import make_task

MAX_TURNS = 20


class CompletionUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Completion(BaseModel):
    choices: list[dict[str, Any]]
    usage: CompletionUsage | None = None


def _tool_result(gateway: httpx.Client, name: str | None, arguments: str) -> str:
    """A tool's result as the model is shown it; a call the gateway refuses (or an unknown tool, or arguments that
    are not JSON) is shown as the error, as a client would show it, and the model goes on."""
    if name is None:
        return "error: no such tool"
    try:
        return direct.call(gateway, name, json.loads(arguments or "{}"))
    except json.JSONDecodeError as exc:
        return f"error: the arguments are not JSON ({exc})"
    except httpx.HTTPStatusError as exc:
        return f"error {exc.response.status_code}: {exc.response.text}"


def _direct(
    llm: httpx.Client, gateway: GatewayThread, number: int, question: Question, preamble: str, model: str
) -> dict[str, Any]:
    task = make_task(f"live-direct-{number}", REFERENCE)
    with gateway.client_for(task) as client:
        tools = client.get("/v1/tools", params={"detail": "full"}).json()["tools"]
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
        text = None
        calls = 0
        while calls < MAX_TURNS and text is None:
            body = {"model": model, "messages": messages, "tools": definitions}
            answer = Completion.model_validate(llm.post("/chat/completions", json=body).raise_for_status().json())
            calls += 1
            if answer.usage is not None:
                used.prompt_tokens += answer.usage.prompt_tokens
                used.completion_tokens += answer.usage.completion_tokens
            message = answer.choices[0]["message"]
            messages.append(message)
            if not message.get("tool_calls"):
                text = str(message.get("content") or "")
            for call in message.get("tool_calls") or []:
                result = _tool_result(client, names.get(call["function"]["name"]), call["function"]["arguments"])
                messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
    meter = gateway.gateway.usage(task.task_id)
    return _figures(calls, used.prompt_tokens, used.completion_tokens, meter["toolCalls"], question, text)


def _figures(
    calls: int, prompt: int, completion: int, tool_calls: int, question: Question, answer: str | None
) -> dict[str, Any]:
    """One mode's row: `answer` None when there was none (out of turns, or the task failed)."""
    right = answer is not None and question.check(answer)
    return {
        "model_calls": calls,
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "tool_calls": tool_calls,
        "answer": answer,
        "right": right,
    }


def run(
    specs: dict[str, MCPServerSpec], data: Data, preamble: str, only: Collection[str] | None = None
) -> dict[str, Any]:
    """Each single-question workflow (those named in `only`, when given) in both modes, direct first; what a run
    wrote is undone after each."""
    model = os.environ.get("LLM_MODEL")
    if not model:
        raise ValueError("LLM_MODEL is required with LLM_BASE_URL: the model both modes ask")
    upstream = LLMUpstream(
        base_url=os.environ["LLM_BASE_URL"],
        api_key=SecretStr(os.environ.get("LLM_API_KEY", "none")),
        default_model=model,
    )
    headers = {"Authorization": f"Bearer {os.environ.get('LLM_API_KEY', 'none')}"}
    results: dict[str, Any] = {}
    single: list[Workflow] = [w for w in workflows(data) if len(w.questions) == 1 and (only is None or w.name in only)]
    with (
        runtime_harness(llm=upstream, extra_servers=specs) as harness,
        httpx.Client(base_url=upstream.base_url, headers=headers, timeout=300) as llm,
        harness.gateway.client_for(make_task("live-reset", REFERENCE)) as gateway,
    ):
        for number, workflow in enumerate(single):
            (question,) = workflow.questions
            results[workflow.name] = {"direct": _direct(llm, harness.gateway, number, question, preamble, model)}
            for name, arguments in workflow.reset:
                direct.call(gateway, name, arguments)
            task = harness.task(f"live-code-{number}", code=None, prompt=f"{preamble}\n\n{question.prompt}",
                                mcpServers=REFERENCE, maxTurns=12, timeoutSeconds=600)  # fmt: skip
            ran = harness.run(task)
            meter = harness.gateway.gateway.usage(task.task_id)
            answer = str(ran.result.get("result", "")) if ran.result.get("phase") == "Succeeded" else None
            results[workflow.name]["code"] = _figures(
                meter["llmTurns"], meter["tokensIn"], meter["tokensOut"], meter["toolCalls"], question, answer
            )
            if answer is None:
                results[workflow.name]["code"]["error"] = ran.result.get("error")
            for name, arguments in workflow.reset:
                direct.call(gateway, name, arguments)
    return results
