"""Code mode, scripted: the real runtime's agent loop (`python3 -S -m runtime`, a subprocess as in
tests/integration/runtime) against the real gateway and servers; only the model is scripted.

Each model call is charged from the request the gateway's LLM proxy really sent upstream (the runtime's system
prompt, the task, every earlier reply and every printed output), so turns, printed output and answers are measured,
not written down. A model call the task's code makes (`ask_llm`) reaches the same endpoint and is charged too.

Discovery flows, to measure each cut:
- "before": the runtime description as it was (before.py) and its documented discovery: names first
  (`search_tools`), then `get_tool` for the tools it will call, each a turn of its own;
- "compact": today's shorter runtime description, the same two discovery turns;
- "signature": one discovery turn: `search_tools(query, "signature")` answers with call signatures;
- "skill": a repeated task: the saved skill is named in the system prompt, so there is no discovery at all
  (the first run, which saved it, is charged separately).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from runtime.__main__ import OUTPUT_LIMIT
from runtime.agent import output_message, system_prompt
from tests.bench.token_savings.accounting import ModelCall
from tests.bench.token_savings.before import BEFORE_SYSTEM_PROMPT
from tests.bench.token_savings.chat import Message, model_call, with_preamble
from tests.bench.token_savings.scripts import (
    CodeScript,
    Question,
    Workflow,
    code_block,
    discovery_code,
    final_block,
)
from tests.integration.runtime.conftest import RuntimeHarness

Flow = Literal["before", "compact", "signature", "skill-first", "skill"]


def turns(script: CodeScript, flow: Flow) -> list[str]:
    """The code of each turn before the answer."""
    if flow in ("before", "compact"):
        names = f"for query in {script.searches!r}:\n    print(search_tools(query))"
        details = f"for name in {script.tools!r}:\n    print(get_tool(name))"
        return [names, details, *script.steps]
    if flow == "signature":
        return [discovery_code(script.searches), *script.steps]
    assert script.skill is not None, "a skill flow needs a workflow with a skill"
    skill = script.skill
    if flow == "skill-first":
        save = f"save_skill({skill.name!r}, {skill.function}, {skill.description!r})"
        return [discovery_code(script.searches), f"{skill.define}\n{save}"]
    return [skill.use]


@dataclass
class _Plan:
    turns: list[str]
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
                code_block(self.plan.turns[done])
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


def charge_exchanges(exchanges: list[tuple[dict[str, Any], Message]], preamble: str, flow: Flow) -> list[ModelCall]:
    """The agent's calls with the shared preamble before the runtime description (the earlier description for
    "before"); calls from the task's code as they were sent, each a thread of its own."""
    calls = []
    for number, (body, reply) in enumerate(exchanges):
        messages = body["messages"]
        if messages[0]["role"] == "system":
            system = BEFORE_SYSTEM_PROMPT if flow == "before" else None
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


def run_session(harness: RuntimeHarness, workflow: Workflow, servers: list[str], flow: Flow, preamble: str) -> CodeRun:
    """Several questions in one conversation, as a session's client holds it: each snippet really runs (a code
    task of its own, so each snippet fetches what it needs again), its output is shown as the agent loop shows it."""
    messages: list[Message] = [{"role": "system", "content": system_prompt([])}]
    exchanges: list[tuple[dict[str, Any], Message]] = []
    answers, notes, right = [], [], True

    def reply(text: str) -> None:
        message = {"role": "assistant", "content": text}
        exchanges.append(({"messages": list(messages)}, message))
        messages.append(message)

    for number, question in enumerate(workflow.questions):
        messages.append({"role": "user", "content": question.prompt})
        steps = turns(question.code, flow) if number == 0 else question.code.steps
        outputs: list[str] = []
        for code in steps:
            reply(code_block(code))
            run = harness.run(harness.task(f"session-{number}", code=code, mcpServers=servers, timeoutSeconds=300))
            shown = output_message(run.log, OUTPUT_LIMIT)
            messages.append(shown)
            outputs.append(shown["content"])
        if number == 0:
            notes += _missed(question.code, flow, outputs[0])
        answer = question.code.answer(outputs)
        reply(final_block(answer))
        answers.append(answer)
        right = right and question.check(answer)
    return CodeRun(charge_exchanges(exchanges, preamble, flow), answers, right and not notes, notes, {})


def run(
    harness: RuntimeHarness, model: ScriptedModel, workflow: Workflow, servers: list[str], flow: Flow, preamble: str
) -> CodeRun:
    if len(workflow.questions) > 1:
        return run_session(harness, workflow, servers, flow, preamble)
    return run_agent_task(harness, model, workflow, servers, flow, preamble)


def has_skill(question: Question) -> bool:
    return question.code.skill is not None
