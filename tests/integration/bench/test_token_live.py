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
from collections.abc import Collection, Iterator
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
SESSION = "10-question session on one repository"
ASK, ASKED = "Say ok.", "ok"

Body = dict[str, Any]


def usage_of(body: Body) -> dict[str, int]:
    """The figures the stand-in's API reports for a request: its own, different for every request."""
    prompt = len(json.dumps(body["messages"])) + 100 * len(body.get("tools") or [])
    completion = 7 + 3 * len(body["messages"])
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


class StandIn:
    """The model: follows the current workflow's scripts, from what each request shows (the question asked is the last
    user message that is not a snippet's output). `wrong` answers every question wrongly, `wrong_at` only those
    numbers of a session (so a checker has something to refuse); `ask_at` maps a session question's number to a
    model call its code makes first (ask_llm), answered `ASKED`."""

    def __init__(
        self, chosen: list[Workflow], wrong: bool = False, wrong_at: Collection[int] = (), ask_at: int | None = None
    ) -> None:
        self.chosen = chosen
        self.wrong = wrong
        self.wrong_at = wrong_at
        self.ask_at = ask_at
        self.current: Workflow | None = None
        self.number = 0  # the current question's, in its workflow
        self.asked: list[tuple[str, str, Body]] = []  # (workflow, mode, request), in order

    def _question(self, messages: list[Body]) -> tuple[Question, int, list[Body]]:
        """The question asked, its number in its workflow, and the messages since it was asked."""
        at = max(i for i, m in enumerate(messages) if m["role"] == "user" and not m["content"].startswith("Output:"))
        for workflow in self.chosen:
            for number, question in enumerate(workflow.questions):
                if messages[at]["content"].endswith(question.prompt):
                    self.current, self.number = workflow, number
                    return question, number, messages[at + 1 :]
        raise AssertionError(f"no workflow asks {messages[at]['content'][:80]!r}")

    def __call__(self, body: Body) -> Reply:
        messages = body["messages"]
        if body.get("tools"):  # direct mode: the tools defined, the preamble as system prompt
            question, _number, since = self._question(messages)
            self._log("direct", body)
            return self._direct(body, question, sum(m["role"] == "assistant" for m in since))
        if messages[0]["role"] == "system":  # code mode: the agent loop (through the proxy), or a session's client
            assert messages[0]["content"].startswith(SYSTEM_PROMPT)
            question, number, since = self._question(messages)
            self._log("code", body)
            steps = code.turns(question.code, "final") if number == 0 else code.later_turns(question.code, "final")
            if self._wrong():
                steps = [
                    (step, final) if not final else ('print("I could not work it out.")', True) for step, final in steps
                ]
            if number == self.ask_at and self.current is not None and len(self.current.questions) > 1:
                steps = [(f"remark = ask_llm({ASK!r})\n{step}", final) for step, final in steps]
            done = sum(m["role"] == "assistant" for m in since)
            if done < len(steps):
                return code_block(*steps[done])
            outputs = [m["content"] for m in since if m["role"] == "user"]
            return final_block(self._answer(question.code.answer(outputs)))
        # A call the task's code makes (ask_llm), through the same proxy.
        assert self.current is not None
        self._log("code", body)
        if self.current.inner is None:
            assert messages[-1]["content"] == ASK
            return ASKED
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

    def _wrong(self) -> bool:
        return self.wrong or self.number in self.wrong_at

    def _answer(self, text: str) -> str:
        return "I could not work it out." if self._wrong() else text


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


def test_the_session_runs_live_question_by_question(data: Data, monkeypatch: pytest.MonkeyPatch) -> None:
    """The 10-question session on one repository, live: direct mode one conversation through the gateway, code mode a
    session's client driving one real session (`mcpexec serve`'s session core). The scripted server stands in for a
    hosted model (none is reachable here); its answer to the last question is wrong in both modes, so its checker
    has something to refuse, and code mode's third question asks the model from its code (ask_llm) first."""
    (session,) = [w for w in workflows(data) if w.name == SESSION]
    last = len(session.questions) - 1
    stand_in = StandIn([session], wrong_at=[last], ask_at=2)
    results = _live(data, stand_in, monkeypatch)
    assert list(results) == [SESSION]
    for mode in ("direct", "code"):
        figures = results[SESSION][mode]
        rows = figures["questions"]
        bodies = [body for _w, m, body in stand_in.asked if m == mode]
        # Every call of this mode charged as the API counted it, once: each question's rows sum to the totals.
        assert len(rows) == len(session.questions), mode
        assert figures["model_calls"] == len(bodies) == sum(r["model_calls"] for r in rows), mode
        assert figures["prompt_tokens"] == sum(usage_of(b)["prompt_tokens"] for b in bodies), mode
        assert figures["completion_tokens"] == sum(usage_of(b)["completion_tokens"] for b in bodies), mode
        for key in ("prompt_tokens", "completion_tokens", "tool_calls"):
            assert figures[key] == sum(r[key] for r in rows), (mode, key)
        # The checkers ran, question by question: every answer taken but the last, which is wrong.
        assert [r["right"] for r in rows] == [True] * last + [False], (mode, rows)
        assert rows[last]["answer"] == "I could not work it out." and figures["right"] is False, mode
        for row, question in zip(rows[:last], session.questions, strict=False):
            assert row["answer"] and question.check(row["answer"]), (mode, row)
        # Both modes fetched the log once (the first question) and showed two commits.
        assert figures["tool_calls"] == 3 and rows[0]["tool_calls"] == 1, (mode, rows)
        assert [r["tool_calls"] for r in rows[1:]].count(0) == 7, (mode, rows)
    # Direct mode: one conversation, each question asked once the last was answered.
    direct_bodies = [body for _w, m, body in stand_in.asked if m == "direct"]
    asked = [m["content"] for m in direct_bodies[-1]["messages"] if m["role"] == "user"]
    assert asked == [q.prompt for q in session.questions]
    assert results[SESSION]["direct"]["tool_calls"] == _tool_calls(direct_bodies)
    # Code mode: one conversation too, and its variables persist: later questions read `entries`, which only the first
    # question's code defined, and each of their snippets (marked final) ran cleanly and printed its answer: the only
    # output the model was shown is the discovery's.
    code_rows = results[SESSION]["code"]["questions"]
    client = [body for _w, m, body in stand_in.asked if m == "code" and body["messages"][0]["role"] == "system"]
    replies = [m["content"] for m in client[-1]["messages"] if m["role"] == "assistant"]
    assert "entries =" in replies[1] and sum("entries" in reply for reply in replies[2:]) == 7, replies
    assert not any("entries =" in reply for reply in replies[2:]), replies
    shown = [m["content"] for m in client[-1]["messages"] if m["role"] == "user"]
    assert len(shown) == len(session.questions) + 1 and shown[1].startswith("Output:\n"), shown
    # Its third question's ask_llm went through the session gateway's proxy and was charged as a model call.
    inner = [body for _w, m, body in stand_in.asked if m == "code" and body["messages"][0]["role"] != "system"]
    assert len(inner) == 1 and code_rows[2]["model_calls"] == 2, code_rows[2]
    third = client[3]  # discovery and the first question's program, the second question's, then the third's
    assert third["messages"][-1]["content"] == session.questions[2].prompt
    assert code_rows[2]["prompt_tokens"] == usage_of(third)["prompt_tokens"] + usage_of(inner[0])["prompt_tokens"]
