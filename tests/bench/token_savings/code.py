"""Code mode, scripted: the real runtime's agent loop (`python3 -S -m runtime`, a subprocess as in
tests/integration/runtime) against the real gateway and servers; only the model is scripted.

Each model call is charged from the request the gateway's LLM proxy really sent upstream (the runtime's system
prompt, the task, every earlier reply and every printed output), so turns, printed output and answers are measured,
not written down. A model call the task's code makes (`ask_llm`) reaches the same endpoint and is charged too.

A multi-question session runs in one real session (`mcpexec serve`'s session core: LocalSessions, the runtime in
session mode, its namespace kept between snippets, as the MCP front door's `execute_code` keeps it), so a later
question reuses what an earlier one fetched, as the runtime description says it may.

Discovery flows, to measure each cut (each charged the runtime description it had, before.py):
- "before": the runtime description before issue 22 and its documented discovery: names first
  (`search_tools(q, "name")`), then `get_tool` for the tools it will call, each a turn of its own;
- "compact": the first compact description, the same two discovery turns;
- "signature": one discovery turn: `search_tools(query, "signature")` answers with call signatures;
- "final": today's runtime: signatures are search_tools' default, and the code meant to answer is marked
  ```python final, so what it prints is the answer (no turn to restate it; one that fails goes on);
- "skill": a repeated task: the saved skill is named in the system prompt, so there is no discovery at all
  (the first run, "skill-first", which saved it, is charged separately); both end as "final" does.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from unittest import mock

from gateway.settings import LLMUpstream
from mcpexec.api.mcpserver import MCPServerSpec
from mcpexec.local.sandbox.process import UnsafeProcessSandbox
from mcpexec.local.sessions import LocalSessions
from runtime.__main__ import OUTPUT_LIMIT
from runtime.agent import final_answer, output_message, system_prompt
from runtime.executor import Outcome
from tests.bench.token_savings.accounting import ModelCall
from tests.bench.token_savings.before import BEFORE_SYSTEM_PROMPT, COMPACT_PROMPT
from tests.bench.token_savings.chat import Message, model_call, with_preamble
from tests.bench.token_savings.scripts import (
    CodeScript,
    Question,
    Workflow,
    code_block,
    discovery_code,
    final_block,
)
from tests.integration.gateway.conftest import demo_spec
from tests.integration.runtime.conftest import RuntimeHarness
from tests.support.sessions import SessionsThread

Flow = Literal["before", "compact", "signature", "final", "skill-first", "skill"]
Turn = tuple[str, bool]  # a turn's code, and whether it is marked final


def turns(script: CodeScript, flow: Flow) -> list[Turn]:
    """The code of each turn the model writes before any answer of its own."""
    if flow in ("before", "compact"):
        names = f"for query in {script.searches!r}:\n    print(search_tools(query, 'name'))"
        details = f"for name in {script.tools!r}:\n    print(get_tool(name))"
        return [(names, False), (details, False), *((step, False) for step in script.steps)]
    if flow == "signature":
        return [(discovery_code(script.searches, "signature"), False), *((step, False) for step in script.steps)]
    discovery = (discovery_code(script.searches), False)
    if flow == "final":
        return [discovery, *script.marked(script.steps)]
    assert script.skill is not None, "a skill flow needs a workflow with a skill"
    skill = script.skill
    if flow == "skill-first":
        save = f"save_skill({skill.name!r}, {skill.function}, {skill.description!r})"
        return [discovery, (f"{skill.define}\n{save}", True)]
    return [(skill.use, True)]


def later_turns(script: CodeScript, flow: Flow) -> list[Turn]:
    """A later question of a session: its tools are known, so no discovery."""
    return script.marked(script.steps) if flow == "final" else [(step, False) for step in script.steps]


@dataclass
class _Plan:
    turns: list[Turn]
    script: CodeScript
    inner: Any


@dataclass
class ScriptedModel:
    """The model endpoint's responder: the current run's turns, then an answer from what was printed; a call from
    the task's code is answered by the workflow's stand-in. Records every request with its reply."""

    plan: _Plan | None = None
    exchanges: list[tuple[dict[str, Any], Message]] = field(default_factory=list)

    def __call__(self, body: dict[str, Any]) -> str:
        assert self.plan is not None
        messages = body["messages"]
        if messages[0]["role"] == "system":
            done = sum(m["role"] == "assistant" for m in messages)
            outputs = [m["content"] for m in messages[2:] if m["role"] == "user"]
            reply = (
                code_block(*self.plan.turns[done])
                if done < len(self.plan.turns)
                else final_block(self.plan.script.answer(outputs))
            )
        else:
            reply = self.plan.inner(messages[-1]["content"]) if self.plan.inner else ""
        self.exchanges.append((body, {"role": "assistant", "content": reply}))
        return reply


@dataclass
class CodeRun:
    calls: list[ModelCall]
    answers: list[str]
    right: bool
    notes: list[str]
    meter: dict[str, int]  # the gateway's own count for the task (LLM turns, tokens, tool calls)


# The runtime description each flow is charged when it is not today's (before.py).
_DESCRIPTIONS: dict[Flow, str] = {
    "before": BEFORE_SYSTEM_PROMPT,
    "compact": COMPACT_PROMPT,
    "signature": COMPACT_PROMPT,
}


def charge_exchanges(exchanges: list[tuple[dict[str, Any], Message]], preamble: str, flow: Flow) -> list[ModelCall]:
    """The agent's calls with the shared preamble before the runtime description (the one the flow had); calls from
    the task's code as they were sent, each a thread of its own."""
    calls = []
    for number, (body, reply) in enumerate(exchanges):
        messages = body["messages"]
        if messages[0]["role"] == "system":
            system = _DESCRIPTIONS.get(flow)
            calls.append(model_call([], with_preamble(messages, preamble, system), reply))
        else:
            calls.append(model_call([], messages, reply, thread=f"sandbox-{number}"))
    return calls


def _missed(script: CodeScript, flow: Flow, first_output: str) -> list[str]:
    if flow in ("skill", "skill-first"):
        return []
    return [f"discovery did not show {tool}" for tool in script.tools if tool not in first_output]


def run_agent_task(
    harness: RuntimeHarness, model: ScriptedModel, workflow: Workflow, servers: list[str], flow: Flow, preamble: str
) -> CodeRun:
    """One question, through the runtime's agent loop."""
    (question,) = workflow.questions
    model.plan = _Plan(turns(question.code, flow), question.code, workflow.inner)
    model.exchanges = []
    task = harness.task(
        f"code-{flow}", code=None, prompt=question.prompt, model="scripted", mcpServers=servers,
        maxTurns=len(model.plan.turns) + 2, timeoutSeconds=600,
    )  # fmt: skip
    run = harness.run(task)
    meter = harness.gateway.gateway.usage(task.task_id)
    answer = str(run.result.get("result", ""))
    notes = [] if run.result.get("phase") == "Succeeded" else [f"runtime: {run.result.get('error')}"]
    outputs = [b["messages"][-1]["content"] for b, _r in model.exchanges if b["messages"][0]["role"] == "system"]
    notes += _missed(question.code, flow, outputs[1] if len(outputs) > 1 else "")
    right = question.check(answer) and not notes
    return CodeRun(charge_exchanges(model.exchanges, preamble, flow), [answer], right, notes, meter)


SessionCores = Callable[[list[str]], SessionsThread]


@contextmanager
def session_cores(specs: dict[str, MCPServerSpec], llm: LLMUpstream | None = None) -> Iterator[SessionCores]:
    """`mcpexec serve`'s session core (a gateway of its own, the runtime in session mode as a real subprocess) per set
    of servers, started on first use; `specs` are every server a catalogue may name (the demo server is added); `llm`,
    the endpoint its LLM proxy forwards the sessions' model calls to (live runs)."""
    with tempfile.TemporaryDirectory(prefix="mcpexec-token-sessions-") as tmp:
        cores: dict[tuple[str, ...], SessionsThread] = {}
        all_specs = {"demo": demo_spec(Path(tmp) / "outbox.jsonl"), **specs}

        def core(servers: list[str]) -> SessionsThread:
            key = tuple(sorted(servers))
            if key not in cores:
                chosen = {name: all_specs[name] for name in key}
                sessions = LocalSessions(chosen, UnsafeProcessSandbox(), warm=1, llm=llm)
                cores[key] = SessionsThread(sessions).__enter__()
            return cores[key]

        try:
            with mock.patch.dict(os.environ, {"MCPEXEC_HOME": str(Path(tmp) / "home")}):
                yield core
        finally:
            for thread in cores.values():
                thread.__exit__(None, None, None)


def run_session(cores: SessionCores, workflow: Workflow, servers: list[str], flow: Flow, preamble: str) -> CodeRun:
    """Several questions in one conversation, as a session's client holds it: the snippets run in one real session
    (variables kept), each output shown as the agent loop shows it; a question ends as the agent loop would end it
    (a block marked final that printed its answer, else an answer written from what was printed)."""
    sessions = cores(servers)
    session = sessions.claim_ready()
    messages: list[Message] = [{"role": "system", "content": system_prompt([])}]
    exchanges: list[tuple[dict[str, Any], Message]] = []
    answers, notes, right = [], [], True

    def reply(text: str) -> None:
        message = {"role": "assistant", "content": text}
        exchanges.append(({"messages": list(messages)}, message))
        messages.append(message)

    try:
        for number, question in enumerate(workflow.questions):
            messages.append({"role": "user", "content": question.prompt})
            steps = turns(question.code, flow) if number == 0 else later_turns(question.code, flow)
            outputs: list[str] = []
            answer = None
            for code, final in steps:
                reply(code_block(code, final))
                ran = sessions.execute(session, code, timeout=300)
                outcome = Outcome(ran.stdout + ran.stderr, ran.error is None)
                shown = output_message(outcome.output, OUTPUT_LIMIT)
                messages.append(shown)  # what the model, and the user, saw of it
                outputs.append(shown["content"])
                answer = final_answer(final, outcome, OUTPUT_LIMIT)
                if answer is not None:
                    break
            if number == 0:
                notes += _missed(question.code, flow, outputs[0])
            if answer is None:
                answer = question.code.answer(outputs)
                reply(final_block(answer))
            answers.append(answer)
            right = right and question.check(answer)
    finally:
        sessions.run(sessions.sessions.end(session, "the question set is done"))
    return CodeRun(charge_exchanges(exchanges, preamble, flow), answers, right and not notes, notes, {})


def run(
    harness: RuntimeHarness,
    cores: SessionCores,
    model: ScriptedModel,
    workflow: Workflow,
    servers: list[str],
    flow: Flow,
    preamble: str,
) -> CodeRun:
    if len(workflow.questions) > 1:
        return run_session(cores, workflow, servers, flow, preamble)
    return run_agent_task(harness, model, workflow, servers, flow, preamble)


def has_skill(question: Question) -> bool:
    return question.code.skill is not None
