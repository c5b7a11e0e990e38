"""The detector's own checks against the references they replace (ipaddress, python-stdnum), and random look-alikes
of every entity, none of which may be found."""

from __future__ import annotations

import ipaddress
import string
import uuid

import mcpexec_pii_scan as native
from hypothesis import given, settings
from hypothesis import strategies as st
from stdnum import ean, iban, luhn
from stdnum.us import ssn

from gateway.pii.detectors import PatternDetector, scanner_metadata
from mcpexec.api.pii import BUILTIN_ENTITIES

DETECTOR = PatternDetector(BUILTIN_ENTITIES)
IBANS = scanner_metadata()
BBAN_STRUCTURES = IBANS.bban_patterns()
_IPV6_PIECES = ["", "0", "1", "ff", "db8", "2001", "ABCD", "fe80", "12345", "g1", "1.2.3.4", "255.0.0.1", "01.2.3.4"]


def _reference_ipv6(text: str) -> bool:
    try:
        ipaddress.IPv6Address(text)
    except ValueError:
        return False
    return True


@settings(max_examples=3000, deadline=None)
@given(pieces=st.lists(st.sampled_from(_IPV6_PIECES), min_size=1, max_size=10), lead=st.booleans(), tail=st.booleans())
def test_the_ipv6_grammar_is_the_standard_librarys(pieces: list[str], lead: bool, tail: bool) -> None:
    text = ("::" if lead else "") + ":".join(pieces) + ("::" if tail else "")
    assert native.ipv6_grammar(text) == _reference_ipv6(text), text


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=string.digits, min_size=2, max_size=20))
def test_the_luhn_check_is_stdnums(digits: str) -> None:
    assert native.luhn(digits) == luhn.is_valid(digits)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=string.digits, min_size=9, max_size=9))
def test_the_ssn_rules_are_stdnums(digits: str) -> None:
    assert native.ssn_valid(digits) == ssn.is_valid(digits)


@settings(max_examples=500, deadline=None)
@given(country=st.sampled_from(tuple(BBAN_STRUCTURES)), data=st.data())
def test_ibans_that_stdnum_accepts_are_accepted_and_a_changed_digit_is_refused(
    country: str, data: st.DataObject
) -> None:
    bban = data.draw(st.from_regex(BBAN_STRUCTURES[country], fullmatch=True))
    number = f"{country}{iban.calc_check_digits(country + '00' + bban)}{bban}"
    assert IBANS.iban_valid(number) or not iban.is_valid(number)
    digits = [i for i, c in enumerate(number) if c.isdigit()]  # mod 97 catches every changed digit
    position = data.draw(st.sampled_from(digits))
    changed = number[:position] + ("1" if number[position] != "1" else "2") + number[position + 1 :]
    assert not IBANS.iban_valid(changed)
    printed = iban.format(number)
    text = printed.lower() + " from"  # a word after a spaced IBAN looks like one more group
    assert IBANS.iban_end(text, 0, len(text)) == len(printed)


def _luhn_complete(body: str) -> str:
    return body + luhn.calc_check_digit(body)


_DIGIT = st.sampled_from(string.digits)


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.text(alphabet=string.digits, min_size=n, max_size=n)


_UUID = st.integers(0, 2**128 - 1).map(lambda u: str(uuid.UUID(int=u)))


def _netmask(bits: int) -> str:
    mask = (1 << 32) - (1 << (32 - bits))
    return ".".join(str(mask >> shift & 255) for shift in (24, 16, 8, 0))


# Values that look like PII to a naive pattern: none may be found, whatever their digits.
LOOK_ALIKES = st.one_of(
    st.builds("{}-{}-{}".format, st.sampled_from(["ORD", "INV", "RMA", "CASE"]), st.integers(2019, 2026), _digits(6)),
    st.builds("ref {}{}".format, st.sampled_from("123456789"), st.text(string.digits, min_size=9, max_size=11)),
    _UUID,
    st.builds(lambda u, n: u[:24] + n, _UUID, _digits(12)),  # a UUID ending in twelve digits
    st.text(alphabet="0123456789abcdef", min_size=16, max_size=40).map("id {}".format),
    st.integers(1_600_000_000_000, 1_790_000_000_000).map("ts {}".format),  # epoch milliseconds
    st.integers(133_000_000_000_000_000, 134_200_000_000_000_000).map(str),  # LDAP timestamps
    st.builds(lambda p, b: p + b + ean.calc_check_digit(p + b), st.sampled_from(["978", "979"]), _digits(9)),  # ISBN
    st.builds(lambda f, b: _luhn_complete(f + b), st.sampled_from("0789"), _digits(14)),  # Luhn-valid, no brand
    st.builds("{:02d}:{:02d}:{:02d}.{:06d}".format, st.integers(0, 23), st.integers(0, 59), st.integers(0, 59),
              st.integers(0, 999_999)),  # durations
    st.builds("{}-{:02d}-{:02d}T10:00:00Z".format, st.integers(2000, 2030), st.integers(1, 12), st.integers(1, 28)),
    st.integers(1, 4).map("icon@{}x.png".format),
    st.integers(0, 30).map("react@{}.0.1".format),
    st.integers(0, 2**48 - 1).map(lambda o: ":".join(f"{b:02x}" for b in o.to_bytes(6, "big"))),  # MAC addresses
    st.integers(8, 30).map(_netmask),
)  # fmt: skip


@settings(max_examples=1500, deadline=None)
@given(LOOK_ALIKES)
def test_look_alikes_are_never_found(look_alike: str) -> None:
    assert DETECTOR.detect(f"value: {look_alike}, next") == [], look_alike


@settings(max_examples=300, deadline=None)
@given(country=st.sampled_from(tuple(BBAN_STRUCTURES)), data=st.data())
def test_an_iban_with_wrong_check_digits_is_no_iban_and_its_digits_are_nothing(
    country: str, data: st.DataObject
) -> None:
    bban = data.draw(st.from_regex(BBAN_STRUCTURES[country], fullmatch=True))
    good = int(iban.calc_check_digits(country + "00" + bban))
    wrong = f"{country}{(good + data.draw(st.integers(1, 96))) % 97 + 2:02d}{bban}"
    if IBANS.iban_valid(wrong):  # 98 and 99 wrap onto a valid pair: not a wrong IBAN
        return
    assert DETECTOR.detect(f"iban {wrong} rejected") == []
