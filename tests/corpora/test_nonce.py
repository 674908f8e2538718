"""``render --nonce SEED``: each word replaced before drawing by a pronounceable nonce word of its
length and capitalisation (corpora/nonce.py states the rule); the row keeps the mapping and the
pages' expected text is the nonce text; a word of another script is one line."""

from __future__ import annotations

import json
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from mmconvert.corpora.nonce import CONSONANTS, VOWELS, nonce_text, nonce_word
from mmconvert.manifest import JsonlLog
from mmconvert.qa.checks import expected_text
from tests.test_cli import run
from tests.typed import typed_rows

LATIN = st.text(alphabet=st.sampled_from(list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                              "éüßÆ0123456789 .,;:!?'\"()-\n\t")),
                max_size=200)
WORD = re.compile(r"[^\W\d_]+")


@settings(max_examples=300, deadline=None)
@given(text=LATIN, seed=st.integers(0, 2**31))
def test_every_word_keeps_its_length_case_and_place_and_nothing_else_moves(text, seed):
    words: dict[str, str] = {}
    made = nonce_text(text, seed, words)
    assert len(made) == len(text)
    for old, new in zip(text, made, strict=True):
        if old.isalpha():
            assert new.lower() in CONSONANTS + VOWELS and new.isupper() == old.isupper()
        else:
            assert new == old  # spaces, punctuation and digits where they were
    for old, new in zip(WORD.findall(text), WORD.findall(made), strict=True):
        assert new == words[old] and new.lower() != old.lower()
        assert words[old].lower() == nonce_word(old.lower(), seed)  # one nonce, any case
    assert nonce_text(text, seed, {}) == made  # the same seed, the same text


def test_letters_alternate_and_another_seed_draws_other_words():
    made = nonce_word("Reading", 1)
    assert made[0].isupper() and len(made) == 7
    kinds = ["v" if c in VOWELS else "c" for c in made.lower()]
    assert all(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    assert len({nonce_word("reading", seed) for seed in range(20)}) >= 19


def test_render_nonce_draws_the_nonce_text_and_keeps_the_mapping(sample_run, nonce_run):
    plain, nonce = sample_run, nonce_run  # the session's renders, plain and --nonce 7
    before = {r.id: r for r in typed_rows(plain)}
    after = typed_rows(nonce)
    assert [r["id"] for r in after] == list(before)
    for row in after:
        original = before[row["id"]]
        mapping = row["metadata"]["nonce"]
        assert mapping["seed"] == 7 and row["answer"] == original["answer"]
        # the mapping turns the original's text into the drawn text
        assert nonce_text(original["question"], 7, {}) == row["question"]
        assert [nonce_text(o, 7, {}) for o in original["options"]] == row["options"]
        assert all(nonce_text(k, 7, {}) == v for k, v in mapping["words"].items())
        drawn = expected_text(row)
        # the pages hold the nonce text: no original word of three letters or more
        assert not {w for w in mapping["words"] if len(w) >= 3} & set(WORD.findall(drawn))
        # the option letters are drawn labels, not the item's words: they stay
        assert drawn.startswith("A. ") == expected_text(original).startswith("A. ")
        assert row["text_prompt"] != original["text_prompt"]  # the text twin reads it too


def test_a_word_of_another_script_is_one_line(tmp_path):
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "q1", "question": "Which is larger?", "options":
                                 ["two", "three"], "answer": "B"}) + "\n" +
                     json.dumps({"id": "q2", "question": "潮水何时退去？", "answer": ["三点"],
                                 "language": "zh"}, ensure_ascii=False) + "\n")
    result = run("render", items, "--nonce", "3", "--out", tmp_path / "o")
    assert result.exit_code != 0
    assert result.output.strip() == (
        f"Error: {items} line 2: field question: --nonce: '潮水何时退去' holds letters of the "
        "Han script; nonce words are made for the Latin script only (scripts without spaces "
        "between words, and others, have no rule)")
    skipped = run("render", items, "--nonce", "3", "--on-error", "skip", "--out",
                  tmp_path / "s")
    assert skipped.exit_code == 0, skipped.output
    assert [r["id"] for r in JsonlLog(tmp_path / "s" / "manifest.jsonl").read()] == ["q1"]
    recorded = JsonlLog(tmp_path / "s" / "skipped.jsonl").read()
    assert [r["id"] for r in recorded] == ["q2"] and "Han script" in recorded[0]["reason"]
