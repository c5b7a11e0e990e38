"""Timestamps as the API server writes them (metav1.Time): RFC 3339, UTC, whole seconds, a "Z" suffix.

The one place that formats and parses them, for the operator, the gateway and `mcpexec run` alike.
"""

from __future__ import annotations

from datetime import UTC, datetime


def format_time(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def now() -> str:
    return format_time(datetime.now(UTC))


def parse_time(value: str) -> datetime:
    """An RFC 3339 timestamp ("Z" or a numeric offset) as an aware datetime."""
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def seconds_since(value: str) -> float:
    """Seconds from `value` to now (negative when it is in the future, e.g. another clock's)."""
    return (datetime.now(UTC) - parse_time(value)).total_seconds()
