"""Tokenize and de-tokenize whole JSON values (tool results, arguments, chat messages) through the vault.

One vault round trip per value: collect every string, detect, mint all tokens at once, rebuild.
Binary payloads (image/audio `data`, resource `blob`) are left alone: they are base64, not text.
"""

from __future__ import annotations

import asyncio
import re
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any

from gateway.context import TaskContext
from gateway.pii.detectors import Detection, Detector, PatternDetector, resolve_overlaps
from gateway.pii.vault import Vault

TOKEN = re.compile(r"\[[A-Z][A-Z0-9_]*_[1-9][0-9]*\]")
# Scanning costs up to 1.4 ms per KB of PII-dense text (make bench pii_detection): a value larger than this (a whole
# file) is scanned off the event loop, so the other tasks' calls on this gateway go on meanwhile.
ON_LOOP_MAX_CHARS = 32 * 1024


def _opaque_keys(node: dict[str, Any]) -> frozenset[str]:
    if node.get("type") in ("image", "audio"):
        return frozenset({"data"})
    return frozenset({"blob"}) if "blob" in node and "uri" in node else frozenset()


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    elif isinstance(value, dict):
        opaque = _opaque_keys(value)
        for key, item in value.items():
            out.append(key)
            if key not in opaque:
                _strings(item, out)


def _rebuild(value: Any, replace: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_rebuild(item, replace) for item in value]
    if isinstance(value, dict):
        opaque = _opaque_keys(value)
        return {replace(k): (v if k in opaque else _rebuild(v, replace)) for k, v in value.items()}
    return value


class PiiTokenizer:
    """Per-task detection (the task's entities and custom patterns) over one shared vault."""

    def __init__(
        self,
        vault: Vault,
        ttl_seconds: int,
        on_detect: Callable[[str, int], None] = lambda _entity, _count: None,
        extra_detector: Callable[[TaskContext], Detector | None] = lambda _ctx: None,
    ) -> None:
        self.vault = vault
        self._ttl = ttl_seconds
        self._on_detect = on_detect
        self._extra = extra_detector
        self._detectors: dict[str, list[Detector]] = {}

    def _detectors_for(self, ctx: TaskContext) -> list[Detector]:
        detectors = self._detectors.get(ctx.scope)
        if detectors is None:
            pii = ctx.task.spec.pii
            detectors = [PatternDetector(pii.entities, pii.custom_patterns)]
            extra = self._extra(ctx)
            if extra is not None:
                detectors.append(extra)
            self._detectors[ctx.scope] = detectors
        return detectors

    def forget(self, scope: str) -> None:
        self._detectors.pop(scope, None)

    @staticmethod
    def _find(detectors: list[Detector], texts: Iterable[str]) -> dict[str, list[Detection]]:
        """The detections in each text that has any."""
        found = {}
        for text in texts:
            if not text:
                continue
            if len(detectors) == 1:
                detections = detectors[0].detect(text)
            else:
                detections = resolve_overlaps(d for detector in detectors for d in detector.detect(text))
            if detections:
                found[text] = detections
        return found

    async def tokenize(self, ctx: TaskContext, value: Any) -> Any:
        """`value` with every detected entity replaced by its task token; raises VaultUnavailable, never leaks."""
        if not ctx.task.spec.pii.enabled:
            return value
        texts: list[str] = []
        _strings(value, texts)
        occurrences = Counter(texts)
        detectors = self._detectors_for(ctx)
        if len(detectors) == 1 and sum(map(len, occurrences)) <= ON_LOOP_MAX_CHARS:
            found = self._find(detectors, occurrences)
        else:  # a large value, or an NER detector (milliseconds per string): not on the event loop
            found = await asyncio.to_thread(self._find, detectors, occurrences)
        pairs = {(d.entity, text[d.start : d.end]): None for text, detections in found.items() for d in detections}
        if not pairs:
            return value
        tokens = dict(zip(pairs, await self.vault.tokens_for(ctx.scope, list(pairs), self._ttl), strict=True))
        counts: dict[str, int] = {}
        for text, detections in found.items():
            for d in detections:
                counts[d.entity] = counts.get(d.entity, 0) + occurrences[text]
        for entity, count in counts.items():
            self._on_detect(entity, count)

        def replace(text: str) -> str:
            detections = found.get(text)
            if not detections:
                return text
            parts, last = [], 0
            for d in detections:
                parts += [text[last : d.start], tokens[(d.entity, text[d.start : d.end])]]
                last = d.end
            return "".join(parts) + text[last:]

        return _rebuild(value, replace)

    async def detokenize(self, ctx: TaskContext, value: Any) -> Any:
        """`value` with this task's tokens replaced by the real values; other tokens stay as they are."""
        texts: list[str] = []
        _strings(value, texts)
        wanted = list(dict.fromkeys(t for text in texts for t in TOKEN.findall(text)))
        if not wanted:
            return value
        known = {t: v for t, v in zip(wanted, await self.vault.values_for(ctx.scope, wanted), strict=True) if v}
        if not known:
            return value
        return _rebuild(value, lambda text: TOKEN.sub(lambda m: known.get(m.group(), m.group()), text))
