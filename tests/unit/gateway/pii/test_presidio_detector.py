"""The optional Presidio detector in-process: the real presidio-analyzer and spaCy model find only the names and
places a task asked for, and a missing model is named."""

from __future__ import annotations

import pytest

from gateway.pii import presidio_detector
from gateway.pii.presidio_detector import PresidioDetector
from mcpexec.api.pii import PiiEntity


def test_the_detector_finds_only_what_the_task_asked_for() -> None:
    text = "Bob Okafor moved from Lagos to Boston; call him."
    people = PresidioDetector(frozenset({PiiEntity.PERSON}))
    found = [(d.entity, text[d.start : d.end]) for d in people.detect(text)]
    assert found == [("PERSON", "Bob Okafor")]
    both = PresidioDetector(frozenset({PiiEntity.PERSON, PiiEntity.LOCATION}))
    assert [text[d.start : d.end] for d in both.detect(text)] == ["Bob Okafor", "Lagos", "Boston"]
    assert both.detect("C001 42 ---") == []


def test_missing_model_is_named(monkeypatch: pytest.MonkeyPatch) -> None:
    assert presidio_detector.available() is None
    monkeypatch.setattr(presidio_detector, "MODEL", "no_such_spacy_model")
    assert presidio_detector.available() == (
        "the spaCy model no_such_spacy_model is not installed: pip install 'mcpexec[presidio]'"
    )
