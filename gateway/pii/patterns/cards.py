"""Payment card numbers: a card brand's issuer range (IIN) and length, then the Luhn checksum.

Luhn alone passes one digit run in ten: epoch milliseconds, IMEIs, ISBNs and EANs, loyalty references. Every card
scheme issues from its own prefixes with its own lengths, and those prefixes exclude all of these (1, 7, 9, the
GS1 prefixes 0, 76-99), so a run must fit one before its checksum is looked at.
"""

from __future__ import annotations

# (lowest prefix, highest prefix, lengths): the prefixes have the same number of digits.
_BRANDS: tuple[tuple[str, str, frozenset[int]], ...] = (
    ("4", "4", frozenset({13, 16, 19})),  # Visa
    ("51", "55", frozenset({16})),  # Mastercard
    ("2221", "2720", frozenset({16})),  # Mastercard 2-series
    ("2200", "2204", frozenset({16, 17, 18, 19})),  # Mir
    ("34", "34", frozenset({15})),  # American Express
    ("37", "37", frozenset({15})),
    ("300", "305", frozenset({14, 15, 16, 17, 18, 19})),  # Diners Club
    ("36", "36", frozenset({14, 15, 16, 17, 18, 19})),
    ("38", "39", frozenset({14, 15, 16, 17, 18, 19})),
    ("3528", "3589", frozenset({16, 17, 18, 19})),  # JCB
    ("6011", "6011", frozenset({16, 17, 18, 19})),  # Discover
    ("644", "649", frozenset({16, 17, 18, 19})),
    ("65", "65", frozenset({16, 17, 18, 19})),
    ("62", "62", frozenset({16, 17, 18, 19})),  # UnionPay
    ("50", "50", frozenset({16, 17, 18, 19})),  # Maestro (its rare 12-15 digit numbers collide with EAN-13s)
    ("56", "69", frozenset({16, 17, 18, 19})),
)
# How cards are printed: groups of four (the last shorter), or 4-6-5 (15 digits), 4-6-4 (14), 4-4-5 and 4-3-3-3 (13).
_SPLIT_GROUPINGS = frozenset({(4, 6, 5), (4, 6, 4), (4, 4, 5), (4, 3, 3, 3)})
MIN_DIGITS, MAX_DIGITS = 13, 19
_DOUBLED = str.maketrans("0123456789", "0246813579")


_BY_FIRST_DIGIT = {d: [b for b in _BRANDS if b[0][0] <= d <= b[1][0]] for d in "0123456789"}


def luhn(digits: str) -> bool:
    """The Luhn checksum: every second digit from the right doubled (its digits summed). Summing bytes: the digits'
    codes less 48 each."""
    odd, even = digits[-1::-2], digits[-2::-2].translate(_DOUBLED)
    return (sum(odd.encode()) + sum(even.encode()) - 48 * len(digits)) % 10 == 0


def branded(digits: str) -> bool:
    """Whether a card brand issues numbers of this length from this prefix."""
    return any(
        len(digits) in lengths and low <= digits[: len(low)] <= high
        for low, high, lengths in _BY_FIRST_DIGIT.get(digits[0], ())
    )


def printed(sizes: tuple[int, ...]) -> bool:
    """Whether digit groups of these sizes are how a card number is printed (or one compact run)."""
    if len(sizes) == 1:
        return True
    return sizes in _SPLIT_GROUPINGS or (all(s == 4 for s in sizes[:-1]) and 1 <= sizes[-1] <= 4)


def card(digits: str, sizes: tuple[int, ...]) -> bool:
    return MIN_DIGITS <= len(digits) <= MAX_DIGITS and printed(sizes) and branded(digits) and luhn(digits)
