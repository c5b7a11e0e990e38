"""A call that needs approval, as it is bound and as people see it.

Bound: the digest of (the task's scope, whose uid a re-created task changes; the server; the tool; the arguments
as the tool would get them, de-tokenized), so an approval releases that exact call of that task and no other.
Shown: the arguments as the task sent them, tokenized again for the task (a value the sandbox wrote out in clear
comes back as its token too), cut at PREVIEW_LIMIT: the approver decides on tokens and never sees a real value.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from gateway.context import TaskContext
from mcpexec.api.approval import PREVIEW_LIMIT


@dataclass(frozen=True)
class HeldCall:
    digest: str
    tool: str  # server/tool
    preview: str  # tokenized arguments, JSON, at most PREVIEW_LIMIT characters


def call_digest(ctx: TaskContext, server: str, tool: str, real: dict[str, Any]) -> str:
    canonical = json.dumps([ctx.scope, server, tool, real], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()


def preview(tokenized: dict[str, Any]) -> str:
    shown = json.dumps(tokenized, sort_keys=True, ensure_ascii=False)
    return shown if len(shown) <= PREVIEW_LIMIT else shown[: PREVIEW_LIMIT - 1] + "…"
