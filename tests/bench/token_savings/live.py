"""Live runs, when LLM_BASE_URL is set (an OpenAI-compatible endpoint; LLM_API_KEY, LLM_MODEL): both modes through
a real model, each charged as the API's own `usage` says, each answer checked.

Direct: a tool-calling loop (every tool of the reference catalogue defined, the shared preamble as system prompt),
tools called through the gateway (a refused call goes back to the model as its result, as a client shows it); a
multi-question workflow is one conversation, each question asked once the last is answered. Code mode, one question:
the runtime's agent loop with the gateway's LLM proxy in front of the same endpoint (the preamble leads the task's
prompt); usage is the gateway's meter, which sums the API's `usage` over every call, those the task's code makes too.
Code mode, a multi-question session: the conversation a session's client holds, driven from here as the agent loop
would drive it (runtime/agent.py's system prompt, its reading of a reply: ```final, ```python final), every snippet
run in one real session (`mcpexec serve`'s session core, as code.run_session uses it: variables kept between
questions); the model is called straight at the endpoint, each call charged its response's `usage`, plus the session
gateway's meter for the calls the code makes (its LLM proxy forwards them to the same endpoint). Both modes report the
same figures: model calls, prompt and completion tokens as the API counted them, tool calls as the gateway counted
them, the answer and whether its checker takes it; a session reports them per question and their totals.
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
from runtime.__main__ import OUTPUT_LIMIT
from runtime.agent import _FINAL, code_in, final_answer, output_message, system_prompt
from runtime.executor import Outcome
from tests.bench.token_savings import code, direct
from tests.bench.token_savings.catalogues import REFERENCE
from tests.bench.token_savings.chat import tool_name
from tests.bench.token_savings.data import Data
from tests.bench.token_savings.scripts import Question, Workflow
from tests.bench.token_savings.workflows import workflows
from tests.integration.gateway.conftest import GatewayThread
from tests.integration.runtime.conftest import RuntimeHarness, runtime_harness
from tests.support.tasks import make_task

MAX_TURNS = 20  # model calls per question
METERED = ("llmTurns", "tokensIn", "tokensOut", "toolCalls")


class CompletionUsage(BaseModel):
    prompt_tokens: int = 0
    completion_tokens: int = 0


class Completion(BaseModel):
    choices: list[dict[str, Any]]
    usage: CompletionUsage | None = None


class _Model:
    """The endpoint, called straight; counts the calls and sums the `usage` each response reports."""

    def __init__(self, llm: httpx.Client, model: str) -> None:
        self.llm = llm
        self.model = model
        self.calls = 0
        self.used = CompletionUsage()

    def reply(self, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        body = {"model": self.model, "messages": messages, **extra}
        answer = Completion.model_validate(self.llm.post("/chat/completions", json=body).raise_for_status().json())
        self.calls += 1
        if answer.usage is not None:
            self.used.prompt_tokens += answer.usage.prompt_tokens
            self.used.completion_tokens += answer.usage.completion_tokens
        return dict(answer.choices[0]["message"])


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
    llm: httpx.Client, gateway: GatewayThread, number: int, workflow: Workflow, preamble: str, model: str
) -> list[dict[str, Any]]:
    """Each question's row, the questions asked in turn in one conversation."""
    task = make_task(f"live-direct-{number}", REFERENCE)
    rows = []
    with gateway.client_for(task) as client:
        tools = client.get("/v1/tools", params={"detail": "full"}).json()["tools"]
        names = {tool_name(f"{t['server']}/{t['name']}"): f"{t['server']}/{t['name']}" for t in tools}
        definitions = [
            {"type": "function", "function": {"name": tool_name(f"{t['server']}/{t['name']}"),
                                              "description": t["description"], "parameters": t["inputSchema"]}}
            for t in tools
        ]  # fmt: skip
        messages: list[dict[str, Any]] = [{"role": "system", "content": preamble}]
        for question in workflow.questions:
            messages.append({"role": "user", "content": question.prompt})
            endpoint = _Model(llm, model)
            before = gateway.gateway.usage(task.task_id)["toolCalls"]
            text = None
            while endpoint.calls < MAX_TURNS and text is None:
                message = endpoint.reply(messages, tools=definitions)
                messages.append(message)
                if not message.get("tool_calls"):
                    text = str(message.get("content") or "")
                for call in message.get("tool_calls") or []:
                    result = _tool_result(client, names.get(call["function"]["name"]), call["function"]["arguments"])
                    messages.append({"role": "tool", "tool_call_id": call["id"], "content": result})
            tool_calls = gateway.gateway.usage(task.task_id)["toolCalls"] - before
            used = endpoint.used
            rows.append(
                _figures(endpoint.calls, used.prompt_tokens, used.completion_tokens, tool_calls, question, text)
            )
    return rows


def _code_session(
    cores: code.SessionCores, llm: httpx.Client, workflow: Workflow, preamble: str, model: str
) -> list[dict[str, Any]]:
    """Each question's row: the conversation a session's client holds, its snippets run in one real session."""
    sessions = cores(REFERENCE)
    session = sessions.claim_ready()

    def meter() -> dict[str, int]:
        return sessions.sessions.core.usage.of(session.context.scope).model_dump(by_alias=True)

    messages: list[dict[str, Any]] = [{"role": "system", "content": system_prompt([])}]
    rows = []
    try:
        for number, question in enumerate(workflow.questions):
            prompt = f"{preamble}\n\n{question.prompt}" if number == 0 else question.prompt
            messages.append({"role": "user", "content": prompt})
            endpoint = _Model(llm, model)
            before = meter()
            answer = None
            while endpoint.calls < MAX_TURNS and answer is None:
                reply = str(endpoint.reply(messages).get("content") or "")
                messages.append({"role": "assistant", "content": reply})
                final, block = _FINAL.search(reply), code_in(reply)
                if block is None:  # as the agent loop ends: a ```final block, or no code at all
                    answer = (final.group(1) if final else reply).strip()
                    break
                ran = sessions.execute(session, block[0], timeout=300)
                outcome = Outcome(ran.stdout + ran.stderr, ran.error is None)
                answer = final_answer(block[1], outcome, OUTPUT_LIMIT)
                if answer is None:
                    messages.append(output_message(outcome.output, OUTPUT_LIMIT))
            after = meter()
            inside = {key: after[key] - before[key] for key in METERED}  # the code's own calls, and its tools
            used = endpoint.used
            rows.append(
                _figures(
                    endpoint.calls + inside["llmTurns"],
                    used.prompt_tokens + inside["tokensIn"],
                    used.completion_tokens + inside["tokensOut"],
                    inside["toolCalls"],
                    question,
                    answer,
                )
            )
    finally:
        sessions.run(sessions.sessions.end(session, "the question set is done"))
    return rows


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


def _totals(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """A session's figures: the questions' sums, right when every answer is, and each question's row."""
    summed = {key: sum(row[key] for row in rows) for key in ("model_calls", "prompt_tokens", "completion_tokens")}
    return summed | {
        "tool_calls": sum(row["tool_calls"] for row in rows),
        "right": all(row["right"] for row in rows),
        "questions": rows,
    }


def _entry(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return rows[0] if len(rows) == 1 else _totals(rows)


def run(
    specs: dict[str, MCPServerSpec], data: Data, preamble: str, only: Collection[str] | None = None
) -> dict[str, Any]:
    """Each workflow (those named in `only`, when given) in both modes, direct first; what a run wrote is undone after
    each. A single question's entry is its row; a session's, its totals with each question's row (`questions`)."""
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
    chosen: list[Workflow] = [w for w in workflows(data) if only is None or w.name in only]
    with (
        runtime_harness(llm=upstream, extra_servers=specs) as harness,
        code.session_cores(specs, llm=upstream) as cores,
        httpx.Client(base_url=upstream.base_url, headers=headers, timeout=300) as llm,
        harness.gateway.client_for(make_task("live-reset", REFERENCE)) as gateway,
    ):
        for number, workflow in enumerate(chosen):
            results[workflow.name] = {
                "direct": _entry(_direct(llm, harness.gateway, number, workflow, preamble, model))
            }
            for name, arguments in workflow.reset:
                direct.call(gateway, name, arguments)
            if len(workflow.questions) > 1:
                results[workflow.name]["code"] = _totals(_code_session(cores, llm, workflow, preamble, model))
            else:
                results[workflow.name]["code"] = _code_task(harness, number, workflow, preamble)
            for name, arguments in workflow.reset:
                direct.call(gateway, name, arguments)
    return results


def _code_task(harness: RuntimeHarness, number: int, workflow: Workflow, preamble: str) -> dict[str, Any]:
    """One question through the runtime's agent loop, charged by the gateway's meter."""
    (question,) = workflow.questions
    task = harness.task(f"live-code-{number}", code=None, prompt=f"{preamble}\n\n{question.prompt}",
                        mcpServers=REFERENCE, maxTurns=12, timeoutSeconds=600)  # fmt: skip
    ran = harness.run(task)
    meter = harness.gateway.gateway.usage(task.task_id)
    answer = str(ran.result.get("result", "")) if ran.result.get("phase") == "Succeeded" else None
    row = _figures(meter["llmTurns"], meter["tokensIn"], meter["tokensOut"], meter["toolCalls"], question, answer)
    if answer is None:
        row["error"] = ran.result.get("error")
    return row
