"""PII detection: throughput (MB/s) and precision/recall of our detector vs Presidio on one generated corpus.

The corpus is synthetic prose with labelled entities (valid checksums, valid phone numbers) and look-alikes
(order numbers, dates, versions, Luhn-failing card numbers). A hit counts when type and span match exactly.
Presidio runs its predefined pattern recognizers only: its NLP engine needs a spaCy English model, which is
not installable here (no internet; only third-party re-uploads exist), so PERSON/LOCATION are not compared.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from typing import Any

import phonenumbers
from stdnum import iban, luhn
from stdnum.us import ssn

from gateway.pii.detectors import PatternDetector
from mcpexec.api.pii import BUILTIN_ENTITIES

Span = tuple[int, int, str]
SEED, LINES = 7, 4000
WORDS = [
    "the", "customer", "asked", "about", "order", "invoice", "shipment",
    "refund", "account", "status", "please", "review", "update", "today",
]  # fmt: skip


def _email(r: random.Random) -> str:
    local = f"{r.choice(['ana', 'li.wei', 'j.smith', 'ops', 'k_m'])}{r.randint(1, 999)}"
    return f"{local}@{r.choice(['example', 'mail'])}.{r.choice(['com', 'org', 'de'])}"


def _phone(r: random.Random) -> str:
    while True:
        number = f"+1 {r.choice([202, 415, 212, 617, 312])}-{r.randint(200, 999)}-{r.randint(0, 9999):04d}"
        if phonenumbers.is_valid_number(phonenumbers.parse(number)):
            return number


def _card(r: random.Random) -> str:
    body = r.choice(["4", "51", "55"]) + "".join(str(r.randint(0, 9)) for _ in range(13 if r.random() < 0.5 else 14))
    body = (body + "0")[:15]
    digits = body + luhn.calc_check_digit(body)
    return " ".join(digits[i : i + 4] for i in range(0, 16, 4)) if r.random() < 0.5 else digits


def _ssn(r: random.Random) -> str:
    while True:
        number = f"{r.randint(1, 899):03d}-{r.randint(1, 99):02d}-{r.randint(1, 9999):04d}"
        if ssn.is_valid(number):
            return number


def _iban(r: random.Random) -> str:
    bban = "".join(str(r.randint(0, 9)) for _ in range(18))
    return f"DE{iban.calc_check_digits('DE00' + bban)}{bban}"


def _ip(r: random.Random) -> str:
    if r.random() < 0.7:
        return ".".join(str(r.randint(1, 254)) for _ in range(4))
    return f"2001:db8:{r.randint(0, 0xFFFF):x}::{r.randint(1, 0xFFFF):x}"


GENERATORS: dict[str, Callable[[random.Random], str]] = {
    "EMAIL": _email,
    "PHONE": _phone,
    "CREDIT_CARD": _card,
    "US_SSN": _ssn,
    "IBAN": _iban,
    "IP_ADDRESS": _ip,
}
LOOK_ALIKES: list[Callable[[random.Random], str]] = [
    lambda r: f"order {r.randint(10000, 99999)}",
    lambda r: f"on 2024-{r.randint(1, 12):02d}-{r.randint(1, 28):02d} at {r.randint(0, 23):02d}:{r.randint(0, 59):02d}",
    lambda r: f"version {r.randint(1, 9)}.{r.randint(0, 20)}.{r.randint(0, 99)}",
    lambda r: f"ref 4{''.join(str(r.randint(0, 9)) for _ in range(14))}{(r.randint(1, 9))}",  # mostly Luhn-invalid
    lambda r: f"total ${r.randint(1, 9999)}.{r.randint(0, 99):02d}",
]


def corpus() -> tuple[str, set[Span]]:
    r = random.Random(SEED)
    parts: list[str] = []
    truth: set[Span] = set()
    offset = 0
    for _ in range(LINES):
        for _ in range(r.randint(2, 4)):
            chunk = " ".join(r.choices(WORDS, k=r.randint(3, 8))) + " "
            if r.random() < 0.3:
                chunk += r.choice(LOOK_ALIKES)(r) + " "
            parts.append(chunk)
            offset += len(chunk)
            entity = r.choice(list(GENERATORS))
            value = GENERATORS[entity](r)
            truth.add((offset, offset + len(value), entity))
            parts.append(value)
            offset += len(value)
            parts.append(", ")
            offset += 2
        parts.append("\n")
        offset += 1
    return "".join(parts), truth


def _score(found: set[Span], truth: set[Span]) -> dict[str, Any]:
    def pr(f: set[Span], t: set[Span]) -> dict[str, float]:
        tp = len(f & t)
        return {
            "precision": round(tp / len(f), 4) if f else 0.0,
            "recall": round(tp / len(t), 4) if t else 0.0,
        }

    per_entity = {e: pr({s for s in found if s[2] == e}, {s for s in truth if s[2] == e}) for e in GENERATORS}
    return {"overall": pr(found, truth), "by_entity": per_entity}


def _ours(text: str) -> set[Span]:
    detector = PatternDetector(BUILTIN_ENTITIES)
    return {(d.start, d.end, d.entity) for line in _lines(text) for d in _shift(detector.detect(line[1]), line[0])}


def _ours_whole(text: str) -> set[Span]:
    """The corpus as one string, as a tool returns a whole file: the cost must grow linearly with its entities."""
    return {(d.start, d.end, d.entity) for d in PatternDetector(BUILTIN_ENTITIES).detect(text)}


def _lines(text: str) -> list[tuple[int, str]]:
    out, offset = [], 0
    for line in text.splitlines(keepends=True):
        out.append((offset, line))
        offset += len(line)
    return out


def _shift(detections: list[Any], by: int) -> list[Any]:
    return [type(d)(d.start + by, d.end + by, d.entity) for d in detections]


PRESIDIO_NAMES = {
    "EMAIL_ADDRESS": "EMAIL",
    "PHONE_NUMBER": "PHONE",
    "CREDIT_CARD": "CREDIT_CARD",
    "US_SSN": "US_SSN",
    "IBAN_CODE": "IBAN",
    "IP_ADDRESS": "IP_ADDRESS",
}


def _presidio() -> Callable[[str], set[Span]] | str:
    try:
        from presidio_analyzer.predefined_recognizers import (
            CreditCardRecognizer,
            EmailRecognizer,
            IbanRecognizer,
            IpRecognizer,
            PhoneRecognizer,
            UsSsnRecognizer,
        )
    except ImportError as exc:
        return f"presidio-analyzer not installed ({exc}); `pip install .[presidio]`"
    recognizers = [
        EmailRecognizer(),
        PhoneRecognizer(supported_regions=["US"]),
        CreditCardRecognizer(),
        UsSsnRecognizer(),
        IbanRecognizer(),
        IpRecognizer(),
    ]

    def detect(text: str) -> set[Span]:
        found: set[Span] = set()
        for offset, line in _lines(text):
            for recognizer in recognizers:
                for hit in recognizer.analyze(line, recognizer.supported_entities, None):
                    if hit.score >= 0.3:
                        found.add((hit.start + offset, hit.end + offset, PRESIDIO_NAMES[hit.entity_type]))
        return found

    return detect


def _presidio_with_nlp() -> Callable[[str], set[Span]]:
    """Presidio's default analyzer: every predefined recognizer plus the spaCy NLP engine (context words raise
    scores), restricted to the same entity types; lines batched through spaCy's pipe."""
    from presidio_analyzer import AnalyzerEngine, BatchAnalyzerEngine
    from presidio_analyzer.nlp_engine import NlpEngineProvider

    from gateway.pii.presidio_detector import MODEL

    nlp = NlpEngineProvider(
        nlp_configuration={"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": MODEL}]}
    ).create_engine()
    batch = BatchAnalyzerEngine(AnalyzerEngine(nlp_engine=nlp, supported_languages=["en"]))

    def detect(text: str) -> set[Span]:
        lines = _lines(text)
        found: set[Span] = set()
        answers = batch.analyze_iterator(
            [line for _, line in lines], language="en", entities=list(PRESIDIO_NAMES), score_threshold=0.3
        )
        for (offset, _line), hits in zip(lines, answers, strict=True):
            found |= {(h.start + offset, h.end + offset, PRESIDIO_NAMES[h.entity_type]) for h in hits}
        return found

    detect("Warm-up: Alice wrote to bob@example.com.\n")  # load the model outside the timing
    return detect


def _timed(detect: Callable[[str], set[Span]], text: str, truth: set[Span]) -> dict[str, Any]:
    started = time.perf_counter()
    found = detect(text)
    elapsed = time.perf_counter() - started
    return {"mb_per_s": round(len(text.encode()) / 1e6 / elapsed, 3), **_score(found, truth)}


def run() -> dict[str, Any]:
    text, truth = corpus()
    result: dict[str, Any] = {
        "corpus": {"bytes": len(text.encode()), "entities": len(truth), "lines": LINES, "seed": SEED},
        "ours": _timed(_ours, text, truth),
        "ours_whole_text": _timed(_ours_whole, text, truth),
    }
    presidio = _presidio()
    if isinstance(presidio, str):
        result["presidio"] = {"skipped": presidio}
    else:
        result["presidio_patterns_only"] = _timed(presidio, text, truth)
        result["presidio_with_spacy"] = _timed(_presidio_with_nlp(), text, truth)
        result["presidio_note"] = (
            "patterns_only: the six pattern recognizers, score >= 0.3; with_spacy: Presidio's default analyzer "
            "(all recognizers + the en_core_web_sm 3.8.0 NLP engine for context), same entities, score >= 0.3"
        )
    return result
