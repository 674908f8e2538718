"""lmms-eval functions for a dataset exported by ``mmconvert export --format lmms-eval``.

Multiple-choice items are scored by the option letter found in the response; items with
accepted answers (BABILong, LongBench, occlusions) by whether the response contains one of them
after lower-casing and collapsing white space. Score occlusions with ``mmconvert score vcr`` for
the VCR paper's exact match and Jaccard index.
"""

import re

_LETTER_PATTERNS = (
    r"answer is:?\s*\(?([A-Z])\b",
    r"answer:\s*\(?([A-Z])\b",
    r"^\s*\(?([A-Z])[.)]?\s*$",
)


def doc_to_visual(doc):
    return [image.convert("RGB") for image in doc["images"]]


def doc_to_visual_twin(doc):
    return [image.convert("RGB") for image in doc["text_only_images"]]


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
