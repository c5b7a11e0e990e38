"""Tokenize and de-tokenize whole JSON values (tool results, arguments, chat messages) through the vault.

Two vault round trips per value: read what the task's vault minted since the last look (its known values), then
collect every string, detect, mint all tokens at once, rebuild. Detectors rank: the task's known values first (no
value the vault holds for a task leaves toward it, whatever surrounds it), then the built-in entities, names and
places, and custom patterns last (they only add). Binary payloads (image/audio `data`, resource `blob`) are left
alone: they are base64, not text.
"""

from __future__ import annotations

import asyncio
from collections import Counter, OrderedDict
from collections.abc import Callable, Iterable
from typing import Any

from gateway.context import TaskContext
from gateway.pii.detectors import CustomPatternDetector, Detection, Detector, PatternDetector, resolve_overlaps
from gateway.pii.known_values import GUARD, TOKEN, KnownValues
from gateway.pii.protection import Protection
from gateway.pii.vault import Vault
from mcpexec.api.pii import PiiEntity

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


# Detectors are built per distinct protection and shared by the tasks that have it; the least recently used go.
DETECTOR_SETS = 256


class PiiTokenizer:
    """Per-task detection (the protection the task's three levels set, see protection.py) over one shared vault.

    `ner` builds the names-and-places detector for the NER entities a protection holds (None when it holds none; it
    raises PiiDetectorUnavailable when the gateway cannot detect them)."""

    def __init__(
        self,
        vault: Vault,
        ttl_seconds: int,
        protection: Callable[[TaskContext], Protection],
        on_detect: Callable[[str, int], None] = lambda _entity, _count: None,
        ner: Callable[[frozenset[PiiEntity]], Detector | None] = lambda _entities: None,
    ) -> None:
        self.vault = vault
        self._ttl = ttl_seconds
        self._protection = protection
        self._on_detect = on_detect
        self._ner = ner
        self._detectors: OrderedDict[Protection, tuple[list[Detector], bool]] = OrderedDict()
        self._known: dict[str, KnownValues] = {}

    def _detectors_for(self, protection: Protection) -> tuple[list[Detector], bool]:
        """The detectors, best first, and whether they are all fast enough for the event loop."""
        cached = self._detectors.get(protection)
        if cached is None:
            detectors: list[Detector] = [PatternDetector(sorted(protection.entities))]
            ner = self._ner(protection.entities)
            if ner is not None:
                detectors.append(ner)
            if protection.patterns:
                detectors.append(CustomPatternDetector(protection.patterns))
            cached = (detectors, ner is None)
            if len(self._detectors) >= DETECTOR_SETS:
                self._detectors.popitem(last=False)
        self._detectors[protection] = cached
        self._detectors.move_to_end(protection)
        return cached

    async def _known_values(self, scope: str) -> KnownValues:
        """The scope's known values, brought up to date with what any replica minted since the last look."""
        known = self._known.setdefault(scope, KnownValues())
        start = known.count
        known.add(start, await self.vault.entries(scope, start))
        return known

    def forget(self, scope: str) -> None:
        self._known.pop(scope, None)

    @staticmethod
    def _find(known: KnownValues, detectors: list[Detector], texts: Iterable[str]) -> dict[str, list[Detection]]:
        """The detections in each text that has any."""
        found = {}
        for text in texts:
            if not text:
                continue
            ranked = [*known.find(text), *(d for detector in detectors for d in detector.detect(text))]
            detections = [d for d in resolve_overlaps(ranked) if d.entity != GUARD]
            if detections:
                found[text] = detections
        return found

    async def tokenize(self, ctx: TaskContext, value: Any) -> Any:
        """`value` with every detected entity and every value of the task's vault replaced by its task token;
        raises VaultUnavailable or PiiDetectorUnavailable, never leaks."""
        texts: list[str] = []
        _strings(value, texts)
        if not texts:
            return value
        occurrences = Counter(texts)
        detectors, fast = self._detectors_for(self._protection(ctx))
        known = await self._known_values(ctx.scope)
        if fast and sum(map(len, occurrences)) <= ON_LOOP_MAX_CHARS:
            found = self._find(known, detectors, occurrences)
        else:  # a large value, or an NER detector (milliseconds per string): not on the event loop
            found = await asyncio.to_thread(self._find, known, detectors, occurrences)
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
        wanted = list(dict.fromkeys(m.group() for text in texts for m in TOKEN.finditer(text)))
        if not wanted:
            return value
        known = {t: v for t, v in zip(wanted, await self.vault.values_for(ctx.scope, wanted), strict=True) if v}
        if not known:
            return value
        return _rebuild(value, lambda text: TOKEN.sub(lambda m: known.get(m.group(), m.group()), text))
