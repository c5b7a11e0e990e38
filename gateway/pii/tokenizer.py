"""Tokenize and de-tokenize whole JSON values (tool results, arguments, chat messages) through the vault.

Two vault round trips per value: read what the task's vault minted since the last look (its known values), then
collect every string, detect, mint all tokens at once, rebuild; one for a value to de-tokenize that holds tokens.
Each of those checks the caller's mark against the task's vault (vault_marks.py) in the same script: a vault its store
lost refuses (VaultLost) and the task's session is ended. A token-shaped string of one of the task's entities that its
vault never minted is refused (UnknownToken), not sent on as text. Detectors rank: the task's known values first (no
value the vault holds for a task leaves toward it, whatever surrounds it), then the built-in entities, names and
places, and custom patterns last (they only add). Base64 payloads (image/audio `data`, resource `blob`) are left
alone when their media type is binary; when it is text (a CSV, a JSON file), their decoded text is tokenized like
any other string and encoded again, and one that is not base64 of UTF-8 is refused rather than passed on unread.
"""

from __future__ import annotations

import asyncio
import base64
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

from gateway.context import TaskContext
from gateway.errors import UnknownToken, UnreadableTextPayload, VaultLost
from gateway.pii import vault_marks
from gateway.pii.detectors import Detection, Detector, resolve_overlaps
from gateway.pii.known_values import GUARD, TOKEN, KnownValues
from gateway.pii.protection import Protection
from gateway.pii.scanner import Offload, cheap, detect_all, in_thread
from gateway.pii.vault import Vault
from gateway.pii.vault_marks import VaultView
from mcpexec import tracing
from mcpexec.api.pii import PiiEntity

# Media types whose payload is text however it is carried: text/*, these, and the +json/+xml/+yaml families.
_TEXT_TYPES = frozenset(
    {
        "application/json", "application/x-ndjson", "application/jsonl", "application/xml", "application/yaml",
        "application/x-yaml", "application/toml", "application/csv", "application/sql", "application/graphql",
        "application/javascript", "application/x-sh", "application/x-www-form-urlencoded", "message/rfc822",
    }
)  # fmt: skip
_TEXT_SUFFIXES = ("+json", "+xml", "+yaml")


def _payload_key(node: dict[str, Any]) -> str | None:
    """The key of the node's base64 payload, if it has one (a string): image/audio `data`, a resource's `blob`."""
    key = "data" if node.get("type") in ("image", "audio") else "blob" if "uri" in node else None
    return key if key is not None and isinstance(node.get(key), str) else None


def _payload_text(node: dict[str, Any], payload: str) -> str | None:
    """The text a payload carries when its media type is text (parameters such as charset aside: UTF-8 only), None
    when it is binary; raises UnreadableTextPayload for a text payload that is not base64 of UTF-8."""
    media_type = node.get("mimeType")
    if not isinstance(media_type, str):
        return None
    essence = media_type.partition(";")[0].strip().lower()
    if not (essence.startswith("text/") or essence in _TEXT_TYPES or essence.endswith(_TEXT_SUFFIXES)):
        return None
    try:
        return base64.b64decode(payload, validate=True).decode("utf-8")
    except ValueError:  # binascii.Error, UnicodeDecodeError, non-ASCII characters
        raise UnreadableTextPayload(
            f"a payload of media type {essence!r} is not base64 of UTF-8 text: it cannot be checked for personal data"
        ) from None


def _rebuilt_payload(node: dict[str, Any], payload: str, replace: Callable[[str], str]) -> str:
    text = _payload_text(node, payload)
    if text is None:
        return payload
    replaced = replace(text)
    return payload if replaced == text else base64.b64encode(replaced.encode()).decode("ascii")


def _strings(value: Any, out: list[str]) -> None:
    if isinstance(value, str):
        out.append(value)
    elif isinstance(value, list):
        for item in value:
            _strings(item, out)
    elif isinstance(value, dict):
        payload = _payload_key(value)
        for key, item in value.items():
            out.append(key)
            if key != payload:
                _strings(item, out)
            elif (text := _payload_text(value, item)) is not None:
                out.append(text)


def _rebuild(value: Any, replace: Callable[[str], str]) -> Any:
    if isinstance(value, str):
        return replace(value)
    if isinstance(value, list):
        return [_rebuild(item, replace) for item in value]
    if isinstance(value, dict):
        payload = _payload_key(value)
        return {
            replace(k): _rebuilt_payload(value, v, replace) if k == payload else _rebuild(v, replace)
            for k, v in value.items()
        }
    return value


class PiiTokenizer:
    """Per-task detection (the protection the task's three levels set, see protection.py) over one shared vault.

    `ner` builds the names-and-places detector for the NER entities a protection holds (None when it holds none; it
    raises PiiDetectorUnavailable when the gateway cannot detect them). `offload` runs the pattern detectors on
    values that are not cheap by construction (scanner.py): the gateway gives its worker processes. `on_vault_lost`
    is told of a task whose vault was lost (with the reason), before VaultLost goes on up."""

    def __init__(
        self,
        vault: Vault,
        ttl_seconds: int,
        protection: Callable[[TaskContext], Protection],
        on_detect: Callable[[str, int], None] = lambda _entity, _count: None,
        ner: Callable[[frozenset[PiiEntity]], Detector | None] = lambda _entities: None,
        offload: Offload = in_thread,
        on_vault_lost: Callable[[TaskContext, str], Awaitable[None]] | None = None,
    ) -> None:
        self.vault = vault
        self._ttl = ttl_seconds
        self._protection = protection
        self._on_detect = on_detect
        self._ner = ner
        self._offload = offload
        self._on_vault_lost = on_vault_lost
        self._known: dict[str, KnownValues] = {}

    async def _known_values(self, scope: str, view: VaultView | None) -> KnownValues:
        """The scope's known values, brought up to date with what any replica minted since the last look."""
        known = self._known.setdefault(scope, KnownValues())
        start = known.count
        begun, entries = await self.vault.entries(scope, start, view)
        if begun < start:
            known.restart()
        known.add(begun, entries)
        return known

    def forget(self, scope: str) -> None:
        self._known.pop(scope, None)

    async def _find(self, ctx: TaskContext, texts: list[str], view: VaultView | None) -> dict[str, list[Detection]]:
        """The detections in each text that has any, ranked: the task's known values, the built-in entities, names
        and places, custom patterns."""
        protection = self._protection(ctx)
        ner = self._ner(protection.entities)
        known = await self._known_values(ctx.scope, view)
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
        raises VaultLost, VaultUnavailable or PiiDetectorUnavailable, never leaks."""
        return await self._told_of_loss(ctx, self._tokenize(ctx, value, vault_marks.current()))

    async def detokenize(self, ctx: TaskContext, value: Any) -> Any:
        """`value` with this task's tokens replaced by the real values; raises UnknownToken for a token-shaped string
        of one of the task's entities that its vault never minted (others, `[STEP_1]`, are text), VaultLost."""
        return await self._told_of_loss(ctx, self._detokenize(ctx, value, vault_marks.current()))

    async def _told_of_loss(self, ctx: TaskContext, work: Awaitable[Any]) -> Any:
        """`work`'s result; a VaultLost it raises is told to `on_vault_lost` first."""
        try:
            return await work
        except VaultLost as exc:
            if self._on_vault_lost is not None:
                await self._on_vault_lost(ctx, f"vault_lost: {exc.message}")
            raise

    async def _tokenize(self, ctx: TaskContext, value: Any, view: VaultView | None) -> Any:
        texts: list[str] = []
        _strings(value, texts)
        occurrences = Counter(text for text in texts if text)
        if not occurrences:
            return value
        with tracing.span("gateway.pii_scan", {"mcpexec.pii.strings": len(occurrences)}) as scan:
            found = await self._find(ctx, list(occurrences), view)
            counts: dict[str, int] = {}
            for text, detections in found.items():
                for d in detections:
                    counts[d.entity] = counts.get(d.entity, 0) + occurrences[text]
            # Counts by entity, never a value.
            scan.set_attributes({f"mcpexec.pii.found.{entity}": count for entity, count in counts.items()})
        pairs = {(d.entity, text[d.start : d.end]): None for text, detections in found.items() for d in detections}
        if not pairs:
            return value
        with tracing.span(
            "gateway.vault", {"mcpexec.vault.operation": "tokens_for", "mcpexec.vault.values": len(pairs)}
        ):
            minted = await self.vault.tokens_for(ctx.scope, list(pairs), self._ttl, view)
        tokens = dict(zip(pairs, minted, strict=True))
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

    async def _detokenize(self, ctx: TaskContext, value: Any, view: VaultView | None) -> Any:
        texts: list[str] = []
        _strings(value, texts)
        wanted = {m.group(): m.group(1) for text in texts for m in TOKEN.finditer(text)}
        if not wanted:
            return value
        with tracing.span(
            "gateway.vault", {"mcpexec.vault.operation": "values_for", "mcpexec.vault.tokens": len(wanted)}
        ):
            values = await self.vault.values_for(ctx.scope, list(wanted), view)
        known = {token: real for token, real in zip(wanted, values, strict=True) if real is not None}
        protection = self._protection(ctx)
        nameable = {*protection.entities, *(pattern.name for pattern in protection.patterns)}
        unknown = [token for token, entity in wanted.items() if token not in known and entity in nameable]
        if unknown:
            shown = ", ".join(unknown[:5]) + (f" and {len(unknown) - 5} more" if len(unknown) > 5 else "")
            raise UnknownToken(f"{shown}: not among the tokens this task was given; nothing was sent")
        if not known:
            return value
        return _rebuild(value, lambda text: TOKEN.sub(lambda m: known.get(m.group(), m.group()), text))
