"""What the document formats share: companies, a person's contact values, JSON and CSV field spelling."""

from __future__ import annotations

import random

from tests.support.pii_corpus import values
from tests.support.pii_corpus.locales import Person
from tests.support.pii_corpus.model import Pii, Segment

COMPANIES = {
    "en": [("Northwind Traders", "northwind.com"), ("Contoso Ltd", "contoso.co.uk"), ("Globex Corp", "globex.io")],
    "de": [("Brandt Logistik GmbH", "brandt-logistik.de"), ("Alpenblick AG", "alpenblick.ch")],
    "fr": [("Boulangerie Lefort SARL", "lefort.fr"), ("Atelier Moreau", "atelier-moreau.fr")],
    "es": [("Distribuciones Iberia S.L.", "iberia-dist.es"), ("Grupo Azteca", "grupoazteca.mx")],
    "pt": [("Casa Verde Ltda", "casaverde.com.br"), ("Lusotrans", "lusotrans.pt")],
    "ja": [("株式会社サクラ物流", "sakura-logi.co.jp")],
    "zh": [("华信科技有限公司", "huaxin-tech.cn")],
}


def company(r: random.Random, language: str) -> tuple[str, str]:
    return r.choice(COMPANIES.get(language, COMPANIES["en"]))


def phone_of(r: random.Random, who: Person, *forms: str) -> Pii:
    """The person's own number (their country), in one of `forms` that country writes (any of its forms if none)."""
    country = who.locale.country
    usable = [f for f in forms if f in values.phone_forms(country) or f in ("compact", "url-encoded")]
    return values.phone(r, country, r.choice(usable) if usable else None)


def iban_of(r: random.Random, who: Person, form: str | None = None) -> Pii:
    country = who.locale.country if who.locale.country in values.IBAN_COUNTRIES else None
    return values.iban_value(r, country, form)


def jfield(key: str, value: Segment | list[Segment], last: bool = False, quoted: bool = True) -> list[Segment]:
    """One pretty-printed JSON member (a row's field): a string, or a number when not `quoted`."""
    quote = '"' if quoted else ""
    return [
        f'    "{key}": {quote}',
        *(value if isinstance(value, list) else [value]),
        quote + ("\n" if last else ",\n"),
    ]


def csv_cell(value: Segment, separator: str) -> list[Segment]:
    """A CSV cell, quoted only when it holds the separator (as csv writers do)."""
    text = value if isinstance(value, str) else value.text
    return ['"', value, '"'] if separator in text else [value]
