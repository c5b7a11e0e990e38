"""Phone numbers checked against phonenumbers' metadata, compiled once per region: its number patterns merged into
one regex per national-number length, its trunk prefix, and its formats (how the region groups its numbers).

Parsing each candidate with phonenumbers (parse, is_valid_number, its PhoneNumberMatcher) costs 20-100 us a number;
a dictionary lookup and a compiled fullmatch of phonenumbers' own patterns cost about a microsecond.

A number written with its country code (after a plus sign or an exit code: `+49 30 1234567`, `0049 30 1234567`) is
checked against every country's metadata, whatever the regions asked for. A national number (`030 1234567`) only
against those regions, and only as its region writes it: with the trunk prefix where the region writes one, and
broken into groups at least where the region's format breaks it (its area code a group of its own: `2025-769159` is
no US number), or compact where the caller saw a phone word before it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache

from phonenumbers import COUNTRY_CODE_TO_REGION_CODE, PhoneMetadata
from phonenumbers.phonemetadata import NumberFormat

# Every kind of number a region's metadata describes (the matcher's VALID leniency accepts each of them).
_KINDS = (
    "fixed_line", "mobile", "toll_free", "premium_rate", "shared_cost", "personal_number", "voip", "pager", "uan",
    "voicemail",
)  # fmt: skip
_NON_GEOGRAPHIC = "001"
_MAX_WRITTEN = 20
# A format's first group, `(\d{3})` or `(\d{2,4})` (phonenumbers' patterns are groups of digits).
_FIRST_GROUP = re.compile(r"\(\\d(?:\{(\d+)(?:,(\d+))?\})?\)")


def _metadata(region: str) -> PhoneMetadata:
    metadata = PhoneMetadata.metadata_for_region(region)
    if metadata is None:
        raise ValueError(f"no phone number metadata for region {region!r}")
    return metadata


def _valid_by_length(plans: Iterable[PhoneMetadata]) -> dict[int, re.Pattern[str]]:
    """National-number length -> one regex of every kind of number of that length (fullmatch)."""
    by_length: dict[int, dict[str, None]] = {}
    for metadata in plans:
        for kind in _KINDS:
            desc = getattr(metadata, kind)
            if desc is None or not desc.national_number_pattern:
                continue
            general = metadata.general_desc
            for length in desc.possible_length or (general.possible_length if general is not None else ()):
                if length > 0:
                    by_length.setdefault(length, {})[desc.national_number_pattern] = None
    return {n: re.compile("|".join(f"(?:{p})" for p in patterns)) for n, patterns in by_length.items()}


@dataclass(frozen=True)
class _Format:
    """One way a region groups some of its numbers (phonenumbers' NumberFormat)."""

    leading: re.Pattern[str] | None  # the number's first digits that select this format
    groups: re.Pattern[str]
    prefix_required: bool  # the national form writes the trunk prefix ("030 ...", not "30 ...")
    first_group: tuple[int, int]  # the first group's fewest and most digits

    @classmethod
    def of(cls, number_format: NumberFormat, prefix: str) -> _Format:
        leading = number_format.leading_digits_pattern
        rule = number_format.national_prefix_formatting_rule or ""
        shown = bool(prefix) and prefix in rule.replace("\\1", "")
        pattern = number_format.pattern or ""
        first = _FIRST_GROUP.match(pattern)
        low, high = (int(first[1] or 1), int(first[2] or first[1] or 1)) if first else (1, _MAX_WRITTEN)
        return cls(
            re.compile(leading[-1]) if leading else None,
            re.compile(pattern),
            shown and not number_format.national_prefix_optional_when_formatting,
            (low, high),
        )

    def breaks(self, number: str) -> list[int] | None:
        """Where this format ends the number's groups but the last, or None if it does not group `number`."""
        if self.leading is not None and self.leading.match(number) is None:
            return None
        match = self.groups.fullmatch(number)
        if match is None:
            return None
        return [match.end(g) for g in range(1, match.lastindex or 1)]


class _Region:
    """A region's national numbering: its trunk prefix, its valid numbers, its formats."""

    def __init__(self, region: str) -> None:
        metadata = _metadata(region)
        # Regions sharing a country code (CA, the Caribbean) are formatted by its main region (US), as in phonenumbers.
        main = _metadata(COUNTRY_CODE_TO_REGION_CODE.get(metadata.country_code or 0, (region,))[0])
        prefix = metadata.national_prefix or ""
        self._for_parsing = re.compile(metadata.national_prefix_for_parsing or "") if prefix else None
        self._transform = metadata.national_prefix_transform_rule
        self._valid = _valid_by_length([metadata])
        self._formats = [_Format.of(f, prefix) for f in metadata.number_format or main.number_format]
        self.first_breaks = self._first_breaks(len(prefix))
        # A trunk prefix read as it is written (most regions), else a pattern with carrier codes or rewrites.
        self._plain_prefix = prefix if metadata.national_prefix_for_parsing == prefix else ""
        self.bare = any(not f.prefix_required for f in self._formats)  # some numbers written without the prefix
        self.first_digits = frozenset("0123456789" if self.bare or not self._plain_prefix else prefix[0])
        # How many digits a written national number has: with a plain trunk prefix, with it or not; any, where the
        # prefix comes with carrier codes or is rewritten.
        if self._transform or (prefix and metadata.national_prefix_for_parsing != prefix):
            self.lengths = frozenset(range(1, _MAX_WRITTEN))
        else:
            self.lengths = frozenset(self._valid) | {n + len(prefix) for n in self._valid}

    def _first_breaks(self, prefix: int) -> frozenset[int]:
        """Every offset where a written national number's first group may end: its format's first group (after the
        trunk prefix, glued to it), or the prefix alone (`0 30 ...`); any, where the prefix can be rewritten."""
        if self._transform:
            return frozenset(range(1, _MAX_WRITTEN))
        breaks = {prefix} if prefix else set()
        for number_format in self._formats:
            low, high = number_format.first_group
            for length in range(low, high + 1):
                breaks.add(length + prefix)
                if not number_format.prefix_required:
                    breaks.add(length)
        return frozenset(breaks - {0})

    def valid(self, number: str) -> bool:
        pattern = self._valid.get(len(number))
        return pattern is not None and pattern.fullmatch(number) is not None

    def _format(self, number: str) -> tuple[_Format, list[int]] | None:
        for candidate in self._formats:
            breaks = candidate.breaks(number)
            if breaks is not None:
                return candidate, breaks
        return None

    def written(self, digits: str, breaks: Sequence[int]) -> bool:
        """Whether `digits` are a valid national number of this region as written: with its trunk prefix (and
        carrier code) or, where the region writes none, without; `breaks` are the offsets where the text splits
        the digits into groups (none: written compact)."""
        if self._plain_prefix:
            if digits.startswith(self._plain_prefix) and self._grouped(
                digits[len(self._plain_prefix) :], len(self._plain_prefix), breaks, prefixed=True
            ):
                return True
        elif self._for_parsing is not None and (prefixed := self._for_parsing.match(digits)) and prefixed.end():
            if self._transform and prefixed.lastindex and prefixed.group(prefixed.lastindex) is not None:
                # A carrier code or mobile token rewritten (AR: 0 11 15-xxxx-xxxx is 9 11 xxxx-xxxx): no grouping check.
                number = prefixed.expand(self._transform) + digits[prefixed.end() :]
                if self.valid(number) and self._format(number) is not None:
                    return True
            elif self._grouped(digits[prefixed.end() :], prefixed.end(), breaks, prefixed=True):
                return True
        return self.bare and self._grouped(digits, 0, breaks, prefixed=False)

    def _grouped(self, number: str, shift: int, breaks: Sequence[int], prefixed: bool) -> bool:
        if not self.valid(number):
            return False
        chosen = self._format(number)
        if chosen is None:
            return False
        number_format, groups = chosen
        if number_format.prefix_required and not prefixed:
            return False
        if not breaks:
            return True
        # The text breaks the number where its region's format does, its area code a group of its own, and may
        # break the rest more (`030 123 456 78`), or right after the prefix (`1 800 ...`); never across a group:
        # `2025-769159`, `200 1103427` (an HTTP status and a byte count) are no US numbers.
        written = [b for b in breaks if b != shift]
        return (
            bool(groups and written) and written[0] == shift + groups[0] and set(written) >= {shift + b for b in groups}
        )


class _Country:
    """A country calling code's numbers, all its regions together: what an international number is checked against."""

    def __init__(self, code: int) -> None:
        regions = COUNTRY_CODE_TO_REGION_CODE[code]
        plans = [
            PhoneMetadata.metadata_for_nongeo_region(code) if r == _NON_GEOGRAPHIC else _metadata(r) for r in regions
        ]
        self._valid = _valid_by_length(p for p in plans if p is not None)
        main = plans[0]
        prefix = main.national_prefix_for_parsing if main is not None and main.national_prefix else None
        self._trunk = re.compile(prefix) if prefix else None

    def valid(self, number: str) -> bool:
        """The national number after the country code; a trunk prefix written anyway (`+49 (0)30 ...`) is dropped."""
        pattern = self._valid.get(len(number))
        if pattern is not None and pattern.fullmatch(number) is not None:
            return True
        trunk = self._trunk.match(number) if self._trunk is not None else None
        if trunk is None or not trunk.end():
            return False
        pattern = self._valid.get(len(number) - trunk.end())
        return pattern is not None and pattern.fullmatch(number, trunk.end()) is not None


@cache
def _country(code: int) -> _Country:
    return _Country(code)


@cache
def _region(region: str) -> _Region:
    return _Region(region)


def international(digits: str) -> bool:
    """Whether `digits` (after a plus or an exit code) are a country code and a valid number of that country."""
    for length in (1, 2, 3):
        code = int(digits[:length]) if digits[:length].isdigit() and digits[0] != "0" else 0
        if code in COUNTRY_CODE_TO_REGION_CODE:  # country codes are prefix-free: at most one length matches
            return _country(code).valid(digits[length:])
    return False


class NationalNumbers:
    """The national formats of a set of regions, and numbers dialled from them with an exit code (`0049 30 ...`)."""

    def __init__(self, regions: Sequence[str]) -> None:
        codes = [r.upper() for r in dict.fromkeys(regions)]
        self._regions = [_region(code) for code in codes]
        self._exit_codes = ("00", "011") if {"US", "CA"} & set(codes) else ("00",)
        # (first break or 0 for compact digits, number of digits, first digit) -> the regions that may write it.
        self._candidates: dict[tuple[int, int, str], list[_Region]] = {}

    def _regions_for(self, first_break: int, digits: str) -> list[_Region]:
        key = (first_break, len(digits), digits[0])
        regions = self._candidates.get(key)
        if regions is None:
            regions = self._candidates[key] = [
                r
                for r in self._regions
                if key[1] in r.lengths
                and key[2] in r.first_digits
                and (not first_break or first_break in r.first_breaks)
            ]
        return regions

    def compact(self, digits: str) -> bool:
        """Digits written without separators (the caller saw a phone word before them)."""
        return any(r.written(digits, ()) for r in self._regions_for(0, digits)) or self.dialled(digits)

    def grouped(self, digits: str, breaks: Sequence[int]) -> bool:
        """Digits the text splits into groups at `breaks` (offsets into `digits`)."""
        return any(r.written(digits, breaks) for r in self._regions_for(breaks[0], digits))

    def dialling(self, digits: str) -> bool:
        """Whether the digits start with an exit code of these regions (`00`, and `011` in North America)."""
        return digits.startswith(self._exit_codes)

    def dialled(self, digits: str) -> bool:
        """An international number dialled with an exit code (`0049 30 1234567`)."""
        return any(digits.startswith(code) and international(digits[len(code) :]) for code in self._exit_codes)
