"""Starts from watch events: one per object at a time, events meanwhile folded in, waits and failures tried again."""

from __future__ import annotations

import asyncio
import threading

import kopf
import pytest

from controller import starts
from controller.starts import Starts


async def _settled(began: Starts) -> None:
    """Every start pending now has ended (retries included)."""
    await asyncio.gather(*list(began._pending.values()))


def test_events_while_a_start_is_pending_are_folded_into_it() -> None:
    release = threading.Event()
    runs: list[str] = []

    def start() -> None:
        release.wait(5)
        runs.append("a")

    async def scenario() -> None:
        began = Starts(threads=2)
        for _ in range(5):  # the object's own status writes come back as events while it starts
            began.want("uid-a", "task a", start)
        began.want("uid-b", "task b", lambda: runs.append("b"))
        assert len(began) == 2
        release.set()
        await _settled(began)
        began.want("uid-a", "task a", lambda: runs.append("a again"))  # a later event starts it anew
        await _settled(began)
        began.stop()

    asyncio.run(scenario())
    assert sorted(runs) == ["a", "a again", "b"]


def test_a_start_that_must_wait_or_fails_runs_again(monkeypatch: pytest.MonkeyPatch) -> None:
    attempts: list[str] = []

    def start() -> None:
        attempts.append("try")
        if len(attempts) == 1:
            raise kopf.TemporaryError("pool empty", delay=0.01)
        if len(attempts) == 2:
            raise RuntimeError("API server unreachable")

    async def scenario() -> None:
        began = Starts(threads=1)
        began.want("uid", "task", start)
        await _settled(began)
        began.stop()

    monkeypatch.setattr(starts, "MAX_BACKOFF_SECONDS", 0.05)  # the failure's backoff, short for the test
    asyncio.run(scenario())
    assert attempts == ["try", "try", "try"], "waited, failed, then done"
