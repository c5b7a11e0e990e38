"""The agent loop: the model's code runs, its (truncated) output and errors go back, turns and tokens count.

The model is the one stand-in: a scripted OpenAI-compatible endpoint on loopback (no hosted model is
reachable here), reached through the real gateway's LLM proxy. The demo MCP server is real.
"""

from __future__ import annotations

from tests.integration.runtime.conftest import runtime_harness
from tests.support.scripted_llm import USAGE, ScriptedLLM

TURNS = [
    "```python\nrecords = call_tool('demo/list_customers', {})['customers']\nrecords[99]\n```",
    "Too much? Let me see.\n```python\nprint('x' * 100_000)\nprint('count', len(records))\n```",
    "```final\nThere are 4 customers.\n```",
]


def _last_user_message(body: dict[str, object]) -> str:
    messages = body["messages"]
    assert isinstance(messages, list)
    return str(messages[-1]["content"])


def test_errors_and_truncated_output_go_back_to_the_model() -> None:
    with ScriptedLLM(TURNS) as llm, runtime_harness(llm=llm.upstream("k")) as h:
        run = h.run(h.task("agent", code=None, prompt="How many customers are there?", maxTurns=5, model="m"))
    assert run.exit_code == 0, run.result
    assert run.result["phase"] == "Succeeded"
    assert run.result["result"] == "There are 4 customers."
    assert run.result["usage"] == {
        "llmTurns": 3,
        "tokensIn": 3 * USAGE["prompt_tokens"],
        "tokensOut": 3 * USAGE["completion_tokens"],
        "toolCalls": 1,
    }
    bodies = [body for _, body in llm.requests]
    assert "IndexError: list index out of range" in _last_user_message(bodies[1])
    # The variable `records` from turn 1 survived into turn 2; the 100k characters did not reach the model.
    fed_back = _last_user_message(bodies[2])
    assert len(fed_back) < 25_000 and "truncated" in fed_back
    assert fed_back.endswith("count 4\n")
    assert [m["role"] for m in bodies[2]["messages"]] == ["system", "user", "assistant", "user", "assistant", "user"]
    # ...while the workspace's output.log keeps all of it, turn by turn.
    assert "--- turn 2: model ---\nToo much?" in run.log and "x" * 100_000 in run.log


def test_the_task_deadline_ends_the_loop() -> None:
    with (
        ScriptedLLM(["```python\nimport time\ntime.sleep(60)\n```"]) as llm,
        runtime_harness(llm=llm.upstream("k")) as h,
    ):
        run = h.run(h.task("late", code=None, prompt="wait", maxTurns=5, model="m", timeoutSeconds=2))
    assert run.exit_code == 1
    assert run.result["phase"] == "Failed"
    assert run.result["error"] == "ran out of time after 1 of 5 turns"
    assert len(llm.requests) == 1


def test_a_block_marked_final_ends_the_task_with_what_it_printed_once_it_runs_cleanly() -> None:
    """```python final: its printed output is the answer, without a turn to restate it; one that raises or prints
    nothing ends nothing: the model sees the error, or that nothing was printed, and goes on."""
    turns = [
        "```python final\nrecords = call_tool('demo/list_customers', {})['customers']\nprint(records[99]['name'])\n```",
        "```python final\nfound = len(records)\n```",
        "Now print it.\n```python final\nprint('There are', found, 'customers.')\n```",
        "```final\nnot reached\n```",
    ]
    with ScriptedLLM(turns) as llm, runtime_harness(llm=llm.upstream("k")) as h:
        run = h.run(h.task("final", code=None, prompt="How many customers are there?", maxTurns=6, model="m"))
    assert run.exit_code == 0, run.result
    assert run.result["phase"] == "Succeeded"
    assert run.result["result"] == "There are 4 customers."
    assert run.result["usage"]["llmTurns"] == 3 and len(llm.requests) == 3
    bodies = [body for _, body in llm.requests]
    assert "IndexError: list index out of range" in _last_user_message(bodies[1])
    assert _last_user_message(bodies[2]) == "Output:\n(no output)"


def test_a_block_marked_final_that_fails_on_the_last_turn_is_not_an_answer() -> None:
    with (
        ScriptedLLM(["```python final\nprint('partial')\nraise RuntimeError('boom')\n```"]) as llm,
        runtime_harness(llm=llm.upstream("k")) as h,
    ):
        run = h.run(h.task("final-fails", code=None, prompt="Try.", maxTurns=2, model="m"))
    assert run.exit_code == 1
    assert run.result["phase"] == "Failed"
    assert run.result["error"] == "no final answer after 2 turns"
    assert "RuntimeError: boom" in _last_user_message(llm.requests[1][1])
