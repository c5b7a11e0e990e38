"""Tasks and sessions started from their watch events (controller/handlers.py), not from kopf's create handlers.

kopf's per-object handler machinery (cause detection, diff bases, progress kept in annotations, the patch that
writes them and the event that patch brings back) cost more of the operator's CPU per warm claim than the claim did.
Here a start is keyed by the object's uid: one at a time, and events that come meanwhile are folded into it; a start
that must wait (kopf.TemporaryError, as the reconciles raise it) runs again after its delay, one that fails after a
growing backoff. Restart-safe as before: the reconciles are idempotent (controller/tasks.py, controller/sessions.py),
and a restarted operator sees every object again as its watches list them.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import kopf

MAX_BACKOFF_SECONDS = 60.0
log = logging.getLogger(__name__)


class Starts:
    def __init__(self, threads: int) -> None:
        self._executor = ThreadPoolExecutor(threads, thread_name_prefix="start")
        self._pending: dict[str, asyncio.Task[None]] = {}

    def want(self, uid: str, what: str, start: Callable[[], None]) -> None:
        """Run `start` on a thread, unless a start of `uid` is already queued, running or waiting to run again (it
        reads the object when it runs, so it sees what this event brought)."""
        if uid not in self._pending:
            self._pending[uid] = asyncio.get_running_loop().create_task(self._run(uid, what, start))

    def __len__(self) -> int:
        return len(self._pending)

    async def _run(self, uid: str, what: str, start: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        failures = 0
        try:
            while True:
                try:
                    await loop.run_in_executor(self._executor, start)
                    log.info("reconciled %s", what)
                    return
                except kopf.TemporaryError as exc:
                    delay = exc.delay if exc.delay is not None else 1.0
                    log.info("%s waits: %s; will retry in %s s", what, exc, delay)
                except Exception:
                    failures += 1
                    delay = min(MAX_BACKOFF_SECONDS, 2.0**failures)
                    log.exception("starting %s failed; will retry in %s s", what, delay)
                await asyncio.sleep(delay)
        finally:
            del self._pending[uid]

    def stop(self) -> None:
        for task in self._pending.values():
            task.cancel()
        self._executor.shutdown(wait=False, cancel_futures=True)
