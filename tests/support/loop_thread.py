"""An asyncio event loop in a thread of its own, so that synchronous tests can drive async components (a gateway,
local sessions) and call them concurrently."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

T = TypeVar("T")


class LoopThread:
    """`start_loop()`, then `run(coro)` from any thread as often as needed, then `stop_loop()`."""

    def __init__(self, name: str, timeout: float = 120) -> None:
        self._timeout = timeout
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=name, daemon=True)

    def run(self, coro: Coroutine[Any, Any, T], timeout: float | None = None) -> T:
        """`coro` run on the loop; its result, or its exception, within `timeout` seconds (default: the loop's)."""
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(timeout=timeout or self._timeout)

    def start_loop(self) -> None:
        self._thread.start()

    def stop_loop(self) -> None:
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=30)
        self._loop.close()
