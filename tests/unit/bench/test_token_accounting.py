"""The token-savings bench's accounting: each model call pays its whole input, caching reads only a shared prefix,
peak context is the largest single call; and its checkers can say no."""

from __future__ import annotations

import pytest

from tests.bench.token_savings.accounting import Block, ModelCall, add, cached_prefix, charge
from tests.bench.token_savings.chat import MESSAGE_OVERHEAD, message_tokens, model_call, tool_name, with_preamble


def _call(*blocks: tuple[str, int], output: tuple[str, int] = ("out", 10), thread: str = "agent") -> ModelCall:
    return ModelCall(tuple(Block(k, t) for k, t in blocks), Block(*output), thread)


def test_every_call_pays_its_whole_input() -> None:
    first = _call(("tools", 1000), ("user", 50), output=("a1", 20))
    second = _call(("tools", 1000), ("user", 50), ("a1", 20), ("result", 300), output=("a2", 40))
    bill = charge([first, second])
    assert bill.input == 1050 + 1370  # the tool definitions are paid twice, once per call
    assert bill.output == 60
    assert bill.cost == 2420 + 5 * 60
    assert bill.peak_context == 1370 + 40
    assert bill.calls == 2


def test_cache_reads_the_prefix_shared_with_the_previous_call_and_its_answer() -> None:
    first = _call(("system", 100), ("user", 50), output=("a1", 20))
    second = _call(("system", 100), ("user", 50), ("a1", 20), ("result", 300), output=("a2", 40))
    assert cached_prefix(second, first) == 170
    bill = charge([first, second])
    assert bill.cached_cost == pytest.approx(1.25 * 150 + 5 * 20 + 0.1 * 170 + 1.25 * 300 + 5 * 40)


def test_a_changed_block_ends_the_cached_prefix() -> None:
    first = _call(("tools-v1", 500), ("user", 50))
    second = _call(("tools-v2", 500), ("user", 50), ("out", 10))
    assert cached_prefix(second, first) == 0


def test_calls_from_the_sandbox_cache_apart_from_the_agent() -> None:
    agent = _call(("system", 100), output=("a1", 5))
    inner = _call(("system", 100), output=("x", 5), thread="sandbox-1")
    again = _call(("system", 100), ("a1", 5), output=("a2", 5))
    bill = charge([agent, inner, again])
    first_write, inner_write, read = 1.25 * 100, 1.25 * 100, 0.1 * 105
    assert bill.cached_cost == pytest.approx(first_write + inner_write + read + 3 * 5 * 5)


def test_totals_add_up_and_keep_the_largest_peak() -> None:
    a = charge([_call(("x", 100), output=("o", 10))])
    b = charge([_call(("y", 300), output=("o", 1))])
    both = add([a, b])
    assert (both.input, both.output, both.calls, both.peak_context) == (400, 11, 2, 301)
    assert a.saving_against(both) == pytest.approx(1 - 150 / 455)


def test_messages_are_charged_as_raw_text_plus_overhead() -> None:
    raw = '{"a": "line\nnext"}'
    assert message_tokens({"role": "tool", "content": raw}) < message_tokens({"role": "tool", "content": repr(raw) * 2})
    assert message_tokens({"role": "user", "content": ""}) == MESSAGE_OVERHEAD


def test_a_call_charges_tools_then_every_message() -> None:
    tools = [{"name": "t", "description": "d", "input_schema": {"type": "object"}}]
    messages = with_preamble([{"role": "system", "content": "runtime"}, {"role": "user", "content": "q"}], "preamble")
    assert messages[0]["content"] == "preamble\n\nruntime"
    call = model_call(tools, messages, {"role": "assistant", "content": "answer"})
    assert len(call.blocks) == 3
    assert model_call([], messages, {"role": "assistant", "content": "answer"}).input_tokens < call.input_tokens


def test_tool_names_fit_a_chat_api() -> None:
    assert tool_name("github/get_file.contents") == "github__get_file_contents"
    assert len(tool_name("s/" + "x" * 100)) == 64
