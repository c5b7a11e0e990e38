"""Every value a task's vault holds, found by exact match in what leaves the gateway toward that task.

Detection alone cannot keep the vault's promise: a token de-tokenized into a tool's arguments comes back in
whatever context the tool puts it (`[EMAIL_1]_` becomes `ana@x.io_`, which no email pattern matches; a dict key in
a schema error; a value a memory tool stored and returns a call later, maybe from another gateway replica). So
the tokenizer also looks for the values themselves: one Aho-Corasick pass per string (linear in the text, whatever
the number of values), ASCII case folded so an upper-casing tool is caught too. Matches rank first.

The task's own tokens in a text (`[EMAIL_1]` in a prompt) are found too, as spans no detector may cut into (a value
`email` or a pattern `EMAIL` would otherwise tokenize a piece of a token): `GUARD` spans, kept as they are.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import ahocorasick

from gateway.pii.detectors import Detection

_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
TOKEN = re.compile(r"\[([A-Z][A-Z0-9_]*)_[1-9][0-9]*\]")
GUARD = ""  # the entity of a span that is one of the task's own tokens


def _folded(text: str) -> str:
    """Lower-cases A-Z only: the length and every index stay as they are (str.lower can change both)."""
    return text.lower() if text.isascii() else text.translate(_ASCII_LOWER)


class KnownValues:
    """The values of one task scope, in the order the vault minted them (`count` of them so far)."""

    def __init__(self) -> None:
        self.count = 0
        self._entities: dict[str, str] = {}  # folded value -> entity
        self._tokens: set[str] = set()
        self._automaton: ahocorasick.Automaton | None = None

    def restart(self) -> None:
        """The vault's log went back (its store lost it): read it again from its start, forgetting no value held."""
        self.count = 0

    def add(self, start: int, entries: Sequence[tuple[str, str]]) -> None:
        """Entries `start`, `start+1`, ... of the vault's log of (token, value); ones already held are skipped, so
        two requests of the same task that fetched overlapping slices add each value once."""
        fresh = entries[self.count - start :] if start <= self.count else None
        if not fresh:
            return
        self.count += len(fresh)
        for token, value in fresh:
            minted = TOKEN.fullmatch(token)
            self._tokens.add(token)
            if minted is not None and value:
                self._entities.setdefault(_folded(value), minted.group(1))
        automaton = ahocorasick.Automaton()
        for value, entity in self._entities.items():
            automaton.add_word(value, (len(value), entity))
        automaton.make_automaton()
        self._automaton = automaton

    def find(self, text: str) -> list[Detection]:
        """The task's tokens (GUARD spans), then the leftmost-longest occurrences of its values."""
        if self._automaton is None or not text:
            return []
        guards = [Detection(m.start(), m.end(), GUARD) for m in TOKEN.finditer(text) if m.group() in self._tokens]
        return guards + [
            Detection(end + 1 - length, end + 1, entity)
            for end, (length, entity) in self._automaton.iter_long(_folded(text))
        ]
