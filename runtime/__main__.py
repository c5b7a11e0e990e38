"""`python3 -m runtime`: run the task in task.json, write the bounded result (in a cluster, reported to the gateway
first), exit 0 only on success.

In a SandboxPool's sandbox (MCPEXEC_AWAIT_ASSIGNMENT) there is no task.json: the runtime starts, imports all it
runs with and opens its gateway connection while idle, then asks the gateway for its task until the operator claims
the sandbox for one, and runs that one task exactly as a cold sandbox runs its own. A task of mode "session" is an
interactive session: runtime/session.py.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from runtime import client, egress, plan, session, skills, trace, wrappers
from runtime.agent import run_agent
from runtime.config import Environment
from runtime.contract import SESSION_MODE, TRACEPARENT_KEY
from runtime.executor import Executor, Outcome
from runtime.llm import ask_llm
from runtime.output import OutputLog
from runtime.report import report
from runtime.result import Result, Usage, write

OUTPUT_LIMIT = 20_000  # characters of output fed back to the model or kept as the result


def _namespace() -> dict[str, object]:
    """What agent code finds without importing anything."""
    return {
        **client.tool_api(),
        "save_skill": skills.save_skill,
        "list_skills": skills.list_skills,
        "load_skill": skills.load_skill,
        "ask_llm": ask_llm,
    }


def _run(env: Environment, task: dict[str, Any], usage: Usage, log: OutputLog) -> Result:
    """The task's time counts from here: for a pool's sandbox, from its assignment, not from its start."""
    started = time.monotonic()
    deadline = started + float(task.get("timeoutSeconds", 600))
    executor = Executor(_namespace(), OUTPUT_LIMIT, log)
    # After the task is known, never before: an idle pool sandbox has no task, so no policy, and sees no tools.
    wrappers.install(env.workspace)
    if task.get("egress") and env.egress_proxy:  # the tools the task's code runs inherit the proxy settings
        os.environ.update(egress.start(env.egress_proxy, env.bearer))
    if task["mode"] == SESSION_MODE:
        return Result("Succeeded", session.serve(executor), None, usage)
    if task["mode"] == "code":
        if task.get("approval") == plan.PLAN:  # each run in a namespace of its own: the real run starts afresh

            def run() -> Outcome:
                return Executor(_namespace(), OUTPUT_LIMIT, log).run(task["code"], deadline - time.monotonic())

            outcome = plan.run_as_plan(run, run, lambda done: done.ok)
        else:
            outcome = executor.run(task["code"], deadline - time.monotonic())
        return Result("Succeeded" if outcome.ok else "Failed", outcome.output, outcome.error, usage)
    agent = run_agent(
        client.gateway(),
        executor,
        task["prompt"],
        task.get("model"),
        int(task.get("maxTurns", 10)),
        deadline,
        OUTPUT_LIMIT,
        usage,
        log,
        skills.list_skills(),
    )
    return Result(
        "Succeeded" if agent.finished else "Failed", agent.answer, None if agent.finished else agent.answer, usage
    )


def main() -> int:
    env = Environment.from_env()
    usage = Usage()
    log = OutputLog(env.workspace / "output.log")
    task: dict[str, Any] | None = None
    try:
        task = client.await_assignment() if env.await_assignment else env.task()
        trace.start(task.get(TRACEPARENT_KEY))
        with trace.span("runtime.task", **{"mcpexec.mode": str(task.get("mode"))}) as attributes:
            result = _run(env, task, usage, log)
            attributes["mcpexec.outcome"] = result.phase.lower()
    except client.ToolError as exc:
        result = Result("Failed", "", f"gateway: {exc}", usage)
    except Exception as exc:  # whatever breaks, the operator gets a Failed result and a reason, not silence
        result = Result("Failed", "", f"runtime: {type(exc).__name__}: {exc}", usage)
    finally:
        log.close()
    client.gateway().flush_spans()
    if client.gateway().vault.lost is not None:  # the task's tokens may mean other values now: runtime/vault_marks.py
        result = Result("Failed", result.result, f"vault_lost: {client.gateway().vault.lost}", usage)
    usage.toolCalls = client.gateway().tool_calls
    # A task's result, once it has a task (a session is no task: it ends with its sandbox), goes to the gateway first:
    # the termination message reaches the operator only after the pod's exit (runtime/report.py).
    if env.report_result and task is not None and task.get("mode") != SESSION_MODE:
        report(result)
    write(env.result_file, result)
    return 0 if result.phase == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
