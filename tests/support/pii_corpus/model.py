"""The corpus's data: documents with exact labelled spans, and the writer that records them while text is assembled.

A document is written as a sequence of segments (plain text, PII values, look-alikes), so a span is known from
the offsets it was written at, never searched for afterwards (a value occurring twice would be ambiguous).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class Label:
    """A PII value at text[start:end]. `form` is how it is written (national, spaced, url-encoded...), `context`
    what surrounds it when that is the point of the example (cjk-adjacent, after-json-escape...)."""

    start: int
    end: int
    entity: str
    form: str
    context: str = ""
    country: str = ""  # phones and IBANs


@dataclass(frozen=True)
class LookAlike:
    """Text a detector may take for `resembles` but which is no PII (an order number, a version, a UUID...)."""

    start: int
    end: int
    kind: str
    resembles: str


@dataclass(frozen=True)
class Document:
    format: str
    text: str
    labels: tuple[Label, ...]
    lookalikes: tuple[LookAlike, ...]


@dataclass(frozen=True)
class Corpus:
    seed: int
    documents: tuple[Document, ...]

    @property
    def size_bytes(self) -> int:
        return sum(len(d.text.encode()) for d in self.documents)

    @property
    def labels(self) -> list[Label]:
        return [label for d in self.documents for label in d.labels]

    @property
    def lookalikes(self) -> list[LookAlike]:
        return [a for d in self.documents for a in d.lookalikes]


@dataclass(frozen=True)
class Pii:
    """A value to write and label."""

    text: str
    entity: str
    form: str
    country: str = ""
    context: str = ""

    def within(self, context: str) -> Pii:
        return replace(self, context=context)


@dataclass(frozen=True)
class Alike:
    """A look-alike to write and record."""

    text: str
    kind: str
    resembles: str


Segment = str | Pii | Alike


class Writer:
    """Appends segments to one document, recording the span of every value and look-alike."""

    def __init__(self) -> None:
        self._parts: list[str] = []
        self._length = 0
        self._labels: list[Label] = []
        self._lookalikes: list[LookAlike] = []

    def add(self, *segments: Segment | Iterable[Segment]) -> None:
        for segment in segments:
            if isinstance(segment, str | Pii | Alike):
                self._one(segment)
            else:
                for inner in segment:
                    self._one(inner)

    def _one(self, segment: Segment) -> None:
        if isinstance(segment, str):
            text = segment
        else:
            text = segment.text
            start, end = self._length, self._length + len(text)
            if isinstance(segment, Pii):
                label = Label(start, end, segment.entity, segment.form, segment.context, segment.country)
                self._labels.append(label)
            else:
                self._lookalikes.append(LookAlike(start, end, segment.kind, segment.resembles))
        self._parts.append(text)
        self._length += len(text)

    def document(self, format_name: str) -> Document:
        return Document(format_name, "".join(self._parts), tuple(self._labels), tuple(self._lookalikes))


_SLOT = re.compile(r"\{(\w+)\}")
Slot = Segment | list[Segment] | Callable[[], Segment | list[Segment]]


def fill(template: str, slots: Mapping[str, Slot]) -> list[Segment]:
    """A template's text with `{name}` slots replaced by segments (a str.format that keeps values as values). A slot
    may be a function, called only if the template uses it: a value is drawn only when it is written."""
    out: list[Segment] = []
    at = 0
    for match in _SLOT.finditer(template):
        slot = slots[match.group(1)]
        value = slot() if callable(slot) else slot
        out += [template[at : match.start()], *(value if isinstance(value, list) else [value])]
        at = match.end()
    out.append(template[at:])
    return [s for s in out if s != ""]


def json_escaped(segments: Iterable[Segment]) -> list[Segment]:
    """The segments as the inside of a JSON string: text escaped (a newline becomes backslash-n), values as they
    are (none holds a character JSON escapes, checked here), so labels stay exact in raw JSON text."""
    out: list[Segment] = []
    for segment in segments:
        if isinstance(segment, str):
            out.append(json.dumps(segment, ensure_ascii=False)[1:-1])
        else:
            if json.dumps(segment.text, ensure_ascii=False)[1:-1] != segment.text:
                raise ValueError(f"{segment.text!r} would change under JSON escaping")
            out.append(segment)
    return out
