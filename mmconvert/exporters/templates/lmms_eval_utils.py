"""lmms-eval functions for a dataset exported by ``mmconvert export --format lmms-eval``.

Every item is scored by ``mmconvert_answers.py`` beside this file, the scorer ``mmconvert
eval`` uses, with the item's scoring spec (the ``scoring`` column): the option letter for
multiple choice, the benchmark's own metric otherwise (SQuAD's exact match, LongBench's metric,
BABILong's rule, RULER's string match, an lm-eval task's filters), VCR's exact match and
Jaccard index for occlusions (``vcr_official.py``, also beside this file), averaged over all
spans of all items. ``parsed`` is 0 for a reply the scorer could not read (or that names two
answers): such a reply scores 0, and its share is reported apart.

The task's YAML files name the parquet files by absolute path (lmms-eval resolves a relative
one against the working folder), so a moved export stops here with a message instead of
loading the data of another place or none.
"""

import importlib.util
import os

EXPORTED_TO = None  # the folder mmconvert exported to; set by the export

_HERE = os.path.dirname(os.path.abspath(__file__))
if EXPORTED_TO is not None and os.path.realpath(_HERE) != os.path.realpath(EXPORTED_TO):
    raise SystemExit(
        f"mmconvert export: this task was exported to {EXPORTED_TO} and its YAML files name "
        f"the data there, but it is now in {_HERE}: export it again with --out {_HERE}, or "
        "move it back")

_answers = None


def answers():
    """``mmconvert_answers.py``, the scorer beside this file."""
    global _answers
    if _answers is None:
        spec = importlib.util.spec_from_file_location(
            "mmconvert_answers", os.path.join(_HERE, "mmconvert_answers.py"))
        _answers = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(_answers)
    return _answers


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


def process_results(doc, results):
    """The item's score (``accuracy``, in [0, 1]) and whether its reply was read
    (``parsed``)."""
    scored = answers().score(doc["scoring"], results[0] if results else "")
    return {"accuracy": scored["score"], "parsed": float(scored["parsed"])}


def process_spans(doc, results):
    """Each covered span's exact match and Jaccard index (lists, one value per span)."""
    scored = answers().score(doc["scoring"], results[0] if results else "")
    return {"exact_match": scored["extra"]["exact_match"],
            "jaccard": scored["extra"]["jaccard"]}


def span_mean(items):
    """The mean over all spans of all items (VCR's), in [0, 1]."""
    values = [value for spans in items for value in spans]
    return sum(values) / len(values) if values else 0.0
