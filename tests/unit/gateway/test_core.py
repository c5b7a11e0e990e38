"""The gateway's wiring refuses a PII minimum it cannot detect when it is built, not at a task's first call."""

from __future__ import annotations

import pytest

from gateway.core import GatewayBackends, GatewayConfig, GatewayCore
from gateway.errors import PiiDetectorUnavailable
from gateway.local.auth import LocalTaskAuthority
from gateway.pii import presidio_detector
from gateway.pii.vault import MemoryVault
from mcpexec.api.pii import PiiEntity


def test_a_minimum_with_names_needs_the_ner_detector() -> None:
    def build(minimum: frozenset[PiiEntity]) -> GatewayCore:
        ner = presidio_detector.ner_for(False)
        return GatewayCore(
            GatewayBackends(LocalTaskAuthority(), dict, MemoryVault(), ner=ner), GatewayConfig(pii_minimum=minimum)
        )

    with pytest.raises(PiiDetectorUnavailable, match="PERSON"):
        build(frozenset({PiiEntity.EMAIL, PiiEntity.PERSON}))
    assert build(frozenset({PiiEntity.EMAIL})).tokenizer is not None
