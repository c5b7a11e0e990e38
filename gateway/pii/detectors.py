"""Finding PII in text: regex candidates confirmed by checksums (Luhn, IBAN, SSN rules), phonenumbers, ipaddress;
and the task's custom patterns, matched by RE2.

Overlaps resolve by entity priority, then length: an IBAN's digits are never also reported as a phone number, and a
custom pattern never takes a span from a built-in entity (it only adds detections).
"""

from __future__ import annotations

import bisect
import ipaddress
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Protocol

import phonenumbers
from phonenumbers import PhoneMetadata

# The matcher's own grammar and timestamp rule.
from phonenumbers.phonenumbermatcher import _TIME_STAMPS, _TIME_STAMPS_SUFFIX
from phonenumbers.phonenumberutil import _PLUS_CHARS, _VALID_PUNCTUATION
from stdnum import iban, luhn
from stdnum.us import ssn

from mcpexec.api.pii import CustomPattern, PiiEntity, compile_linear


@dataclass(frozen=True, order=True)
class Detection:
    start: int
    end: int
    entity: str


class Detector(Protocol):
    """Anything that finds entity spans in a text (the built-in detector, Presidio)."""

    def detect(self, text: str) -> list[Detection]: ...


# Each pattern starts with a character class and checks what precedes that first character with a lookbehind
# placed after it: Python's re then skips straight to candidate characters instead of starting a match attempt
# at every position (3-5x faster on text with few candidates; the same matches).
_EMAIL = re.compile(
    r"[A-Za-z0-9._%+-](?<![\w.+-][A-Za-z0-9._%+-])[A-Za-z0-9._%+-]*@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,24}"
    r"(?![\w-])"
)
# Groups of four with one consistent separator (or none), or Amex 4-6-5: never spans two numbers.
_CARD = re.compile(r"\d(?<![\d-]\d)(?:\d{3}([ -]?)\d{4}\1\d{4}\1\d{1,7}|\d{3}([ -]?)\d{6}\2\d{5})(?![\d-])")
_SSN = re.compile(r"\d(?<![\d-]\d)\d{2}-\d{2}-\d{4}(?![\d-])")
_IBAN = re.compile(
    r"[A-Z](?<![A-Za-z0-9][A-Z])[A-Z]\d{2}(?:(?: [A-Z0-9]{4}){2,7}(?: [A-Z0-9]{1,4})?|[A-Z0-9]{11,30})(?![A-Za-z0-9])"
)
_IPV4 = re.compile(r"\d(?<![\d.]\d)\d{0,2}\.(?:\d{1,3}\.){2}\d{1,3}(?![\d.]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?=[0-9A-Fa-f:.]*[0-9A-Fa-f])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f.]{0,15}(?![\w:])")
_DIGIT = re.compile(r"\d")
# Every built-in entity holds a digit, an @ (email) or a colon (IPv6): one search rules a string out.
_ANY_BUILTIN = re.compile(r"[\d@:]")
# The phone matcher (phonenumbers' PhoneNumberMatcher) parses and validates every digit group it meets: on text
# full of small numbers (line numbers, dates, ids, timestamps) it was nearly all of the detector's time (6 ms for
# 4 KB). A number's digits form one run of digits, each followed by at most 4 of the matcher's own separators
# (its punctuation: dashes, dots, slashes, brackets, spaces, 'x'; not a colon, so an ISO time like
# 08:27:00+01:00 is no run: 0.3 ms a timestamp before). After a plus sign the shortest valid number
# anywhere has 6 digits with its country code (+43 1110; checked against phonenumbers' metadata in
# tests/integration/gateway/test_pii.py); without one, a number is national in the detector's region (its shortest valid
# length) or dialled after the region's exit code (its digits, at least 2, and 6 more). So the matcher reads only
# windows around runs that long, widened by a margin that holds a lead bracket, an extension ("ext. 12345") and
# the context characters it checks.
MIN_PHONE_DIGITS = 6
_PHONE_DIGIT = rf"\d[{_VALID_PUNCTUATION}]{{0,4}}"
_PHONE_MARGIN = 40


@cache
def _phone_runs(region: str) -> re.Pattern[str]:
    metadata = PhoneMetadata.metadata_for_region(region)
    if metadata is None or metadata.general_desc is None:
        raise ValueError(f"no phone number metadata for region {region!r}")
    national = min(n for n in metadata.general_desc.possible_length if n > 0)
    exit_code = metadata.international_prefix or ""
    without_plus = min(national, (len(exit_code) if exit_code.isdigit() else 2) + MIN_PHONE_DIGITS)
    # One leading character class, then a branch on what it was (like the patterns above: re then skips straight to
    # candidates; as `plus-run|digit-run` it tried every position, 3x slower on text with a number per line).
    return re.compile(
        rf"[\d{_PLUS_CHARS}](?:(?<=[{_PLUS_CHARS}])[{_VALID_PUNCTUATION}]{{0,4}}(?:{_PHONE_DIGIT}){{{MIN_PHONE_DIGITS},}}"
        rf"|(?<=\d)[{_VALID_PUNCTUATION}]{{0,4}}(?:{_PHONE_DIGIT}){{{without_plus - 1},}})"
    )


def _card(value: str) -> bool:
    digits = re.sub(r"[ -]", "", value)
    return 13 <= len(digits) <= 19 and luhn.is_valid(digits)


def _ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def _ipv6(value: str) -> bool:
    """Without "::" an IPv6 address has 7 colons (6 before an IPv4 tail): times like 08:27:00 skip the parser."""
    return ("::" in value or value.count(":") >= 6) and _ip(value)


# Checked entities first: their spans win over the looser phone matcher. The second item is what every match
# contains (None: a digit), so a text without it skips that regex: most strings are keys and plain words. Every
# IPv6 address has two colons with only hex digits between them; JSON text and prose with colons mostly do not.
_CHECKED: list[tuple[PiiEntity, re.Pattern[str] | None, re.Pattern[str], Callable[[str], bool]]] = [
    (PiiEntity.EMAIL, re.compile("@"), _EMAIL, lambda _v: True),
    (PiiEntity.IBAN, None, _IBAN, iban.is_valid),
    (PiiEntity.CREDIT_CARD, None, _CARD, _card),
    (PiiEntity.US_SSN, re.compile("-"), _SSN, ssn.is_valid),
    (PiiEntity.IP_ADDRESS, re.compile(r"\."), _IPV4, _ip),
    (PiiEntity.IP_ADDRESS, re.compile(r":[0-9A-Fa-f]*:"), _IPV6, _ipv6),
]


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


class PatternDetector:
    """The built-in detector for an entity list."""

    def __init__(self, entities: Sequence[PiiEntity], phone_region: str = "US") -> None:
        wanted = set(entities)
        self._checked = [(e.value, needs, rx, ok) for e, needs, rx, ok in _CHECKED if e in wanted]
        self._phones = PiiEntity.PHONE in wanted
        self._region = phone_region
        self._phone_runs = _phone_runs(phone_region)

    def detect(self, text: str) -> list[Detection]:
        if _ANY_BUILTIN.search(text) is None:  # most strings of a result: keys, words, sentences
            return []
        found: list[Detection] = []
        has_digit = _DIGIT.search(text) is not None
        for entity, needs, pattern, valid in self._checked:
            if has_digit if needs is None else needs.search(text) is not None:
                found += [Detection(m.start(), m.end(), entity) for m in pattern.finditer(text) if valid(m.group())]
        kept = resolve_overlaps(found)
        if self._phones and has_digit:
            kept = resolve_overlaps([*kept, *self._phone_numbers(text, kept)])
        return kept

    def _phone_numbers(self, text: str, kept: list[Detection]) -> list[Detection]:
        """Phone numbers rank last: a number overlapping a `kept` detection loses, so no run that only holds such
        numbers is parsed."""
        found = []
        for start, end in _phone_windows(text, self._phone_runs, kept):
            matcher = phonenumbers.PhoneNumberMatcher(text[start:end], self._region, phonenumbers.Leniency.VALID)
            found += [Detection(start + m.start, start + m.end, PiiEntity.PHONE.value) for m in matcher]
        return found


def _phone_windows(text: str, runs: re.Pattern[str], claimed: Sequence[Detection]) -> list[tuple[int, int]]:
    """Disjoint spans of `text` around every run that could hold a phone number (see _phone_runs), except runs whose
    numbers would all overlap the `claimed` spans (sorted, disjoint): a card, IBAN, SSN or IP address is such a run,
    alone or joined to a few digits ("at 09:52 090-07-7758"), and the matcher spent 0.1-0.2 ms on each.

    A run that is exactly a date and hour followed by `:minutes` ("2026-11-23 08" then ":27") is a candidate the
    matcher drops whole, but only 0.17 ms of parsing later: such runs open no window of their own. They still join
    a window that reaches them, so no window edge ever cuts one (the matcher must see it whole to drop it)."""
    windows: list[tuple[int, int]] = []
    held: list[tuple[int, int]] = []  # timestamps since the last window, opened only if a window comes to touch them
    ends = [c.end for c in claimed]
    for run in runs.finditer(text):
        if _claimed(text, run, runs, claimed, ends):
            continue
        span = (max(0, run.start() - _PHONE_MARGIN), min(len(text), run.end() + _PHONE_MARGIN))
        if _TIME_STAMPS.match(run.group()) and _TIME_STAMPS_SUFFIX.match(text, run.end()):
            if not _joined(windows, span):
                held.append(span)
            continue
        while held and held[-1][1] >= span[0]:
            span = (held.pop()[0], span[1])
        held.clear()
        if not _joined(windows, span):
            windows.append(span)
    return windows


_TRAILING_PUNCTUATION = re.compile(rf"[{_VALID_PUNCTUATION}]*\Z")


def _claimed(
    text: str, run: re.Match[str], runs: re.Pattern[str], claimed: Sequence[Detection], ends: list[int]
) -> bool:
    """Whether every phone number in the run would overlap a claimed span: what lies outside them, between the run's
    start (a digit or plus sign) and its last digit, holds no run of its own (a number never spans a gap)."""
    at = bisect.bisect_right(ends, run.start())
    if at == len(claimed) or claimed[at].start >= run.end():  # most runs: no claimed span reaches them
        return False
    end = run.start() + len(_TRAILING_PUNCTUATION.split(run.group(), maxsplit=1)[0])
    free, cursor = [], run.start()
    while at < len(claimed) and claimed[at].start < end:
        free.append((cursor, claimed[at].start))
        cursor, at = claimed[at].end, at + 1
    free.append((cursor, end))
    return not any(runs.search(text, start, stop) for start, stop in free if start < stop)


def _joined(windows: list[tuple[int, int]], span: tuple[int, int]) -> bool:
    """Extends the last window with `span` if they touch."""
    if windows and span[0] <= windows[-1][1]:
        windows[-1] = (windows[-1][0], span[1])
        return True
    return False
