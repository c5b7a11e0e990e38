"""Valid PII values, written in the forms real text uses.

Every value is checked where it is made: phones by phonenumbers (valid for their country, from its example
numbers with the subscriber digits redrawn), IBANs and SSNs by python-stdnum, cards by Luhn on a brand's IIN.
"""

from __future__ import annotations

import ipaddress
import random
import re
import unicodedata
from urllib.parse import quote, quote_plus, unquote_plus

import phonenumbers
from phonenumbers import PhoneNumberFormat, PhoneNumberType
from stdnum import iban, luhn, numdb
from stdnum.es import ccc
from stdnum.us import ssn

from tests.support.pii_corpus.locales import Person
from tests.support.pii_corpus.model import Pii

EMAIL, PHONE, CARD, SSN, IBAN, IP = "EMAIL", "PHONE", "CREDIT_CARD", "US_SSN", "IBAN", "IP_ADDRESS"


def _digits(r: random.Random, n: int) -> str:
    return "".join(r.choice("0123456789") for _ in range(n))


# --- email -------------------------------------------------------------------------------------------------------


def email(r: random.Random, who: Person, form: str = "plain", domain: str | None = None) -> Pii:
    """Forms: plain, uppercase, plus-tag, url-encoded (the form-post spelling: %40, %2B, %27)."""
    first, last = who.ascii_first, who.ascii_last
    local = r.choice(
        [
            f"{first}.{last}",
            f"{first[0]}{last}",
            f"{first}_{last}",
            f"{last}.{first}",
            f"{first}{r.randint(1, 99)}",
            f"{first}.{last}{r.randint(60, 99)}",
            f"{first[0]}.{last}",
        ]
    )
    if form == "plus-tag":
        local += "+" + r.choice(["news", "shop", "billing", "2024"])
    address = f"{local}@{domain or r.choice(who.locale.mail_domains)}"
    apostrophe = "'" in address
    if form == "uppercase":
        address = address.upper()
    elif form == "url-encoded":
        address = quote(address if r.random() < 0.5 else address.upper(), safe=".-_")
    return Pii(address, EMAIL, "apostrophe" if apostrophe and form == "plain" else form)


# --- phone -------------------------------------------------------------------------------------------------------

PHONE_COUNTRIES = (
    "US",
    "CA",
    "GB",
    "IE",
    "AU",
    "IN",
    "SG",
    "ZA",
    "DE",
    "AT",
    "CH",
    "FR",
    "BE",
    "ES",
    "MX",
    "AR",
    "IT",
    "NL",
    "PL",
    "SE",
    "PT",
    "BR",
    "JP",
    "CN",
    "KR",
)
_PERSONAL = (PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE, PhoneNumberType.FIXED_LINE_OR_MOBILE)
# Digits, hyphen and plus as East Asian input methods type them (U+FF10-FF19, U+FF0D, U+FF0B).
_FULLWIDTH = str.maketrans("0123456789-+", "".join(chr(0xFF10 + d) for d in range(10)) + "\uff0d\uff0b")


def phone_number(r: random.Random, country: str, luhn_valid: bool = False) -> phonenumbers.PhoneNumber:
    """A valid mobile or fixed-line number: the country's example number with digits after its first redrawn
    until phonenumbers accepts it (a few tries), else only its last four. `luhn_valid`: a mobile number whose
    digits with the country code are 13-19 and pass Luhn, as a card number's do."""
    kind = PhoneNumberType.MOBILE if luhn_valid else r.choice((PhoneNumberType.MOBILE, PhoneNumberType.FIXED_LINE))
    example = phonenumbers.example_number_for_type(country, kind)
    if example is None:
        raise ValueError(f"phonenumbers has no example {kind} number for {country}")
    nsn = phonenumbers.national_significant_number(example)
    code = example.country_code
    for attempt in range(2000):
        keep = 1 if attempt < 400 else len(nsn) - 4
        candidate = phonenumbers.parse(f"+{code}{nsn[:keep]}{_digits(r, len(nsn) - keep)}")
        if (
            phonenumbers.is_valid_number(candidate)
            and phonenumbers.region_code_for_number(candidate) == country
            and phonenumbers.number_type(candidate) in _PERSONAL
            and (not luhn_valid or _card_like(f"{code}{phonenumbers.national_significant_number(candidate)}"))
        ):
            return candidate
    raise AssertionError(f"no valid {country} number drawn")


def _card_like(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and luhn.is_valid(digits)


def card_like_phone(r: random.Random) -> Pii:
    """A mobile number in E.164 whose 13 digits pass Luhn (+4915146734012): a phone, though a card's checks pass."""
    return phone(r, r.choice(["DE", "BR", "CN", "AR"]), "e164", luhn_valid=True)


def phone_forms(country: str) -> tuple[str, ...]:
    """The ways a country's numbers are written (each checked to parse back in phone())."""
    forms = ["e164", "international", "national", "national", "nbsp"]
    if country not in ("US", "CA"):
        forms += ["exit-code"]
    if country in ("DE", "AT", "CH", "GB", "NL", "BE", "IE"):
        forms += ["trunk-bracket"]
    if country in ("DE", "AT"):
        forms += ["slash"]
    if country in ("FR", "BE", "US", "CA"):
        forms += ["dotted"]
    if country in ("US", "CA"):
        forms += ["intl-bracket"]
    if country in ("JP", "CN", "KR"):
        forms += ["fullwidth"]
    return tuple(forms)


def phone(
    r: random.Random,
    country: str,
    form: str | None = None,
    luhn_valid: bool = False,
    number: phonenumbers.PhoneNumber | None = None,
) -> Pii:
    """Forms: e164 (+4930123456), international (+49 30 123456), national (030 123456, (11) 96123-4567),
    nbsp (separators are U+00A0), exit-code (0049 30 123456), trunk-bracket (+49 (0)30 123456), slash (030/123456),
    dotted (06.12.34.56.78), intl-bracket (+1 (201) 555-0123), fullwidth (the digits, hyphens and plus of
    U+FF10-FF19, FF0D, FF0B), compact
    (national digits only: written only where a key or word says it is a phone), url-encoded (%2B49+30+123456).

    Only numbers that read back as themselves are written (an Argentine national number holding "15" does not).
    `number` writes a given number (the same one twice, as a link and its text), in its international form if it
    does not read back in `form`."""
    form = form or r.choice(phone_forms(country))
    for _ in range(100):
        drawn = number or phone_number(r, country, luhn_valid)
        text = _written(r, drawn, form)
        if _reads_back(text, form, country, drawn):
            return Pii(text, PHONE, form, country, "luhn-valid-digits" if luhn_valid else "")
        if number:
            return phone(r, country, "international", luhn_valid, number)
    raise AssertionError(f"no {country} number reads back in the {form} form")


def _written(r: random.Random, number: phonenumbers.PhoneNumber, form: str) -> str:
    intl = phonenumbers.format_number(number, PhoneNumberFormat.INTERNATIONAL)
    national = phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)
    e164 = phonenumbers.format_number(number, PhoneNumberFormat.E164)
    cc = f"+{number.country_code}"
    rest = intl[len(cc) + 1 :]
    if form == "nbsp":  # the international form when the national one has no space to replace
        return (national if " " in national and r.random() < 0.5 else intl).replace(" ", "\u00a0")
    return {
        "e164": lambda: e164,
        "international": lambda: intl,
        "national": lambda: national,
        "exit-code": lambda: "00" + intl[1:],
        "trunk-bracket": lambda: f"{cc} (0){rest}",
        "slash": lambda: national.replace(" ", "/", 1),
        "dotted": lambda: national.replace("(", "").replace(") ", ".").replace(" ", ".").replace("-", "."),
        "intl-bracket": lambda: f"{cc} ({rest[:3]}) {rest[4:]}",
        "fullwidth": lambda: (intl if r.random() < 0.3 else national).translate(_FULLWIDTH),
        "compact": lambda: "".join(c for c in national if c.isdigit()),
        "url-encoded": lambda: quote_plus(intl if r.random() < 0.7 else e164),
    }[form]()


def _reads_back(text: str, form: str, country: str, number: phonenumbers.PhoneNumber) -> bool:
    """Whether a reader in `country` gets `number` back from the text (form-decoded, full-width made ASCII)."""
    plain = unicodedata.normalize("NFKC", unquote_plus(text) if form == "url-encoded" else text)
    try:
        parsed = phonenumbers.parse("+" + plain[2:] if plain.startswith("00") else plain, country)
    except phonenumbers.NumberParseException:
        return False
    e164 = PhoneNumberFormat.E164
    return phonenumbers.format_number(parsed, e164) == phonenumbers.format_number(number, e164)


# --- payment card ------------------------------------------------------------------------------------------------

# Brand IINs (prefixes) and lengths. A Luhn-valid digit run outside these is no card (an IMEI, a reference).
BRANDS: dict[str, tuple[tuple[str, ...], tuple[int, ...]]] = {
    "visa": (("4",), (16, 16, 16, 13, 19)),
    "mastercard": (("51", "52", "53", "54", "55", "2221", "2300", "2517", "2720"), (16,)),
    "amex": (("34", "37"), (15,)),
    "discover": (("6011", "644", "649", "65"), (16,)),
    "jcb": (("3528", "3540", "3566", "3589"), (16,)),
    "diners": (("300", "305", "36", "38"), (14,)),
    "unionpay": (("62",), (16, 19)),
    "maestro": (("5018", "5020", "6304", "6759"), (16, 19)),
}
CARD_PREFIXES = tuple(p for prefixes, _ in BRANDS.values() for p in prefixes)


def luhn_complete(r: random.Random, prefix: str, length: int) -> str:
    body = prefix + _digits(r, length - len(prefix) - 1)
    return body + luhn.calc_check_digit(body)


def group(digits: str, separator: str) -> str:
    """Cards are printed 4-4-4-4 (4-6-5 for 15 digits, 4-6-4 for 14, 4-4-4-4-3 for 19, 4-4-5 for 13)."""
    sizes = {13: (4, 4, 5), 14: (4, 6, 4), 15: (4, 6, 5), 19: (4, 4, 4, 4, 3)}.get(len(digits), (4, 4, 4, 4))
    parts, at = [], 0
    for size in sizes:
        parts.append(digits[at : at + size])
        at += size
    return separator.join(parts)


def card(r: random.Random, form: str | None = None) -> Pii:
    """Forms: compact, spaced, dashed, url-encoded (spaces as +: 4266+7607+4871+3187)."""
    prefixes, lengths = BRANDS[r.choice(list(BRANDS))]
    digits = luhn_complete(r, r.choice(prefixes), r.choice(lengths))
    form = form or ("compact" if len(digits) == 13 else r.choice(["compact", "spaced", "spaced", "dashed"]))
    separator = {"compact": "", "spaced": " ", "dashed": "-", "url-encoded": "+"}[form]
    return Pii(group(digits, separator) if separator else digits, CARD, form)


# --- US SSN ------------------------------------------------------------------------------------------------------


def ssn_digits(r: random.Random) -> str:
    while True:
        area = r.randint(1, 899)
        digits = f"{area:03d}{r.randint(1, 99):02d}{r.randint(1, 9999):04d}"
        if area != 666 and ssn.is_valid(digits):
            return digits


def us_ssn(r: random.Random, form: str | None = None) -> Pii:
    """Forms: dashed (437-68-8725), spaced (437 68 8725), compact (613288261: only written next to an SSN key or
    word, as nothing else tells nine digits apart from any other number)."""
    digits = ssn_digits(r)
    form = form or r.choice(["dashed", "dashed", "spaced"])
    separator = {"dashed": "-", "spaced": " ", "compact": ""}[form]
    return Pii(separator.join((digits[:3], digits[3:5], digits[5:])), SSN, form)


# --- IBAN --------------------------------------------------------------------------------------------------------

IBAN_COUNTRIES = (
    "DE",
    "FR",
    "GB",
    "ES",
    "IT",
    "NL",
    "BE",
    "CH",
    "AT",
    "PL",
    "PT",
    "IE",
    "SE",
    "DK",
    "FI",
    "NO",
    "LU",
    "CZ",
    "GR",
    "TR",
    "BR",
    "SA",
    "AE",
    "HU",
    "RO",
)
_IBAN_DB = numdb.get("iban")
# Alphanumeric account fields hold digits in practice (French, Italian, Saudi accounts): drawn as digits.
_CHARS = {"n": "0123456789", "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "c": "0123456789"}


_STRUCTURE = re.compile(r"(\d+)!([nac])")


def _bban(r: random.Random, structure: str) -> str:
    """A BBAN from its registry structure ("8!n10!n": 8 digits, then 10)."""
    return "".join(
        "".join(r.choice(_CHARS[kind]) for _ in range(int(count))) for count, kind in _STRUCTURE.findall(structure)
    )


def _national_checks(country: str, bban: str) -> str:
    """Belgian and Spanish accounts carry their own check digits (computed here rather than drawn for)."""
    if country == "BE":
        return f"{bban[:10]}{int(bban[:10]) % 97 or 97:02d}"
    if country == "ES":
        return f"{bban[:8]}{ccc.calc_check_digits(bban)}{bban[10:]}"
    return bban


def iban_compact(r: random.Random, country: str) -> str:
    structure = _IBAN_DB.info(country)[0][1]["bban"]
    for _ in range(200):  # Norway's mod-11 account check: about 1 in 11 draws passes
        bban = _national_checks(country, _bban(r, structure))
        number = f"{country}{iban.calc_check_digits(country + '00' + bban)}{bban}"
        if iban.is_valid(number):
            return number
    raise AssertionError(f"no valid {country} IBAN drawn")


def iban_value(r: random.Random, country: str | None = None, form: str | None = None) -> Pii:
    """Forms: compact, spaced (groups of four, the printed form), lowercase (spaced or compact)."""
    country = country or r.choice(IBAN_COUNTRIES)
    number = iban_compact(r, country)
    form = form or r.choice(["compact", "spaced", "spaced", "lowercase"])
    text = number if form == "compact" else iban.format(number)
    if form == "lowercase":
        text = (text if r.random() < 0.5 else number).lower()
    return Pii(text, IBAN, form, country)


# --- IP address --------------------------------------------------------------------------------------------------

_V6_PREFIXES = ("2001:db8", "2a00:1450", "2606:4700", "2a02:8109", "2600:1f18", "2a01:4f8", "fd12:3456", "fe80:0")


def ipv4_text(r: random.Random, private: bool | None = None) -> str:
    if private if private is not None else r.random() < 0.4:
        return r.choice(
            [
                f"10.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
                f"192.168.{r.randint(0, 255)}.{r.randint(1, 254)}",
                f"172.{r.randint(16, 31)}.{r.randint(0, 255)}.{r.randint(1, 254)}",
            ]
        )
    first = r.choice([r.randint(1, 126), r.randint(128, 223)])
    return f"{first}.{r.randint(0, 255)}.{r.randint(0, 255)}.{r.randint(1, 254)}"


def ipv6_text(r: random.Random, full: bool = False) -> str:
    groups = _V6_PREFIXES[r.randrange(len(_V6_PREFIXES))].split(":")
    while len(groups) < 8:
        groups.append("0" if r.random() < 0.3 else f"{r.randint(0, 0xFFFF):x}")
    address = ipaddress.IPv6Address(":".join(groups))
    return address.exploded if full else address.compressed


def ip(r: random.Random, form: str | None = None) -> Pii:
    """Forms: v4, v6 (compressed), v6-full, v6-upper, v6-mapped (::ffff:10.0.0.1)."""
    form = form or r.choice(["v4", "v4", "v4", "v4", "v6", "v6", "v6-full", "v6-upper", "v6-mapped"])
    text = {
        "v4": lambda: ipv4_text(r),
        "v6": lambda: ipv6_text(r),
        "v6-full": lambda: ipv6_text(r, full=True),
        "v6-upper": lambda: ipv6_text(r).upper(),
        "v6-mapped": lambda: "::ffff:" + ipv4_text(r),
    }[form]()
    return Pii(text, IP, form)
