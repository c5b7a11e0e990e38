"""The agent loop's reading of a reply: which code to run, and when printed output is the task's answer."""

from __future__ import annotations

from runtime.agent import code_in, final_answer
from runtime.executor import Outcome


def test_a_python_block_and_whether_it_is_marked_final() -> None:
    assert code_in("Let me look.\n```python\nprint(1)\n```") == ("print(1)\n", False)
    assert code_in("```python final\nprint(2)\n```") == ("print(2)\n", True)
    assert code_in("```py  final \nprint(3)\n```\n```python\nprint(4)\n```") == ("print(3)\n", True)
    assert code_in("```final\nThe answer.\n```") is None
    assert code_in("```python finally\nx\n```") is None  # not a marker this loop knows: no code run blindly
    assert code_in("No code, just an answer.") is None


def test_printed_output_is_the_answer_only_for_a_final_block_that_ran_cleanly_and_printed() -> None:
    assert final_answer(True, Outcome("42 customers\n", True), 1000) == "42 customers"
    assert final_answer(False, Outcome("42 customers\n", True), 1000) is None
    assert final_answer(True, Outcome("partial\nTraceback ...\nValueError: x\n", False, "ValueError: x"), 1000) is None
    assert final_answer(True, Outcome(" \n", True), 1000) is None
    long = final_answer(True, Outcome("x" * 5000, True), 1000)
    assert long is not None and len(long) <= 1000 and "truncated" in long
