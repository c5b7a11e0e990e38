"""Look-alikes: text a pattern detector may take for PII but which is none. Each has a kind (what it is) and the
entity it resembles, so a false positive is reported by its cause.

Numbers that pass a checksum by design (IMEIs, Luhn-valid references without a card brand's IIN, ISBNs, EANs) are
the hard ones: the checksum alone does not tell them from cards.
"""

from __future__ import annotations

import random
import uuid

from stdnum import ean, isbn, luhn

from tests.support.pii_corpus.model import Alike
from tests.support.pii_corpus.values import (
    BRANDS,
    CARD,
    CARD_PREFIXES,
    EMAIL,
    IBAN,
    IBAN_COUNTRIES,
    IP,
    PHONE,
    SSN,
    group,
    iban_compact,
    luhn_complete,
)

_HEX = "0123456789abcdef"


def _digits(r: random.Random, n: int, first: str = "123456789") -> str:
    return r.choice(first) + "".join(r.choice("0123456789") for _ in range(n - 1))


def _hex(r: random.Random, n: int) -> str:
    return "".join(r.choice(_HEX) for _ in range(n))


# --- references and counters (resemble phones, SSNs, cards) ------------------------------------------------------


def year_sequence_id(r: random.Random) -> Alike:
    prefix = r.choice(["ORD", "INV", "RMA", "PO", "TKT", "CASE", "RE", "FAC"])
    tail = r.choice([f"{r.randint(0, 999999):06d}", f"{r.randint(1, 12):02d}-{r.randint(0, 9999):04d}"])
    return Alike(f"{prefix}-{r.randint(2019, 2026)}-{tail}", "year-sequence-id", PHONE)


def order_ref(r: random.Random) -> Alike:
    return Alike(_digits(r, r.randint(10, 12)), "order-ref", PHONE)


def order_hash(r: random.Random) -> Alike:
    """`#123456`: an order number written after a phone number (no extension)."""
    return Alike(f"#{_digits(r, 6)}", "order-hash", PHONE)


def customer_id(r: random.Random) -> Alike:
    return Alike(_digits(r, r.randint(6, 9)), "customer-id", PHONE)


def nine_digit_id(r: random.Random) -> Alike:
    """Nine digits with no SSN key or word near them (a member number, an ABA routing number)."""
    return Alike(_digits(r, 9, "0123456789"), "nine-digit-id", SSN)


def tracking_number(r: random.Random) -> Alike:
    carrier = r.choice(["ups", "usps", "fedex"])
    if carrier == "ups":
        text = f"1Z{''.join(r.choice('0123456789ABCDEFGHJKLMNPRSTUVWXYZ') for _ in range(6))}{_digits(r, 10, '0123')}"
    elif carrier == "usps":
        digits = "94" + _digits(r, 20, "0")
        text = " ".join(digits[i : i + 4] for i in range(0, 22, 4)) if r.random() < 0.5 else digits
    else:
        text = _digits(r, 12, "27")
    return Alike(text, f"tracking-{carrier}", CARD if carrier != "fedex" else PHONE)


def byte_count(r: random.Random) -> Alike:
    return Alike(str(int(10 ** r.uniform(4, 13))), "byte-count", PHONE)


def aws_account_id(r: random.Random) -> Alike:
    return Alike(_digits(r, 12), "aws-account-id", PHONE)


def epoch(r: random.Random, millis: bool | None = None) -> Alike:
    seconds = r.randint(1_600_000_000, 1_790_000_000)
    if millis if millis is not None else r.random() < 0.5:
        return Alike(f"{seconds}{r.randint(0, 999):03d}", "epoch-ms", PHONE)
    return Alike(str(seconds), "epoch-s", PHONE)


def ldap_timestamp(r: random.Random) -> Alike:
    """Windows FILETIME (100 ns since 1601): 18 digits in AD's lastLogon, pwdLastSet, accountExpires."""
    return Alike(str(r.randint(133_000_000_000_000_000, 134_200_000_000_000_000)), "ldap-timestamp", CARD)


def isbn13(r: random.Random) -> Alike:
    body = r.choice(["978", "979"]) + _digits(r, 9, "0123456789")
    number = body + ean.calc_check_digit(body)  # an ISBN-13 is an EAN-13
    text = isbn.format(number) if r.random() < 0.5 else number
    return Alike(text, "isbn-13", CARD)


def ean13(r: random.Random) -> Alike:
    """A product barcode from a GS1 prefix outside the card brands' IINs (US/CA, CH, IT, ES, NL, AT, AU)."""
    body = r.choice(["0", "76", "80", "84", "87", "90", "93"])
    body += _digits(r, 12 - len(body), "0123456789")
    return Alike(body + ean.calc_check_digit(body), "ean-13", CARD)


def imei(r: random.Random) -> Alike:
    """15 digits that pass Luhn by design, TAC first: a phone's IMEI, no card."""
    return Alike(luhn_complete(r, r.choice(["35", "86", "01", "99"]), 15), "imei", CARD)


def luhn_no_iin(r: random.Random) -> Alike:
    """13-19 digits that pass Luhn but start outside every card brand's IIN (a loyalty or gift-card reference)."""
    while True:
        digits = luhn_complete(r, r.choice("0789"), r.choice([13, 16, 16, 18, 19]))
        if not digits.startswith(CARD_PREFIXES):
            return Alike(digits, "luhn-valid-no-iin", CARD)


def luhn_invalid_card(r: random.Random) -> Alike:
    prefixes, lengths = BRANDS[r.choice(list(BRANDS))]
    digits = luhn_complete(r, r.choice(prefixes), r.choice(lengths))
    digits = digits[:-1] + str((int(digits[-1]) + r.randint(1, 9)) % 10)
    text = group(digits, r.choice([" ", "-"])) if len(digits) != 13 and r.random() < 0.5 else digits
    assert not luhn.is_valid(digits)
    return Alike(text, "luhn-invalid-card", CARD)


def masked_card(r: random.Random) -> Alike:
    last4 = _digits(r, 4, "0123456789")
    text = r.choice([f"**** **** **** {last4}", f"XXXX-XXXX-XXXX-{last4}", f"411111******{last4}", f"•••• {last4}"])
    return Alike(text, "masked-card", CARD)


def hex_address(r: random.Random) -> Alike:
    return Alike(f"0x7f{_hex(r, 10)}", "hex-address", PHONE)


# --- identifiers (digit runs inside hex) -------------------------------------------------------------------------


def uuid_text(r: random.Random) -> Alike:
    """A UUID, often with a long digit run in its last group (446655440000) as real ones have one in four times."""
    value = uuid.UUID(int=r.getrandbits(128), version=4)
    text = str(value)
    if r.random() < 0.5:
        text = text[:24] + _digits(r, 12, "0123456789")
    return Alike(text, "uuid", PHONE)


def hex_id(r: random.Random, length: int | None = None, upper: bool = False) -> Alike:
    text = _hex(r, length or r.choice([16, 24, 32]))
    return Alike(text.upper() if upper else text, "hex-id", PHONE)


def git_sha(r: random.Random, short: bool = False) -> Alike:
    return Alike(_hex(r, r.choice([7, 8, 10, 12]) if short else 40), "git-sha", PHONE)


# --- bank lookalikes ---------------------------------------------------------------------------------------------


def invalid_iban(r: random.Random) -> Alike:
    """An IBAN whose check digits are wrong (a typo, a test value): no IBAN, and its digits are no phone either."""
    number = iban_compact(r, r.choice(IBAN_COUNTRIES))
    check = r.choice([c for c in range(2, 99) if c != int(number[2:4])])
    number = f"{number[:2]}{check:02d}{number[4:]}"
    text = " ".join(number[i : i + 4] for i in range(0, len(number), 4)) if r.random() < 0.5 else number
    return Alike(text, "invalid-iban", IBAN)


def vat_id(r: random.Random) -> Alike:
    text = r.choice(
        [
            f"DE{_digits(r, 9)}",
            f"FR{r.randint(10, 99)}{_digits(r, 9)}",
            f"ATU{_digits(r, 8)}",
            f"GB{_digits(r, 9)}",
            f"ESB{_digits(r, 8)}",
            f"NL{_digits(r, 9)}B01",
            f"IT{_digits(r, 11, '0')}",
        ]
    )
    return Alike(text, "vat-id", IBAN)


def bic(r: random.Random) -> Alike:
    text = r.choice(["DEUTDEFF", "COBADEFFXXX", "BNPAFRPP", "NWBKGB2L", "BSCHESMM", "INGBNL2A", "UBSWCHZH80A"])
    return Alike(text, "bic", IBAN)


# --- SSN-shaped --------------------------------------------------------------------------------------------------


def invalid_ssn(r: random.Random) -> Alike:
    """Never issued: area 000, 666 or 9xx (ITINs), group 00 or serial 0000."""
    area, grp, serial = f"{r.randint(1, 899):03d}", f"{r.randint(1, 99):02d}", f"{r.randint(1, 9999):04d}"
    broken = r.choice(["area0", "area666", "area9", "group", "serial"])
    area = {"area0": "000", "area666": "666", "area9": f"9{r.randint(0, 99):02d}"}.get(broken, area)
    grp, serial = ("00" if broken == "group" else grp), ("0000" if broken == "serial" else serial)
    return Alike(f"{area}-{grp}-{serial}", "invalid-ssn", SSN)


def zip_plus4(r: random.Random) -> Alike:
    return Alike(f"{r.randint(10000, 99950)}-{r.randint(1, 9999):04d}", "zip-plus4", SSN)


def postal_code(r: random.Random, country: str) -> Alike:
    if country == "US" and r.random() < 0.5:
        return zip_plus4(r)
    text = {
        "JP": f"〒{r.randint(100, 999)}-{r.randint(0, 9999):04d}",
        "BR": f"{r.randint(10000, 99999)}-{r.randint(0, 999):03d}",
        "GB": r.choice(["SW1A 1AA", "M1 1AE", "B33 8TH", "EH1 2NG", "LS1 4AP"]),
        "NL": f"{r.randint(1000, 9999)} {r.choice(['AB', 'KL', 'XZ', 'GH'])}",
        "CN": f"{r.randint(100000, 850000)}",
        "CA": r.choice(["M5V 2T6", "H2X 1Y4", "V6B 4Y8"]),
        "PT": f"{r.randint(1000, 9999)}-{r.randint(0, 999):03d}",
        "PL": f"{r.randint(10, 99)}-{r.randint(0, 999):03d}",
        "US": f"{r.randint(10000, 99950)}",
    }.get(
        country,
        f"{r.randint(1000, 99999):05d}" if country in ("DE", "FR", "ES", "IT", "MX") else f"{r.randint(1000, 9999)}",
    )
    return Alike(text, "postal-code", PHONE)


# --- times, amounts, versions ------------------------------------------------------------------------------------


def date(r: random.Random, style: str | None = None) -> Alike:
    y, m, d = r.randint(2019, 2026), r.randint(1, 12), r.randint(1, 28)
    style = style or r.choice(["iso", "de", "us", "fr", "slash", "ja"])
    text = {
        "iso": f"{y}-{m:02d}-{d:02d}",
        "de": f"{d:02d}.{m:02d}.{y}",
        "us": f"{m:02d}/{d:02d}/{y}",
        "fr": f"{d:02d}/{m:02d}/{y}",
        "slash": f"{y}/{m:02d}/{d:02d}",
        "ja": f"{y}年{m}月{d}日",
    }[style]
    return Alike(text, "date", PHONE)


def time_of_day(r: random.Random, seconds: bool = True) -> Alike:
    text = f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}" + (f":{r.randint(0, 59):02d}" if seconds else "")
    return Alike(text, "time", IP)


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_WEEKDAYS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")


def timestamp(r: random.Random, style: str = "iso") -> Alike:
    y, mo, d, h, mi, s = (
        r.randint(2023, 2026),
        r.randint(1, 12),
        r.randint(1, 28),
        r.randint(0, 23),
        r.randint(0, 59),
        r.randint(0, 59),
    )
    month = _MONTHS[mo - 1]
    text = {
        "iso": f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}.{r.randint(0, 999):03d}Z",
        "iso-offset": f"{y}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}:{s:02d}+0{r.randint(0, 2)}:00",
        "sql": f"{y}-{mo:02d}-{d:02d} {h:02d}:{mi:02d}:{s:02d}",
        "clf": f"{d:02d}/{month}/{y}:{h:02d}:{mi:02d}:{s:02d} +0000",
        "syslog": f"{month} {d:2d} {h:02d}:{mi:02d}:{s:02d}",
        "git": f"{_WEEKDAYS[d % 7]} {month} {d} {h:02d}:{mi:02d}:{s:02d} {y} +0{d % 3}00",
        "ldap": f"{y}{mo:02d}{d:02d}{h:02d}{mi:02d}{s:02d}.0Z",
        "rfc2822": f"{_WEEKDAYS[d % 7]}, {d} {month} {y} {h:02d}:{mi:02d}:{s:02d} +0{d % 3}00",
    }[style]
    return Alike(text, "timestamp", PHONE)


def duration(r: random.Random) -> Alike:
    text = r.choice(
        [
            f"{r.randint(1, 99999)}ms",
            f"{r.randint(0, 59)}.{r.randint(0, 999):03d}s",
            f"PT{r.randint(1, 9)}H{r.randint(1, 59)}M",
            f"{r.randint(0, 23):02d}:{r.randint(0, 59):02d}:{r.randint(0, 59):02d}.{r.randint(0, 999999):06d}",
        ]
    )
    return Alike(text, "duration", PHONE)


def price(r: random.Random, language: str = "en") -> Alike:
    whole, cents = r.randint(1, 99999), r.randint(0, 99)
    us = f"{whole:,}.{cents:02d}"
    eu = us.replace(",", " ").replace(".", ",").replace(" ", ".")
    narrow = eu.replace(".", "\u202f")  # French groups thousands with a narrow no-break space
    text = {
        "en": f"${us}",
        "de": f"{eu} €",
        "fr": f"{narrow} €",
        "es": f"{eu} €",
        "pt": f"R$ {eu}",
        "ja": f"¥{whole * 100:,}",
        "zh": f"¥{us}",
        "plain": f"{whole}.{cents:02d}",
    }.get(language, f"€{us}")
    return Alike(text, "price", PHONE)


def port(r: random.Random) -> Alike:
    return Alike(
        str(r.choice([443, 8443, 8080, 5432, 6379, 3306, 9200, 27017, 5672, r.randint(1024, 65535)])), "port", PHONE
    )


def version(r: random.Random) -> Alike:
    major, minor, patch = r.randint(0, 30), r.randint(0, 40), r.randint(0, 120)
    text = r.choice([f"{major}.{minor}.{patch}", f"v{major}.{minor}.{patch}", f"{major}.{minor}"])
    return Alike(text, "version", IP)


def semver(r: random.Random) -> Alike:
    pre = r.choice(["-rc.1", "-beta.3", "-alpha.12", "+build.5", "-rc.2+sha.5114f85"])
    return Alike(f"{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 60)}{pre}", "semver", IP)


def build_number(r: random.Random) -> Alike:
    """Four dotted numbers, one above 255 (a browser or OS build)."""
    text = r.choice(
        [
            f"{r.randint(100, 131)}.0.{r.randint(4000, 6999)}.{r.randint(10, 250)}",
            f"10.0.{r.randint(17000, 26100)}.{r.randint(1, 5000)}",
            f"{r.randint(1, 20)}.{r.randint(0, 9)}.{r.randint(300, 9999)}.{r.randint(0, 99)}",
        ]
    )
    return Alike(text, "build-number", IP)


def version_quad(r: random.Random) -> Alike:
    """Four dotted numbers each below 256, written right after the word version: a version, not an address."""
    return Alike(f"{r.randint(1, 12)}.{r.randint(0, 9)}.{r.randint(0, 30)}.{r.randint(0, 200)}", "version-quad", IP)


def oid(r: random.Random) -> Alike:
    text = r.choice(
        [
            f"1.3.6.1.4.1.{r.randint(2, 60000)}.{r.randint(1, 20)}.{r.randint(1, 9)}",
            f"1.3.6.1.2.1.{r.randint(1, 99)}.{r.randint(1, 9)}.0",
            f"2.5.4.{r.randint(3, 50)}",
            f"1.2.840.113549.1.{r.randint(1, 12)}.{r.randint(1, 20)}",
        ]
    )
    return Alike(text, "oid", IP)


def netmask(r: random.Random) -> Alike:
    bits = r.randint(8, 30)
    mask = (0xFFFFFFFF << (32 - bits)) & 0xFFFFFFFF
    if r.random() < 0.2:  # an ACL's wildcard mask: the inverse
        mask ^= 0xFFFFFFFF
    return Alike(".".join(str((mask >> s) & 0xFF) for s in (24, 16, 8, 0)), "netmask", IP)


def mac_address(r: random.Random) -> Alike:
    octets = [f"{r.randint(0, 255):02x}" for _ in range(6)]
    return Alike((":" if r.random() < 0.8 else "-").join(octets), "mac-address", IP)


# --- email-shaped ------------------------------------------------------------------------------------------------


def retina_asset(r: random.Random) -> Alike:
    name = r.choice(["icon", "logo", "avatar", "hero-banner", "btn_close", "sprite", "app-icon-180"])
    return Alike(f"{name}@{r.choice(['2x', '3x', '1.5x'])}.{r.choice(['png', 'webp', 'jpg'])}", "retina-asset", EMAIL)


NPM_PACKAGES = (
    "lodash",
    "react",
    "react-dom",
    "express",
    "typescript",
    "axios",
    "zod",
    "@babel/core",
    "@types/node",
    "@nestjs/common",
    "webpack",
    "eslint",
    "vite",
    "@aws-sdk/client-s3",
    "date-fns",
    "uuid",
    "chalk",
)


def package_pin(r: random.Random) -> Alike:
    """name@version (npm, pnpm lockfiles): an at-sign, dots and digits, no address."""
    pin = f"{r.choice(NPM_PACKAGES)}@{r.randint(0, 20)}.{r.randint(0, 30)}.{r.randint(0, 40)}"
    return Alike(pin, "package-pin", EMAIL)


def mention(r: random.Random) -> Alike:
    return Alike(
        "@" + r.choice(["channel", "here", "oncall-payments", "ana.patel", "devops", "sre-team"]), "mention", EMAIL
    )
