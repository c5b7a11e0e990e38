"""PII pattern detection: each entity type, a case for each cause of a miss or a false hit (issue 18), the phone
regions, ranked overlaps and custom patterns."""

from __future__ import annotations

import random

import pytest
from pydantic import ValidationError

from gateway.pii.detectors import (
    DEFAULT_PHONE_REGIONS,
    CustomPatternDetector,
    Detection,
    Detector,
    PatternDetector,
    resolve_overlaps,
)
from mcpexec.api.pii import BUILTIN_ENTITIES, CustomPattern, PiiEntity

DETECTOR = PatternDetector(BUILTIN_ENTITIES)
# Full-width digits, plus and hyphen, as Japanese and Chinese input methods type them.
_FULL_WIDTH = str.maketrans({**{d: chr(0xFF10 + int(d)) for d in "0123456789"}, "+": "\uff0b", "-": "\uff0d"})
BERLIN, TOKYO = "030 1234567".translate(_FULL_WIDTH), "+81 3-1234-5678".translate(_FULL_WIDTH)


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
        ("amex 3782 822463 10005", [("CREDIT_CARD", "3782 822463 10005")]),
        ("ssn 536-90-4399.", [("US_SSN", "536-90-4399")]),
        ("iban DE89370400440532013000", [("IBAN", "DE89370400440532013000")]),
        ("iban GB82 WEST 1234 5698 7654 32 end", [("IBAN", "GB82 WEST 1234 5698 7654 32")]),
        ("from 203.0.113.17:443", [("IP_ADDRESS", "203.0.113.17")]),
        ("v6 2001:db8::42 here", [("IP_ADDRESS", "2001:db8::42")]),
        ("v6 2001:db8:0:0:0:0:2:1 in full", [("IP_ADDRESS", "2001:db8:0:0:0:0:2:1")]),
        ("link-local fe80::1%eth0", [("IP_ADDRESS", "fe80::1")]),
        ("Vienna desk +43 1110 today", [("PHONE", "+43 1110")]),  # 6 digits: the shortest valid number
        ("+1 (650) 253-0000 ext. 1234", [("PHONE", "+1 (650) 253-0000 ext. 1234")]),
        ("tel:+49-30-1234567;ext=89", [("PHONE", "+49-30-1234567;ext=89")]),
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
        "not an email: user@localhost, @here, react@18.2.0",
        "loopback ::1 and a slice x[1::2], std::vector<int>, Foo::Bar, cafe::beef",  # no one's address
        "mask 255.255.255.0, wildcard 0.0.0.255, any 0.0.0.0, LDAP cn is OID 2.5.4.3",
        'AssemblyVersion("1.2.3.4") and IOS XE Software, Version 17.9.4.1',
        "mac 00:1a:2b:3c:4d:5e and 00-1A-2B-3C-4D-5E",
    ],
)
def test_look_alikes_are_not_detected(text: str) -> None:
    assert _found(text) == []


# One case per cause of issue 18: what was missed, split or taken for PII before.
CAUSES: dict[str, list[tuple[str, list[tuple[str, str]]]]] = {
    "national phones outside the US": [
        ("Berlin 030 1234567", [("PHONE", "030 1234567")]),
        ("portable 07 42 26 39 86", [("PHONE", "07 42 26 39 86")]),
        ("Manchester 0161 845 9014", [("PHONE", "0161 845 9014")]),
        ("東京 03-6908-4061", [("PHONE", "03-6908-4061")]),
        ("São Paulo (11) 97147-5065", [("PHONE", "(11) 97147-5065")]),
        ("Wien 0662 123456", [("PHONE", "0662 123456")]),
        ("trunk in brackets +49 (0)30 123456", [("PHONE", "+49 (0)30 123456")]),
        ("dialled 0049 30 123456", [("PHONE", "0049 30 123456")]),
        ("slash 030/1234567, dots 06.12.34.56.78", [("PHONE", "030/1234567"), ("PHONE", "06.12.34.56.78")]),
    ],
    "SSNs spaced or compact after their key or word": [
        ("ssn 437 68 8725", [("US_SSN", "437 68 8725")]),
        ('{"ssn": "613288261"}', [("US_SSN", "613288261")]),
        ("SSN is 530141367", [("US_SSN", "530141367")]),
        ("customerSSN=530141367", [("US_SSN", "530141367")]),
        ("member 613288261, badge 530141367", []),  # nine digits without the word: an id
    ],
    "URL- and form-encoded values": [
        ("user=ANA.PATEL%40ORANGE.FR&t=1", [("EMAIL", "ANA.PATEL%40ORANGE.FR")]),
        ("email=o%27brien%40sky.com&x", [("EMAIL", "o%27brien%40sky.com")]),
        ("tel=%2B1+713+396+7854&cc", [("PHONE", "%2B1+713+396+7854")]),
        ("cc-number=4266+7607+4871+3187&cc-exp", [("CREDIT_CARD", "4266+7607+4871+3187")]),
    ],
    "emails against CJK text": [
        ("メールアドレスはchloe.wang@gmail.comです", [("EMAIL", "chloe.wang@gmail.com")]),
        ("邮箱ana@qq.com\uff0c谢谢", [("EMAIL", "ana@qq.com")]),
    ],
    "IBANs of any country, case and spacing": [
        ("iban de89 3704 0044 0532 0130 00", [("IBAN", "de89 3704 0044 0532 0130 00")]),
        ("iban de89370400440532013000", [("IBAN", "de89370400440532013000")]),
        ("Norway NO9386011117947", [("IBAN", "NO9386011117947")]),
        ("Saudi SA03 8000 0000 6080 1016 7519 from", [("IBAN", "SA03 8000 0000 6080 1016 7519")]),
        ("振込先はDE89370400440532013000です", [("IBAN", "DE89370400440532013000")]),
    ],
    "addresses at a sentence's end": [
        ("blocked traffic from 10.0.0.1.", [("IP_ADDRESS", "10.0.0.1")]),
        ("and from 2001:db8::42.", [("IP_ADDRESS", "2001:db8::42")]),
    ],
    "full-width digits and no-break spaces": [
        (f"電話{BERLIN}", [("PHONE", BERLIN)]),
        (f"{TOKYO}です", [("PHONE", TOKYO)]),
        ("+1\u00a0617\u00a0555\u00a00199", [("PHONE", "+1\u00a0617\u00a0555\u00a00199")]),
        ("+33\u202f6\u202f12\u202f34\u202f56\u202f78", [("PHONE", "+33\u202f6\u202f12\u202f34\u202f56\u202f78")]),
    ],
    "escapes in raw JSON text": [
        ('"Contact:\\nana@x.com"', [("EMAIL", "ana@x.com")]),
        ('"\\tana@x.com \\"bob@y.org\\""', [("EMAIL", "ana@x.com"), ("EMAIL", "bob@y.org")]),
        ('"ana\\u0040x.com"', [("EMAIL", "ana\\u0040x.com")]),
        ('"\\u003cana@x.com\\u003e"', [("EMAIL", "ana@x.com")]),
        ('"Phone:\\t+46796229608\\t#647015"', [("PHONE", "+46796229608")]),
        ('"Lines:\\n0301 2345 6789 0123 and \\n10.0.0.1"', [("IP_ADDRESS", "10.0.0.1")]),
    ],
    "one value, one span": [
        ("o'connor@example.com", [("EMAIL", "o'connor@example.com")]),
        ("SQL ('o'brien@gmail.com', 1)", [("EMAIL", "o'brien@gmail.com")]),
        ("client ::ffff:10.0.0.1 - -", [("IP_ADDRESS", "::ffff:10.0.0.1")]),
        ("Phone:\t+1 202 555 0143\t#123456", [("PHONE", "+1 202 555 0143")]),
        ("Alt: +1 202 555 0143, #123456", [("PHONE", "+1 202 555 0143")]),
        ("the courier calls (030 1234567) first", [("PHONE", "030 1234567")]),
        ("or (+32 (0)473 67 45 46), sinon", [("PHONE", "+32 (0)473 67 45 46")]),
        ("timed out to 2a00:1450::9f55:5885:b460:ef46:8080", [("IP_ADDRESS", "2a00:1450::9f55:5885:b460:ef46")]),
    ],
    "identifiers and counters are not phones": [
        ("order ORD-2025-769159 and INV-2024-03-0471", []),
        ("refs 4155552671, 20251234567, 748912345678", []),
        ("FedEx 748912345678, UPS 1Z999AA10123456784, bytes=1048576000", []),
        ("account 012345678901 arn:aws:iam::123456789012:user/ana", []),
        ('"GET /cart HTTP/1.1" 200 1103427 "-"', []),
        ("isbn 978-3-16-148410-0, zip 94103-1234, build 120.0.6099.109", []),
        ("sent 2024-01-15 10:00:00, Mon, 15 Jan 2024 10:00:00 +0100, took 52.245003s", []),
        ("Betrag 937.937.105,10 €, am 01.12.2023 22.401,35 €, Chrome/166.0.83.927", []),
    ],
    "Luhn-valid runs that are no cards": [
        ("epoch 1735689600000 and lastLogon 133497819000000000", []),
        ("isbn 9780306406157 and imei 356938035643809", []),
        ("uuid 550e8400-e29b-41d4-a716-446655440000, sha 5f3a9b1c4e7d8a2b4111111111111111", []),
        ("bad iban DE12370400440532013000", []),
        ("usps 9400100000000000000000, 9400 1000 0000 0000 0000 00", []),
        ("+4915146734012", [("PHONE", "+4915146734012")]),  # the digits pass Luhn; the plus makes it a phone
    ],
    "values in URL paths": [
        (
            "demo://resource/blob/4111111111111111 and /users/+4915146734012/profile",
            [("CREDIT_CARD", "4111111111111111"), ("PHONE", "+4915146734012")],
        ),
        ("/reports/22/01/2020 and /v1/2025-769159/items, curl/15.19.101", []),
    ],
    "image assets are no emails": [
        ('<img src="/img/icon@2x.png"> logo@3x.webp avatar@1.5x.jpg', []),
    ],
}


@pytest.mark.parametrize(
    ("text", "expected"), [case for cases in CAUSES.values() for case in cases], ids=lambda v: str(v)[:40]
)
def test_each_cause_of_a_miss_or_a_false_hit(text: str, expected: list[tuple[str, str]]) -> None:
    assert _found(text) == expected


def test_national_numbers_are_read_for_the_regions_asked_for_international_ones_for_all() -> None:
    """`030 1234567` is a German number only where German national formats are asked for; `+49 30 1234567` and
    `+263 242 123456` (Zimbabwe, in no default) everywhere."""
    us_only = PatternDetector(BUILTIN_ENTITIES, phone_regions=["US"])
    german = PatternDetector(BUILTIN_ENTITIES, phone_regions=["DE"])
    text = "030 1234567, +49 30 1234567, +263 242 123456, (415) 555-0199"
    assert _found(text, us_only) == [
        ("PHONE", "+49 30 1234567"),
        ("PHONE", "+263 242 123456"),
        ("PHONE", "(415) 555-0199"),
    ]
    assert _found(text, german) == [("PHONE", "030 1234567"), ("PHONE", "+49 30 1234567"), ("PHONE", "+263 242 123456")]
    assert "DE" in DEFAULT_PHONE_REGIONS and PatternDetector([PiiEntity.PHONE]).detect(text)[0] == Detection(
        0, 11, "PHONE"
    )


def test_an_unknown_region_is_refused() -> None:
    with pytest.raises(ValueError, match="XX"):
        PatternDetector([PiiEntity.PHONE], phone_regions=["XX"])


def test_a_phone_word_makes_compact_national_digits_a_number() -> None:
    """Ten digits are an order reference; after a phone key or word (in any of the corpus's languages, a camelCase
    key too) they are the number it names."""
    for text in ['"phone": "0301234567"', "TEL;TYPE=CELL:0301234567", "Handy: 0301234567", "電話\uff1a0301234567",
                 'oncallPhone: "4155552671"', "call me on 4155552671"]:  # fmt: skip
        assert [e for e, _ in _found(text)] == ["PHONE"], text
    for text in ['"order": "0301234567"', "hotel 0301234567", '"phone": "+49 30 1", "ts": 0301234567']:
        assert ("PHONE", "0301234567") not in _found(text), text


def test_only_the_entities_asked_for() -> None:
    text = "C001 alice@example.com +1 202-555-0143 536-90-4399"
    assert _found(text, PatternDetector([PiiEntity.EMAIL])) == [("EMAIL", "alice@example.com")]
    assert PatternDetector([PiiEntity.PERSON]).detect(text) == []


def test_an_email_outranks_the_phone_number_in_its_local_part() -> None:
    assert _found("202.555.0143@mail.org") == [("EMAIL", "202.555.0143@mail.org")]
    assert _found("202.555.0143@mail.org", PatternDetector([PiiEntity.PHONE])) == [("PHONE", "202.555.0143")]


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
