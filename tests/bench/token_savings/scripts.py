"""The shapes of a scripted transcript, for both modes, and the helpers the workflows share.

Direct mode: rounds of tool calls (parallel within a round, each round written from the results shown so far) and
an answer written from them. Code mode: the search queries of its discovery turn, the code turns after it, and an
answer written from what the code printed. A checker per question says whether an answer is right, from the
servers' data (and state, for tasks that write), never from the script.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

ToolCall = tuple[str, dict[str, Any]]  # ("server/tool", arguments)


@dataclass
class Seen:
    """What a direct-mode model has been shown in this question: each call and its result's raw text."""

    results: list[tuple[ToolCall, str]] = field(default_factory=list)

    def texts(self, tool: str) -> list[str]:
        return [text for (name, _args), text in self.results if name == tool]

    def last(self, tool: str) -> str:
        return self.texts(tool)[-1]

    def json(self, tool: str) -> Any:
        return json.loads(self.last(tool))


Round = Callable[[Seen], list[ToolCall]]


@dataclass(frozen=True)
class DirectScript:
    rounds: list[Round]
    answer: Callable[[Seen], str]
    # What a live model would have to get right in its head that the scripted answer (computed from the text it
    # was shown) takes for granted; None when the answer only restates what it read.
    assumes: str | None = None


@dataclass(frozen=True)
class Skill:
    """Code a first run saves and a repeated task loads: `define` defines `function`; `use` calls the loaded one."""

    name: str
    function: str
    description: str
    define: str
    use: str


@dataclass(frozen=True)
class CodeScript:
    searches: list[str]  # the discovery turn's queries
    tools: list[str]  # the tools the code calls (what discovery must turn up)
    steps: list[str]  # code turns after discovery: a look at the data, the program, a fix
    answer: Callable[[list[str]], str]  # the final answer, from every output shown so far
    skill: Skill | None = None
    # Steps that only look at the data: never marked final. Every other step is meant to print the answer, so where
    # the runtime lets printed output end the task (```python final) it is marked so; one that fails goes on.
    looks: frozenset[int] = frozenset()

    def marked(self, steps: list[str]) -> list[tuple[str, bool]]:
        """`steps` (this script's, or a skill's) with whether each is marked final."""
        return [(code, number not in self.looks) for number, code in enumerate(steps)]


@dataclass(frozen=True)
class Question:
    prompt: str
    direct: DirectScript
    code: CodeScript
    check: Callable[[str], bool]
    # The tools direct mode needs, and the tool-search queries that find them (direct + tool search).
    needs: list[str]
    searches: list[str]


@dataclass(frozen=True)
class Workflow:
    name: str
    questions: list[Question]  # more than one: a multi-turn session, one conversation
    # Calls that undo what a run wrote (so the next run, and its checker, start from the same state).
    reset: list[ToolCall] = field(default_factory=list)
    # The stand-in for a model call the task's code makes (ask_llm), when scripted: prompt -> answer.
    inner: Callable[[str], str] | None = None


def code_block(code: str, final: bool = False) -> str:
    """A reply that runs `code`; marked final, what it prints is the task's answer (runtime/agent.py)."""
    return f"```python{' final' if final else ''}\n{code.strip()}\n```"


def final_block(answer: str) -> str:
    return f"```final\n{answer.strip()}\n```"


def discovery_code(queries: list[str], detail: str | None = None, top: int = 3) -> str:
    """The one discovery turn: the best few tools per query, as call signatures (search_tools' default detail)."""
    how = "query" if detail is None else f"query, {detail!r}"
    return f'for query in {queries!r}:\n    print("\\n".join(search_tools({how})[:{top}]))'


def printed(outputs: list[str]) -> str:
    """The last output shown, without the runtime's `Output:` header."""
    return outputs[-1].removeprefix("Output:\n").strip()


def integers(text: str) -> set[int]:
    return {int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)}
