"""lmms-eval functions for a dataset exported by ``mmconvert export --format lmms-eval``.

Multiple-choice items score 1 when the option letter found in the response is the answer; items
with accepted answers (BABILong, LongBench) when the response contains one of them after
lower-casing and collapsing white space. Occlusions are scored span by span, as VCR's evaluation
code scores them (``vcr_official.py`` beside this file, the scorer of ``mmconvert score vcr``):
each span's exact match and Jaccard index, averaged over all spans of all items.

The task's YAML files name the parquet files by absolute path (lmms-eval resolves a relative
one against the working folder), so a moved export stops here with a message instead of
loading the data of another place or none.
"""

import importlib.util
import os
import re

EXPORTED_TO = None  # the folder mmconvert exported to; set by the export

_HERE = os.path.dirname(os.path.abspath(__file__))
if EXPORTED_TO is not None and os.path.realpath(_HERE) != os.path.realpath(EXPORTED_TO):
    raise SystemExit(
        f"mmconvert export: this task was exported to {EXPORTED_TO} and its YAML files name "
        f"the data there, but it is now in {_HERE}: export it again with --out {_HERE}, or "
        "move it back")

_LETTER_PATTERNS = (
    r"answer is:?\s*\(?([A-Z])\b",
    r"answer:\s*\(?([A-Z])\b",
    r"^\s*\(?([A-Z])[.)]?\s*$",
)
_official = None


def doc_to_visual(doc):
    return [image.convert("RGB") for image in doc["images"]]


def doc_to_visual_twin(doc):
    """The text-only image (occlusions), shown with the image prompt."""
    return [image.convert("RGB") for image in doc["text_only_images"]]


def doc_to_visual_none(doc):
    return []


def doc_to_text(doc, lmms_eval_specific_kwargs=None):
    return doc["prompt"]


def doc_to_text_twin(doc, lmms_eval_specific_kwargs=None):
    return doc["text_prompt"]


def option_letter(response, count):
    """The option letter a response chose: "answer is (B)", "Answer: B", a lone "B", else
    the last standalone capital letter among the options."""
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:count]
    for pattern in _LETTER_PATTERNS:
        found = re.findall(pattern, response, flags=re.IGNORECASE | re.MULTILINE)
        found = [f.upper() for f in found if f.upper() in letters]
        if found:
            return found[-1]
    found = [f for f in re.findall(r"\b([A-Z])\b", response) if f in letters]
    return found[-1] if found else None


def _normalise(text):
    return " ".join(str(text).lower().split())


def process_results(doc, results):
    response = results[0] if results else ""
    if doc["options"]:
        correct = option_letter(response, len(doc["options"])) == doc["answer"]
    else:
        said = _normalise(response)
        correct = any(_normalise(answer) in said for answer in doc["answers"] if answer)
    return {"accuracy": float(correct)}


def _vcr():
    global _official
    if _official is None:
        spec = importlib.util.spec_from_file_location("mmconvert_vcr_official",
                                                      os.path.join(_HERE, "vcr_official.py"))
        _official = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_official)
    return _official


def process_spans(doc, results):
    """Each covered span's exact match and Jaccard index (lists, one value per span)."""
    response = results[0] if results else ""
    language = (doc["language"] or "en").split("-")[0].lower()
    _, scored = _vcr().score_answer(list(doc["answers"]), response, language)
    return {"exact_match": [em for _, em, _ in scored],
            "jaccard": [jaccard for _, _, jaccard in scored]}


def span_mean(items):
    """The mean over all spans of all items (VCR's), in [0, 1]."""
    values = [value for spans in items for value in spans]
    return sum(values) / len(values) if values else 0.0
