"""Status conditions as the API conventions shape them: one per type, lastTransitionTime kept until it changes."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def condition(type_: str, status: bool, reason: str, message: str = "") -> dict[str, str]:
    return {"type": type_, "status": "True" if status else "False", "reason": reason, "message": message}


def merge_conditions(current: list[dict[str, Any]], updates: list[dict[str, str]]) -> list[dict[str, Any]]:
    """Replace conditions by type; keep lastTransitionTime when the status did not change."""
    merged = {c["type"]: dict(c) for c in current}
    stamp = now()
    for update in updates:
        old = merged.get(update["type"])
        changed = old is None or old.get("status") != update["status"]
        merged[update["type"]] = {
            **update,
            "lastTransitionTime": stamp if changed or old is None else old.get("lastTransitionTime", stamp),
        }
    return list(merged.values())
