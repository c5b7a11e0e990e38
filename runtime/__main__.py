"""`python3 -m runtime`: run the task in task.json, write the bounded result, exit 0 only on success."""

from __future__ import annotations

import sys
import time

from runtime import client, skills, wrappers
from runtime.agent import run_agent
from runtime.config import Environment
from runtime.executor import Executor
from runtime.result import Result, Usage, write

OUTPUT_LIMIT = 20_000  # characters of output fed back to the model or kept as the result


def _namespace() -> dict[str, object]:
    """What agent code finds without importing anything."""
    return {
        **client.tool_api(),
        "save_skill": skills.save_skill,
        "list_skills": skills.list_skills,
        "load_skill": skills.load_skill,
    }


def main() -> int:
    env = Environment.from_env()
    task = env.task()
    started = time.monotonic()
    usage = Usage()
    executor = Executor(_namespace(), OUTPUT_LIMIT)
    deadline = float(task.get("timeoutSeconds", 600))
    try:
        wrappers.install(env.workspace)
        if task["mode"] == "code":
            outcome = executor.run(task["code"], max(1.0, deadline - (time.monotonic() - started)))
            result = Result(
                phase="Succeeded" if outcome.ok else "Failed", result=outcome.output, error=outcome.error, usage=usage
            )
            full = outcome.output
        else:
            agent = run_agent(
                client.gateway(),
                executor,
                task["prompt"],
                task.get("model"),
                int(task.get("maxTurns", 10)),
                max(1.0, deadline / 2),
                OUTPUT_LIMIT,
                usage,
            )
            error = None if agent.finished else agent.answer
            result = Result("Succeeded" if agent.finished else "Failed", agent.answer, error, usage)
            full = agent.transcript
    except client.ToolError as exc:
        result, full = Result("Failed", "", f"gateway: {exc}", usage), ""
    usage.toolCalls = client.gateway().tool_calls
    write(env.result_file, result, full, env.workspace)
    return 0 if result.phase == "Succeeded" else 1


if __name__ == "__main__":
    sys.exit(main())
