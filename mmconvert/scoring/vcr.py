"""VCR scoring, as the paper reports it: for each covered span, the n-gram of the model's answer
with the least edit distance to the span (n = the span's token count; only n-grams sharing a
token with the span are candidates), then exact match (same tokens, same order) and the Jaccard
index of the two token sets. Tokens come from the tokenizer that chose the spans (spaCy's
English rules; one token per character for Chinese). An item scores the mean over its spans;
a group the mean over its items, in percent, with a bootstrap standard deviation over items.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from ..errors import SourceError, UsageError
from ..renderers.occlude import base_language
from ..runfolder import open_run

BOOTSTRAP_SAMPLES = 1000


@lru_cache(maxsize=2)
def _tokenizer(language: str):
    try:
        import spacy
    except ImportError:
        raise UsageError("scoring VCR needs spaCy: pip install 'mmconvert[occlude]'") from None
    return spacy.blank(language)


def tokens(text: str, language: str) -> list[str]:
    return [t.text for t in _tokenizer(language)(text) if not t.is_space]


@dataclass
class SpanScore:
    span: str
    best: str
    exact_match: float
    jaccard: float


def score_span(span: str, answer: str, language: str) -> SpanScore:
    """The span against the closest n-gram of ``answer``."""
    from rapidfuzz.distance import Levenshtein

    joiner = "" if language == "zh" else " "
    wanted = tokens(span, language)
    said = tokens(answer, language)
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


@dataclass
class Group:
    items: list[tuple[float, float]] = field(default_factory=list)  # (EM, Jaccard) per item
    spans: int = 0

    def summary(self, seed: int = 0) -> dict[str, Any]:
        import numpy as np

        scores = np.array(self.items, dtype=float).reshape(-1, 2) * 100
        out: dict[str, Any] = {"items": len(self.items), "spans": self.spans}
        if not len(scores):
            return {**out, "exact_match": None, "jaccard": None, "exact_match_sd": None,
                    "jaccard_sd": None}
        picks = np.random.default_rng(seed).integers(0, len(scores),
                                                     (BOOTSTRAP_SAMPLES, len(scores)))
        means = scores[picks].mean(axis=1)
        for column, name in enumerate(("exact_match", "jaccard")):
            out[name] = round(float(scores[:, column].mean()), 4)
            out[f"{name}_sd"] = round(float(means[:, column].std(ddof=1)), 4)
        return out


def read_predictions(path: Path) -> dict[str, str | list[str]]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as err:
        raise SourceError(f"{path}: cannot read ({err.strerror})") from None
    except UnicodeDecodeError:
        raise SourceError(f"{path}: not UTF-8 text") from None
    found: dict[str, str | list[str]] = {}
    first_line: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as err:
            raise SourceError(f"{where}: not a JSON row ({err.msg})") from None
        if not isinstance(row, dict):
            raise SourceError(f"{where}: expected an object with id and prediction")
        for name in ("id", "prediction"):
            if name not in row:
                raise SourceError(f"{where}: field {name}: missing")
        item_id, prediction = str(row["id"]), row["prediction"]
        if prediction is None:
            prediction = ""
        if not isinstance(prediction, str) and not (
                isinstance(prediction, list) and all(isinstance(p, str) for p in prediction)):
            raise SourceError(f"{where}: field prediction: expected a string or a list of "
                              f"strings, got {type(prediction).__name__}")
        if item_id in found:
            raise SourceError(f"{where}: field id: {item_id!r} appears twice (first on line "
                              f"{first_line[item_id]})")
        found[item_id] = prediction
        first_line[item_id] = number
    return found


def score_run(run_dir: Path, predictions_path: Path) -> dict[str, Any]:
    """Scores of the predictions for an ``occlude`` run: overall and per language/difficulty.
    Items without a prediction score 0 and are counted as missing."""
    rows = open_run(run_dir).rows()
    if not rows or "masked_spans" not in rows[0]:
        raise SourceError(f"{run_dir}: not an occlude run (its manifest rows have no "
                          "masked_spans)")
    predictions = read_predictions(predictions_path)
    groups: dict[str, Group] = defaultdict(Group)
    missing = 0
    for row in rows:
        language = base_language(row.get("language"))
        spans = [span["text"] for span in row["masked_spans"]]
        prediction = predictions.get(row["id"])
        if prediction is None:
            missing += 1
            em = jaccard = 0.0
        else:
            answers = (prediction if isinstance(prediction, list) and len(prediction) ==
                       len(spans) else None)
            joined = "\n".join(prediction) if isinstance(prediction, list) else prediction
            scored = [score_span(span, answers[i] if answers else joined, language)
                      for i, span in enumerate(spans)]
            em = sum(s.exact_match for s in scored) / len(scored)
            jaccard = sum(s.jaccard for s in scored) / len(scored)
        for key in ("all", f"{language}/{row.get('difficulty', '?')}"):
            groups[key].items.append((em, jaccard))
            groups[key].spans += len(spans)
    overall = groups.pop("all").summary()
    known = {row["id"] for row in rows}
    return {**overall, "missing": missing,
            "unknown": sum(1 for item_id in predictions if item_id not in known),
            "groups": {key: groups[key].summary() for key in sorted(groups)}}


def table(result: dict[str, Any]) -> str:
    """The scores as an aligned text table."""
    def cell(group: dict[str, Any], name: str) -> str:
        if group[name] is None:
            return "-"
        return f"{group[name]:6.2f} ± {group[name + '_sd']:5.2f}"

    lines = [f"{'group':<10} {'items':>6} {'spans':>6}  {'exact match %':>15}  {'jaccard %':>15}"]
    for key, group in [*result["groups"].items(), ("all", result)]:
        lines.append(f"{key:<10} {group['items']:>6} {group['spans']:>6}  "
                     f"{cell(group, 'exact_match'):>15}  {cell(group, 'jaccard'):>15}")
    lines.append(f"{result['missing']} item(s) without a prediction (scored 0); "
                 f"{result['unknown']} prediction(s) for ids not in the run")
    return "\n".join(lines)
