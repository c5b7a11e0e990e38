"""The latest state of what the operator watches (tasks, pools, their Jobs and pods), fed by its own watch events, so a
reconcile reads memory instead of the API server: at 5,000 tasks the reads (a task, its Job, its pods, a pool's idle
sandboxes) were three quarters of the operator's requests and most of its CPU.

What is read here may be a moment old. Every write it leads to is guarded by the resourceVersion it read (a status
patch, a claim), so a stale read costs a conflict and a fresh read (controller/kube.py), never a lost or wrong write;
what is not here yet (a watch that has not listed it) is read from the API server. Only what reconciles read is kept:
no managedFields, no pod or Job specs, no last-applied annotations.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

Key = tuple[str, str, str]  # kind, namespace, name
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_NO_SPEC = ("Pod", "Job")  # read for their metadata and status only (a Job's spec holds its whole pod template)


def _trimmed(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    meta = {key: value for key, value in body["metadata"].items() if key != "managedFields"}
    annotations = meta.get("annotations")
    if annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k not in _DROPPED_ANNOTATIONS}
    kept = {key: value for key, value in body.items() if key != "metadata" and not (kind in _NO_SPEC and key == "spec")}
    return {**kept, "metadata": meta}


def _older(new: dict[str, Any], kept: dict[str, Any] | None) -> bool:
    """Whether `new` is an older version of the same object than `kept`. resourceVersions are opaque to clients in
    general; the API server's etcd3 storage makes them increasing integers, and anything else is never called older
    (the store then takes the newest arrival, as before)."""
    if kept is None or new["metadata"].get("uid") != kept["metadata"].get("uid"):
        return False
    ours, theirs = str(new["metadata"].get("resourceVersion", "")), str(kept["metadata"].get("resourceVersion", ""))
    return ours.isdigit() and theirs.isdigit() and int(ours) < int(theirs)


class Store:
    """Objects by kind, namespace and name, with an index by one label per kind (a pod's pool, a pod's Job)."""

    def __init__(self, indexed: Mapping[str, tuple[str, ...]]) -> None:
        self._indexed = indexed
        self._objects: dict[Key, dict[str, Any]] = {}
        self._index: dict[tuple[str, str, str, str], set[str]] = {}
        self._lock = threading.Lock()

    def put(self, kind: str, body: Mapping[str, Any]) -> None:
        """An object as a watch event (or a write's answer) brought it."""
        obj = _trimmed(kind, body)
        meta = obj["metadata"]
        key = (kind, meta["namespace"], meta["name"])
        with self._lock:
            if _older(obj, self._objects.get(key)):
                return  # a watch event that a write's answer (or a later event) already overtook
            self._unindex(key)
            self._objects[key] = obj
            labels = meta.get("labels") or {}
            for label in self._indexed.get(kind, ()):
                if label in labels:
                    self._index.setdefault((kind, key[1], label, labels[label]), set()).add(key[2])

    def drop(self, kind: str, namespace: str, name: str) -> None:
        with self._lock:
            self._unindex((kind, namespace, name))
            self._objects.pop((kind, namespace, name), None)

    def _unindex(self, key: Key) -> None:
        old = self._objects.get(key)
        if old is None:
            return
        labels = old["metadata"].get("labels") or {}
        for label in self._indexed.get(key[0], ()):
            names = self._index.get((key[0], key[1], label, labels.get(label, "")))
            if names is not None:
                names.discard(key[2])
                if not names:
                    del self._index[(key[0], key[1], label, labels.get(label, ""))]

    def get(self, kind: str, namespace: str, name: str) -> dict[str, Any] | None:
        with self._lock:
            return self._objects.get((kind, namespace, name))

    def labelled(self, kind: str, namespace: str, label: str, value: str) -> list[dict[str, Any]] | None:
        """Objects whose indexed `label` is `value`; None when none is known (the caller asks the API server)."""
        with self._lock:
            names = self._index.get((kind, namespace, label, value))
            if not names:
                return None
            return [self._objects[(kind, namespace, name)] for name in sorted(names)]

    def __len__(self) -> int:
        return len(self._objects)
