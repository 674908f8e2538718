"""VCR scoring under two protocols, over a run folder or an answer key.

``official`` is VCR's public evaluation code (``src/evaluation/evaluation_metrics.py`` and
``gather_results.py``), so figures compare with the published tables and with the VCR tasks of
VLMEvalKit and lmms-eval: each answer is scored as ``vcr_official`` describes (best n-gram by
``difflib`` ratio, white-space tokens, refusals score 0), items without a prediction are left
out, and the mean is over spans, not items, with VCR's bootstrap (1,000 resamples of the spans;
seeded here).

``strict`` is mmconvert's corrected scorer: the n-gram of least edit distance, tokens without
white space (spaCy's English rules; one token per character for Chinese), no refusal filter, an
answer per span when a list gives one, each item the mean of its spans and each group the mean of
its items, missing items scoring 0.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from ..errors import SourceError, UsageError, needs
from ..items import base_language
from ..manifest import parse_row
from ..rows import OcclusionRow
from ..runfolder import open_run
from . import vcr_official as official

Protocol = Literal["official", "strict"]
BOOTSTRAP_SAMPLES = 1000
LANGUAGES = ("en", "zh")
INSTALL_HINT = needs("scoring VCR", "spaCy", "occlude")


@lru_cache(maxsize=2)
def _strict_tokenizer(language: str):
    try:
        import spacy
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    return spacy.blank(language).tokenizer


def span_tokens(text: str, language: str, protocol: Protocol = "strict") -> list[str]:
    """The protocol's tokens: official keeps white-space tokens (and Chinese words), strict
    leaves them out (and splits Chinese per character)."""
    if protocol == "official":
        return _official(official.tokens, text, language)
    return [t.text for t in _strict_tokenizer(language)(text) if not t.is_space]


def _official(function, *args):
    """``function`` of vcr_official, its missing packages as one-line usage errors."""
    try:
        return function(*args)
    except official.ScorerUnavailable as err:
        message = str(err)
        if "zh_core_web_sm" in message:
            raise UsageError(f"{message}, or score with --protocol strict") from None
        raise UsageError(INSTALL_HINT) from None


@dataclass
class SpanScore:
    answer: str  # the covered span
    match: str  # the prediction's n-gram it was scored against ("" when none)
    exact_match: float
    jaccard: float

    def as_dict(self) -> dict[str, Any]:
        return {"answer": self.answer, "match": self.match, "exact_match": self.exact_match,
                "jaccard": self.jaccard}


def official_span(span: str, answer: str, language: str) -> SpanScore:
    """VCR's ``find_best_match``: the n-gram of highest similarity ratio with the span."""
    return SpanScore(span, *_official(official.best_match, span, answer, language))


def strict_span(span: str, answer: str, language: str) -> SpanScore:
    """The n-gram of least edit distance to the span (white space left out)."""
    try:
        from rapidfuzz.distance import Levenshtein
    except ImportError:
        raise UsageError(INSTALL_HINT) from None
    joiner = "" if language == "zh" else " "
    wanted = span_tokens(span, language)
    said = span_tokens(answer, language)
    n = len(wanted)
    target = joiner.join(wanted)
    best: list[str] | None = None
    best_distance = 0
    for i in range(len(said) - n + 1):
        gram = said[i:i + n]
        if set(gram).isdisjoint(wanted):
            continue
        distance = Levenshtein.distance(joiner.join(gram), target)
        if best is None or distance < best_distance:
            best, best_distance = gram, distance
    if best is None:
        return SpanScore(span, "", 0.0, 0.0)
    union = set(best) | set(wanted)
    return SpanScore(span, joiner.join(best), float(best == wanted),
                     len(set(best) & set(wanted)) / len(union))


def score_span(span: str, answer: str, language: str,
               protocol: Protocol = "strict") -> SpanScore:
    return (official_span if protocol == "official" else strict_span)(span, answer, language)


@dataclass
class ItemScore:
    spans: list[SpanScore]
    refused: bool = False


def score_item(spans: list[str], prediction: str | list[str], language: str, *,
               protocol: Protocol = "official") -> ItemScore:
    """Every span of one item against the prediction. ``official`` takes one answer string
    (a one-element list is that string, as VCR reads it); ``strict`` also takes one answer per
    span."""
    if protocol == "official":
        if isinstance(prediction, list):
            if len(prediction) != 1:
                raise ValueError("VCR's official protocol takes one answer string per item; a "
                                 "list of one answer per span needs --protocol strict")
            prediction = prediction[0]
        was_refused, scored = _official(official.score_answer, spans, prediction, language)
        return ItemScore([SpanScore(span, *values) for span, values in zip(spans, scored,
                                                                            strict=True)],
                         refused=was_refused)
    per_span = (prediction if isinstance(prediction, list) and len(prediction) == len(spans)
                else None)
    joined = "\n".join(prediction) if isinstance(prediction, list) else prediction
    return ItemScore([strict_span(span, per_span[i] if per_span else joined, language)
                      for i, span in enumerate(spans)])


@dataclass
class Group:
    """Scores of a group: per span (official) or per item (strict), as (EM, Jaccard)."""

    protocol: Protocol
    values: list[tuple[float, float]] = field(default_factory=list)
    items: int = 0
    spans: int = 0
    missing: int = 0
    refused: int = 0

    def add(self, scored: ItemScore | None, span_count: int) -> None:
        if scored is None:
            self.missing += 1
            if self.protocol == "official":
                return  # left out of the mean, as VCR's code leaves an item without a result
            scored = ItemScore([SpanScore("", "", 0.0, 0.0)] * span_count)
        self.items += 1
        self.spans += len(scored.spans)
        self.refused += scored.refused
        pairs = [(s.exact_match, s.jaccard) for s in scored.spans]
        if self.protocol == "official":
            self.values.extend(pairs)
        else:
            self.values.append(tuple(sum(v) / len(pairs) for v in zip(*pairs, strict=True)))

    def summary(self, seed: int = 0) -> dict[str, Any]:
        import numpy as np

        out: dict[str, Any] = {"items": self.items, "spans": self.spans,
                               "missing": self.missing, "refused": self.refused}
        scores = np.array(self.values, dtype=float).reshape(-1, 2) * 100
        if not len(scores):
            return {**out, **{f"{name}{suffix}": None for name in ("exact_match", "jaccard")
                              for suffix in ("", "_sd", "_ci95")}}
        picks = np.random.default_rng(seed).integers(0, len(scores),
                                                     (BOOTSTRAP_SAMPLES, len(scores)))
        means = scores[picks].mean(axis=1)
        # VCR's bootstrap_std: np.std of the resampled means; strict: the sample sd
        ddof = 0 if self.protocol == "official" else 1
        for column, name in enumerate(("exact_match", "jaccard")):
            out[name] = round(float(scores[:, column].mean()), 4)
            out[f"{name}_sd"] = round(float(means[:, column].std(ddof=ddof)), 4)
            out[f"{name}_ci95"] = [round(float(np.percentile(means[:, column], q)), 4)
                                   for q in (2.5, 97.5)]
        return out


def read_lines(path: Path) -> list[tuple[int, dict]]:
    """(line number, object) of each non-blank line; one-line errors naming file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SourceError(f"{path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not UTF-8 text") from None
    out = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = parse_row(line)
        except ValueError as err:
            raise SourceError(f"{path} line {number}: {err}") from None
        if not isinstance(row, dict):
            raise SourceError(f"{path} line {number}: expected a JSON object")
        out.append((number, row))
    return out


def _text_or_texts(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, list)
                                      and all(isinstance(v, str) for v in value))


def read_predictions(path: Path) -> dict[str, tuple[int, str | list[str] | None]]:
    """id -> (line, prediction); a null prediction is no prediction."""
    found: dict[str, tuple[int, str | list[str] | None]] = {}
    for number, line in read_lines(path):
        where = f"{path} line {number}"
        for name in ("id", "prediction"):
            if name not in line:
                raise SourceError(f"{where}: field {name}: missing")
        item_id, prediction = str(line["id"]), line["prediction"]
        if prediction is not None and not _text_or_texts(prediction):
            raise SourceError(f"{where}: field prediction: expected a string or a list of "
                              f"strings, got {type(prediction).__name__}")
        if item_id in found:
            raise SourceError(f"{where}: field id: {item_id!r} appears twice (first on line "
                              f"{found[item_id][0]})")
        found[item_id] = (number, prediction)
    return found


@dataclass
class KeyItem:
    id: str
    spans: list[str]
    language: str
    difficulty: str


def read_key(path: Path) -> list[KeyItem]:
    """An answer-key JSONL: rows {id, answers: [span, ...], language: en|zh, difficulty?}."""
    items: list[KeyItem] = []
    seen: dict[str, int] = {}
    for number, line in read_lines(path):
        where = f"{path} line {number}"
        for name in ("id", "answers"):
            if name not in line:
                raise SourceError(f"{where}: field {name}: missing")
        answers = line["answers"]
        if not isinstance(answers, list) or not answers or not all(
                isinstance(a, str) and a.strip() for a in answers):
            raise SourceError(f"{where}: field answers: expected a list of non-empty strings")
        language = base_language(line.get("language"))
        if language not in LANGUAGES:
            raise SourceError(f"{where}: field language: expected en or zh, got "
                              f"{line.get('language')!r}")
        item_id = str(line["id"])
        if item_id in seen:
            raise SourceError(f"{where}: field id: {item_id!r} appears twice (first on line "
                              f"{seen[item_id]})")
        seen[item_id] = number
        items.append(KeyItem(item_id, answers, language, str(line.get("difficulty") or "-")))
    if not items:
        raise SourceError(f"{path}: no rows: an answer key holds one row per item")
    return items


def run_key(run_dir: Path) -> list[KeyItem]:
    rows = open_run(run_dir).rows()
    if not rows or not all(isinstance(row, OcclusionRow) for row in rows):
        raise SourceError(f"{run_dir}: not an occlude run (its manifest rows have no "
                          "masked_spans)")
    return [KeyItem(row.id, [span.text for span in row.masked_spans],
                    base_language(row.language), row.difficulty)
            for row in rows if isinstance(row, OcclusionRow)]


def score_run(source: Path, predictions_path: Path,
              protocol: Protocol = "official") -> dict[str, Any]:
    """Scores of the predictions against an ``occlude`` run folder or an answer-key JSONL:
    overall, per language/difficulty, and per item and span."""
    key = read_key(source) if source.is_file() else run_key(source)
    predictions = read_predictions(predictions_path)
    groups: dict[str, Group] = defaultdict(lambda: Group(protocol))
    per_item = []
    for item in key:
        line, prediction = predictions.get(item.id, (0, None))
        scored = None
        if prediction is not None:
            try:
                scored = score_item(item.spans, prediction, item.language, protocol=protocol)
            except ValueError as err:
                raise SourceError(f"{predictions_path} line {line}: field prediction: "
                                  f"{err}") from None
        for name in ("all", f"{item.language}/{item.difficulty}"):
            groups[name].add(scored, len(item.spans))
        per_item.append({"id": item.id, "missing": scored is None,
                         "refused": bool(scored and scored.refused),
                         "spans": [s.as_dict() for s in scored.spans] if scored else []})
    known = {item.id for item in key}
    if all(item["missing"] for item in per_item):
        raise SourceError(f"{predictions_path}: no prediction names an item of {source} "
                          f"({len(predictions)} prediction(s), {len(known)} item(s)); nothing "
                          "to score")
    overall = groups.pop("all").summary()
    return {"protocol": protocol, **overall,
            "unknown": sum(1 for item_id in predictions if item_id not in known),
            "groups": {name: groups[name].summary() for name in sorted(groups)},
            "per_item": per_item}


def as_json(result: dict[str, Any]) -> dict[str, Any]:
    """``--json``: the figures, with ``items`` the per-item, per-span scores (in [0, 1])."""
    out = {k: v for k, v in result.items() if k not in ("per_item", "items")}
    return {**out, "scored_items": result["items"], "items": result["per_item"]}


def table(result: dict[str, Any]) -> str:
    """The scores as an aligned text table."""
    def cell(group: dict[str, Any], name: str) -> str:
        if group[name] is None:
            return "-"
        return f"{group[name]:6.2f} ± {group[name + '_sd']:5.2f}"

    protocol = result["protocol"]
    lines = [f"protocol: {protocol} ("
             + ("VCR's evaluation code: mean over spans, best n-gram by difflib ratio"
                if protocol == "official" else
                "mmconvert's: mean over items, best n-gram by edit distance") + ")",
             f"{'group':<10} {'items':>6} {'spans':>6}  {'exact match %':>15}  {'jaccard %':>15}"]
    for key, group in [*result["groups"].items(), ("all", result)]:
        lines.append(f"{key:<10} {group['items']:>6} {group['spans']:>6}  "
                     f"{cell(group, 'exact_match'):>15}  {cell(group, 'jaccard'):>15}")
    missing = ("left out of the means" if protocol == "official" else "scored 0")
    lines.append(f"{result['missing']} item(s) without a prediction ({missing}); "
                 f"{result['refused']} refusal(s) scored 0; "
                 f"{result['unknown']} prediction(s) for ids not in the key")
    return "\n".join(lines)
