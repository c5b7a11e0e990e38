"""Charging model calls: every call pays its whole input (what the API is sent) and its output.

Pure arithmetic over token counts, so that it can be unit tested apart from anything that produces them. A call's
input is a sequence of blocks in the order an API caches a prompt (tool definitions, system, then each message);
prompt caching reuses the longest run of leading blocks a call shares with the previous call of its thread (that
call's input and its answer), as Anthropic's prompt caching does.
"""

from __future__ import annotations

from dataclasses import dataclass

# Price weights in input-token units: output costs 5x input (Claude Sonnet/Opus, GPT-4.1 class list prices); with
# prompt caching a cached prefix is read at 0.1x and the rest of the input is written to the cache at 1.25x
# (Anthropic's 5-minute cache).
OUTPUT_WEIGHT = 5.0
CACHE_READ_WEIGHT = 0.1
CACHE_WRITE_WEIGHT = 1.25


@dataclass(frozen=True)
class Block:
    """A unit of a prompt: `key` says what it holds (equal keys, equal content), `tokens` what it costs."""

    key: str
    tokens: int


@dataclass(frozen=True)
class ModelCall:
    """One request to a model: its input blocks, its answer (as the block the next call of its `thread` repeats),
    and the thread: the agent's own conversation ("agent"), or a call the task's code made from the sandbox."""

    blocks: tuple[Block, ...]
    output: Block
    thread: str = "agent"

    @property
    def input_tokens(self) -> int:
        return sum(block.tokens for block in self.blocks)

    @property
    def context(self) -> int:
        """The context window this call fills: its input and its output."""
        return self.input_tokens + self.output.tokens


def cached_prefix(call: ModelCall, previous: ModelCall | None) -> int:
    """Tokens of `call`'s input that are a prefix of the previous call's input followed by its output."""
    if previous is None:
        return 0
    earlier = (*previous.blocks, previous.output)
    shared = 0
    for mine, theirs in zip(call.blocks, earlier, strict=False):
        if mine.key != theirs.key:
            break
        shared += mine.tokens
    return shared


@dataclass(frozen=True)
class Charge:
    """A task's bill over all its model calls."""

    input: int
    output: int
    cost: float  # input + OUTPUT_WEIGHT * output
    cached_cost: float  # the same with prompt caching
    peak_context: int
    calls: int

    @property
    def total(self) -> int:
        return self.input + self.output

    def saving_against(self, baseline: Charge) -> float:
        """The share of the baseline's price-weighted cost this one saves (negative: it costs more)."""
        return 1 - self.cost / baseline.cost if baseline.cost else 0.0


def charge(calls: list[ModelCall]) -> Charge:
    last: dict[str, ModelCall] = {}
    cached_cost = 0.0
    for call in calls:
        read = cached_prefix(call, last.get(call.thread))
        cached_cost += CACHE_READ_WEIGHT * read + CACHE_WRITE_WEIGHT * (call.input_tokens - read)
        cached_cost += OUTPUT_WEIGHT * call.output.tokens
        last[call.thread] = call
    input_tokens = sum(c.input_tokens for c in calls)
    output_tokens = sum(c.output.tokens for c in calls)
    return Charge(
        input=input_tokens,
        output=output_tokens,
        cost=input_tokens + OUTPUT_WEIGHT * output_tokens,
        cached_cost=round(cached_cost, 1),
        peak_context=max((c.context for c in calls), default=0),
        calls=len(calls),
    )


def add(charges: list[Charge]) -> Charge:
    """Several tasks' bills as one (peak context: the largest of them)."""
    return Charge(
        input=sum(c.input for c in charges),
        output=sum(c.output for c in charges),
        cost=sum(c.cost for c in charges),
        cached_cost=round(sum(c.cached_cost for c in charges), 1),
        peak_context=max((c.peak_context for c in charges), default=0),
        calls=sum(c.calls for c in charges),
    )
