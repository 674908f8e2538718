"""How a model's answer to one item of a run is scored: the item's scoring spec, made from its
manifest row (``spec_of``), and the one scorer every harness uses (``scoring.answers``); which
items cannot be scored at all (``unscorable``), which a run says as it renders them.

- Multiple choice: the option letter in the forms real models write (``answers.
  extract_choice``); a reply that names none, or two, is *unparsed*: scored 0, counted apart.
- VCR occlusions: exact match and Jaccard index of the covered spans (``score vcr``'s two
  protocols); the item's score is its spans' mean exact match.
- Corpora with their own benchmark's metric say so (``Corpus.scoring``): BABILong's rule,
  LongBench's metric per subset, RULER's string match, an lm-eval task's own filters and
  metrics.
- Anything else with accepted answers is free-form, scored by the item's own ``metric``
  (``scoring.answers.FREE_METRICS``) or, when it names none, by its answers: ``numeric``
  when every accepted answer is a number (compared by value: "-15" is not "15", "$1,234.00"
  is 1234), SQuAD's normalised exact match (and its token F1) when none is, ``any-of`` when
  some are. What is read is the reply's answer line, or the whole reply for a direct
  prompt. A substring never counts.
- An item with no gold answer (``unscorable``) is not scored at all: it is reported as
  unscored, never as 0.

Every function here is pure: the same response gives the same score, so stored responses can be
scored again without a request, and an export's copy of ``scoring.answers`` with the row's
spec gives the same score as ``eval``.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass, field
from typing import Any, cast

from ..errors import needs
from ..items import base_language
from ..renderers import row_renderer
from ..rows import OcclusionRow, Row, asks_direct, row_options
from . import answers as scorer
from .answers import LETTERS

DEFAULT_METRIC = "exact_match"


@dataclass
class Scored:
    """One answer's score: ``value`` in [0, 1]; ``answer`` what was extracted (None when
    nothing could be); ``parsed`` False for an answer in no form the family reads."""

    value: float
    answer: str | None
    parsed: bool = True
    extra: dict[str, Any] = field(default_factory=dict)


def accepted(row: Row) -> list[str]:
    answer = row.answer
    return [str(a) for a in answer] if isinstance(answer, list) else (
        [] if answer is None else [str(answer)])


def spec_of(row: Row, protocol: str = "official") -> dict[str, Any]:
    """The scoring spec of the item of manifest ``row`` (``scoring.answers``): what its
    exports carry beside it, and what ``eval`` scores it by."""
    from ..corpora import CORPORA

    language = base_language(row.language)
    extract = "whole" if asks_direct(row) else "answer_line"
    if row_renderer(row).profile.answer_spans:
        return {"kind": "spans", "metric": f"vcr:{protocol}", "language": language,
                "answers": [s.text for s in row.masked_spans]
                if isinstance(row, OcclusionRow) else []}
    spec: dict[str, Any] | None = None
    corpus = row.corpus
    if isinstance(corpus, str) and corpus in CORPORA:
        spec = CORPORA.get(corpus)().scoring(row)
    options = [str(o) for o in row_options(row)]
    if spec is None and options:
        spec = {"kind": "choice", "metric": "option_letter", "options": options}
    if spec is None:
        spec = {"kind": "free", "metric": item_metric(row)}
    return {"version": scorer.VERSION, **spec, "answers": accepted(row), "extract": extract,
            "language": language}


def score_row(row: Row, response: str, *, protocol: str = "official") -> Scored:
    """``response`` to the item of manifest ``row``, scored by its spec."""
    spec = spec_of(row, protocol)
    if spec["kind"] == "spans" and protocol != "official":
        return score_spans(response, spec["answers"], spec["language"], protocol)
    got = scorer.score(spec, response)
    return Scored(got["score"], got["answer"], got["parsed"], got["extra"])


def item_metric(row: Row) -> str:
    """The metric of a free-form item: the one its row names (``metadata.metric``, from a
    JSONL item's ``metric``), else the one its accepted answers choose
    (``scoring.answers.free_metric``)."""
    named = row.metadata.get("metric")
    return named if isinstance(named, str) and named else scorer.free_metric(accepted(row))


def metric_name(row: Row, protocol: str = "official") -> str:
    """What the item is scored by, as results.json names it."""
    spec = spec_of(row, protocol)
    if spec["kind"] == "choice":
        return "option_letter"
    if spec["metric"] == DEFAULT_METRIC:
        return "exact_match (SQuAD normalisation; f1 beside it)"
    return spec["metric"]


def free_form(row: Row) -> bool:
    """Whether the item is scored by one of the generic free-form rules (what a judge model
    may score instead)."""
    spec = spec_of(row)
    return spec["kind"] == "free" and spec["metric"] in scorer.FREE_METRICS


def score_spans(response: str, spans: list[str], language: str, protocol: str) -> Scored:
    """VCR: the spans' mean exact match; their mean Jaccard index in ``extra``."""
    from .vcr import score_item

    scored = score_item(spans, response, language, protocol=cast(Any, protocol))
    exact = [s.exact_match for s in scored.spans]
    jaccard = [s.jaccard for s in scored.spans]
    return Scored(sum(exact) / len(exact), " | ".join(s.match for s in scored.spans),
                  extra={"exact_match": exact, "jaccard": jaccard, "refused": scored.refused})


def unscorable(row: Row) -> str | None:
    """Why the item of manifest ``row`` cannot be scored (it has no gold answer to score
    against), or None. Such an item is reported as unscored, never scored 0."""
    if row_renderer(row).profile.answer_spans:
        return None if isinstance(row, OcclusionRow) and row.masked_spans else \
            "no covered span to score against"
    answers = [a for a in accepted(row) if a.strip()]
    if not answers:
        return "no gold answer"
    options = row_options(row)
    if options and answers[0] not in LETTERS[:len(options)]:
        return f"answer {answers[0]!r} names none of its {len(options)} options"
    return None


def requirements(spec: dict[str, Any]) -> list[tuple[str, str]]:
    """The packages scoring by ``spec`` (``scoring.answers.score``) imports, as (module,
    mmconvert extra)."""
    metric = spec.get("metric", "")
    if spec.get("kind") == "lm-eval":
        return [("lm_eval", "lm-eval")]
    if spec.get("kind") == "spans":
        return [("spacy", "occlude")]
    name = metric.split(":", 1)[1] if metric.startswith("longbench:") else ""
    return {"qa_f1_zh": [("jieba", "longbench")],
            "rouge": [("rouge", "longbench")],
            "rouge_zh": [("jieba", "longbench"), ("rouge", "longbench")],
            "code_sim": [("thefuzz", "longbench")]}.get(name, [])


def missing(spec: dict[str, Any]) -> str | None:
    """What scoring by ``spec`` needs and this environment lacks, in a line naming the extra
    that installs it; None when everything is there."""
    for module, extra in requirements(spec):
        if importlib.util.find_spec(module) is None:
            return needs(f"scoring {spec.get('metric')}", module, extra)
    return None
