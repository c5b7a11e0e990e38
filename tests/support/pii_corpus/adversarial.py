"""Inputs built to be slow to scan: long runs of what starts or extends a candidate (digits with separators, at
signs, colons, dots, hex, plus signs, full-width digits), and dense valid entities. Each is one string of exactly
`size` UTF-8 bytes, so a detector's worst case is read as MB/s like its average."""

from __future__ import annotations

UNITS: dict[str, str] = {
    "card-groups": "4111 ",
    "card-dashes": "4111-",
    "digit-run": "1234567890",
    "digit-space": "1 ",
    "digit-dash": "1-",
    "digit-dot": "1.",
    "dots": ".",
    "dotted-quads": "1.2.3.4.",
    "at-signs": "@",
    "local-at": "a@",
    "email-chain": "a@a.",
    "dotted-local": "a.",
    "colons": ":",
    "hex-colons": "ff:",
    "double-colons": "::1:",
    "hex-run": "deadbeef0123456789",
    "plus-signs": "+",
    "plus-digit": "+1 ",
    "brackets": "(1) ",
    "fullwidth-digits": "\uff11\uff12\uff13\uff14 ",
    "fullwidth-run": "\uff11",
    "nbsp-digits": "1\u00a0",
    "iban-groups": "DE89 ",
    "iban-letters": "AB12",
    "mixed-punctuation": "1-2.3/4 5(6)7+",
    "json-numbers": '{"n": 1234567, "t": 12.5}, ',
    "dense-phones": "+1 415 555 0123, ",
    "dense-emails": "ana@example.com ",
    "dense-ips": "10.0.0.1 ",
    "plain-words": "the quick brown fox ",
}


def sized(unit: str, size: int) -> str:
    """`unit` repeated to exactly `size` UTF-8 bytes (cut on a character boundary, padded with spaces)."""
    text = unit * (size // len(unit.encode()) + 1)
    while len(text.encode()) > size:
        text = text[: -max(1, (len(text.encode()) - size) // 3)]
    return text + " " * (size - len(text.encode()))


def adversarial_inputs(size: int = 32 * 1024) -> dict[str, str]:
    return {name: sized(unit, size) for name, unit in UNITS.items()}
