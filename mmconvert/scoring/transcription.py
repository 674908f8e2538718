"""How well a reply transcribes a page: Fox's page-OCR metrics, as Fox's own evaluation script
computes them (ucaslcl/Fox, ``eval_tools/eval_ocr_test.py``), the figures DeepSeek-OCR's
compression table reports (its "precision" on Fox's English pages).

What that script computes, in words:

- The two texts are cut into words: jieba's words when either holds a CJK ideograph in
  U+4E00..U+9FA5, else the runs between whitespace. Each text's words are taken as a set:
  a word counts once, however often it is written.
- ``precision`` is the share of the page's distinct words that the reply holds; ``recall``
  the share of the reply's distinct words that are on the page. Fox's script hands the
  ground truth to NLTK's ``precision`` as its test set, so its "precision" is what is more
  often called recall (and its "recall" precision). The names here are Fox's, because
  DeepSeek-OCR's table, and every paper that quotes it, reports Fox's "precision".
- ``f_measure``: their harmonic mean (NLTK's ``f_measure``, alpha 0.5).
- ``edit_distance``: the Levenshtein distance between the two texts, character by
  character, over the longer one's length (0 is exact, 1 is nothing in common).

A reply with no words has no ``recall`` (and no ``f_measure``), and a page with no words no
``precision``: those are None, never 0 (Fox's script would stop there). DeepSeek-OCR ships no
scoring code; its paper reports the same quantity under the same name, so its precision is
Fox's here.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from ..errors import UsageError, needs

# Fox's test for Chinese text (U+4E00..U+9FA5, the CJK Unified Ideographs' first block)
_CHINESE = re.compile("[\u4e00-\u9fa5]")
# a reply longer than this many characters is cut before it is scored (and the row says so)
MAX_REPLY_CHARS = 200_000


@dataclass(frozen=True)
class Transcribed:
    """One reply's transcription scores against the text its page holds."""

    precision: float | None  # Fox's: the page's distinct words the reply holds
    recall: float | None  # Fox's: the reply's distinct words that are on the page
    f_measure: float | None
    edit_distance: float  # normalised by the longer text: 0 exact, 1 nothing in common
    page_words: int
    reply_words: int
    cut: bool = False  # the reply was longer than MAX_REPLY_CHARS and was cut

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def words(text: str, chinese: bool) -> list[str]:
    """``text``'s words as Fox's script cuts them: jieba's words for Chinese, else the runs
    between whitespace."""
    if chinese:
        try:
            import jieba
        except ImportError:
            raise UsageError(needs("scoring a Chinese transcription", "jieba", "longbench")) \
                from None
        jieba.setLogLevel(60)  # its "Building prefix dict" lines on stderr
        return list(jieba.lcut(text))
    return text.split()


def levenshtein(a: str, b: str) -> int:
    """The edit distance between ``a`` and ``b`` (insertions, deletions and substitutions of
    one character, each 1)."""
    try:
        from rapidfuzz.distance import Levenshtein

        return int(Levenshtein.distance(a, b))
    except ImportError:
        pass
    if len(a) < len(b):
        a, b = b, a
    previous = list(range(len(b) + 1))
    for i, left in enumerate(a, 1):
        current = [i]
        for j, right in enumerate(b, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1,
                               previous[j - 1] + (left != right)))
        previous = current
    return previous[-1]


def transcription_scores(page: str, reply: str) -> Transcribed:
    """Fox's metrics of ``reply`` as a transcription of ``page``'s text."""
    cut = len(reply) > MAX_REPLY_CHARS
    if cut:
        reply = reply[:MAX_REPLY_CHARS]
    chinese = bool(_CHINESE.search(page) or _CHINESE.search(reply))
    truth, said = set(words(page, chinese)), set(words(reply, chinese))
    common = len(truth & said)
    precision = common / len(truth) if truth else None
    recall = common / len(said) if said else None
    if precision is None or recall is None:
        f_measure = None
    elif precision == 0 or recall == 0:
        f_measure = 0.0
    else:
        f_measure = 1.0 / (0.5 / precision + 0.5 / recall)
    longer = max(len(page), len(reply))
    distance = levenshtein(page, reply) / longer if longer else 0.0
    return Transcribed(precision, recall, f_measure, distance, len(truth), len(said), cut)

