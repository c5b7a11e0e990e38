"""Human-written formats: emails in English, German, French and Spanish, a multilingual chat transcript, a
markdown incident report, an HTML contact page."""

from __future__ import annotations

import random
import unicodedata
from collections.abc import Callable

from phonenumbers import PhoneNumber

from tests.support.pii_corpus import lookalikes as la
from tests.support.pii_corpus import phrases, values
from tests.support.pii_corpus.formats.common import company, iban_of
from tests.support.pii_corpus.locales import LANGUAGE_COUNTRIES, Person, person, speaker_of
from tests.support.pii_corpus.model import Pii, Segment, Slot, Writer, fill

_DATE_STYLE = {"en": "us", "de": "de", "fr": "fr", "es": "fr", "pt": "fr", "ja": "ja", "zh": "iso"}
_EMAIL_COUNTRIES = {
    "en": ("US", "GB", "CA", "AU", "IN", "IE"),
    "de": ("DE", "AT", "CH"),
    "fr": ("FR", "BE"),
    "es": ("ES", "MX", "AR"),
}


def prose_phone(
    r: random.Random, who: Person, language: str, bracketed: bool = False, number: PhoneNumber | None = None
) -> Pii:
    """A number as people type it in prose: any of its country's forms (full-width only in CJK text; none that
    opens with its own bracket when the sentence puts it in brackets)."""
    forms = [f for f in values.phone_forms(who.locale.country) if f != "fullwidth" or language in ("ja", "zh")]
    if "fullwidth" in forms:  # what Japanese and Chinese input methods often type
        forms += ["fullwidth"] * 3
    while True:
        written = values.phone(r, who.locale.country, r.choice(forms), number=number)
        if not (bracketed and written.text.startswith("(")):
            return written


def _ssn(r: random.Random) -> list[Segment]:
    """An SSN in prose: compact only right after the word, which is what makes nine digits an SSN."""
    number = values.us_ssn(r, r.choice(["dashed", "spaced", "compact"]))
    if number.form == "compact":
        return [r.choice(["is ", "number "]), number.within("ssn-word")]
    return [number]


def slots(r: random.Random, who: Person, language: str) -> dict[str, Slot]:
    """What the templates' slots hold: values of `who` (their number, their bank) and look-alikes."""
    address = values.email(r, who, r.choice(["plain", "plain", "plain", "uppercase", "plus-tag"]))
    return {
        "order": lambda: la.year_sequence_id(r),
        "ref": lambda: r.choice([la.order_ref, la.customer_id, la.nine_digit_id])(r),
        "date": lambda: la.date(r, _DATE_STYLE[language]),
        "time": lambda: la.time_of_day(r, seconds=False),
        "time2": lambda: la.time_of_day(r, seconds=False),
        "amount": lambda: la.price(r, language),
        "iban": lambda: iban_of(r, who),
        "bic": lambda: la.bic(r),
        "phone": lambda: prose_phone(r, who, language),
        "phone2": lambda: ["(", prose_phone(r, who, language, bracketed=True).within("after-open-bracket"), ")"],
        "email": lambda: address,  # one address a person, however often it is written
        "ip": lambda: values.ip(r),
        "ip_end": lambda: [values.ip(r).within("sentence-end"), "."],
        "tracking": lambda: la.tracking_number(r),
        "masked": lambda: la.masked_card(r),
        "version": lambda: la.version(r),
        "ssn": lambda: _ssn(r),
        "name": who.name,
        "first": who.first,
    }


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F") and not char.isdigit()


def mark_cjk_adjacent(segments: list[Segment]) -> list[Segment]:
    """Values written with a CJK character right before or after them (no space), as Japanese and Chinese put them."""
    out: list[Segment] = []
    for i, segment in enumerate(segments):
        if isinstance(segment, Pii) and not segment.context:
            before = segments[i - 1] if i else ""
            after = segments[i + 1] if i + 1 < len(segments) else ""
            if (isinstance(before, str) and before and _is_cjk(before[-1])) or (
                isinstance(after, str) and after and _is_cjk(after[0])
            ):
                segment = segment.within("cjk-adjacent")
        out.append(segment)
    return out


_HEADERS = """From: "{sender}" <{from}>
To: {to}
Date: {date}
Subject: {subject}
Content-Type: text/plain; charset=utf-8

"""


def _email(r: random.Random, w: Writer, language: str) -> None:
    sender = person(r, r.choice(_EMAIL_COUNTRIES[language]))
    recipient = person(r, r.choice(_EMAIL_COUNTRIES[language]))
    name, domain = company(r, language)
    sender_slots = {**slots(r, sender, language), "company": name}
    sender_slots["email"] = values.email(r, sender, domain=domain)
    sender_slots["vat"] = lambda: la.vat_id(r)
    sender_slots["mobile"] = lambda: prose_phone(r, sender, language)
    to_slots = slots(r, recipient, language)
    to_slots.update(order=la.year_sequence_id(r), tracking=la.tracking_number(r))  # the subject's, in the body too
    emails = phrases.EMAILS[language]
    if language == "en" and recipient.locale.country != "US":  # the payroll email holds a US SSN
        emails = [(subject, body) for subject, body in emails if "{ssn}" not in body]
    chosen = r.sample(emails, r.randint(1, 2))
    headers: dict[str, Slot] = {
        "sender": sender.name, "from": sender_slots["email"], "to": to_slots["email"],
        "date": la.timestamp(r, "rfc2822"), "subject": fill(chosen[0][0], to_slots),
    }  # fmt: skip
    w.add(fill(_HEADERS, headers), fill(phrases.GREETINGS[language], to_slots), "\n\n")
    for _, body in chosen:
        w.add(fill(body, to_slots), "\n\n")
    w.add(fill(phrases.SIGNATURES[language], sender_slots), "\n", fill(phrases.DISCLAIMERS[language], to_slots), "\n\n")
    w.add(fill(phrases.QUOTE_INTRO[language], to_slots), "\n", fill(phrases.QUOTED[language], to_slots), "\n\n")


def emails_in(language: str) -> Callable[[random.Random, Writer], None]:
    """The format of a thread in one language: one or two emails."""

    def write(r: random.Random, w: Writer) -> None:
        for _ in range(r.randint(1, 2)):
            _email(r, w, language)

    return write


def chat(r: random.Random, w: Writer) -> None:
    """A support team's chat export: several languages in one channel, values typed inline."""
    languages = r.sample(list(phrases.CHAT), 3)
    speakers = {lang: speaker_of(r, lang) for lang in languages}
    for _ in range(r.randint(14, 26)):
        language = r.choice(languages)
        who = speakers[language]
        message = fill(r.choice(phrases.CHAT[language]), slots(r, person(r, who.locale.country), language))
        w.add("[", la.timestamp(r, "sql"), "] ", who.name, ": ", mark_cjk_adjacent(message), "\n")


_REPORT_HEAD = """# Incident {incident}: payment webhook failures

**Started:** {started}
**Resolved:** {resolved}
**Service version:** {version}

## Affected customers

| Name | Email | Phone | Last IP |
|------|-------|-------|---------|
"""
_REPORT_ROW = "| {name} | {email} | {phone} | {ip} |\n"
_REPORT_TIMELINE = "- {time} UTC: retries from `{ip}` hit the rate limit ({took} p99, {bytes} bytes queued)\n"
_REPORT_TAIL = """
## Impact

Webhook deliveries were delayed by up to {took} and {events} events were retried. No payment was lost: every
delivery carries an idempotency key, and the ledger was reconciled on {date}. Support answered tickets with the
standard delay notice.

## Root cause

The worker on {worker}:{port} ran {version} and kept retrying requests from {ip_end} Commit `{sha}` fixed it; see
{uuid}.

```
{timestamp} retry id={hex} account={account} card={masked}
```
"""


def markdown_report(r: random.Random, w: Writer) -> None:
    head = {"incident": la.year_sequence_id(r), "started": la.timestamp(r), "resolved": la.timestamp(r),
            "version": la.semver(r)}  # fmt: skip
    w.add(fill(_REPORT_HEAD, head))
    for _ in range(r.randint(4, 8)):
        who = person(r)
        row: dict[str, Slot] = {"name": who.name, "email": values.email(r, who), "phone": prose_phone(r, who, "en"),
                                "ip": values.ip(r)}  # fmt: skip
        w.add(fill(_REPORT_ROW, row))
    w.add("\n## Timeline\n\n")
    for _ in range(r.randint(3, 6)):
        event: dict[str, Slot] = {"time": la.time_of_day(r), "ip": values.ip(r), "took": la.duration(r),
                                  "bytes": la.byte_count(r)}  # fmt: skip
        w.add(fill(_REPORT_TIMELINE, event))
    tail: dict[str, Slot] = {
        "took": la.duration(r), "events": la.customer_id(r), "date": la.date(r, "iso"), "worker": values.ip(r, "v4"),
        "port": la.port(r), "version": la.version(r), "ip_end": [values.ip(r).within("sentence-end"), "."],
        "sha": la.git_sha(r, True), "uuid": la.uuid_text(r), "timestamp": la.timestamp(r), "hex": la.hex_id(r),
        "account": la.aws_account_id(r), "masked": la.masked_card(r),
    }  # fmt: skip
    w.add(fill(_REPORT_TAIL, tail))


_HTML_CARD = """<div class="card">
  <img src="/img/{icon}" alt="">
  <h3>{name}</h3>
  <p><a href="tel:{tel}">{phone}</a></p>
  <p><a href="mailto:{email}">{email}</a></p>
  <p><small>{postal} {city}</small></p>
</div>
"""
_HTML_BANK = """<table>
  <tr><th>IBAN</th><td>{iban}</td></tr>
  <tr><th>BIC</th><td>{bic}</td></tr>
  <tr><th>VAT</th><td>{vat}</td></tr>
</table>
</body>
</html>
"""


def html_page(r: random.Random, w: Writer) -> None:
    """A team page: each number twice, as the link's E.164 target and as its text in a local form."""
    language = r.choice(["en", "de", "fr", "es", "pt", "ja"])
    country = r.choice(LANGUAGE_COUNTRIES[language])
    w.add(f'<!DOCTYPE html>\n<html lang="{language}">\n<head><meta charset="utf-8"><title>Team</title></head>\n')
    w.add("<body>\n")
    for _ in range(r.randint(3, 7)):
        who = person(r, country)
        number = values.phone_number(r, country)
        card: dict[str, Slot] = {
            "icon": la.retina_asset(r), "name": who.name, "tel": values.phone(r, country, "e164", number=number),
            "phone": prose_phone(r, who, language, number=number), "email": values.email(r, who),
            "postal": la.postal_code(r, country), "city": r.choice(who.locale.cities),
        }  # fmt: skip
        w.add(fill(_HTML_CARD, card))
    w.add(fill(_HTML_BANK, {"iban": values.iban_value(r), "bic": la.bic(r), "vat": la.vat_id(r)}))
