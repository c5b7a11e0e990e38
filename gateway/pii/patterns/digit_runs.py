"""Digit runs: groups of digits joined by short separators (spaces, dashes, dots, slashes, brackets, a lone plus),
as the candidate scan finds them. A run may hold several values or none: its groups are read from left to right,
each trying a card, an SSN and a phone number over the groups that follow it (at most seven groups, longest
first); what is found is skipped over. Each group starts a bounded number of bounded checks: linear in the run.

A value must be the whole of what it spans: not glued to a word (the scan starts no run after a letter and a
dash, `ORD-2025-769159`; a run followed by a letter loses its last group), and not a piece of a longer figure
written the same way (the first 16 digits of `9400 1000 0000 0000 0000 00`, the middle of `978-3-16-148410-0`).
"""

from __future__ import annotations

import re
import unicodedata
from itertools import accumulate

from gateway.pii.patterns import cards, ssns
from gateway.pii.patterns.context import says_phone, says_ssn
from gateway.pii.patterns.phones import NationalNumbers, international
from mcpexec.api.pii import PiiEntity

Found = tuple[int, int, str]
# What a check found at a group: the last group it spans and the value.
_Read = tuple[int, Found]

_CARD, _SSN, _PHONE = PiiEntity.CREDIT_CARD.value, PiiEntity.US_SSN.value, PiiEntity.PHONE.value
_MAX_GROUPS = 7
# A national number has at most five groups (07 42 26 39 86) and two kinds of separator ((415) 555-0199).
_MAX_NATIONAL_GROUPS = 5
# The fewest digits of any value (the shortest phone number: +43 1110) and the most of a phone number (15, and a
# trunk 0 and a carrier digit written anyway).
MIN_DIGITS, _MAX_PHONE = 6, 17
# The digits of a percent-encoded separator (`%20`, `%2B`) are no group.
_GROUP = re.compile(r"(?<!%)(?<!%\d)(\d+)")
_CARD_SEPARATORS = frozenset({" ", "-", "+", "\u00a0"})  # `+`: a form-encoded space
_PLUS = ("+", "\uff0b", "%2B", "%2b")
_FORM_SPACES = frozenset({"+", "%2B", "%2b", "%20"})
_OPEN, _CLOSE = "(\uff08", ")\uff09"
# What may open a run before its first digit: a plus sign (`+`, full-width, or form-encoded `%2B`) and brackets,
# not glued to a word (`x+1`).
_LEAD_CHARS = frozenset(" \u00a0(\uff08+\uff0bBb")
_FREE = r"(?:(?<![A-Za-z0-9_])|(?<=\\[nrtbf]))"  # not glued to a word, unless to a JSON escape's letter (\\t+49)
_LEAD = re.compile(
    rf"{_FREE}(?:[(\uff08][ \u00a0]?)?(?:[+\uff0b]|%2[Bb])[ \u00a0]?[(\uff08]?\Z|{_FREE}[(\uff08][ \u00a0]?\Z"
)
_BLANKS = " \u00a0\u2007\u2009\u202f\u3000"
# `x 123`, `ext. 123`, `;ext=123` right after a number; never across a tab or comma (`\t#123456` is an order).
_EXTENSION = re.compile(r"(?i)(?: ?(?:ext\.?|extension|x) ?|;ext=)\d{1,6}(?!\d)")
_GLUED = re.compile(r"[A-Za-z0-9_]|[-_.][A-Za-z0-9]|/[0-9]")  # a path segment after a value is no glue
# A date, then no digit and no more of its separator (06.27.51.36.67 is a French phone number).
_DATE = re.compile(r"\d{4}([-./])\d\d?\1\d\d?(?!\d|\1)|\d\d?([-./])\d\d?\2(?:\d{4}|\d\d)(?!\d|\2)")


class _AsciiDigits(dict[int, str]):
    """str.translate table from any decimal digit (full-width, Arabic-Indic...) to its ASCII digit."""

    def __missing__(self, code: int) -> str:
        self[code] = digit = str(unicodedata.digit(chr(code)))
        return digit


_ASCII = _AsciiDigits()


def _ascii(digits: str) -> str:
    return digits if digits.isascii() else digits.translate(_ASCII)


def read(text: str, start: int, end: int, national: NationalNumbers, out: list[Found]) -> None:
    """Appends the values in the digit run from its first digit text[start] to text[end], with the plus sign or
    bracket that may open it."""
    lead = start - 1
    if lead >= 0 and text[lead] in _BLANKS:
        lead -= 1
    if lead >= 0 and text[lead] in _LEAD_CHARS and (opening := _LEAD.search(text, max(0, start - 8), start)):
        lead = opening.start()
    else:
        lead = start
    chunk = text[lead:end]
    if lead == start and chunk.isdigit():
        _compact(text, start, end, _ascii(chunk), national, out)
        return
    if lead < start and _signed(text, lead, start, end, out):
        return
    run = _Run(text, lead, chunk)
    i, total, count, gaps = 0, run.cum[-1], len(run.digits), run.gaps
    while i < count and total - run.cum[i] >= MIN_DIGITS:  # values of six digits or more start here
        if i and (i + 1 == count or gaps[i] == gaps[i + 1]) and not 9 <= len(run.digits[i]) <= cards.MAX_DIGITS:
            # Inside a run of one separator only a group alone can be a value (a card, an SSN; see _Run.alone).
            i += 1
            continue
        found = _card(run, i) or _ssn(run, i) or _phone(run, i, national)
        if found is None:
            i += 1
            continue
        i = found[0] + 1
        out.append(found[1])


def _signed(text: str, lead: int, start: int, end: int, out: list[Found]) -> bool:
    """The common case of a run after a plus sign, without reading its groups: the whole run is one international
    number (`+49 30 1234567`, `(+44) 20 7031 3000`). False when it is not, or not simply (the run reader decides)."""
    sign, body = text[lead:start], text[start:end]
    if ("+" not in sign and "\uff0b" not in sign) or "+" in body or "\uff0b" in body or "%" in body:
        return False  # a bracket alone, an encoded plus, another number in the run, form-encoding
    extension = _EXTENSION.match(text, end)
    if extension is None and _GLUED.match(text, end) is not None:
        return False
    digits = _ascii("".join(_GROUP.findall(body)))
    if not MIN_DIGITS <= len(digits) <= _MAX_PHONE or not international(digits):
        return False
    span_end = extension.end() if extension else end
    if text[lead] in _OPEN and not _closed(text, lead + 1, span_end):  # `(+32 (0)473 ...)`: its bracket is the text's
        lead += len(sign) - len(sign.lstrip(_OPEN + _BLANKS))
    out.append((lead, span_end, _PHONE))
    return True


def _closed(text: str, start: int, end: int) -> bool:
    """Whether the bracket opened right before `start` is closed by `end`."""
    depth = 1
    for char in text[start:end]:
        depth += (char in _OPEN) - (char in _CLOSE)
        if depth == 0:
            return True
    return False


def _compact(text: str, start: int, end: int, digits: str, national: NationalNumbers, out: list[Found]) -> None:
    """One group of digits: a card by its brand and checksum; an SSN or a phone number only after its word."""
    if len(digits) < MIN_DIGITS:
        return
    extension = None
    if _GLUED.match(text, end) is not None:  # an identifier's digits, or a phone number's extension (x12)
        extension = _EXTENSION.match(text, end)
        if extension is None:
            return
    elif cards.card(digits, (len(digits),)):
        out.append((start, end, _CARD))
        return
    elif len(digits) == 9 and ssns.valid(digits) and says_ssn(text, start):
        out.append((start, end, _SSN))
        return
    if len(digits) <= _MAX_PHONE and says_phone(text, start) and national.compact(digits):
        extension = extension or _EXTENSION.match(text, end)
        out.append((start, extension.end() if extension else end, _PHONE))


class _Run:
    """A run's digit groups, where they are and what separates them."""

    __slots__ = ("cum", "digits", "ends", "extension", "gaps", "glued", "joined", "next_plus", "plus", "starts", "text")

    def __init__(self, text: str, start: int, chunk: str) -> None:
        parts = _GROUP.split(chunk)  # [lead, group, gap, group, ..., group, ""]
        self.text = text
        self.gaps = parts[0:-1:2]  # gaps[k] precedes group k (for the first: a bracket or plus sign)
        groups = parts[1::2]
        self.digits = groups if chunk.isascii() else [_ascii(g) for g in groups]
        offsets = list(accumulate(map(len, parts), initial=start))
        self.starts, self.ends = offsets[1::2], offsets[2::2]
        self.cum = list(accumulate(map(len, self.digits), initial=0))
        self.joined = "".join(self.digits)
        self.extension = _EXTENSION.match(text, offsets[-1])
        self.glued = self.extension is None and _GLUED.match(text, offsets[-1]) is not None
        count = len(groups)
        self.plus: list[int | None] = [None] * count
        # next_plus[k]: the first group after k that a plus sign opens (count if none).
        self.next_plus = [count] * count
        if "+" in chunk or "\uff0b" in chunk or "%2" in chunk:
            self.plus = [self._plus(k) for k in range(count)]
            for k in range(count - 2, -1, -1):
                self.next_plus[k] = k + 1 if self.plus[k + 1] is not None else self.next_plus[k + 1]

    def _plus(self, i: int) -> int | None:
        """Where the plus sign before group i is, if it has one (a lone `+` between groups is a form-encoded space)."""
        gap = self.gaps[i]
        if not gap or (i and gap in _FORM_SPACES):
            return None
        trimmed = gap.rstrip(_BLANKS + _OPEN)
        for sign in _PLUS:
            if trimmed.endswith(sign):
                return self.starts[i] - len(gap) + len(trimmed) - len(sign)
        return None

    def span_digits(self, i: int, j: int) -> str:
        return self.joined[self.cum[i] : self.cum[j + 1]]

    def spans(self, i: int, most: int, least: int) -> range:
        """The last groups j of spans i..j with `least` to `most` digits, longest first (a glued last group is the
        end of a word: no value ends there; a plus sign opens another number)."""
        last = min(len(self.digits) - (2 if self.glued else 1), i + _MAX_GROUPS - 1, self.next_plus[i] - 1)
        cum, first = self.cum, self.cum[i]
        while last >= i and cum[last + 1] - first > most:
            last -= 1
        j = last
        while j >= i and cum[j + 1] - first >= least:
            j -= 1
        return range(last, j, -1)

    def start(self, i: int, end: int) -> int:
        """Where a value of groups i.. ending at `end` starts: at its plus sign, and at an opening bracket before it
        only if the value closes it (`(415) 555-0199`, not the `(` of `(030 1234567)` or `(+32 (0)473 ...)`)."""
        plus = self.plus[i]
        start = plus if plus is not None else self.starts[i]
        lead = self.starts[i] - len(self.gaps[i])
        at = start
        while at > lead and self.text[at - 1] in _BLANKS:
            at -= 1
        if at > lead and self.text[at - 1] in _OPEN and _closed(self.text, at, end):
            return at - 1
        return start

    def alone(self, i: int, j: int) -> bool:
        """Whether groups i..j are not a piece of a longer figure written the same way (`9400 1000 0000 0000 0000`,
        `978-3-16-148410-0`, `1.2.840.113549.1`): the same separator continues on neither side, except before one
        last group of at most two digits (`030 1234567 12:30`). In a run of one separator, only the spans at its
        ends are read: crafted runs (`"00 " * 10_000`) cost no phone check per group."""
        inside = self.gaps[i + 1 : j + 1]
        if not inside:
            return True
        count = len(self.digits)
        if j + 1 < count and self.gaps[j + 1] in inside:
            isolated = j + 2 == count or self.gaps[j + 2] not in inside
            if not isolated or self.gaps[j + 1] in (".", "-") or len(self.digits[j + 1]) > 2:
                return False
        return i == 0 or self.gaps[i] not in inside


def _card(run: _Run, i: int) -> _Read | None:
    if run.plus[i] is not None or run.cum[-1] - run.cum[i] < cards.MIN_DIGITS:  # +4915146734012 is a phone number
        return None
    for j in run.spans(i, cards.MAX_DIGITS, cards.MIN_DIGITS):
        separators = set(run.gaps[i + 1 : j + 1])
        if len(separators) > 1 or not separators <= _CARD_SEPARATORS or not run.alone(i, j):
            continue
        if cards.card(run.span_digits(i, j), tuple(len(d) for d in run.digits[i : j + 1])):
            return j, (run.starts[i], run.ends[j], _CARD)
    return None


def _ssn(run: _Run, i: int) -> _Read | None:
    """3-2-4 digits with one separator, or nine digits written right after an SSN key or word."""
    if run.plus[i] is not None:
        return None
    if len(run.digits[i]) == 9:
        j = i
        found = (i + 1 < len(run.digits) or not run.glued) and says_ssn(run.text, run.starts[i])
    else:
        j = i + 2
        shape = tuple(len(d) for d in run.digits[i : j + 1])
        found = j < len(run.digits) - run.glued and shape == ssns.SHAPE and run.gaps[j] in ssns.SEPARATORS
        found = found and run.gaps[i + 1] == run.gaps[j] and run.alone(i, j)
    if found and ssns.valid(run.span_digits(i, j)):
        return j, (run.starts[i], run.ends[j], _SSN)
    return None


def _phone(run: _Run, i: int, national: NationalNumbers) -> _Read | None:
    plus = run.plus[i]
    for j in run.spans(i, _MAX_PHONE, MIN_DIGITS):
        digits = run.span_digits(i, j)
        if plus is not None:
            valid = international(digits)
        elif j == i:  # a group alone, at the start of its run (`0301234567 / 0301234568` after a phone word)
            valid = i == 0 and says_phone(run.text, run.starts[i]) and national.compact(digits)
        elif not run.alone(i, j):
            valid = False
        else:  # dialled with an exit code (`0049 30 ...`; 011 is also Buenos Aires' area code), or national
            dialled = national.dialling(digits)
            grouped = j - i < _MAX_NATIONAL_GROUPS and len(set(run.gaps[i + 1 : j + 1])) <= 2
            valid = (dialled or grouped) and not _figure(run, i, j)
            valid = valid and (
                (dialled and national.dialled(digits))
                or (grouped and national.grouped(digits, [c - run.cum[i] for c in run.cum[i + 1 : j + 1]]))
            )
        if valid:
            end = run.ends[j]
            if j == len(run.digits) - 1 and run.extension is not None:
                end = run.extension.end()
            return j, (run.start(i, end), end, _PHONE)
    return None


def _figure(run: _Run, i: int, j: int) -> bool:
    """A decimal number (`52.245003`), thousands grouped with dots (`937.937.105`), something after a date
    (`05.12.2023 98.501`), or what an SSN looks like (`015-62-0000`: one never issued is no phone number either),
    however its digits read."""
    gaps, sizes = run.gaps[i + 1 : j + 1], [len(d) for d in run.digits[i : j + 1]]
    if set(gaps) == {"."} and (j == i + 1 or (sizes[0] <= 3 and all(size == 3 for size in sizes[1:]))):
        return True
    if j >= i + 2 and _DATE.match(run.text, run.starts[i], run.ends[j]) is not None:
        return True
    return sizes == [3, 2, 4] and gaps == ["-", "-"]
