"""The built-in detector's work grows linearly with its input, crafted inputs included.

Work is counted, not timed: the scanner (native/pii-scan) counts every character its loops read and every regex
call it makes, as long as that call's input (the regex crate matches in linear time), which gives the same count on
every run. Doubling a crafted value may at most double that work (2.5x with slack), and no value costs more than a
fixed amount of work per character. These inputs are scanned here at 32 KiB, the largest value the gateway scans on
its event loop.
"""

from __future__ import annotations

import phonenumbers
import pytest
from mcpexec_pii_scan import Scanner

from gateway.pii.detectors import scanner_metadata
from mcpexec.api.pii import BUILTIN_ENTITIES, DEFAULT_PHONE_REGIONS

ENTITIES = {e.value for e in BUILTIN_ENTITIES}
SCANNER = Scanner(scanner_metadata(), DEFAULT_PHONE_REGIONS, ENTITIES)
HALF = 16 * 1024
# A constant, whatever the region set: measured at most 88 (the default regions, on mixed separators where no
# region's number fits and every group is tried), 120 with 16 more regions, 57 for all 245.
MOST_WORK_PER_CHARACTER = 150

# Units repeated into values that reach every branch of the scan and every reader: long digit runs of one or of
# mixed separators, dotted quads, many at-signs and colons, hex, IBAN and phone starts, escapes, full-width digits.
CRAFTED = [
    "4111 ", "1", "1 ", "00 ", "1-", "1/2/", "1.1.1.1.", "10.0.0.1 ", "2024-01-02 ", "12 34-56.78/90(12)34 ",
    "a@", "a@b.cd ", "a%40b.cd&", "a\\u0040b.cd ", ":", "1:", "a:", "::1 ", "1::", "0123456789abcdef", "+1 ", "(",
    "(1", "%2B1", "DE89", "DE89 3704 ", "de89370400440532013000 ", "phone 0301234567 ", "+49 30 1234567 ",
    "0049 30 123456 ", "4111111111111111 ", "536-90-4399 ", "\\n", "\uff11 ", "ORD-2025-",
]  # fmt: skip


def _repeated(unit: str, length: int) -> str:
    return (unit * (length // len(unit) + 1))[:length]


def test_the_counter_counts() -> None:
    assert SCANNER.work("call +49 30 1234567 or ana@example.com") > SCANNER.work("nothing to see") > 0


@pytest.mark.parametrize("unit", CRAFTED)
def test_doubling_a_crafted_value_at_most_doubles_the_work(unit: str) -> None:
    _assert_linear(_repeated(unit, HALF), _repeated(unit, 2 * HALF))


@pytest.mark.parametrize(("head", "unit", "tail"), [("x@", "ab.", "1"), ("+", "1 ", "x"), ("de89", " 3704", " from")])
def test_one_long_candidate_costs_linear_work(head: str, unit: str, tail: str) -> None:
    """A single candidate as long as the value: an email's domain of thousands of labels and no top-level domain, a
    run of thousands of groups after a plus sign, an IBAN's groups that never end."""
    _assert_linear(head + _repeated(unit, HALF) + tail, head + _repeated(unit, 2 * HALF) + tail)


_EXTRA_REGIONS = sorted(phonenumbers.SUPPORTED_REGIONS - set(DEFAULT_PHONE_REGIONS))


@pytest.mark.parametrize("extra", [16, 64, len(_EXTRA_REGIONS)])
def test_regions_a_task_adds_do_not_raise_the_work_per_character(extra: int) -> None:
    """Tasks and servers add phone regions: whatever they add, the worst shape found stays linear and within the same
    bound per character (the regions' metadata is compiled when the scanner is built, outside the count)."""
    scanner = Scanner(scanner_metadata(), [*DEFAULT_PHONE_REGIONS, *_EXTRA_REGIONS[:extra]], ENTITIES)
    unit = "12 34-56.78/90(12)34 "
    _assert_linear(_repeated(unit, HALF), _repeated(unit, 2 * HALF), scanner)


def _assert_linear(half_text: str, full_text: str, scanner: Scanner = SCANNER) -> None:
    half, full = scanner.work(half_text), scanner.work(full_text)
    assert full <= 2.5 * half + 100, (half, full)
    assert full <= MOST_WORK_PER_CHARACTER * len(full_text), full
