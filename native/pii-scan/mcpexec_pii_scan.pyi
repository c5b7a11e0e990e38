"""mcpexec's built-in PII detector (native/pii-scan, Rust): one linear-time candidate scan, then its validators.
Offsets are `str` offsets (code points)."""

from collections.abc import Sequence
from typing import Final

from phonenumbers import PhoneMetadata

# The fewest digits of any value the scan reads from a digit run.
MIN_DIGITS: Final[int]

class Metadata:
    """What the scanners check against, built once per process: phonenumbers' metadata of every region and
    non-geographic country code, its country code -> regions table, each IBAN country's BBAN format (stdnum's
    registry, `8!n10!n`), and `unicodedata.unidata_version`: characters are digits and letters as for Python's `re`
    (one version per process: ValueError for another, or for one newer than the scanner's tables)."""

    def __init__(
        self,
        regions: dict[str, PhoneMetadata | None],
        non_geographic: dict[int, PhoneMetadata | None],
        country_regions: dict[int, tuple[str, ...]],
        bban_formats: dict[str, str],
        unicode_version: str,
    ) -> None: ...
    def bban_patterns(self) -> dict[str, str]:
        """Each IBAN country's BBAN structure as a regex, by country code."""
    def iban_valid(self, compact: str) -> bool:
        """An IBAN without spaces, upper case: its country's BBAN structure and its checksum."""
    def iban_end(self, text: str, start: int, end: int) -> int | None:
        """Where the IBAN written at text[start:end] ends, if it is one (a word after it may have been taken for a
        group)."""

class Scanner:
    """The built-in detector for a set of phone regions (ISO 3166 codes; ValueError for one without metadata) and the
    entities to report (PiiEntity values; others are ignored)."""

    def __init__(self, metadata: Metadata, phone_regions: Sequence[str], entities: set[str] | frozenset[str]) -> None: ...
    def find(self, text: str) -> tuple[list[tuple[int, int, str]], bool]:
        """The entities in `text` as (start, end, entity), sorted, and whether any two of them overlap (an email's
        local part read back over digits that were also a phone number: rare)."""
    def work(self, text: str) -> int:
        """The work a scan of `text` does (characters its loops read, regex calls over their input): the same on
        every run, for the linear-time test."""

def luhn(digits: str) -> bool:
    """The Luhn checksum of ASCII digits (ValueError for anything else)."""

def ssn_valid(digits: str) -> bool:
    """Whether nine ASCII digits are an SSN that may have been issued."""

def ipv6_grammar(text: str) -> bool:
    """Whether `text` is an IPv6 address in one of RFC 4291's text forms."""
