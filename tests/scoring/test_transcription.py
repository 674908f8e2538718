"""Fox's page-OCR metrics against Fox's own evaluation code, on replies whose truth is known.

Fox's script (ucaslcl/Fox, eval_tools/eval_ocr_test.py) is not a package: the reference here
calls the NLTK and jieba functions it calls, in its order, with its arguments (its
``doc_text_eval`` passes a row's ``label``, the ground truth, as ``pred`` and its ``answer``,
the model's reply, as ``gt``). Every generated reply is scored by both; they must agree to
1e-12, and the truth known by construction (an exact copy, a reply missing k of n distinct
words, ...) must hold.
"""

from __future__ import annotations

import random

import pytest

from mmconvert.scoring.transcription import MAX_REPLY_CHARS, transcription_scores

nltk_metrics = pytest.importorskip("nltk.metrics")
nltk = pytest.importorskip("nltk")
jieba = pytest.importorskip("jieba")


def fox(label: str, answer: str) -> dict:
    """Fox's ``cal_per_metrics(_, pred=label, gt=answer)``, less BLEU and METEOR (METEOR needs
    WordNet's data, which is fetched at run time)."""
    pred, gt = label, answer
    chinese = any("\u4e00" <= c <= "\u9fa5" for c in gt + pred)
    reference = jieba.lcut(gt) if chinese else gt.split()
    hypothesis = jieba.lcut(pred) if chinese else pred.split()
    reference, hypothesis = set(reference), set(hypothesis)
    return {"precision": nltk_metrics.precision(reference, hypothesis),
            "recall": nltk_metrics.recall(reference, hypothesis),
            "f_measure": nltk_metrics.f_measure(reference, hypothesis),
            "edit_dist": nltk.edit_distance(pred, gt) / max(len(pred), len(gt))}


WORDS = ("the tide turned at three and boats came into harbour while gulls circled over "
         "grey water reading pages aloud slowly").split()
CHINESE = "潮水在三点钟退去船只陆续回港海鸥在灰色的水面上盘旋"


def replies(rng: random.Random, page: str) -> list[tuple[str, str]]:
    """(kind, reply) pairs made from ``page``."""
    tokens = page.split()
    out = [("exact", page), ("empty", ""), ("spaces only", "   "),
           ("reordered", " ".join(rng.sample(tokens, len(tokens)))),
           ("doubled", page + " " + page), ("other text", "nothing here at all")]
    for k in range(1, 4):
        dropped = set(rng.sample(sorted(set(tokens)), min(k, len(set(tokens)))))
        kept = [t for t in tokens if t not in dropped]
        out.append((f"missing {k}", " ".join(kept)))
        out.append((f"{k} extra", page + " " + " ".join(f"zz{n}" for n in range(k))))
    out.append(("one typo", page.replace("e", "3", 1)))
    out.append(("newlines", "\n".join(tokens)))
    return out


@pytest.mark.slow
def test_fox_s_metrics_agree_with_fox_s_code_and_the_truth():
    rng = random.Random(5)
    pages = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(3, 40))) for _ in range(40)]
    cases = [(page, kind, reply) for page in pages for kind, reply in replies(rng, page)]
    chinese = [CHINESE[:n] for n in (6, 14, len(CHINESE))]
    cases += [(page, kind, reply) for page in chinese for kind, reply in
              (("exact", page), ("half", page[: len(page) // 2]), ("latin", "no chinese"),
               ("mixed", page + " ok"))]
    checked = 0
    for page, kind, reply in cases:
        ours = transcription_scores(page, reply)
        if not page and not reply:
            continue
        theirs = fox(page, reply)
        for name in ("precision", "recall", "f_measure"):
            a, b = getattr(ours, name), theirs[name]
            assert (a is None and b is None) or abs(a - b) < 1e-12, (kind, name, a, b)
        assert abs(ours.edit_distance - theirs["edit_dist"]) < 1e-12, kind
        checked += 1
        # the truth, known by construction
        distinct = set(page.split())
        if kind == "exact":
            assert (ours.precision, ours.recall, ours.edit_distance) == (1.0, 1.0, 0.0)
        if kind.startswith("missing"):
            k = int(kind.split()[1])
            k = min(k, len(distinct))
            assert ours.precision == pytest.approx((len(distinct) - k) / len(distinct))
            assert ours.recall == 1.0 or not reply
        if kind.endswith("extra"):
            k = int(kind.split()[0])
            assert ours.precision == 1.0
            assert ours.recall == pytest.approx(len(distinct) / (len(distinct) + k))
        if kind in ("reordered", "doubled", "newlines"):  # sets: order and repeats do not count
            assert (ours.precision, ours.recall) == (1.0, 1.0)
        if kind in ("empty", "spaces only"):
            assert ours.recall is None and ours.f_measure is None and ours.precision == 0.0
    assert checked == 572  # 40 pages x 14 replies + 3 Chinese pages x 4


def test_a_reply_past_the_bound_is_cut_and_says_so():
    page = "a few words"
    scored = transcription_scores(page, page + " x" * MAX_REPLY_CHARS)
    assert scored.cut and scored.precision == 1.0
    assert not transcription_scores(page, page).cut
