"""The latest state of what the operator watches (tasks, pools, their Jobs and pods), fed by its own watch events, so a
reconcile reads memory instead of the API server: at 5,000 tasks the reads (a task, its Job, its pods, a pool's idle
sandboxes) were three quarters of the operator's requests and most of its CPU.

What is read here may be a moment old. Every write it leads to is guarded by the resourceVersion it read (a status
patch, a claim), so a stale read costs a conflict and a fresh read (controller/kube.py), never a lost or wrong write;
what is not here yet (a watch that has not listed it) is read from the API server. Only what reconciles read is kept:
no managedFields, no pod or Job specs, no last-applied annotations.

A kind whose objects the operator's own watch listed (pods and Jobs: controller/watches.py), or a label value whose
objects were all listed into the store (`replace`), is `complete` from then on: a pool's reconcile then counts its pods
here instead of listing them on every one of its pods' events (at 75 claims/s, parsing those lists was a third of the
operator's CPU). The watch and the operator's own writes' answers keep it so; a watch that fell too far behind (410
Gone) lists again, and reports deleted what the store held and the listing lacks.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

Key = tuple[str, str, str]  # kind, namespace, name
_DROPPED_ANNOTATIONS = ("kubectl.kubernetes.io/last-applied-configuration",)
_NO_SPEC = ("Pod", "Job")  # read for their metadata and status only (a Job's spec holds its whole pod template)
GONE_KEPT = 20_000  # deleted objects' uids remembered (a uid is never reused)


def _trimmed(kind: str, body: Mapping[str, Any]) -> dict[str, Any]:
    meta = {key: value for key, value in body["metadata"].items() if key != "managedFields"}
    annotations = meta.get("annotations")
    if annotations:
        meta["annotations"] = {k: v for k, v in annotations.items() if k not in _DROPPED_ANNOTATIONS}
    kept = {key: value for key, value in body.items() if key != "metadata" and not (kind in _NO_SPEC and key == "spec")}
    return {**kept, "metadata": meta}


def _before(ours: str, theirs: str) -> bool:
    """Whether resourceVersion `ours` came before `theirs`. resourceVersions are opaque to clients in general; the API
    server's etcd3 storage makes them increasing integers, and anything else is never called earlier (the store then
    takes the newest arrival)."""
    return ours.isdigit() and theirs.isdigit() and int(ours) < int(theirs)


def _version(obj: Mapping[str, Any]) -> str:
    return str(obj["metadata"].get("resourceVersion", ""))


def _older(new: dict[str, Any], kept: dict[str, Any] | None) -> bool:
    """Whether `new` is an older version of the same object than `kept`."""
    if kept is None or new["metadata"].get("uid") != kept["metadata"].get("uid"):
        return False
    return _before(_version(new), _version(kept))


class Store:
    """Objects by kind, namespace and name, with an index by one label per kind (a pod's pool, a pod's Job)."""

    def __init__(self, indexed: Mapping[str, tuple[str, ...]]) -> None:
        self._indexed = indexed
        self._objects: dict[Key, dict[str, Any]] = {}
        self._index: dict[tuple[str, str, str, str], set[str]] = {}
        self._complete: set[tuple[str, str, str, str]] = set()
        self._gone: dict[str, None] = {}  # uids of deleted objects, oldest first (an ordered set)
        self._lock = threading.Lock()

    def put(self, kind: str, body: Mapping[str, Any]) -> None:
        """An object as a watch event (or a write's answer) brought it."""
        obj = _trimmed(kind, body)
        meta = obj["metadata"]
        key = (kind, meta["namespace"], meta["name"])
        with self._lock:
            if meta.get("uid") in self._gone or _older(obj, self._objects.get(key)):
                return  # a watch event that a write's answer (or a later event) already overtook
            self._unindex(key)
            self._objects[key] = obj
            labels = meta.get("labels") or {}
            for label in self._indexed.get(kind, ()):
                if label in labels:
                    self._index.setdefault((kind, key[1], label, labels[label]), set()).add(key[2])

    def replace(self, kind: str, namespace: str, label: str, value: str, listed: Mapping[str, Any]) -> None:
        """Every object whose indexed `label` is `value`, as a list answer (`items`, and its list's resourceVersion)
        had them: one kept but not listed is dropped, unless it is newer than the list (made since). From then on the
        store holds them all (`complete`)."""
        at = str((listed.get("metadata") or {}).get("resourceVersion", ""))
        items = listed.get("items") or []
        for item in items:
            self.put(kind, item)
        names = {item["metadata"]["name"] for item in items}
        with self._lock:
            for name in list(self._index.get((kind, namespace, label, value), ())):
                if name not in names and not _before(at, _version(self._objects[(kind, namespace, name)])):
                    self._unindex((kind, namespace, name))
                    self._objects.pop((kind, namespace, name), None)
            self._complete.add((kind, namespace, label, value))

    def unlisted(self, kind: str, listed: set[tuple[str, str]], version: str) -> list[dict[str, Any]]:
        """The objects of a kind kept here that a listing of all of them at `version` lacks (`listed`: namespace and
        name), but those newer than the listing: deleted while nobody watched."""
        with self._lock:
            return [
                obj
                for (k, namespace, name), obj in self._objects.items()
                if k == kind and (namespace, name) not in listed and not _before(version, _version(obj))
            ]

    def complete(self, kind: str, namespace: str = "", label: str = "", value: str = "") -> bool:
        """Whether every object whose `label` is `value` is here (listed once, kept current since); or every object
        of the kind (a watch of them all listed them: controller/watches.py)."""
        with self._lock:
            return (kind, "", "", "") in self._complete or (kind, namespace, label, value) in self._complete

    def listed(self, kind: str) -> None:
        """Every object of the kind is here from now on (the operator's own watch of them listed them all)."""
        with self._lock:
            self._complete.add((kind, "", "", ""))

    def of_kind(self, kind: str) -> list[dict[str, Any]]:
        with self._lock:
            return [obj for (k, _, _), obj in self._objects.items() if k == kind]

    def drop(self, kind: str, namespace: str, name: str, uid: str | None = None) -> None:
        """An object gone; with its `uid`, it is remembered gone for a while, so an answer or a list read before its
        deletion cannot put it back (uids are never reused)."""
        with self._lock:
            self._unindex((kind, namespace, name))
            self._objects.pop((kind, namespace, name), None)
            if uid:
                self._gone[uid] = None
                while len(self._gone) > GONE_KEPT:
                    del self._gone[next(iter(self._gone))]

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
