"""The words that say what a bare number is: a phone key or word before compact national digits, an SSN key or word
before nine digits, a version word before a dotted quad. Nothing else tells `0301234567` or `613288261` from the
order numbers, counters and ids that look the same; with the word they are what it says.

The word must come right before the number: at most a few characters between, and no digit (in `"phone": "+49 30
1234", "ts": 1712345678` the phone word belongs to the phone, not to the timestamp after it).
"""

from __future__ import annotations

import re

_WINDOW = 40
_BETWEEN = r"[^\d\n]{0,16}\Z"

_PHONE_WORDS = (
    r"phone|tel|cell|fax|call|sms|whatsapp|msisdn|handy|telefon\w*|rufnummer|mobil\w*|t[ée]l[ée]phone|"
    r"t[ée]l|portable|tel[ée]fono|tfno|m[óo]vil|celular|cellulare|telem[óo]vel|telefone|telefoon\w*|mobiel|"
    r"kom[óo]rka|电话|電話|手机|手機|携帯|전화|휴대폰|연락처|телефон|тел"
)
_SSN_WORDS = r"ssn|social[\s_-]*security(?:[\s_-]*(?:number|no))?|soc\.?\s*sec\.?"


# Lower case: matched in the lowered text, where the engine skips straight to the words' first letters.
_PHONE = re.compile(rf"(?:{_PHONE_WORDS}){_BETWEEN}")
_SSN = re.compile(rf"(?:{_SSN_WORDS}){_BETWEEN}")
_VERSION = re.compile(r"(?:version|ver\.)[\s:=(\"'v/]{0,4}\Z")


def _before(pattern: re.Pattern[str], text: str, at: int) -> bool:
    """Whether the pattern ends at `at`, its word not inside a longer word ("hotel", "recall") unless as a camelCase
    key's part (oncallPhone, customerSSN)."""
    window = text[max(0, at - _WINDOW) : at]
    lowered = window.lower()
    if len(lowered) != len(window):  # a letter whose lower case is longer (İ): rare enough to skip
        return False
    found = pattern.search(lowered)
    while found is not None:
        start = found.start()
        before = window[start - 1] if start else ""
        if not ("a" <= before.lower() <= "z") or (before.islower() and window[start].isupper()):
            return True
        found = pattern.search(lowered, start + 1)
    return False


def says_phone(text: str, at: int) -> bool:
    return _before(_PHONE, text, at)


def says_ssn(text: str, at: int) -> bool:
    return _before(_SSN, text, at)


def says_version(text: str, at: int) -> bool:
    return _before(_VERSION, text, at)
