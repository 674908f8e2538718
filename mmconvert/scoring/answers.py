"""One answer extractor and one scorer: how a model's reply to one item is scored, the same in
``mmconvert eval``, ``frontier`` and the code every export writes (lmms-eval's ``utils.py``, the
VLMEvalKit dataset class, the inspect_ai task, the Hugging Face dataset's ``score.py``).

This module imports nothing from mmconvert and nothing outside Python's standard library but
for a metric that names its package (LongBench's Chinese and ROUGE metrics, VCR's spaCy
tokens, lm-eval's own filters): every export copies it as it is, with the two modules it
loads from beside it (``vcr_official.py``, ``lm_eval_scoring.py``), so a reply has one score
everywhere. What it scores an item against is the item's *scoring spec*, a JSON object that
mmconvert writes beside every exported item (``scoring.spec.spec_of``):

- ``kind``: ``choice`` (an option letter), ``free`` (accepted strings), ``spans`` (VCR's
  covered spans) or ``lm-eval`` (a generation task's own filters and metrics);
- ``metric``: the benchmark's metric (``option_letter``, ``longbench:<metric>``,
  ``ruler:string_match_all``, ``babilong``, ``vcr:official``, ``lm-eval:<task>``), or for a
  free-form answer one of ``FREE_METRICS``: ``numeric`` (the stated number's value equals a
  gold number's), ``exact_match`` (SQuAD's normalised exact match, its token F1 beside it),
  ``f1`` (SQuAD's token F1), ``exact`` (the same text, white space aside) or ``any-of`` (each
  accepted answer by its own kind: a number as a number, a text by SQuAD's exact match);
- ``answers``: the gold letter, or the accepted strings; ``options``: the options' text;
- ``extract``: ``answer_line`` when the prompt asked for a final "Answer: …" line (chain of
  thought), ``whole`` when it asked for the answer alone;
- what a metric needs besides (``question`` and ``task`` for BABILong, ``subset`` and
  ``all_classes`` for LongBench, ``task`` and ``doc`` for lm-eval, ``language``).

``score(spec, reply)`` gives ``{"score", "parsed", "answer", "extra"}``: ``score`` in [0, 1];
``parsed`` False for a reply in no form the rule reads, or one that names two answers (``A or
B``, two answer lines that differ): it scores 0, counted apart as unparsed, never guessed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import string
from collections import Counter
from decimal import Decimal, InvalidOperation
from fractions import Fraction
from typing import Any

VERSION = "2"
LETTERS = string.ascii_uppercase

# --- finding the answer in a reply ----------------------------------------------------------

# what may wrap an answer: markdown emphasis and code, LaTeX's \boxed{} and \text{}, brackets
_WRAPPING = re.compile(r"\\boxed\{|\\text(?:bf)?\{|\\mathrm\{|[*_`$]")
# an answer line: "Answer: X", "Final answer: X", "The answer is X", "答案：X", at a line's
# start (markdown list marks, quotes and headings before it allowed)
_ANSWER_LINE = re.compile(
    r"^[\s>#*_\-•]*(?:the\s+)?(?:final\s+|correct\s+|best\s+)?(?:answer|option|choice)"
    r"(?:\s+is)?\s*[:：]\s*(?P<phrase>.*)$|"
    r"^[\s>#*_\-•]*(?:最终|正确)?答案\s*(?:是|为|為|應為|应为)?\s*[:：]?\s*(?P<zh>.*)$",
    re.IGNORECASE | re.MULTILINE)
# an answer named inside a sentence: "the answer is (B)", "I choose B", "答案是B", "故选B"
_ANSWER_SAID = re.compile(
    r"\b(?:final\s+|correct\s+|best\s+)?(?:answer|option|choice)\s+(?:is|would\s+be|will\s+be)"
    r"\s*[:：]?\s*(?P<phrase>[^\n]*)|"
    r"\b(?:final\s+)?answer\s*[:：]\s*(?P<colon>[^\n]*)|"
    r"\bI\s+(?:choose|pick|select|would\s+choose|would\s+pick)\s+(?:option\s+)?"
    r"(?P<chose>[^\n]*)|"
    r"(?:答案|正确答案|正確答案)\s*(?:是|为|為|應為|应为)\s*[:：]?\s*(?P<zh>[^\n]*)|"
    r"(?:故|所以|因此)?选(?:择|擇)?\s*(?P<pick>[A-Z][^\n]*)",
    re.IGNORECASE)
_BOXED = re.compile(r"\\boxed\{((?:[^{}]|\{[^{}]*\})*)\}")
# one option letter at a phrase's start: a capital (not a word's first letter), or a small
# letter standing alone ("b", "(b)", "b."; "a cell" is the article), or after "option"
_LETTER = re.compile(r"^[\s(\[（【]*(?P<option>(?:option|choice)\s*[\s(\[（【]*)?"
                     r"(?P<letter>[A-Za-z])(?![A-Za-z])", re.IGNORECASE)
# a second letter joined to the first: "A or B", "A and C", "A/B", "A, B", "A或B"
_ANOTHER = re.compile(r"^[\s)\]）】.]*(?:or|and|/|,|&|或|和|及|、|;)\s*[(\[（【]?"
                      r"([A-Za-z])(?![A-Za-z])", re.IGNORECASE)


def _unwrapped(phrase: str) -> str:
    """An answer phrase without the markup around it, cut at the end of its sentence."""
    text = _WRAPPING.sub("", phrase).replace("}", "").strip()
    return text.strip(" \t\"'“”‘’")


def _letter(phrase: str, count: int, options: list[str]) -> tuple[str | None, bool]:
    """(the option letter ``phrase`` names, whether it names two): a letter at its start (a
    capital, or a small letter standing alone), or the whole of one option's text."""
    text = _unwrapped(phrase)
    found = _LETTER.match(text)
    if found:
        letter, rest = found.group("letter"), text[found.end():]
        alone = not rest.strip() or rest[0] in ".)]）】,;:!?。，；：" or bool(found.group("option"))
        if letter.isupper() or alone:
            other = _ANOTHER.match(rest)
            if other and other.group(1).upper() != letter.upper() and \
                    other.group(1).upper() in LETTERS[:count]:
                return None, True
            return (letter.upper() if letter.upper() in LETTERS[:count] else None), False
    said = normalise_answer(text.rstrip(".。"))
    named = [LETTERS[i] for i, option in enumerate(options)
             if said and normalise_answer(option) == said]
    return (named[0] if len(named) == 1 else None), len(named) > 1


def answer_lines(reply: str) -> list[str]:
    """The phrases of the reply's final-answer statements, strongest form first: its
    ``\\boxed{}`` answers and its answer lines ("Answer: …", "答案：…")."""
    found = [m.group(1) for m in _BOXED.finditer(reply)]
    for match in _ANSWER_LINE.finditer(reply):
        phrase = match.group("phrase") if match.group("phrase") is not None else \
            match.group("zh")
        if phrase is not None and phrase.strip():
            found.append(phrase)
    return found


def said_answers(reply: str) -> list[str]:
    """The phrases of answers named inside sentences ("the answer is (B)", "I choose B")."""
    out = []
    for match in _ANSWER_SAID.finditer(reply):
        phrase = next((g for g in match.groupdict().values() if g is not None), "")
        if phrase.strip():
            out.append(phrase)
    return out


def extract_choice(reply: str, count: int, options: list[str] | None = None
                   ) -> tuple[str | None, str]:
    """The option letter a reply chose among the first ``count``, and how it was read:
    ``answer_line`` (a final answer: ``\\boxed{}``, "Answer: X", "答案：X"), ``said`` ("the
    answer is (X)" in a sentence), ``alone`` (the reply is the letter); None with
    ``ambiguous`` (two letters, or answers that differ) or ``unparsed``."""
    options = options or []
    for how, phrases in (("answer_line", answer_lines(reply)),
                         ("said", said_answers(reply))):
        if not phrases:
            continue
        letters = set()
        for phrase in phrases:
            letter, two = _letter(phrase, count, options)
            if two:
                return None, "ambiguous"
            if letter is not None:
                letters.add(letter)
        if len(letters) > 1:
            return None, "ambiguous"
        if letters:
            return letters.pop(), how
    first = reply.strip().split("\n", 1)[0] if reply.strip() else ""
    if first and len(reply.strip().split()) <= 12:  # a short reply: the letter, perhaps more
        letter, two = _letter(first, count, options)
        if two:
            return None, "ambiguous"
        if letter is not None:
            return letter, "alone"
    return None, "unparsed"


def extract_free(reply: str, extract: str, same: Any = None) -> tuple[str | None, str]:
    """The answer of a free-form reply: its final answer line(s) (all the same by ``same``,
    SQuAD's normalisation unless given, else ``ambiguous``) when the prompt asked for one
    (``answer_line``), else the whole reply (``whole``: one that holds an answer line anyway
    is read by it)."""
    same = same or normalise_answer
    lines = [_unwrapped(p) for p in answer_lines(reply)]
    lines = [line for line in lines if line]
    if lines:
        if len({same(line) for line in lines}) > 1:
            return None, "ambiguous"
        return lines[-1], "answer_line"
    if extract == "whole" and reply.strip():
        return reply.strip(), "whole"
    return None, "unparsed"


# --- SQuAD's answer normalisation and metrics ------------------------------------------------

def normalise_answer(text: str) -> str:
    """SQuAD's normalisation (its ``evaluate-v1.1.py``'s ``normalize_answer``): lower case, no
    punctuation, no articles (a, an, the), white space collapsed."""
    text = text.lower()
    text = "".join(c for c in text if c not in _PUNCTUATION)
    text = re.sub(r"\b(a|an|the)\b", " ", text)
    return " ".join(text.split())


_PUNCTUATION = set(string.punctuation)


def token_f1(prediction: str, gold: str) -> float:
    """SQuAD's token F1 of the normalised texts."""
    said, wanted = normalise_answer(prediction).split(), normalise_answer(gold).split()
    common = sum((Counter(said) & Counter(wanted)).values())
    if not common:
        return 0.0
    precision, recall = common / len(said), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def exact_match(prediction: str, gold: str) -> float:
    return float(normalise_answer(prediction) == normalise_answer(gold))


# --- numbers compared as numbers ----------------------------------------------------------------

# the characters that mean minus: ASCII's hyphen-minus, the minus sign, the small and the
# full-width hyphen-minus (an en or em dash is a range or a pause, never a sign)
MINUS = "-\u2212\ufe63\uff0d"
CURRENCY = "$€£¥₹"
# one number as written: a sign (before or after a currency mark), digits with thousands
# separators in groups of three or without, a decimal part, an exponent, a denominator, a
# percent sign; never part of a word or of a dotted name ("v1.2", "x2")
_NUMBER = re.compile(
    rf"(?<![\w.,/])(?:(?P<sign>[{MINUS}+])\s?)?(?:[{re.escape(CURRENCY)}]\s?)?"
    rf"(?:(?P<sign2>[{MINUS}])\s?)?"
    r"(?P<digits>\d{1,3}(?:,\d{3})+(?![\d,])(?:\.\d+)?|\d+(?:\.\d+)?|\.\d+)"
    r"(?:[eE](?P<exp>[-+]?\d{1,3}))?(?![\d.,]\d)"
    r"(?:\s?/\s?(?P<den>\d+(?:\.\d+)?)(?![\d.,]\d)(?!\s?/\s?\d))?(?P<percent>\s?%)?")
# a gold answer that is a number: the number alone, perhaps with one trailing unit word
# ("120 miles", "3 apples", "12 km/h", "30 °C")
_UNIT = re.compile(r"\s*(?:°\s?)?[^\W\d_]+(?:[/.][^\W\d_]+)*\.?\s*")
# LaTeX a model writes a number in: \frac{1}{2}, \dfrac12, 1{,}234, \$, \%, \!, \,
_LATEX_FRACTION = re.compile(r"\\[dt]?frac\s*\{?\s*([^{}\s]+)\s*\}?\s*\{?\s*([^{}\s]+)\s*\}?")


def _latex_plain(text: str) -> str:
    text = _LATEX_FRACTION.sub(r"\1/\2", text)
    text = text.replace("{,}", ",").replace("\\$", "$").replace("\\%", "%")
    return re.sub(r"\\[!,;: ]", "", text)


def _value(match: re.Match) -> Fraction | None:
    """The value of one ``_NUMBER`` match (a percent is its number: 50% is 50)."""
    try:
        value = Fraction(Decimal(match.group("digits").replace(",", "")))
        if match.group("exp"):
            value *= Fraction(10) ** int(match.group("exp"))
        if match.group("den"):
            den = Fraction(Decimal(match.group("den")))
            if not den:
                return None
            value /= den
    except (InvalidOperation, ValueError, ZeroDivisionError):
        return None
    sign = match.group("sign") or match.group("sign2") or "+"
    return -value if sign in MINUS else value


def numbers_in(text: str) -> list[Fraction]:
    """Every number written in ``text``, in order, as exact fractions."""
    values = [_value(m) for m in _NUMBER.finditer(_latex_plain(text))]
    return [v for v in values if v is not None]


def gold_number(text: str) -> Fraction | None:
    """The number a gold answer is, when it is one number (signs, the Unicode minus,
    decimals, thousands separators, currency, percent, a simple fraction, one trailing unit
    word); None for any other answer ("World War 2", "3:15", "2 feet 3 inches")."""
    plain = _latex_plain(text).strip()
    match = _NUMBER.match(plain)
    if match is None or not match.group("digits"):
        return None
    rest = plain[match.end():]
    if rest.strip() and not _UNIT.fullmatch(rest):
        return None
    return _value(match)


def said_number(phrase: str) -> tuple[Fraction | None, str]:
    """The number an answer phrase states, and how it was read: ``number`` (one value,
    perhaps written more than once: "3 apples", "$1,234.00"), None with ``ambiguous``
    (two different values: "15 or -15", "2024-01-05") or ``no number``."""
    values = set(numbers_in(phrase))
    if len(values) == 1:
        return values.pop(), "number"
    return None, "ambiguous" if values else "no number"


# the metrics of a free-form answer; an item names its own (``metric:``), or ``free_metric``
# chooses by its accepted answers
FREE_METRICS = ("numeric", "exact_match", "f1", "exact", "any-of")


def free_metric(answers: list[str]) -> str:
    """The metric of free-form ``answers`` that name none: ``numeric`` when every accepted
    answer is a number, ``exact_match`` (SQuAD's) when none is, ``any-of`` (each by its own
    kind) when some are."""
    numbers = [gold_number(answer) is not None for answer in answers]
    if numbers and all(numbers):
        return "numeric"
    return "any-of" if any(numbers) else "exact_match"


def number_text(value: Fraction) -> str:
    """A value as it is shown: an integer, a finite decimal, else a fraction."""
    if value.denominator == 1:
        return str(value.numerator)
    decimal = Decimal(value.numerator) / Decimal(value.denominator)
    return format(decimal.normalize(), "f") if Fraction(decimal) == value else str(value)


# --- LongBench's metrics (its metrics.py), by subset -------------------------------------------

LONGBENCH_METRICS = {
    "narrativeqa": "qa_f1", "qasper": "qa_f1", "multifieldqa_en": "qa_f1",
    "multifieldqa_zh": "qa_f1_zh", "hotpotqa": "qa_f1", "2wikimqa": "qa_f1", "musique": "qa_f1",
    "dureader": "rouge_zh", "gov_report": "rouge", "qmsum": "rouge", "multi_news": "rouge",
    "vcsum": "rouge_zh", "trec": "classification", "triviaqa": "qa_f1", "samsum": "rouge",
    "lsht": "classification", "passage_retrieval_en": "retrieval", "passage_count": "count",
    "passage_retrieval_zh": "retrieval_zh", "lcc": "code_sim", "repobench-p": "code_sim"}
# the subsets whose prediction LongBench cuts to its first line (its eval.py)
LONGBENCH_FIRST_LINE = ("trec", "triviaqa", "samsum", "lsht")
_ZH_PUNCTUATION = set(string.punctuation + "！？｡。＂＃＄％＆＇（）＊＋，－／：；＜＝＞＠"
                      "［＼］＾＿｀｛｜｝～｟｠｢｣､、〃》「」『』【】〔〕〖〗〘〙〚〛〜〝〞〟〰〾〿"
                      "–—‘’‛“”„‟…‧﹏.")


class MetricUnavailable(RuntimeError):
    """A metric's package is not installed; the message names what to install."""


def _needs(module: str, extra: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        raise MetricUnavailable(f"this metric needs {module}: pip install "
                                f"'mmconvert[{extra}]' (or pip install {module})") from None


def _f1(said: list[str], wanted: list[str]) -> float:
    common = sum((Counter(said) & Counter(wanted)).values())
    if not common:
        return 0.0
    precision, recall = common / len(said), common / len(wanted)
    return 2 * precision * recall / (precision + recall)


def _zh_tokens(text: str) -> list[str]:
    jieba = _needs("jieba", "longbench")
    words = ["".join(c for c in w.lower() if c not in _ZH_PUNCTUATION).replace(" ", "")
             for w in jieba.cut(text, cut_all=False)]
    return [w for w in words if w]


def _rouge_l(prediction: str, gold: str) -> float:
    rouge = _needs("rouge", "longbench")
    try:
        return float(rouge.Rouge().get_scores([prediction], [gold], avg=True)["rouge-l"]["f"])
    except Exception:  # noqa: BLE001 - LongBench scores what ROUGE cannot read 0
        return 0.0


def _numbers_hit(prediction: str, target: str) -> float:
    numbers = re.findall(r"\d+", prediction)
    return sum(n == target for n in numbers) / len(numbers) if numbers else 0.0


def longbench_metric(name: str, prediction: str, gold: str, all_classes: list[str]) -> float:
    """One of LongBench's metrics of ``prediction`` against one gold answer."""
    if name == "qa_f1":
        return _f1(normalise_answer(prediction).split(), normalise_answer(gold).split())
    if name == "qa_f1_zh":
        return _f1(_zh_tokens(prediction), _zh_tokens(gold))
    if name == "rouge":
        return _rouge_l(prediction, gold)
    if name == "rouge_zh":
        jieba = _needs("jieba", "longbench")
        return _rouge_l(" ".join(jieba.cut(prediction, cut_all=False)),
                        " ".join(jieba.cut(gold, cut_all=False)))
    if name == "classification":
        import difflib

        named = [c for c in all_classes if c in prediction]
        named = [c for c in named if not (c in gold and c != gold)]
        if named:
            return 1.0 / len(named) if gold in named else 0.0
        best = max(all_classes, key=lambda c: difflib.SequenceMatcher(None, c, prediction)
                   .ratio(), default=None)
        return float(best == gold)
    if name in ("retrieval", "retrieval_zh"):
        pattern = r"Paragraph (\d+)" if name == "retrieval" else r"段落(\d+)"
        target = re.findall(pattern, gold)
        return _numbers_hit(prediction, target[0]) if target else 0.0
    if name == "count":
        return _numbers_hit(prediction, str(gold))
    if name == "code_sim":
        fuzz = _needs("thefuzz.fuzz", "longbench")
        line = next((text for text in prediction.lstrip("\n").split("\n")
                     if "`" not in text and "#" not in text and "//" not in text), "")
        return fuzz.ratio(line, gold) / 100
    raise ValueError(f"no LongBench metric {name!r}")


# --- BABILong's rule (its metrics.py compare_answers) ------------------------------------------

BABILONG_LABELS = {
    "qa1": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa2": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa3": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa4": ("bathroom", "bedroom", "garden", "hallway", "kitchen", "office"),
    "qa5": ("bill", "fred", "jeff", "mary", "apple", "football", "milk"),
    "qa6": ("no", "yes"),
    "qa7": ("none", "one", "three", "two"),
    "qa8": ("apple", "football", "milk", "nothing"),
    "qa9": ("no", "yes"),
    "qa10": ("maybe", "no", "yes"),
}
_DIGITS = dict(enumerate(("zero", "one", "two", "three", "four", "five", "six", "seven",
                          "eight", "nine")))


def babilong(reply: str, target: str, question: str, task: str) -> tuple[float, bool, str]:
    """(score, parsed, what was read): BABILong's compare_answers on the reply's answer (its
    answer line, else its first sentence), lower case, digits as words: right when it names
    the target and no other label of the task that the question does not name; a list target
    ("apple,milk") needs exactly its labels. Labels are whole words (BABILong's code finds
    them as substrings: "no" inside "not")."""
    lines = answer_lines(reply)
    text = (_unwrapped(lines[-1]) if lines else
            reply.lower().split(".")[0].split("<context>")[0].split("<example>")[0]
            .split("question")[0])
    text = re.sub(r"\b[0-9]\b", lambda m: _DIGITS[int(m.group(0))], text.lower())
    labels = BABILONG_LABELS.get(task, ())
    words = set(re.findall(r"[a-z]+", text))
    asked = {label for label in labels if re.search(rf"\b{label}\b", question.lower())}
    named = {label for label in labels if label in words} - (asked - {"none"})
    if not named:
        return 0.0, False, text.strip()[:200]
    gold = target.lower().strip()
    wanted = {g.strip() for g in gold.split(",")} if "," in gold else {gold}
    return float(named == wanted), True, ",".join(sorted(named))


# --- RULER's string match ----------------------------------------------------------------------

def ruler_match(reply: str, values: list[str]) -> tuple[float, list[str]]:
    """RULER's string_match_all: the share of the asked values the reply holds, any case; a
    value counts as a whole word or number only (RULER's code takes a substring: 1234567
    inside 91234567)."""
    found = [v for v in values
             if re.search(rf"(?<![\w]){re.escape(v.lower())}(?![\w])", reply.lower())]
    return (len(found) / len(values) if values else 0.0), found


# --- VCR's spans, and lm-eval's own scoring ------------------------------------------------------

_LOADED: dict[str, Any] = {}


def _beside(name: str):
    """The module ``name`` beside this one (``vcr_official.py``, ``lm_eval_scoring.py``):
    mmconvert's own, or in an export, the copy written beside this file (loaded once)."""
    if name in _LOADED:
        return _LOADED[name]
    if __package__:  # inside mmconvert
        _LOADED[name] = importlib.import_module(f"{__package__}.{name}")
    else:  # an export's copy, loaded from its file
        path = os.path.join(os.path.dirname(os.path.abspath(__file__)), f"{name}.py")
        loaded = importlib.util.spec_from_file_location(f"mmconvert_{name}", path)
        if loaded is None or loaded.loader is None:
            raise ImportError(f"the scorer's {name}.py is not beside it: {path}")
        module = importlib.util.module_from_spec(loaded)
        loaded.loader.exec_module(module)
        _LOADED[name] = module
    return _LOADED[name]


def _lm_eval():
    """lm-eval's own filters and metrics on a stored doc (``lm_eval_scoring.py``)."""
    try:
        import datasets  # noqa: F401
        import lm_eval  # noqa: F401
    except ImportError:
        raise MetricUnavailable("scoring an lm-eval generation task needs lm-evaluation-harness:"
                                " pip install 'mmconvert[lm-eval]'") from None
    return _beside("lm_eval_scoring")


# --- the one entry point -----------------------------------------------------------------------

def score(given: dict[str, Any] | str, reply: str | None) -> dict[str, Any]:
    """``reply`` scored by ``given``, the item's spec (a dict, or its JSON text):
    ``{"score", "parsed", "answer", "extra"}``."""
    spec: dict[str, Any] = json.loads(given) if isinstance(given, str) else given
    reply = reply or ""
    kind, metric = spec["kind"], spec.get("metric", "")
    answers = [str(a) for a in spec.get("answers") or []]

    def result(value: float, parsed: bool, answer: str | None, **extra) -> dict[str, Any]:
        return {"score": float(value), "parsed": parsed, "answer": answer, "extra": extra}

    if kind == "choice":
        options = [str(o) for o in spec.get("options") or []]
        letter, how = extract_choice(reply, len(options), options)
        if letter is None:
            return result(0.0, False, None, read=how)
        return result(float(letter == answers[0]), True, letter, read=how)
    if kind == "spans":
        refused, scored = _beside("vcr_official").score_answer(answers, reply,
                                                       spec.get("language") or "en")
        exact = [em for _, em, _ in scored]
        return result(sum(exact) / len(exact) if exact else 0.0, True,
                      " | ".join(match for match, _, _ in scored), exact_match=exact,
                      jaccard=[jac for _, _, jac in scored], refused=refused)
    if kind == "lm-eval":
        for stop in spec.get("until") or []:  # where the server stops, as lm-eval asks it to
            if stop:
                reply = reply.split(stop)[0]
        lm_eval = _lm_eval()
        scores, kept = lm_eval.scores(spec["task"], spec["doc"], reply)
        primary = spec.get("primary") or [next(iter(scores)), next(iter(
            next(iter(scores.values()))))]
        value = scores.get(primary[0], {}).get(primary[1], 0.0)
        flat = {f"{name}/{metric}": v for name, values in scores.items()
                for metric, v in values.items()}
        answer = kept.get(primary[0])
        return result(value, answer != lm_eval.INVALID, None if answer is None else answer[:200],
                      lm_eval=flat, primary="/".join(primary))
    if metric == "babilong":
        value, parsed, read = babilong(reply, answers[0] if answers else "",
                                       spec.get("question") or "", spec.get("task") or "")
        return result(value, parsed, read)
    if metric == "ruler:string_match_all":
        value, found = ruler_match(reply, answers)
        return result(value, True, " ".join(found) or None, found=found)
    golds = [gold_number(gold) for gold in answers]
    said, how = extract_free(reply, spec.get("extract") or "answer_line",
                             said_number if reads_numbers(metric, golds) else None)
    if said is None:
        return result(0.0, False, None, read=how)
    if metric.startswith("longbench:"):
        name = metric.split(":", 1)[1]
        if (spec.get("subset") or "").removesuffix("_e") in LONGBENCH_FIRST_LINE:
            said = said.lstrip("\n").split("\n")[0]
        value = max((longbench_metric(name, said, gold, spec.get("all_classes") or [])
                     for gold in answers), default=0.0)
        return result(value, True, said[:200], read=how)
    return free_score(metric, said, how, answers, golds)


def reads_numbers(metric: str, golds: list[Fraction | None]) -> bool:
    """Whether a reply is read for a number: under ``numeric``, and under ``any-of`` when
    every accepted answer is one (``golds``, each answer's ``gold_number``)."""
    return metric == "numeric" or (metric == "any-of" and all(g is not None for g in golds))


def free_score(metric: str, said: str, how: str, answers: list[str],
               golds: list[Fraction | None]) -> dict[str, Any]:
    """A free-form answer ``said`` (read from the reply as ``how``) scored by ``metric``, one
    of ``FREE_METRICS``, against the accepted ``answers`` (``golds``: the number each is, or
    None)."""
    def result(value: float, parsed: bool, answer: str | None, **extra) -> dict[str, Any]:
        return {"score": float(value), "parsed": parsed, "answer": answer,
                "extra": {"metric": metric, **extra}}

    if metric not in FREE_METRICS:
        raise ValueError(f"no free-form metric {metric!r} (known: {', '.join(FREE_METRICS)})")
    if reads_numbers(metric, golds):
        value, read = said_number(said)
        if value is None:  # no number, or two: unparsed, never guessed
            return result(0.0, False, None, read=read)
        return result(float(value in golds), True, number_text(value), read=how)
    if metric == "any-of":  # each accepted answer by its own kind: numbers as numbers
        value, _ = said_number(said)
        hit = any(value is not None and value == number if number is not None
                  else exact_match(said, gold) for gold, number in zip(answers, golds, strict=True))
        return result(float(hit), True, said[:200], read=how)
    if metric == "exact":
        wanted = {" ".join(gold.split()) for gold in answers}
        return result(float(" ".join(said.split()) in wanted), True, said[:200], read=how)
    em = max((exact_match(said, gold) for gold in answers), default=0.0)
    f1 = max((token_f1(said, gold) for gold in answers), default=0.0)
    if metric == "f1":
        return result(f1, True, said[:200], exact_match=em, read=how)
    # exact_match: SQuAD's normalised exact match, and its token F1 beside it
    return result(em, True, said[:200], f1=round(f1, 6), read=how)

