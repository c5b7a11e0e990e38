"""One run at a time per key (a task's sync, a pool's reconcile), and bursts folded into one: a run asked for while
another of the same key waits for its turn is that one, since it reads the latest state when its turn comes. A Job's,
its pods' and a pool's sandboxes' events come in bursts; each used to cost a reconcile and a write."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Hashable
from concurrent.futures import Executor

log = logging.getLogger(__name__)


class OneAtATime:
    def __init__(self, stripes: int = 64) -> None:
        self._locks = [threading.RLock() for _ in range(stripes)]
        self._queued: set[Hashable] = set()
        self._guard = threading.Lock()

    def run(self, key: Hashable, work: Callable[[], None]) -> bool:
        """Run `work` under `key`'s lock, unless a run of `key` already waits (False: folded into that one)."""
        if not self._queue(key):
            return False
        self._locked(key, work)
        return True

    def exclusive(self, key: Hashable, work: Callable[[], None]) -> None:
        """Run `work` under `key`'s lock, never folded: other work than the runs folded under the key (a task's launch,
        which its syncs wait for instead of racing its status writes into conflicts). Re-entrant: `work` may run()."""
        with self._locks[hash(key) % len(self._locks)]:
            work()

    def soon(self, key: Hashable, work: Callable[[], None], executor: Executor) -> None:
        """run() on one of `executor`'s threads, folded before it takes one; what it raises is logged (nobody waits
        for it)."""
        if self._queue(key):
            executor.submit(self._logged, key, work)

    def _queue(self, key: Hashable) -> bool:
        with self._guard:
            if key in self._queued:
                return False
            self._queued.add(key)
            return True

    def _locked(self, key: Hashable, work: Callable[[], None]) -> None:
        with self._locks[hash(key) % len(self._locks)]:
            with self._guard:
                self._queued.discard(key)
            work()

    def _logged(self, key: Hashable, work: Callable[[], None]) -> None:
        try:
            self._locked(key, work)
        except Exception:  # the next event or sweep runs it again
            log.exception("%s failed", key)
