"""Phone numbers against phonenumbers itself: every region's numbers are found in the forms people write them
(international for every region, national for the regions asked for), and grouped figures that no region writes
that way are not."""

from __future__ import annotations

import random

import phonenumbers
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mcpexec_pii_scan import MIN_DIGITS
from phonenumbers import PhoneNumberFormat, PhoneNumberType

from gateway.pii.detectors import DEFAULT_PHONE_REGIONS, Detector, PatternDetector
from mcpexec.api.pii import PiiEntity

PHONES = PatternDetector([PiiEntity.PHONE])
_PERSONAL = (PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE)


def _number(rng: random.Random, region: str) -> phonenumbers.PhoneNumber | None:
    """A valid number of the region: its example mobile or fixed-line number with the subscriber digits redrawn."""
    for kind in rng.sample(_PERSONAL, 2):
        example = phonenumbers.example_number_for_type(region, kind)
        if example is None:
            continue
        nsn = phonenumbers.national_significant_number(example)
        for _ in range(200):
            keep = max(1, len(nsn) - 4)
            drawn = nsn[:keep] + "".join(rng.choice("0123456789") for _ in range(len(nsn) - keep))
            candidate = phonenumbers.parse(f"+{example.country_code}{drawn}")
            if phonenumbers.is_valid_number_for_region(candidate, region):
                return candidate
    return None


_KINDS = (
    "fixed_line", "mobile", "toll_free", "premium_rate", "shared_cost", "personal_number", "voip", "pager", "uan",
    "voicemail",
)  # fmt: skip


def test_no_valid_phone_number_is_shorter_than_the_scans_digit_threshold() -> None:
    """The scan reads no run of fewer than MIN_DIGITS digits: no number that phonenumbers' metadata allows (country
    code and the shortest national number of any kind) is that short."""
    shortest = min(
        len(str(metadata.country_code)) + length
        for region in phonenumbers.SUPPORTED_REGIONS
        if (metadata := phonenumbers.PhoneMetadata.metadata_for_region(region)) is not None
        for desc in (getattr(metadata, kind) for kind in _KINDS)
        if desc is not None
        for length in desc.possible_length
        if length > 0
    )
    assert shortest >= MIN_DIGITS


def _spans(text: str, detector: Detector = PHONES) -> list[str]:
    return [text[d.start : d.end] for d in detector.detect(text)]


@pytest.mark.parametrize("region", sorted(phonenumbers.SUPPORTED_REGIONS))
def test_every_regions_numbers_are_found_with_their_country_code_whatever_the_regions(region: str) -> None:
    """International and E.164 forms of 5 numbers of each of the 245 regions, found by a detector that reads only
    US national numbers."""
    us_only = PatternDetector([PiiEntity.PHONE], phone_regions=["US"])
    rng = random.Random(region)
    for _ in range(5):
        number = _number(rng, region)
        assert number is not None, f"phonenumbers has no example number for {region}"
        for form in (PhoneNumberFormat.INTERNATIONAL, PhoneNumberFormat.E164):
            written = phonenumbers.format_number(number, form)
            assert _spans(f"call {written} now", us_only) == [written]


@pytest.mark.parametrize("region", DEFAULT_PHONE_REGIONS)
def test_the_default_regions_national_numbers_are_found_as_they_are_written(region: str) -> None:
    """National form, with no-break spaces for spaces, a slash for a single space (030/1234567), and compact after a
    phone word: 20 numbers of each default region."""
    rng = random.Random(region)
    for _ in range(20):
        number = _number(rng, region)
        assert number is not None
        national = phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)
        slashed = national.replace(" ", "/") if national.count(" ") == 1 else national
        for written in (national, national.replace(" ", "\u00a0"), slashed):
            assert _spans(f"Tel. {written} (office)") == [written], written
        compact = "".join(c for c in national if c.isdigit())
        assert _spans(f'"phone": "{compact}"') == [compact]


def test_national_numbers_of_regions_not_asked_for_are_not_read_as_national() -> None:
    japanese = phonenumbers.parse("+81 3-6908-4061")
    written = phonenumbers.format_number(japanese, PhoneNumberFormat.NATIONAL)
    assert _spans(written, PatternDetector([PiiEntity.PHONE], phone_regions=["JP"])) == [written]
    assert _spans(written, PatternDetector([PiiEntity.PHONE], phone_regions=["US", "GB"])) == []


# Figures that are no phone numbers: references, dates and counters grouped the way phones are not.
_FIGURES = [
    "{y}-{n6}",  # a year-sequence id's tail
    "{status} {n7}",  # an HTTP status and a byte count
    "{n5}-{n4}",  # a ZIP+4 code
    "{d2}.{m2}.{y} {n2}.{n3}",  # a date and an amount
    "{y}-{m2}-{d2} {h2}:{d2}",  # a timestamp
    "{n4} {n4} {n4} {n4} {n4} {n2}",  # a tracking number in groups
    "1.3.6.1.4.1.{n5}.{n1}.{n1}",  # an OID
    "{n3}.0.{n4}.{n3}",  # a browser build
]


@pytest.mark.parametrize("figure", ["950.0.1000.950", "120.0.6099.109", "4.2.1.10"])
def test_version_and_build_numbers_are_not_phone_numbers(figure: str) -> None:
    """Found by the randomized test below: `950.0.1000.950` read as a Chinese national number."""
    assert _spans(f"chrome/{figure} ok") == [] and _spans(f"build {figure} ok") == []


@settings(max_examples=400, deadline=None)
@given(
    template=st.sampled_from(_FIGURES),
    digits=st.lists(st.integers(0, 9), min_size=40, max_size=40),
    y=st.integers(2000, 2030),
    m=st.integers(1, 12),
    d=st.integers(1, 28),
    h=st.integers(0, 23),
    status=st.sampled_from([200, 201, 204, 301, 302, 304, 400, 401, 403, 404, 409, 429, 500, 502, 503, 504]),
)
def test_grouped_figures_are_not_phone_numbers(
    template: str, digits: list[int], y: int, m: int, d: int, h: int, status: int
) -> None:
    pool = iter(digits)

    def draw(n: int) -> str:
        return str(next(pool) % 9 + 1) + "".join(str(next(pool)) for _ in range(n - 1))

    figure = template.format(
        y=y, m2=f"{m:02d}", d2=f"{d:02d}", h2=f"{h:02d}", status=status, n1=draw(1), n2=draw(2), n3=draw(3),
        n4=draw(4), n5=draw(5), n6=draw(6), n7=draw(7),
    )  # fmt: skip
    assert _spans(f"ref {figure} ok") == []
