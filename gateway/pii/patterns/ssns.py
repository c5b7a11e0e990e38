"""US Social Security numbers: 3-2-4 digits (dashed or spaced), or nine digits after an SSN key or word; never
issued numbers refused: python-stdnum's rules (area 000, 666 or 9xx, group 00, serial 0000, and the numbers once
printed on wallet inserts and in advertisements), applied to the digits alone (nine-digit ids are common, and
stdnum's input cleaning costs more than the scan of the text around them)."""

from __future__ import annotations

SHAPE = (3, 2, 4)
SEPARATORS = frozenset({"-", " ", "\u00a0"})
_NEVER_ISSUED = frozenset({"078051120", "219099999", "457555462"})


def valid(digits: str) -> bool:
    return (
        len(digits) == 9
        and digits[:3] not in ("000", "666")
        and digits[0] != "9"
        and digits[3:5] != "00"
        and digits[5:] != "0000"
        and digits not in _NEVER_ISSUED
    )
