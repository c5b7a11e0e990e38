"""Finding PII in text: the built-in entities (one linear-time candidate scan, then checksums, card issuer ranges and
phone number metadata, in a Rust extension: native/pii-scan) and the task's custom patterns, matched by RE2.

Overlaps resolve by entity priority, then length: an IBAN's digits are never also reported as a phone number, and a
custom pattern never takes a span from a built-in entity (it only adds detections).
"""

from __future__ import annotations

import bisect
import string
import unicodedata
from collections.abc import Iterable, Sequence
from functools import cache
from itertools import product
from typing import NamedTuple, Protocol

import phonenumbers
from mcpexec_pii_scan import Metadata, Scanner
from stdnum import numdb

from mcpexec.api.pii import DEFAULT_PHONE_REGIONS, CustomPattern, PiiEntity, compile_linear

__all__ = [
    "DEFAULT_PHONE_REGIONS",
    "CustomPatternDetector",
    "Detection",
    "Detector",
    "PatternDetector",
    "resolve_overlaps",
    "scanner_metadata",
]


class Detection(NamedTuple):
    """text[start:end] holds `entity`. A tuple: a megabyte of text holds ten thousand of them."""

    start: int
    end: int
    entity: str


class Detector(Protocol):
    """Anything that finds entity spans in a text (the built-in detector, Presidio)."""

    def detect(self, text: str) -> list[Detection]: ...


def resolve_overlaps(ranked: Iterable[Detection]) -> list[Detection]:
    """Keep detections (non-empty spans) in the order given (best first) unless they overlap an earlier one; sorted
    by start. The kept ones are disjoint, so only the two around a candidate's start can overlap it: a whole-file
    result with thousands of entities no longer costs a comparison with every kept one (200 KB took 1.1 s)."""
    kept: list[Detection] = []
    starts: list[int] = []
    for candidate in ranked:
        at = bisect.bisect_left(starts, candidate.start)
        if (at > 0 and kept[at - 1].end > candidate.start) or (at < len(kept) and kept[at].start < candidate.end):
            continue
        kept.insert(at, candidate)
        starts.insert(at, candidate.start)
    return kept


class CustomPatternDetector:
    """A task's or server's own patterns (RE2: linear in the text, whatever the pattern). Ranked after every
    built-in detector by the tokenizer, so a pattern like `@` adds spans but never suppresses an email."""

    def __init__(self, custom: Sequence[CustomPattern]) -> None:
        self._custom = [(c.name, compile_linear(c.regex)) for c in custom]

    def detect(self, text: str) -> list[Detection]:
        found = []
        for name, pattern in self._custom:
            found += [Detection(m.start(), m.end(), name) for m in pattern.finditer(text) if m.end() > m.start()]
        return resolve_overlaps(found)


# When candidates overlap (an email's local part read back over digits that were also a phone number): checked
# entities first, then the longer span.
_RANKED = (
    PiiEntity.EMAIL,
    PiiEntity.IBAN,
    PiiEntity.CREDIT_CARD,
    PiiEntity.US_SSN,
    PiiEntity.IP_ADDRESS,
    PiiEntity.PHONE,
)
_RANK = {entity.value: rank for rank, entity in enumerate(_RANKED)}


@cache
def scanner_metadata() -> Metadata:
    """What the built-in detector checks against, read once per process from its sources: phonenumbers' metadata of
    every region and country calling code (about 0.2 s), python-stdnum's IBAN registry, and the Unicode version of
    Python's `re` (which characters are digits and letters)."""
    ibans = numdb.get("iban")
    bban_formats = {
        country: bban
        for a, b in product(string.ascii_uppercase, repeat=2)
        if (bban := ibans.info((country := a + b) + "00")[0][1].get("bban"))
    }
    return Metadata(
        {region: phonenumbers.PhoneMetadata.metadata_for_region(region) for region in phonenumbers.SUPPORTED_REGIONS},
        {
            code: phonenumbers.PhoneMetadata.metadata_for_nongeo_region(code)
            for code in phonenumbers.COUNTRY_CODES_FOR_NON_GEO_REGIONS
        },
        phonenumbers.COUNTRY_CODE_TO_REGION_CODE,
        bban_formats,
        unicodedata.unidata_version,
    )


class PatternDetector:
    """The built-in detector for an entity list. Phone numbers written with their country code are found for every
    country; national ones (`030 1234567`) for `phone_regions` (ISO 3166 codes, phonenumbers' region metadata)."""

    def __init__(self, entities: Sequence[PiiEntity], phone_regions: Sequence[str] = DEFAULT_PHONE_REGIONS) -> None:
        self._wanted = frozenset(e.value for e in entities if e.value in _RANK)
        self._scanner = Scanner(scanner_metadata(), phone_regions, self._wanted)

    def detect(self, text: str) -> list[Detection]:
        if not self._wanted:
            return []
        found, overlapping = self._scanner.find(text)  # sorted by start, end, entity
        if not overlapping:  # nearly always: candidates rarely overlap
            return list(map(Detection._make, found))
        found.sort(key=lambda f: (_RANK[f[2]], f[0] - f[1]))
        return resolve_overlaps(map(Detection._make, found))
