"""The PII benchmark's corpus: deterministic, every label holds a valid value of its entity at an exact span, no
overlaps, and every cause of a miss or a false positive that issue 18 lists is present (one test per family, so a
change to the corpus cannot silently drop one)."""

from __future__ import annotations

import ipaddress
import itertools
import re
import unicodedata
from collections import Counter
from urllib.parse import unquote_plus

import phonenumbers
import pytest
from stdnum import iban, luhn
from stdnum.us import ssn

from tests.support.pii_corpus import Corpus, Document, Label, build_corpus
from tests.support.pii_corpus.formats import FORMATS
from tests.support.pii_corpus.values import CARD_PREFIXES

MB = 1 << 20


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return build_corpus()


def _labelled(corpus: Corpus) -> list[tuple[Document, Label, str]]:
    return [(d, label, d.text[label.start : label.end]) for d in corpus.documents for label in d.labels]


def _plain(label: Label, text: str) -> str:
    """The value as typed: form-encoding undone, full-width digits and no-break spaces made ASCII (NFKC)."""
    if label.form == "url-encoded":
        text = unquote_plus(text)
    return unicodedata.normalize("NFKC", text)


def _valid_phone(label: Label, plain: str) -> bool:
    number = phonenumbers.parse("+" + plain[2:] if plain.startswith("00") else plain, label.country)
    return phonenumbers.is_valid_number(number) and phonenumbers.region_code_for_number(number) == label.country


def _is_cjk(char: str) -> bool:
    return unicodedata.east_asian_width(char) in ("W", "F")


def test_the_same_seed_builds_the_same_corpus() -> None:
    assert build_corpus(seed=3, size_bytes=64 * 1024) == build_corpus(seed=3, size_bytes=64 * 1024)
    assert build_corpus(seed=4, size_bytes=64 * 1024) != build_corpus(seed=3, size_bytes=64 * 1024)


def test_size_formats_and_density(corpus: Corpus) -> None:
    megabytes = corpus.size_bytes / MB
    assert 1.0 <= megabytes < 1.1
    assert {d.format for d in corpus.documents} == set(FORMATS)
    assert len(FORMATS) >= 22
    assert 8_000 <= len(corpus.labels) / megabytes <= 11_000
    assert len(corpus.lookalikes) / megabytes >= 12_000
    entities = Counter(label.entity for label in corpus.labels)
    assert set(entities) == {"EMAIL", "PHONE", "CREDIT_CARD", "US_SSN", "IBAN", "IP_ADDRESS"}
    assert min(entities.values()) >= 150


def test_every_label_holds_a_valid_value(corpus: Corpus) -> None:
    for document, label, text in _labelled(corpus):
        plain = _plain(label, text)
        digits = re.sub(r"\D", "", plain)
        assert text[0].isalnum() or text[0] in "+(%:\uff0b", text  # a value starts at its first own character
        assert text[-1].isalnum() or text.endswith("::"), text  # and ends at its last
        if label.entity == "EMAIL":
            assert re.fullmatch(r"[\w.'+-]+@[a-z0-9.-]+\.[a-z]{2,}", plain, re.IGNORECASE), text
        elif label.entity == "PHONE":
            assert _valid_phone(label, plain), (label.country, text)
        elif label.entity == "CREDIT_CARD":
            assert 13 <= len(digits) <= 19 and luhn.is_valid(digits) and digits.startswith(CARD_PREFIXES), text
            assert len(set(re.findall(r"\D", plain))) <= 1, text  # one separator throughout
        elif label.entity == "US_SSN":
            assert len(digits) == 9 and ssn.is_valid(digits), text
        elif label.entity == "IBAN":
            assert iban.is_valid(plain) and plain[:2].upper() == label.country, text
        else:
            ipaddress.ip_address(plain)
            around = document.text[label.start - 1 : label.start] + document.text[label.end : label.end + 1]
            assert ":" not in text or ":" not in around, text  # an IPv6 address is bracketed before a port


def test_spans_never_overlap(corpus: Corpus) -> None:
    for document in corpus.documents:
        spans = sorted([(s.start, s.end) for s in document.labels] + [(a.start, a.end) for a in document.lookalikes])
        assert all(a[1] <= b[0] for a, b in itertools.pairwise(spans)), document.format


def test_lookalikes_are_not_what_they_resemble(corpus: Corpus) -> None:
    for document in corpus.documents:
        for alike in document.lookalikes:
            text = document.text[alike.start : alike.end]
            digits = re.sub(r"\D", "", text)
            if alike.kind == "invalid-iban":
                assert not iban.is_valid(text), text
            elif alike.kind == "invalid-ssn":
                assert not ssn.is_valid(digits), text
            elif alike.kind == "luhn-invalid-card":
                assert not luhn.is_valid(digits), text
            elif alike.kind == "luhn-valid-no-iin":
                assert luhn.is_valid(digits) and not digits.startswith(CARD_PREFIXES), text
            elif alike.kind == "imei":
                assert luhn.is_valid(digits) and len(digits) == 15, text
            elif alike.kind == "retina-asset":
                assert re.search(r"@[\d.]+x\.(png|jpg|webp)$", text), text


# --- recall causes -----------------------------------------------------------------------------------------------


def test_national_and_international_phones_of_many_countries(corpus: Corpus) -> None:
    forms = Counter((label.country, label.form) for label in corpus.labels if label.entity == "PHONE")
    for country in ("DE", "FR", "GB", "JP", "BR", "IN", "ES", "IT", "NL", "AU", "MX", "CN", "US", "CA"):
        assert forms[country, "national"] >= 5, country
        assert forms[country, "e164"] + forms[country, "international"] >= 5, country
    assert len({country for country, _ in forms}) >= 20
    for form in ("exit-code", "trunk-bracket", "slash", "dotted", "intl-bracket", "compact"):
        assert sum(n for (_, f), n in forms.items() if f == form) >= 5, form


def test_ssns_spaced_and_compact_next_to_their_key_or_word(corpus: Corpus) -> None:
    forms = Counter(label.form for label in corpus.labels if label.entity == "US_SSN")
    assert forms["dashed"] >= 20 and forms["spaced"] >= 20 and forms["compact"] >= 20
    for document, label, text in _labelled(corpus):
        if label.entity == "US_SSN" and label.form == "compact":
            assert "ssn" in document.text[max(0, label.start - 20) : label.start].lower(), text


def test_form_encoded_values(corpus: Corpus) -> None:
    encoded = Counter(
        label.entity
        for _, label, text in _labelled(corpus)
        if label.form == "url-encoded"
        and ("%40" in text if label.entity == "EMAIL" else "+" in text)
        and (label.entity != "PHONE" or text.startswith("%2B"))
    )
    assert encoded["EMAIL"] >= 20 and encoded["PHONE"] >= 20 and encoded["CREDIT_CARD"] >= 20


def test_values_written_against_cjk_text(corpus: Corpus) -> None:
    adjacent: Counter[str] = Counter()
    for document, label, _text in _labelled(corpus):
        if label.context == "cjk-adjacent":
            around = document.text[label.start - 1 : label.start] + document.text[label.end : label.end + 1]
            assert any(_is_cjk(c) for c in around)
            adjacent[label.entity] += 1
    assert adjacent["EMAIL"] >= 10 and adjacent["PHONE"] >= 10


def test_ibans_of_many_countries_spaced_compact_and_lowercase(corpus: Corpus) -> None:
    labels = [(label, text) for _, label, text in _labelled(corpus) if label.entity == "IBAN"]
    assert len({label.country for label, _ in labels}) >= 20
    assert sum(" " in text for _, text in labels) >= 50
    assert sum(" " not in text for _, text in labels) >= 50
    assert sum(text[:2].islower() for _, text in labels) >= 50


def test_addresses_that_end_a_sentence(corpus: Corpus) -> None:
    kinds: Counter[bool] = Counter()
    for document, label, text in _labelled(corpus):
        if label.context == "sentence-end":
            assert document.text[label.end] == "." and document.text[label.end + 1 : label.end + 2] in ("", " ", "\n")
            kinds[":" in text] += 1
    assert kinds[False] >= 20 and kinds[True] >= 10  # IPv4 and IPv6


def test_full_width_and_no_break_space_phones(corpus: Corpus) -> None:
    texts = [(label.form, text) for _, label, text in _labelled(corpus) if label.entity == "PHONE"]
    assert sum(form == "fullwidth" and bool(re.search("[\uff10-\uff19]", text)) for form, text in texts) >= 10
    assert sum(form == "nbsp" and "\u00a0" in text for form, text in texts) >= 20


# --- boundary causes ---------------------------------------------------------------------------------------------


def test_email_after_an_escaped_newline_in_raw_json(corpus: Corpus) -> None:
    found = [
        text
        for document, label, text in _labelled(corpus)
        if label.context == "after-json-escape" and document.text[label.start - 2 : label.start] == "\\n"
    ]
    assert len(found) >= 20


def test_apostrophe_emails_and_mapped_ipv6(corpus: Corpus) -> None:
    texts = [(label.entity, text) for _, label, text in _labelled(corpus)]
    assert sum(entity == "EMAIL" and "'" in text for entity, text in texts) >= 20
    assert sum(entity == "IP_ADDRESS" and text.startswith("::ffff:") for entity, text in texts) >= 20


def test_phone_then_tab_or_comma_and_an_order_number(corpus: Corpus) -> None:
    """`+1 713 396 7854\t#123456`: in raw JSON the tab is the escape `\\t`."""
    separators: Counter[str] = Counter()
    for document in corpus.documents:
        hashes = {a.start for a in document.lookalikes if a.kind == "order-hash"}
        for label in document.labels:
            for gap in ("\t", "\\t", ",", ", ", ";"):
                if (
                    label.entity == "PHONE"
                    and document.text.startswith(gap, label.end)
                    and label.end + len(gap) in hashes
                ):
                    separators[gap] += 1
    assert separators["\t"] >= 10 and separators["\\t"] >= 10
    assert separators[","] >= 10 and separators[", "] >= 10


def test_brackets_around_and_inside_phones(corpus: Corpus) -> None:
    outside = inside = 0
    for document, label, text in _labelled(corpus):
        if label.entity != "PHONE":
            continue
        if label.context == "after-open-bracket":
            assert document.text[label.start - 1] == "(" and not text.startswith("(")
            outside += 1
        inside += text.startswith("(")  # a national format's area code: (11) 97147-5065, (02) 9374 4000
    assert outside >= 10 and inside >= 20


# --- precision causes --------------------------------------------------------------------------------------------

_SHAPES = {
    "year-sequence-id": r"[A-Z]+-20\d\d-[\d-]+",
    "order-ref": r"\d{10,12}",
    "tracking-ups": r"1Z[0-9A-Z]{16}",
    "tracking-usps": r"94[\d ]{20,25}",
    "byte-count": r"\d{5,14}",
    "aws-account-id": r"\d{12}",
    "epoch-ms": r"\d{13}",
    "ldap-timestamp": r"\d{18}",
    "isbn-13": r"97[89][\d-]{10,14}",
    "uuid": r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
    "hex-id": r"[0-9a-fA-F]{10,32}",
    "invalid-iban": r"[A-Z]{2}\d\d[A-Z0-9 ]+",
    "luhn-valid-no-iin": r"\d{13,19}",
    "imei": r"\d{15}",
    "retina-asset": r".+@.+x\..+",
    "package-pin": r".+@\d+\.\d+\.\d+",
    "version": r"v?\d+\.\d+(\.\d+)?",
    "semver": r"\d+\.\d+\.\d+[-+].+",
    "date": r".*\d.*",
    "time": r"\d\d:\d\d(:\d\d)?",
    "git-sha": r"[0-9a-f]{7,40}",
    "port": r"\d{2,5}",
    "duration": r".*\d.*",
    "netmask": r"\d+\.\d+\.\d+\.\d+",
    "mac-address": r"([0-9a-f]{2}[:-]){5}[0-9a-f]{2}",
    "oid": r"\d+(\.\d+){3,}",
    "build-number": r"\d+\.\d+\.\d+\.\d+",
    "version-quad": r"\d+\.\d+\.\d+\.\d+",
    "order-hash": r"#\d{6}",
    "invalid-ssn": r"\d{3}-\d\d-\d{4}",
    "ean-13": r"\d{13}",
    "zip-plus4": r"\d{5}-\d{4}",
}


@pytest.mark.parametrize("kind", sorted(_SHAPES))
def test_precision_lookalikes(corpus: Corpus, kind: str) -> None:
    texts = [d.text[a.start : a.end] for d in corpus.documents for a in d.lookalikes if a.kind == kind]
    assert len(texts) >= 10, kind
    assert all(re.fullmatch(_SHAPES[kind], t) for t in texts), [t for t in texts if not re.fullmatch(_SHAPES[kind], t)]


def test_a_phone_whose_digits_pass_a_card_check(corpus: Corpus) -> None:
    card_like = [
        digits
        for _, label, text in _labelled(corpus)
        if label.entity == "PHONE" and label.context == "luhn-valid-digits"
        for digits in [re.sub(r"\D", "", text)]
    ]
    assert len(card_like) >= 10
    assert all(13 <= len(d) <= 19 and luhn.is_valid(d) for d in card_like)
