"""The token-savings bench's live runs (tests/bench/token_savings/live.py), run for real against a stand-in model.

A hosted LLM cannot be reached here, so the repository's scripted OpenAI-compatible server (tests/support/
scripted_llm.py) stands in for it at LLM_BASE_URL: it writes each turn from what it was shown, as the workflow's own
scripts say (direct mode's tool calls and answer, code mode's code and answer), and every answer reports its own
`usage`, figures that differ per request so that a sum over the wrong calls cannot match. Everything else is real:
live.py's entry, the gateway (direct mode's tool calls; the LLM proxy in front of the endpoint for code mode), the
runtime's agent loop as a subprocess, and the reference MCP servers over the bench's data.
"""

from __future__ import annotations

import json
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from runtime.agent import SYSTEM_PROMPT
from tests.bench.token_savings import PREAMBLE, _specs, code, live
from tests.bench.token_savings.catalogues import REFERENCE
from tests.bench.token_savings.chat import tool_name
from tests.bench.token_savings.data import Data, write
from tests.bench.token_savings.scripts import Question, Seen, Workflow, code_block, final_block
from tests.bench.token_savings.workflows import workflows
from tests.support.scripted_llm import Reply, ScriptedLLM

KEY = "sk-live-stand-in"
MODEL = "stand-in-model"
# A read the model must summarise (the task's code asks the model too: ask_llm), and a write a checker reads back.
CHOSEN = ["copy customer records into the knowledge graph", "summarise a 20k-token transcript"]

Body = dict[str, Any]


def usage_of(body: Body) -> dict[str, int]:
    """The figures the stand-in's API reports for a request: its own, different for every request."""
    prompt = len(json.dumps(body["messages"])) + 100 * len(body.get("tools") or [])
    completion = 7 + 3 * len(body["messages"])
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class StandIn:
    """The model: follows the current workflow's scripts, from what each request shows. `wrong` answers every
    question wrongly (so a checker has something to refuse)."""

    def __init__(self, chosen: list[Workflow], wrong: bool = False) -> None:
        self.chosen = chosen
        self.wrong = wrong
        self.current: Workflow | None = None
        self.asked: list[tuple[str, str, Body]] = []  # (workflow, mode, request), in order

    def _question(self, prompt: str) -> Question:
        for workflow in self.chosen:
            (question,) = workflow.questions
            if prompt.endswith(question.prompt):
                self.current = workflow
                return question
        raise AssertionError(f"no workflow asks {prompt[:80]!r}")

    def __call__(self, body: Body) -> Reply:
        messages = body["messages"]
        done = sum(m["role"] == "assistant" for m in messages)
        if body.get("tools"):  # direct mode: the tools defined, the preamble as system prompt
            question = self._question(messages[1]["content"])
            self._log("direct", body)
            return self._direct(body, question, done)
        if messages[0]["role"] == "system":  # code mode's agent loop, through the gateway's proxy
            assert messages[0]["content"].startswith(SYSTEM_PROMPT)
            question = self._question(messages[1]["content"])
            self._log("code", body)
            steps = code.turns(question.code, "final")
            if done < len(steps):
                return code_block(*steps[done])
            outputs = [m["content"] for m in messages[2:] if m["role"] == "user"]
            return final_block(self._answer(question.code.answer(outputs)))
        # A call the task's code makes (ask_llm), through the same proxy.
        assert self.current is not None and self.current.inner is not None
        self._log("code", body)
        return self._answer(self.current.inner(messages[-1]["content"]))

    def _log(self, mode: str, body: Body) -> None:
        assert self.current is not None
        self.asked.append((self.current.name, mode, body))

    def _direct(self, body: Body, question: Question, done: int) -> Reply:
        defined = {tool["function"]["name"]: tool for tool in body["tools"]}
        seen, called = Seen(), {}
        for message in body["messages"]:
            for call in message.get("tool_calls") or []:
                name = call["function"]["name"].replace("__", "/", 1)
                called[call["id"]] = (name, json.loads(call["function"]["arguments"]))
            if message["role"] == "tool":
                seen.results.append((called[message["tool_call_id"]], message["content"]))
        if done == len(question.direct.rounds):
            return self._answer(question.direct.answer(seen))
        calls = question.direct.rounds[done](seen)
        assert all(tool_name(name) in defined for name, _args in calls), "a real API refuses an undefined tool"
        return {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": f"call_{done}_{i}", "type": "function",
                 "function": {"name": tool_name(name), "arguments": json.dumps(arguments)}}
                for i, (name, arguments) in enumerate(calls)
            ],
        }  # fmt: skip

    def _answer(self, text: str) -> str:
        return "I could not work it out." if self.wrong else text


@pytest.fixture(scope="module")
def data() -> Iterator[Data]:
    with tempfile.TemporaryDirectory(prefix="mcpexec-live-") as tmp:
        yield write(Path(tmp))


def _live(data: Data, stand_in: StandIn, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    specs = {name: spec for name, spec in _specs(data).items() if name in REFERENCE}
    with ScriptedLLM(stand_in, usage=usage_of) as llm:
        monkeypatch.setenv("LLM_BASE_URL", llm.url)
        monkeypatch.setenv("LLM_API_KEY", KEY)
        monkeypatch.setenv("LLM_MODEL", MODEL)
        results = live.run(specs, data, PREAMBLE, only=[w.name for w in stand_in.chosen])
    # Every request reached the endpoint with the key: code mode's through the proxy (the sandbox has none), which
    # also names the model; and the stand-in saw (and logged) each one.
    assert all(headers.get("Authorization") == f"Bearer {KEY}" for headers, _body in llm.requests)
    assert all(body["model"] == MODEL for _headers, body in llm.requests)
    assert [body for _h, body in llm.requests] == [body for _w, _m, body in stand_in.asked]
    return results


def _tool_calls(bodies: list[Body]) -> int:
    """The tool calls direct mode made: its last request holds the whole conversation."""
    return sum(len(m.get("tool_calls") or []) for m in bodies[-1]["messages"])


def _chosen(data: Data) -> list[Workflow]:
    return [w for w in workflows(data) if w.name in CHOSEN]


def test_both_modes_run_live_and_report_the_apis_own_usage(data: Data, monkeypatch: pytest.MonkeyPatch) -> None:
    stand_in = StandIn(_chosen(data))
    results = _live(data, stand_in, monkeypatch)
    assert list(results) == CHOSEN
    for name in CHOSEN:
        for mode in ("direct", "code"):
            bodies = [body for workflow, m, body in stand_in.asked if (workflow, m) == (name, mode)]
            figures = results[name][mode]
            # The API's own figures, summed over exactly this mode's calls of this workflow.
            assert figures["model_calls"] == len(bodies) > 0, (name, mode)
            assert figures["prompt_tokens"] == sum(usage_of(b)["prompt_tokens"] for b in bodies), (name, mode)
            assert figures["completion_tokens"] == sum(usage_of(b)["completion_tokens"] for b in bodies), (name, mode)
            assert figures["right"] is True, (name, mode, figures)
        # Both modes called the same tools through the gateway (its meter), direct mode as the model asked.
        direct_bodies = [body for workflow, m, body in stand_in.asked if (workflow, m) == (name, "direct")]
        assert results[name]["direct"]["tool_calls"] == _tool_calls(direct_bodies) > 0
        assert results[name]["code"]["tool_calls"] == results[name]["direct"]["tool_calls"]
    transcript = results["summarise a 20k-token transcript"]
    # Direct mode read the real file through the gateway; code mode's ask_llm was a model call of its own, charged.
    shown = [m["content"] for _w, mode, b in stand_in.asked if mode == "direct" for m in b["messages"]]
    assert data.transcript in shown
    assert transcript["code"]["model_calls"] == 3  # discovery, the program (marked final), and its ask_llm
    for mode in ("direct", "code"):
        assert "ninth of March" in transcript[mode]["answer"]


def test_a_wrong_answer_is_reported_wrong(data: Data, monkeypatch: pytest.MonkeyPatch) -> None:
    """The checker, not the stand-in, says whether an answer is right."""
    stand_in = StandIn([w for w in _chosen(data) if w.name == "summarise a 20k-token transcript"], wrong=True)
    results = _live(data, stand_in, monkeypatch)
    for mode in ("direct", "code"):
        figures = results["summarise a 20k-token transcript"][mode]
        assert figures["answer"] == "I could not work it out." and figures["right"] is False, (mode, figures)
