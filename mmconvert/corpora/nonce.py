"""Text no prior can fill in: ``render --nonce SEED`` replaces each word of an item, before it
is drawn, with a pronounceable nonce word of the same length and capitalisation.

The rule:
- a word is a run of letters (``str.isalpha``); everything else (spaces, punctuation, digits,
  symbols) is kept where it is;
- a word's nonce is drawn from (seed, the word in lower case): the same word is the same
  nonce everywhere in a run, whatever its case, and another seed draws others; its letters
  alternate consonants and vowels (a-z, no accents), each upper case where the word's letter
  at that place is;
- the context, the question, the options and free-form answers are replaced alike (a
  multiple-choice answer is a letter and stays);
- only words of the Latin script are made: an item holding letters of another script
  (Chinese, Japanese and Thai have no spaces between words; Greek, Cyrillic and the others
  would change script) is refused in one line naming it.

The row keeps the mapping (``metadata.nonce``: the seed and each original word's nonce), and
the pages' expected text is the nonce text, so ``eval --probe transcribe`` on a nonce run
measures reading with no prior to lean on.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import replace

from ..errors import ItemError
from ..items import Item
from ..renderers.scripts import script_of

CONSONANTS = "bcdfghjklmnprstvz"
VOWELS = "aeiou"
STAGE = "nonce"


def nonce_word(word: str, seed: int) -> str:
    """``word``'s nonce for ``seed``: its length and capitalisation, letters alternating
    consonants and vowels, never the word itself."""
    key = word.lower()
    digest = hashlib.sha256(f"{STAGE}\0{seed}\0{key}".encode("utf-8", "surrogatepass"))
    draw = random.Random(digest.digest())
    while True:
        vowel = draw.random() < 0.5
        letters = []
        for _ in word:
            letters.append(draw.choice(VOWELS if vowel else CONSONANTS))
            vowel = not vowel
        made = "".join(letters)
        if made != key:
            break
    return "".join(c.upper() if original.isupper() else c
                   for c, original in zip(made, word, strict=True))


def nonce_text(text: str, seed: int, words: dict[str, str], where: str = "",
               field: str = "", item_id: str = "") -> str:
    """``text`` with each word replaced (``words`` gains each original word's nonce)."""
    out: list[str] = []
    start = None
    for index, char in enumerate(text + "\0"):
        if char.isalpha():
            if start is None:
                start = index
            continue
        if start is not None:
            word = text[start:index]
            other = next((c for c in word if script_of(c) != "LATIN"), None)
            if other is not None:
                script = (script_of(other) or "an unknown").title()
                raise ItemError(f"--nonce: {word!r} holds letters of the {script} script; "
                                "nonce words are made for the Latin script only (scripts "
                                "without spaces between words, and others, have no rule)",
                                where=where, field=field, item_id=item_id)
            made = words.setdefault(word, nonce_word(word, seed))
            out.append(made)
            start = None
        if char != "\0":
            out.append(char)
    return "".join(out)


def nonce_item(item: Item, seed: int) -> Item:
    """``item`` with every word replaced by its nonce, the mapping in its metadata."""
    words: dict[str, str] = {}
    where = item.origin or f"item {item.id}"

    def made(text: str, field: str) -> str:
        return nonce_text(text, seed, words, where, field, item.id)

    # in the order the fields are read, so a refusal names the first
    context = None if item.context is None else made(item.context, "context")
    question = None if item.question is None else made(item.question, "question")
    options = [made(o, "options") for o in item.options]
    answer = item.answer
    if isinstance(answer, list):
        answer = [made(a, "answer") for a in answer]
    metadata = {**item.metadata, "nonce": {"seed": seed, "words": dict(sorted(words.items()))}}
    return replace(item, context=context, question=question, options=options, answer=answer,
                   metadata=metadata)
