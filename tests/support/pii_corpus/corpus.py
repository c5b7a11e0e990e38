"""Assembly: documents of every format in turn until the corpus reaches its size, deterministic by seed."""

from __future__ import annotations

import random

from tests.support.pii_corpus.formats import FORMATS
from tests.support.pii_corpus.model import Corpus, Document, Writer

DEFAULT_SEED = 18


def build_corpus(seed: int = DEFAULT_SEED, size_bytes: int = 1 << 20) -> Corpus:
    """Documents (UTF-8 size at least `size_bytes` in all) cycling through the formats in a shuffled order, so a
    small corpus still holds every format and a large one holds them in equal numbers."""
    r = random.Random(seed)
    documents: list[Document] = []
    total = 0
    while total < size_bytes:
        names = list(FORMATS)
        r.shuffle(names)
        for name in names:
            writer = Writer()
            FORMATS[name](r, writer)
            document = writer.document(name)
            documents.append(document)
            total += len(document.text.encode())
            if total >= size_bytes:
                break
    return Corpus(seed, tuple(documents))
