"""The candidate scan: one pass of one regex finds everything that may be a built-in entity (a digit run, a dotted
quad, an IBAN's check digits, an IPv6 address's first colon, an email's at-sign), and each candidate goes to its
validator.

Linear time: the regex starts with one character class (digits, `@ : % \\`), so Python's engine skips from candidate
character to candidate character without trying a match anywhere else, and at each it tries only the branches of
that character, chosen by lookbehinds (a digit inside a run of digits fails after two). Every quantifier that could
be ambiguous is possessive or bounded, and every lookaround is bounded: no input makes the engine backtrack more
than a constant amount at a position, and what a branch consumes is not scanned again (but for the few characters
after an IBAN that its candidate took for a group). The validators see each candidate once and do bounded work per
digit group (digit_runs.py), per character (emails.py) or per address.
"""

from __future__ import annotations

import re

from gateway.pii.patterns import addresses, digit_runs, emails, ibans
from gateway.pii.patterns.context import says_version
from gateway.pii.patterns.digit_runs import Found
from gateway.pii.patterns.phones import NationalNumbers
from mcpexec.api.pii import PiiEntity

_IBAN, _IP, _EMAIL = PiiEntity.IBAN.value, PiiEntity.IP_ADDRESS.value, PiiEntity.EMAIL.value

# Between two digit groups of a run: one to three blanks, dashes, dots, slashes or brackets (full-width too), or a
# lone plus sign or percent-encoded space or plus (form-encoding: 4266+7607+4871+3187, %2B1+713+396+7854). Not a
# tab, comma, colon or newline: those separate values; nor ` +`: a new number (or a time zone) starts there.
_PUNCTUATION_CHARS = (
    " \u00a0\u2007\u2009\u202f\u3000-\u2010\u2011\u2012\u2013\u2014\u2015\u2212\u30fc\uff0d.\uff0e/\uff0f()\uff08\uff09"
)
_PUNCTUATION = f"[{re.escape(_PUNCTUATION_CHARS)}]"
_GAP = rf"(?:{_PUNCTUATION}{{1,3}}|[+\uff0b]|%2[0Bb])"
# Groups after the first; a group right before `:digit` is an hour or a minute (`18 May 2023 17:44`), not part of it.
_GROUPS = rf"(?:{_GAP}\d++(?!:\d))*+"
# At least six digits (digit_runs.MIN_DIGITS; the scan consumed the first), not all in a date (and hour) or a decimal
# number.
_SIX = rf"(?=(?:{_GAP}?\d){{{digit_runs.MIN_DIGITS - 1}}})"


def _not_date(year: str, day: str) -> str:
    """Not a date alone (and its hour): `year`, `day` match its first group (less what the scan consumed)."""
    separated = r"(?:-\d\d?-|\.\d\d?\.|/\d\d?/)"
    alone = rf"(?!\d)(?:[ T]\d\d?(?!\d))?(?!{_GAP}\d)"
    return rf"(?!{year}{separated}\d\d?{alone}|{day}{separated}(?:\d{{4}}|\d\d){alone})"


_NOT_DATE = _not_date(r"\d{3}", r"\d?")
# Not glued to a word: no ASCII letter, digit or underscore right before the first digit, unless it is a JSON escape's
# letter (`\\n0301234567` in raw JSON text starts a line with the number) or an encoded plus (`%2B49...`).
_FREE_DIGIT = r"(?:(?<![A-Za-z0-9_]\d)|(?<=\\[nrtbf]\d)|(?<=%2[Bb]\d))"
# A digit run from its first digit (which the scan consumed; a plus sign or bracket before it is read back by
# digit_runs.py): not inside an identifier (`ORD-2025-769159`, `v1.2`, `0x7f`) or a time (`09:33:51`). A path
# segment is no identifier: `/customers/4111111111111111` holds a card (but `22/01/2020` is one date, not a run
# from `01`, and `curl/15.19.101` a product's version).
_RUN = (
    rf"(?<![A-Za-z0-9_][-_.]\d)(?<![0-9_]/\d)(?!(?<=[A-Za-z]/\d)\d*+\.)(?<!\d:\d){_SIX}{_NOT_DATE}"
    rf"(?!\d*+\.\d++(?!{_GAP}\d))\d*+(?!:\d){_GROUPS}"
)
# Check digits right after an IBAN country code that starts a word (the cheap test first: two letters).
_COUNTRY = "|".join(
    f"{first}[{''.join(c[1] for c in ibans.COUNTRIES if c[0] == first)}]"
    for first in sorted({c[0] for c in ibans.COUNTRIES})
)
_IBAN_DIGITS = (
    rf"(?<=[A-Za-z][A-Za-z]\d)(?<=(?i:{_COUNTRY})\d)(?<![A-Za-z0-9_](?<!\\[nrtbf])..\d)"
    r"\d(?:[A-Za-z0-9]{11,30}|(?:[ \u00a0][A-Za-z0-9]{4}){2,7}(?:[ \u00a0][A-Za-z0-9]{1,4})?)(?![A-Za-z0-9])"
)
# A dotted quad, the whole of what is dotted (`1.3.6.1.4.1` is an OID).
_IPV4 = r"(?<![.]\d)\d{0,2}(?:\.\d{1,3}){3}(?![A-Za-z0-9_]|\.\d)"
# From an address's first colon (later ones of the same run are not tried: `a:a:a:...` costs one attempt): a `::`
# within its first seven groups, or six colons (MACs and times have fewer), and a decimal digit ahead (`std::vector`
# is none; a digit may also be in the group before the colon).
_HEX = "[0-9A-Fa-f]"
_IPV6 = (
    rf"(?<!::)(?<!:{_HEX}:)(?<!:{_HEX}{{2}}:)(?<!:{_HEX}{{3}}:)(?<!:{_HEX}{{4}}:)"  # its first colon only
    rf"(?=:|(?:{_HEX}{{1,4}}:){{1,6}}:|(?:{_HEX}{{1,4}}:){{5}})(?=[0-9A-Fa-f:.]{{0,44}}\d)[0-9A-Fa-f:.]*+"
)

# What may follow a digit that starts anything: at most four more digits, then a fifth or a separator. Cheap: it
# turns most numbers in a text (1-5 digits, then a space, quote or letter) away before any other test.
_MORE = rf"(?=\d{{0,4}}+[\d{re.escape(_PUNCTUATION_CHARS)}+\uff0b%])"

_SCAN = re.compile(
    r"[\d@:%\\](?:"
    # A digit that starts something (none inside a run of digits): each candidate character is tried against its
    # own branches only (a digit that starts nothing fails after two lookbehinds).
    rf"(?<=\d)(?<!\d\d)(?:(?P<iban>{_IBAN_DIGITS})|{_MORE}{_FREE_DIGIT}(?:(?P<ipv4>{_IPV4})|(?P<run>{_RUN})))"
    rf"|(?<!\d)(?:(?<=:)(?P<ipv6>{_IPV6})"
    rf"|(?<=@)(?P<email>{emails.DOMAIN})|(?<=%)40(?P<encoded_email>{emails.DOMAIN})"
    rf"|(?<=\\)u0040(?P<escaped_email>{emails.DOMAIN}))"
    r")"
)


def find(text: str, national: NationalNumbers) -> list[Found]:
    """Every built-in entity in `text` as (start, end, entity); spans of different candidates may overlap (an
    email's local part is read backwards over what came before its at-sign)."""
    found: list[Found] = []
    done = 0
    for match in _SCAN.finditer(text):
        if match.start() >= done:
            done = _read(text, match, national, found)
    return found


def _read(text: str, match: re.Match[str], national: NationalNumbers, found: list[Found]) -> int:
    """Validates one candidate; returns how far the text is read (past the match when an IBAN took less of it)."""
    kind, start, end = match.lastgroup, match.start(), match.end()
    if kind == "run":
        digit_runs.read(text, start, end, national, found)
    elif kind == "ipv4":
        host = addresses.ipv4(match.group())
        if host is None and text[start] == "0":  # 012.20.66.10: a Belgian phone number written with dots
            digit_runs.read(text, start, end, national, found)
        elif host and not says_version(text, start):
            found.append((start, end, _IP))
    elif kind == "iban":
        iban_end = ibans.end(text, start - 2, end)
        if iban_end is not None:
            found.append((start - 2, iban_end, _IBAN))
            if iban_end < end:  # it took a word after the IBAN for a group: what that holds is read again
                return _read_between(text, iban_end, end, national, found)
    elif kind == "ipv6":
        _ipv6(text, match, found)
    elif kind is not None:
        _email(text, match, kind, found)
    return end


def _read_between(text: str, start: int, stop: int, national: NationalNumbers, found: list[Found]) -> int:
    done = start
    while done < stop and (match := _SCAN.search(text, done)) is not None and match.start() < stop:
        done = _read(text, match, national, found)
    return max(done, stop)


def _ipv6(text: str, match: re.Match[str], found: list[Found]) -> None:
    start = addresses.ipv6_start(text, match.start())
    end = match.end()
    if start is None or addresses.continues_word(text, end):
        return
    while end - 2 > start and (text[end - 1] == "." or text[end - 1] == ":" != text[end - 2]):  # a sentence's end
        end -= 1
    end = start + addresses.ipv6_end(text[start:end])
    if addresses.ipv6(text[start:end]):
        found.append((start, end, _IP))


def _email(text: str, match: re.Match[str], kind: str, found: list[Found]) -> None:
    start = emails.local_start(text, match.start(), encoded=kind == "encoded_email")
    if start is not None and emails.domain(match.group(kind)):
        found.append((start, match.end(), _EMAIL))
