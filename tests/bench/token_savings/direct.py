"""Direct tool calling, scripted: the model calls tools itself (parallel calls in one turn), every result enters
its context as the raw text a client shows it, every call re-sends the whole conversation.

The tool calls really run once per workflow, through the gateway (whose task sees the reference servers); the
recording is then charged as each baseline would send it: with every tool of the catalogue defined up front
(direct), or with one tool-search tool whose results bring the matched tools' definitions into the conversation
(direct + tool search, as Anthropic's tool search tool does: the definitions enter as results, the tool list and
its cache stay put).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

import httpx

from tests.bench.token_savings.accounting import ModelCall
from tests.bench.token_savings.chat import Message, model_call, tool_definition, tool_name, with_preamble
from tests.bench.token_savings.scripts import Seen, ToolCall, Workflow

SEARCH_TOOL = tool_definition(
    "tool_search",
    "Search the tools available to you by keywords. Returns the definitions of the best matches; call them like "
    "any other tool afterwards.",
    {"type": "object", "properties": {"query": {"type": "string", "description": "keywords"}}, "required": ["query"]},
)
SEARCH_TOP = 5  # tool definitions a search brings in (Anthropic's tool search returns 3-5)


@dataclass
class QuestionRecord:
    rounds: list[list[tuple[ToolCall, str]]] = field(default_factory=list)
    answer: str = ""
    right: bool = False


@dataclass
class DirectRecord:
    questions: list[QuestionRecord]

    @property
    def right(self) -> bool:
        return all(q.right for q in self.questions)


def result_text(answer: dict[str, Any]) -> str:
    """A tool result as a client shows it to the model: its text content, as it is (not JSON-escaped)."""
    return "\n".join(str(c.get("text", "")) for c in answer.get("content") or [] if c.get("type") == "text")


def call(client: httpx.Client, name: str, arguments: dict[str, Any]) -> str:
    """Call a tool through the gateway; past the task's rate limit, wait as it says (as the runtime's client does)."""
    while True:
        response = client.post(f"/v1/tools/{name}/call", json={"arguments": arguments})
        if response.status_code != 429:
            response.raise_for_status()
            return result_text(response.json())
        time.sleep(float(response.headers.get("Retry-After", "1")))


def record(client: httpx.Client, workflow: Workflow) -> DirectRecord:
    """Run the direct-mode script for real; what the model keeps seeing spans the whole conversation."""
    seen = Seen()
    records = []
    for question in workflow.questions:
        done = QuestionRecord()
        for make_round in question.direct.rounds:
            results = [((name, args), call(client, name, args)) for name, args in make_round(seen)]
            seen.results += results
            done.rounds.append(results)
        done.answer = question.direct.answer(seen)
        done.right = question.check(done.answer)
        records.append(done)
    return DirectRecord(records)


class _Conversation:
    """Builds the chat messages and charges each model call on the way."""

    def __init__(self, preamble: str, tools: list[dict[str, Any]]) -> None:
        self.tools = tools
        self.messages: list[Message] = with_preamble([], preamble)
        self.calls: list[ModelCall] = []
        self._ids = 0

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def answer(self, text: str) -> None:
        reply = {"role": "assistant", "content": text}
        self.calls.append(model_call(self.tools, self.messages, reply))
        self.messages.append(reply)

    def tool_round(self, results: list[tuple[ToolCall, str]]) -> None:
        ids = [f"call_{self._ids + i}" for i in range(len(results))]
        self._ids += len(results)
        reply: Message = {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": i, "type": "function", "function": {"name": tool_name(name), "arguments": json.dumps(args)}}
                for i, ((name, args), _text) in zip(ids, results, strict=True)
            ],
        }
        self.calls.append(model_call(self.tools, self.messages, reply))
        self.messages.append(reply)
        self.messages += [
            {"role": "tool", "tool_call_id": i, "content": text} for i, (_c, text) in zip(ids, results, strict=True)
        ]


def catalogue_tools(client: httpx.Client) -> list[dict[str, Any]]:
    """Every tool the task may use, as a chat API is sent it."""
    tools = client.get("/v1/tools", params={"detail": "full"}).json()["tools"]
    return [tool_definition(f"{t['server']}/{t['name']}", t["description"], t["inputSchema"]) for t in tools]


def direct_calls(
    record_: DirectRecord, workflow: Workflow, preamble: str, tools: list[dict[str, Any]]
) -> list[ModelCall]:
    talk = _Conversation(preamble, tools)
    for question, done in zip(workflow.questions, record_.questions, strict=True):
        talk.user(question.prompt)
        for results in done.rounds:
            talk.tool_round(results)
        talk.answer(done.answer)
    return talk.calls


def search_calls(
    record_: DirectRecord, workflow: Workflow, preamble: str, client: httpx.Client
) -> tuple[list[ModelCall], list[str]]:
    """Direct + tool search: a search turn before a question whose tools are not loaded yet; the calls, and the
    tools the searches did not find (a live model would then need more searches, or fail)."""
    talk = _Conversation(preamble, [SEARCH_TOOL])
    loaded: set[str] = set()
    missed: list[str] = []
    for question, done in zip(workflow.questions, record_.questions, strict=True):
        talk.user(question.prompt)
        if not set(question.needs) <= loaded:
            results = []
            for query in question.searches:
                hits = client.get("/v1/tools", params={"query": query, "detail": "full"}).json()["tools"][:SEARCH_TOP]
                loaded |= {f"{t['server']}/{t['name']}" for t in hits}
                found = [
                    tool_definition(f"{t['server']}/{t['name']}", t["description"], t["inputSchema"]) for t in hits
                ]
                results.append((("tool_search", {"query": query}), json.dumps(found, separators=(",", ":"))))
            talk.tool_round(results)
            missed += [tool for tool in question.needs if tool not in loaded]
        for results in done.rounds:
            talk.tool_round(results)
        talk.answer(done.answer)
    return talk.calls, missed
