"""IBANs of every country in python-stdnum's IBAN registry, any case, compact or in groups of four: the country's
BBAN structure (so its length) and the ISO 13616 mod-97 checksum.

The registry is compiled once into one regex per country; the checksum is one integer remainder. (stdnum's own
is_valid reads its registry file's tree for every number: 40 us an IBAN, more than the whole scan of its text.)
"""

from __future__ import annotations

import re
import string
from itertools import product

from stdnum import numdb

_REGISTRY = numdb.get("iban")
_KIND = {"n": "[0-9]", "a": "[A-Z]", "c": "[A-Z0-9]"}
_FIELD = re.compile(r"(\d+)!([nac])")


def _structure(country: str) -> re.Pattern[str] | None:
    bban = _REGISTRY.info(country + "00")[0][1].get("bban")
    if not bban:
        return None
    return re.compile("".join(f"{_KIND[kind]}{{{count}}}" for count, kind in _FIELD.findall(bban)))


# Country code -> its BBAN (the IBAN after the country code and check digits), as a regex.
BBAN_STRUCTURES = {
    cc: s for a, b in product(string.ascii_uppercase, repeat=2) if (s := _structure(cc := a + b)) is not None
}
COUNTRIES: tuple[str, ...] = tuple(BBAN_STRUCTURES)
_SPACES = re.compile(r"[ \u00a0]")
# Letters count as 10 (A) to 35 (Z) in the checksum.
_AS_DIGITS = str.maketrans({c: str(10 + i) for i, c in enumerate(string.ascii_uppercase)})
_MIN_LENGTH = 15  # Norway's


def valid(compact: str) -> bool:
    """An IBAN without spaces, upper case."""
    structure = BBAN_STRUCTURES.get(compact[:2])
    if structure is None or not compact[2:4].isdigit() or structure.fullmatch(compact, 4) is None:
        return False
    return int((compact[4:] + compact[:4]).translate(_AS_DIGITS)) % 97 == 1


def end(text: str, start: int, end: int) -> int | None:
    """Where the IBAN written at text[start:end] ends, if it is one. The candidate may have taken a word after a
    spaced IBAN for its last group (`AT26 1076 7286 9950 5383 from`): shorter ones, group by group, are tried."""
    while end - start >= _MIN_LENGTH:
        if valid(_SPACES.sub("", text[start:end]).upper()):
            return end
        space = max(text.rfind(" ", start, end), text.rfind("\u00a0", start, end))
        if space < 0:
            return None
        end = space
    return None
