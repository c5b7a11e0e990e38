"""kopf's diff base (the last handled state, kept in an annotation) without copies of large values.

kopf stores the "essence" of an object it handled (spec, labels, user annotations) in an annotation and diffs the next
event's essence against it. Stored whole, a task's 140 KB `spec.code` applied client-side (whose own
last-applied-configuration annotation copies it as well) exceeds the API server's 256 KiB limit on all annotations
together, and every later patch of the task fails. Here each value whose JSON is longer than VALUE_LIMIT characters is
replaced by its SHA-256, in the stored and the new essence alike: a change still changes the digest, so kopf still
sees every change (a SandboxPool's spec update), but a handler's `diff`/`old`/`new` hold digests for such values
(none of ours reads them).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from typing import Any, cast

import kopf

# A value (string, list, object) longer than this, as JSON, is stored as its digest.
VALUE_LIMIT = 256
# An object whose digested fields still add up to more than this (e.g. hundreds of small labels) is digested whole.
OBJECT_LIMIT = 4096


def _json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def digested(value: Any, keep: int = 0) -> Any:
    """`value` with every part longer than the limits replaced by `sha256:<hex>` of its JSON; objects less than
    `keep` levels deep stay objects (kopf reads the essence's top level, metadata and its annotations as objects)."""
    encoded = _json(value)
    if len(encoded) <= VALUE_LIMIT and not (keep and isinstance(value, dict)):
        return value
    if isinstance(value, dict):
        compact = {key: digested(item, keep - 1) for key, item in value.items()}
        if keep > 0 or len(_json(compact)) <= OBJECT_LIMIT:
            return compact
    return "sha256:" + hashlib.sha256(encoded.encode()).hexdigest()


class DigestedDiffBaseStorage(kopf.AnnotationsDiffBaseStorage):
    """kopf's annotation diff base, its large values digested (kopf compares what build() returns with what
    fetch() reads back, so both sides are digested the same way), and only for the kinds that have change handlers
    (`changed_kinds`): kopf builds and diffs the essence of every event of every kind it watches, also of those it only
    passes to event handlers (a pod's, a Job's), where nothing ever reads it."""

    def __init__(self, *, prefix: str, changed_kinds: frozenset[str]) -> None:
        super().__init__(prefix=prefix)
        self._changed_kinds = changed_kinds

    def fetch(self, *, body: kopf.Body) -> kopf.BodyEssence | None:
        return super().fetch(body=body) if body.get("kind") in self._changed_kinds else None

    def build(self, *, body: kopf.Body, extra_fields: Iterable[Any] | None = None) -> kopf.BodyEssence:
        """kopf deep-copies the whole body on every event before it drops what the essence leaves out; the status and
        managedFields are left out first here (a third of the operator's CPU per task went to those copies)."""
        if body.get("kind") not in self._changed_kinds:
            return cast(kopf.BodyEssence, {})
        fields = list(extra_fields or [])
        trimmed = kopf.Body(cast(kopf.RawBody, _without_unused(dict(body), fields)))
        essence = super().build(body=trimmed, extra_fields=fields)
        return cast(kopf.BodyEssence, digested(dict(essence), keep=3))


def _without_unused(raw: dict[str, Any], extra_fields: list[Any]) -> dict[str, Any]:
    """The body without what no essence keeps: managedFields, and the status unless a handler watches a field of it."""
    watches_status = any(
        (field.split(".") if isinstance(field, str) else list(field))[:1] == ["status"] for field in extra_fields
    )
    meta = {key: value for key, value in (raw.get("metadata") or {}).items() if key != "managedFields"}
    return {key: value for key, value in raw.items() if watches_status or key != "status"} | {"metadata": meta}
