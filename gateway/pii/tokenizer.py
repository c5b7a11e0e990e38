"""Tokenize and de-tokenize whole JSON values (tool results, arguments, chat messages) through the vault.

Two vault round trips per value: read what the task's vault minted since the last look (its known values), then
collect every string, detect, mint all tokens at once, rebuild. Detectors rank: the task's known values first (no
value the vault holds for a task leaves toward it, whatever surrounds it), then the built-in entities, names and
places, and custom patterns last (they only add). Binary payloads (image/audio `data`, resource `blob`) are left
alone: they are base64, not text.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from collections.abc import Callable
from typing import Any

from gateway.context import TaskContext
from gateway.pii.detectors import Detection, Detector, resolve_overlaps
from gateway.pii.known_values import GUARD, TOKEN, KnownValues
from gateway.pii.protection import Protection
from gateway.pii.scanner import Offload, cheap, detect_all, in_thread
from gateway.pii.vault import Vault
from mcpexec.api.pii import PiiEntity


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
    """Per-task detection (the protection the task's three levels set, see protection.py) over one shared vault.

    `ner` builds the names-and-places detector for the NER entities a protection holds (None when it holds none; it
    raises PiiDetectorUnavailable when the gateway cannot detect them). `offload` runs the pattern detectors on
    values that are not cheap by construction (scanner.py): the gateway gives its worker processes."""

    def __init__(
        self,
        vault: Vault,
        ttl_seconds: int,
        protection: Callable[[TaskContext], Protection],
        on_detect: Callable[[str, int], None] = lambda _entity, _count: None,
        ner: Callable[[frozenset[PiiEntity]], Detector | None] = lambda _entities: None,
        offload: Offload = in_thread,
    ) -> None:
        self.vault = vault
        self._ttl = ttl_seconds
        self._protection = protection
        self._on_detect = on_detect
        self._ner = ner
        self._offload = offload
        self._known: dict[str, KnownValues] = {}

    async def _known_values(self, scope: str) -> KnownValues:
        """The scope's known values, brought up to date with what any replica minted since the last look."""
        known = self._known.setdefault(scope, KnownValues())
        start = known.count
        known.add(start, await self.vault.entries(scope, start))
        return known

    def forget(self, scope: str) -> None:
        self._known.pop(scope, None)

    async def _find(self, ctx: TaskContext, texts: list[str]) -> dict[str, list[Detection]]:
        """The detections in each text that has any, ranked: the task's known values, the built-in entities, names
        and places, custom patterns."""
        protection = self._protection(ctx)
        ner = self._ner(protection.entities)
        known = await self._known_values(ctx.scope)
        if cheap(texts):
            patterns = detect_all(protection, texts)
        else:
            patterns = await self._offload(ctx.scope, protection, texts)
        names: list[list[Detection]] = [[] for _ in texts]
        if ner is not None:  # milliseconds per string: a thread (spaCy releases the GIL in its inner loops)
            names = await asyncio.to_thread(lambda: [ner.detect(text) for text in texts])
        found = {}
        for text, (builtin, custom), named in zip(texts, patterns, names, strict=True):
            ranked = [*known.find(text), *builtin, *named, *custom]
            detections = [d for d in resolve_overlaps(ranked) if d.entity != GUARD]
            if detections:
                found[text] = detections
        return found

    async def tokenize(self, ctx: TaskContext, value: Any) -> Any:
        """`value` with every detected entity and every value of the task's vault replaced by its task token;
        raises VaultUnavailable or PiiDetectorUnavailable, never leaks."""
        texts: list[str] = []
        _strings(value, texts)
        occurrences = Counter(text for text in texts if text)
        if not occurrences:
            return value
        found = await self._find(ctx, list(occurrences))
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
