"""The operator's own watches of the pods and Jobs it made, instead of kopf's.

kopf watches a kind cluster-wide and runs its per-object machinery for every event (cause detection, handler matching
by labels, a thread hop per matching handler) before a handler of ours looks at it; pods bring most of the events of a
claim (the claim, the refill pod's binding, start and readiness) and of a task. Here the API server filters by the
managed-by label, each event goes into the store and to one callback on the watch's own thread, and the callback hands
only the work the event implies to a pool of threads, folded per key (controller/serial.py: OneAtATime.soon).

A watch lists, then watches from the listing's resourceVersion with bookmarks, and goes on from the last version it
saw when the API server ends the watch; when the API server no longer has that version (410 Gone) it lists again, and
what the store held that the new listing lacks is reported deleted.
"""

from __future__ import annotations

import logging
import random
import threading
from collections.abc import Callable
from typing import Any

from kubernetes.client.exceptions import ApiException

from controller.kube import Cluster

WATCH_SECONDS = 300  # the API server ends each watch about then (jittered), and the watch goes on from where it was
MAX_BACKOFF_SECONDS = 30.0
Seen = Callable[[str, dict[str, Any]], None]  # an event's type (ADDED, MODIFIED, DELETED) and object
log = logging.getLogger(__name__)


class _Gone(Exception):
    """The API server no longer has the version the watch would go on from."""


class Watch:
    def __init__(self, cluster: Cluster, kind: str, selector: str, seen: Seen) -> None:
        self._cluster, self._kind, self._selector, self._seen = cluster, kind, selector, seen
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"watch-{kind}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """No further events are handed on; the thread ends when its watch does (it holds no lock)."""
        self._stopping.set()

    def _run(self) -> None:
        version, failures = "", 0
        while not self._stopping.is_set():
            try:
                version = self._follow(version or self._list())
                failures = 0
            except _Gone:
                version = ""
            except Exception:
                failures += 1
                delay = min(MAX_BACKOFF_SECONDS, 0.5 * 2**failures)
                log.exception("watch of %ss failed; will retry in %s s", self._kind, delay)
                self._stopping.wait(delay)

    def _list(self) -> str:
        items, version = self._cluster.list_all(self._kind, self._selector)
        listed = {(item["metadata"]["namespace"], item["metadata"]["name"]) for item in items}
        for gone in self._cluster.store.unlisted(self._kind, listed, version):
            self._seen("DELETED", gone)
        for item in items:
            self._seen("ADDED", item)
        self._cluster.store.listed(self._kind)
        return version

    def _follow(self, version: str) -> str:
        """Events from `version` on until the API server ends the watch; the last version seen."""
        seconds = int(WATCH_SECONDS * random.uniform(0.9, 1.1))
        try:
            for event in self._cluster.watch_all(self._kind, self._selector, version, seconds):
                kind, obj = event["type"], event["object"]
                if kind == "ERROR":
                    if obj.get("code") == 410:
                        raise _Gone
                    raise RuntimeError(f"watch of {self._kind}s: {obj.get('message')}")
                version = obj["metadata"]["resourceVersion"]
                if self._stopping.is_set():
                    break
                if kind != "BOOKMARK":
                    self._seen(kind, obj)
        except ApiException as exc:
            if exc.status == 410:
                raise _Gone from None
            raise
        return version
