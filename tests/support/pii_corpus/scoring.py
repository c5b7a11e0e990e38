"""Scoring a detector's spans against the corpus's labels.

Exact: a detection counts when its entity and span are the label's (what tokenization needs: a span one character
short leaks that character, one too long swallows a neighbour). Overlap (lenient): a detection counts when it
overlaps a label of its entity, and a label counts as found when such a detection overlaps it.

A false positive is put down to the look-alike it overlaps (its kind), else to the label it overlaps (a wrong span
or a wrong entity), else to text the corpus holds no record of ("unlabelled").
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Sequence
from typing import Any

from tests.support.pii_corpus.model import Document, Label

Span = tuple[int, int, str]
ENTITIES = ("EMAIL", "PHONE", "CREDIT_CARD", "US_SSN", "IBAN", "IP_ADDRESS")
EXAMPLES = 3


def _ratio(part: int, whole: int) -> float:
    return round(part / whole, 4) if whole else 0.0


def _f1(precision: float, recall: float) -> float:
    return round(2 * precision * recall / (precision + recall), 4) if precision + recall else 0.0


def _overlaps(a: tuple[int, int], b: tuple[int, int]) -> bool:
    return a[0] < b[1] and b[0] < a[1]


class _Tally:
    """Counts for one entity (or all): exact and overlap matches on both sides."""

    def __init__(self) -> None:
        self.found = self.truth = self.exact = self.found_overlapping = self.truth_overlapped = 0

    def figures(self) -> dict[str, float | int]:
        precision, recall = _ratio(self.exact, self.found), _ratio(self.exact, self.truth)
        loose_p, loose_r = _ratio(self.found_overlapping, self.found), _ratio(self.truth_overlapped, self.truth)
        return {
            "precision": precision,
            "recall": recall,
            "f1": _f1(precision, recall),
            "overlap_precision": loose_p,
            "overlap_recall": loose_r,
            "overlap_f1": _f1(loose_p, loose_r),
            "labels": self.truth,
            "found": self.found,
            "exact": self.exact,
        }


def _snippet(text: str, start: int, end: int) -> str:
    before, after = text[max(0, start - 18) : start], text[end : end + 18]
    return f"{before}[{text[start:end]}]{after}".replace("\n", "⏎").replace("\t", "⇥")


def score(documents: Sequence[Document], found: Sequence[Sequence[Span]]) -> dict[str, Any]:
    """Figures for one detector: `found[i]` is what it reported for `documents[i]`."""
    tallies: dict[str, _Tally] = {e: _Tally() for e in ENTITIES}
    recall_groups: dict[str, dict[str, list[int]]] = {"country": {}, "form": {}, "context": {}}
    false_positives: Counter[str] = Counter()
    fp_examples: dict[str, list[str]] = defaultdict(list)
    misses: Counter[str] = Counter()
    miss_examples: dict[str, list[str]] = defaultdict(list)
    for document, spans in zip(documents, found, strict=True):
        spans = [s for s in spans if s[2] in tallies]
        reported = set(spans)
        truth = {(label.start, label.end, label.entity): label for label in document.labels}
        for span in spans:
            tally = tallies[span[2]]
            tally.found += 1
            tally.exact += span in truth
            same = [key for key in truth if key[2] == span[2] and _overlaps(key[:2], span[:2])]
            tally.found_overlapping += bool(same)
            if span not in truth:
                cause = _cause(document, span)
                false_positives[cause] += 1
                if len(fp_examples[cause]) < EXAMPLES:
                    fp_examples[cause].append(f"{span[2]}: {_snippet(document.text, span[0], span[1])}")
        for key, label in truth.items():
            tally = tallies[label.entity]
            tally.truth += 1
            hit = key in reported
            tally.truth_overlapped += any(s[2] == label.entity and _overlaps(key[:2], s[:2]) for s in spans)
            _count_recall(recall_groups, label, hit)
            if not hit:
                group = f"{label.entity}/{label.form}" + (f"/{label.context}" if label.context else "")
                misses[group] += 1
                if len(miss_examples[group]) < EXAMPLES:
                    miss_examples[group].append(_snippet(document.text, label.start, label.end))
    micro = _Tally()
    for tally in tallies.values():
        for field in ("found", "truth", "exact", "found_overlapping", "truth_overlapped"):
            setattr(micro, field, getattr(micro, field) + getattr(tally, field))
    return {
        "micro": micro.figures(),
        "by_entity": {e: t.figures() for e, t in tallies.items()},
        "phone_recall_by_country": _recalls(recall_groups["country"]),
        "recall_by_form": _recalls(recall_groups["form"]),
        "recall_by_context": _recalls(recall_groups["context"]),
        "false_positives_by_kind": [
            {"kind": kind, "count": n, "examples": fp_examples[kind]} for kind, n in false_positives.most_common()
        ],
        "misses_by_form": [
            {"form": form, "count": n, "examples": miss_examples[form]} for form, n in misses.most_common()
        ],
    }


def _cause(document: Document, span: Span) -> str:
    for alike in document.lookalikes:
        if _overlaps((alike.start, alike.end), span[:2]):
            return alike.kind
    for label in document.labels:
        if _overlaps((label.start, label.end), span[:2]):
            return "label-span" if label.entity == span[2] else f"label-entity:{label.entity}"
    return "unlabelled"


def _count_recall(groups: dict[str, dict[str, list[int]]], label: Label, hit: bool) -> None:
    keys = {"form": f"{label.entity}/{label.form}"}
    if label.context:
        keys["context"] = f"{label.entity}/{label.context}"
    if label.entity == "PHONE":
        keys["country"] = label.country
    for group, key in keys.items():
        counts = groups[group].setdefault(key, [0, 0])
        counts[0] += hit
        counts[1] += 1


def _recalls(counts: dict[str, list[int]]) -> dict[str, dict[str, float | int]]:
    return {key: {"recall": _ratio(hit, n), "labels": n} for key, (hit, n) in sorted(counts.items())}
