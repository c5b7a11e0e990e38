"""One run at a time per key (a task's sync, a pool's reconcile), and bursts folded into one: a run asked for while
another of the same key waits for its turn is that one, since it reads the latest state when its turn comes. A Job's,
its pods' and a pool's sandboxes' events come in bursts; each used to cost a reconcile and a write."""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable


class OneAtATime:
    def __init__(self, stripes: int = 64) -> None:
        self._locks = [threading.Lock() for _ in range(stripes)]
        self._queued: set[Hashable] = set()
        self._guard = threading.Lock()

    def run(self, key: Hashable, work: Callable[[], None]) -> bool:
        """Run `work` under `key`'s lock, unless a run of `key` already waits (False: folded into that one)."""
        with self._guard:
            if key in self._queued:
                return False
            self._queued.add(key)
        with self._locks[hash(key) % len(self._locks)]:
            with self._guard:
                self._queued.discard(key)
            work()
        return True
