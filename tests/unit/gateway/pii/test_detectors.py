"""PII pattern detection: each entity type and its look-alikes, the phone matcher's windows, ranked overlaps."""

from __future__ import annotations

import random

import phonenumbers
import pytest
from phonenumbers import PhoneMetadata
from pydantic import ValidationError

from gateway.pii.detectors import (
    MIN_PHONE_DIGITS,
    CustomPatternDetector,
    Detection,
    Detector,
    PatternDetector,
    resolve_overlaps,
)
from mcpexec.api.pii import BUILTIN_ENTITIES, CustomPattern, PiiEntity

DETECTOR = PatternDetector(BUILTIN_ENTITIES)


def _found(text: str, detector: Detector = DETECTOR) -> list[tuple[str, str]]:
    return [(d.entity, text[d.start : d.end]) for d in detector.detect(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("mail jane.doe+x@mail.example.co.uk now", [("EMAIL", "jane.doe+x@mail.example.co.uk")]),
        ("call +1 202-555-0143 today", [("PHONE", "+1 202-555-0143")]),
        ("or (415) 555-0199", [("PHONE", "(415) 555-0199")]),
        ("card 4111 1111 1111 1111 ok", [("CREDIT_CARD", "4111 1111 1111 1111")]),
        ("card 4111-1111-1111-1111", [("CREDIT_CARD", "4111-1111-1111-1111")]),
        ("ssn 536-90-4399.", [("US_SSN", "536-90-4399")]),
        ("iban DE89370400440532013000", [("IBAN", "DE89370400440532013000")]),
        ("iban GB82 WEST 1234 5698 7654 32 end", [("IBAN", "GB82 WEST 1234 5698 7654 32")]),
        ("from 203.0.113.17:443", [("IP_ADDRESS", "203.0.113.17")]),
        ("v6 2001:db8::42 here", [("IP_ADDRESS", "2001:db8::42")]),
        ("v6 2001:db8:0:0:0:0:2:1 in full", [("IP_ADDRESS", "2001:db8:0:0:0:0:2:1")]),
        ("loopback ::1", [("IP_ADDRESS", "::1")]),
        ("Vienna desk +43 1110 today", [("PHONE", "+43 1110")]),  # 6 digits: the shortest valid number
    ],
)
def test_each_entity_type_is_detected(text: str, expected: list[tuple[str, str]]) -> None:
    assert _found(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "card 4111 1111 1111 1112 fails Luhn",
        "iban DE89370400440532013001 fails its checksum",
        "ssn 000-12-3456 and 666-12-3456 are never issued",
        "version 1.2.3.4.5 and 999.1.1.1 are not addresses",
        "at 12:30:45 on 2024-01-02, order 12345, id C001",
        '[{"created": "2026-11-23 08:27:00"}, {"created": "2026-11-23 08:28:00"}, {"t": "1:2:3:4:5:6:7"}]',
        "not an email: user@localhost",
    ],
)
def test_look_alikes_are_not_detected(text: str) -> None:
    assert _found(text) == []


NUMBER_KINDS = (
    "fixed_line", "mobile", "toll_free", "premium_rate", "shared_cost", "personal_number", "voip", "pager", "uan",
    "voicemail",
)  # fmt: skip


def test_no_valid_phone_number_is_shorter_than_the_detectors_digit_gate() -> None:
    """The detector runs the phone matcher only around runs of at least MIN_PHONE_DIGITS digits: no number that
    phonenumbers' metadata allows (country code + shortest national number of any type) is that short."""
    shortest = min(
        len(str(metadata.country_code)) + length
        for region in phonenumbers.SUPPORTED_REGIONS
        if (metadata := PhoneMetadata.metadata_for_region(region)) is not None
        for desc in (getattr(metadata, kind) for kind in NUMBER_KINDS)
        if desc is not None
        for length in desc.possible_length
        if length > 0
    )
    assert shortest >= MIN_PHONE_DIGITS


FULL_WIDTH_JAPAN = "+81 3-1234-5678".translate({ord(d): 0xFF10 + int(d) for d in "0123456789"})


PHONE_SHAPES = [
    "+1 (650) 253-0000 ext. 1234", "(202) 555-0143", "202.555.0143", "+1 202 555 0143 x 12", "+44 20 7031 3000",
    "020 7031 3000", "+43 1110", "tel:+49-30-1234567;ext=89", "+33 1 23 45 67 89", FULL_WIDTH_JAPAN,
    "[+1] 415 555 2671", "+1\u00a0617\u00a0555\u00a00199", "1-800-FLOWERS", "415-555-2671#99", "+61 2 9374 4000",
    "2024-05-06 12:30:05", "pages 211-227 (2003)", "order 4155552671", "v1.2.3", "12/05/2024", "+1 202 555 01",
    "011 43 1110", "011 44 20 7031 3000", "555-0143", "2026-11-23T06:01:02Z", "1 800 555 0199", "+1 800 555 0199",
    "(+44) 20 7031 3000", "+ 43 1110", "00 43 1110", "\uff0b43 1110", '"2026-11-23T08:27:00+01:00"',
    "2026-11-23 08:27:00+01:00", "202:555:0143", "+1:202:555:0143", "202,555,0143", "202\t555\t0143", "+1_202_555_0143",
    "1-202-555-0143,", "202~555~0143", "\u2010202\u2015555\uff0f0143", "2026/11/23  08:27", "(2026-11-23 08:59",
    "+1 2026-11-23 08:27:00", "20261123 08:27", "2026-11-23 08:60", "2026-11-23 08", "5 2026-11-23 08:27",
]  # fmt: skip


FILLER = ["call", "line", "12:", "the", "no.", "(", ")", "-", "+", "x", "ext", "at", "7", "42", "\n", "\t", "é"]


def test_the_phone_windows_find_exactly_what_the_matcher_finds_in_the_whole_text() -> None:
    """The detector hands phonenumbers' matcher only windows around runs of digits (it was 6 ms for 4 KB of text
    with many small numbers otherwise): on 40,000 random mixes of number shapes and filler it finds exactly the
    spans the matcher finds reading the whole text."""
    rng = random.Random(11)
    phones_only = PatternDetector([PiiEntity.PHONE])
    texts = [
        " ".join(
            rng.choice(PHONE_SHAPES) if rng.random() < 0.3 else rng.choice(FILLER) for _ in range(rng.randint(1, 12))
        )
        for _ in range(40_000)
    ]
    found = 0
    for text in texts:
        whole = [(m.start, m.end) for m in phonenumbers.PhoneNumberMatcher(text, "US", phonenumbers.Leniency.VALID)]
        assert [(d.start, d.end) for d in phones_only.detect(text)] == whole, text
        found += len(whole)
    assert found > 10_000


OTHER_SHAPES = [
    "4111 1111 1111 1111", "4111-1111-1111-1111", "4111111111111111", "3782 822463 10005", "536-90-4399",
    "DE89370400440532013000", "GB82 WEST 1234 5698 7654 32", "203.0.113.17", "10.0.0.1:8080", "2001:db8::42",
    "ana7@example.com", "202.555.0143@mail.org", "4155552671@example.com", "C-2026-000417", "total $7772.84",
]  # fmt: skip


def test_numbers_claimed_by_other_entities_change_no_phone_result() -> None:
    """Phone numbers rank last among the built-ins, so the detector skips the digit runs that lie in a card, IBAN,
    SSN, IP address or email (they cost the matcher 0.1-0.2 ms each): on 20,000 random mixes of those next to phone
    shapes and filler it finds exactly what ranking the matcher's finds over the whole text below them gives."""
    rng = random.Random(12)
    detector = PatternDetector(BUILTIN_ENTITIES)
    no_phones = PatternDetector([e for e in BUILTIN_ENTITIES if e != PiiEntity.PHONE])
    shapes = PHONE_SHAPES + OTHER_SHAPES
    separators = [" ", ", ", "-", "", " / ", ". "]
    texts = [
        "".join(
            (rng.choice(shapes) if rng.random() < 0.5 else rng.choice(FILLER)) + rng.choice(separators)
            for _ in range(rng.randint(1, 10))
        )
        for _ in range(20_000)
    ]
    phones = skipped = 0
    for text in texts:
        matched = phonenumbers.PhoneNumberMatcher(text, "US", phonenumbers.Leniency.VALID)
        whole = [Detection(m.start, m.end, "PHONE") for m in matched]
        expected = resolve_overlaps([*no_phones.detect(text), *whole])
        assert detector.detect(text) == expected, text
        phones += sum(d.entity == "PHONE" for d in expected)
        skipped += len(whole) - sum(d.entity == "PHONE" for d in expected)
    assert phones > 3_000
    assert skipped > 1_000  # the matcher's numbers that a ranked entity overrides: the case the skipping is for


def test_overlaps_resolve_by_rank_as_defined() -> None:
    """resolve_overlaps only compares a candidate with its neighbours among the kept spans: on 5,000 random ranked
    lists it keeps exactly what comparing each candidate with every kept one keeps."""
    rng = random.Random(13)
    for _ in range(5_000):
        ranked = []
        for _ in range(rng.randint(0, 30)):
            start = rng.randint(0, 60)
            ranked.append(Detection(start, start + rng.randint(1, 12), rng.choice(["EMAIL", "PHONE", "IBAN"])))
        kept: list[Detection] = []
        for candidate in ranked:
            if all(candidate.end <= k.start or candidate.start >= k.end for k in kept):
                kept.append(candidate)
        assert resolve_overlaps(ranked) == sorted(kept), ranked


def test_only_the_entities_asked_for() -> None:
    text = "C001 alice@example.com +1 202-555-0143 536-90-4399"
    assert _found(text, PatternDetector([PiiEntity.EMAIL])) == [("EMAIL", "alice@example.com")]


def test_custom_patterns_match_in_linear_time_and_refuse_backtracking() -> None:
    """Custom patterns are RE2: the classic catastrophic pattern `(a+)+b` over 100,000 `a`s is one linear pass (it
    froze Python's re for longer than any test runs), and what only a backtracking engine can match is refused."""
    detector = CustomPatternDetector(
        [CustomPattern(name="CUSTOMER_ID", regex=r"\bC\d{3}\b"), CustomPattern(name="RUN", regex="(a+)+b")]
    )
    assert _found("C001 and C0012", detector) == [("CUSTOMER_ID", "C001")]
    assert _found("a" * 100_000 + "c", detector) == []
    assert _found("x" + "a" * 50 + "b", detector) == [("RUN", "a" * 50 + "b")]
    for regex in (r"(a)\1", r"(?<=x)y", r"(?=x)", r"(?!x)y", r"a{1001}"):
        with pytest.raises(ValidationError, match="refused"):
            CustomPattern(name="BAD", regex=regex)
