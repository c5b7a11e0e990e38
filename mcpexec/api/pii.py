"""PII declarations: what an AgentTask adds and what an MCPServer owner declares its results carry.

Protection only adds up (docs/security.md): the gateway's minimum entity set (the cluster admin's), every
declaration of the MCPServers a task uses (their owners'), and the task's own (its author's). No level can remove
what another set: there is no switch to turn PII off, and a custom pattern only adds detections.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Annotated, Any, Literal, Self

import phonenumbers
import re2
from pydantic import AfterValidator, ConfigDict, Field, model_validator

from mcpexec.api.meta import SpecModel

ENTITY_NAME = r"^[A-Z][A-Z0-9_]*$"


class PiiEntity(StrEnum):
    EMAIL = "EMAIL"
    PHONE = "PHONE"
    CREDIT_CARD = "CREDIT_CARD"
    US_SSN = "US_SSN"
    IBAN = "IBAN"
    IP_ADDRESS = "IP_ADDRESS"
    PERSON = "PERSON"
    LOCATION = "LOCATION"


BUILTIN_ENTITIES: tuple[PiiEntity, ...] = (
    PiiEntity.EMAIL,
    PiiEntity.PHONE,
    PiiEntity.CREDIT_CARD,
    PiiEntity.US_SSN,
    PiiEntity.IBAN,
    PiiEntity.IP_ADDRESS,
)


def _known_region(region: str) -> str:
    if region not in phonenumbers.SUPPORTED_REGIONS:
        raise ValueError(f"{region!r} is not a region with phone numbering metadata (ISO 3166-1 alpha-2, e.g. DE)")
    return region


# Where national-format phone numbers (`030 1234567`) are recognised: an ISO 3166-1 alpha-2 code. International ones
# (`+49 30 1234567`) are recognised from every region whatever the set.
PhoneRegion = Annotated[str, Field(pattern=r"^[A-Z]{2}$"), AfterValidator(_known_region)]
MAX_PHONE_REGIONS = 64
# The gateway's default set (chart gateway.piiPhoneRegions): major markets of North and Latin America, Europe, the
# Middle East, Africa and Asia-Pacific whose national numbers have a trunk prefix or a distinctive grouping, so that
# together they stay apart from order numbers, counters and amounts. Left out, for the share of random digit groups
# (not starting with 0) each would accept as a phone number: HK 8.8%, LU 7.7%, DK 3.9%, NO 2.8%, VN 2.5%, CZ 2.3%,
# GR 1.0% (most regions here: under 0.1%; US 1.7%). Their numbers are still found when written with the country
# code, and any region can be added (a task's, a server's or the gateway's phoneRegions). RU is left out until its
# trunk-prefixed national form (`8 (301) 123-28-93`) is read whole: today the `8` would stay in clear.
DEFAULT_PHONE_REGIONS: tuple[str, ...] = (
    "US", "CA", "MX", "BR", "AR", "CL", "GB", "IE", "DE", "AT", "CH", "FR", "BE", "NL", "ES", "PT", "IT", "PL", "SE",
    "TR", "IL", "AE", "SA", "ZA", "IN", "SG", "CN", "TW", "JP", "KR", "AU", "NZ",
)  # fmt: skip


def _re2_options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is the author's error, answered to them, not logged to stderr
    return options


RE2_OPTIONS = _re2_options()


def compile_linear(regex: str) -> Any:
    """The pattern compiled by RE2: matching time linear in the text whatever the pattern (no backtracking), so a
    task's pattern cannot stall the gateway. RE2 refuses what needs backtracking (backreferences, lookarounds)."""
    try:
        return re2.compile(regex, RE2_OPTIONS)
    except re2.error as exc:
        reason = exc.args[0].decode() if exc.args and isinstance(exc.args[0], bytes) else str(exc)
        raise ValueError(
            f"{reason} (custom patterns use RE2 syntax, matched in linear time: no backreferences or lookarounds)"
        ) from None


class CustomPattern(SpecModel):
    model_config = ConfigDict(frozen=True)  # hashable: tasks with the same patterns share their detectors

    name: Annotated[str, Field(pattern=ENTITY_NAME, max_length=40)]
    regex: Annotated[str, Field(min_length=1, max_length=1000)]

    @model_validator(mode="after")
    def _compiles(self) -> Self:
        try:
            compile_linear(self.regex)
        except ValueError as exc:
            raise ValueError(f"customPatterns[{self.name}].regex is refused: {exc}") from None
        return self


class PiiDeclaration(SpecModel):
    """Entities, patterns and phone regions to tokenize on top of the gateway's minimum: an MCPServer's `spec.pii`
    says its results carry these (the owner's word, applied to every task that lists the server)."""

    entities: list[PiiEntity] = Field(default_factory=list, max_length=len(PiiEntity))
    custom_patterns: list[CustomPattern] = Field(default_factory=list, alias="customPatterns", max_length=32)
    phone_regions: list[PhoneRegion] = Field(default_factory=list, alias="phoneRegions", max_length=MAX_PHONE_REGIONS)


class TaskPii(PiiDeclaration):
    """An AgentTask's `spec.pii`: what its author adds. `enabled` stays for old manifests, and only as true."""

    enabled: Literal[True] | None = None

    @model_validator(mode="before")
    @classmethod
    def _cannot_switch_off(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("enabled", True) is not True:
            raise ValueError(
                "pii.enabled: false is not allowed: PII protection is set by the cluster admin and the MCPServer "
                "owners; a task may only add entities and patterns"
            )
        return data
